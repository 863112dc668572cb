"""Odd files where every command reads a model file: not there, not regular, not text,
endless, bombs, too big, and terminal escapes and HTML in what a model holds."""

from __future__ import annotations

from hostile import checks
from hostile.makers import (
    MODEL,
    dangling,
    directory,
    fifo,
    link_to,
    model_json,
    nested,
    npy_of,
    sparse,
    symlink_loop,
    unix_socket,
    yaml_bomb,
)
from hostile.runner import Kind, Make, kind

ODD: dict[str, Make | None] = {
    "missing": None,
    "directory": directory,
    "empty": b"",
    "binary": bytes(range(256)) * 4,
    "nul-in-text": MODEL[:40] + "\0" + MODEL[40:],
    "not-utf8": MODEL.encode() + b"# \xff\xfe\n",
    "utf16": MODEL.encode("utf-16"),
    "symlink-loop": symlink_loop,
    "dangling-symlink": dangling,
    "fifo-no-writer": fifo,
    "unix-socket": unix_socket,
    "dev-zero": link_to("/dev/zero"),
    "dev-null": link_to("/dev/null"),
    "dev-urandom": link_to("/dev/urandom"),
    "proc-self-mem": link_to("/proc/self/mem"),
    "yaml-bomb": yaml_bomb(),
    "deep-yaml": nested(100_000),
    "deep-json-objects": '{"a":' * 50_000 + "1" + "}" * 50_000,
    "sparse-300mb": sparse(300 << 20),
    "top-level-list": "[1, 2, 3]\n",
    "top-level-null": "null\n",
}
# The commands that read a model file, each with what else it needs.
READERS: dict[str, tuple[str, ...]] = {
    "run": ("run",),
    "grad": ("grad", "--from", "cat", "--to", "fish"),
    "flash": ("flash",),
    "decode": ("decode",),
    "train": ("train", "--steps", "1", "--from", "cat", "--to", "fish"),
    "diff": ("diff", "--set", "causal=true"),
    "check": ("check", "a.npz"),
}
# Every command meets the families that matter most; run meets them all.
EVERYWHERE = (
    "missing",
    "directory",
    "empty",
    "binary",
    "fifo-no-writer",
    "dev-zero",
    "symlink-loop",
    "yaml-bomb",
    "sparse-300mb",
)


def odd_file(name: str, command: str) -> Kind:
    make = ODD[name]
    files: dict[str, Make] = {} if make is None else {"m.yaml": make}
    if command == "check":
        files["a.npz"] = b"PK\x05\x06" + bytes(18)  # an empty zip: refused or never read
    return kind(
        f"model-file-{name}-{command}", *READERS[command], "-c", "m.yaml", files=files, timeout=30
    )


FILE_KINDS = [odd_file(name, "run") for name in ODD] + [
    odd_file(name, command) for command in READERS if command != "run" for name in EVERYWHERE
]
STDIN_KINDS = [
    kind("model-stdin-binary", "run", "-c", "-", stdin=bytes(range(256))),
    kind("model-stdin-yaml-bomb", "run", "-c", "-", stdin=yaml_bomb().encode()),
    kind("model-stdin-empty", "run", "-c", "-", stdin=b""),
    kind("model-stdin-deep", "run", "-c", "-", stdin=nested(100_000).encode()),
    kind("model-stdin-nul", "grad", "-c", "-", stdin=b"\0" * 1000),
    kind(
        "model-too-big-by-limit",
        "run",
        "-c",
        "m.yaml",
        files={"m.yaml": MODEL + "#" * 3_000_000},
        env={"ATTNTRACE_MAX_FILE_MB": "1"},
        says=("ATTNTRACE_MAX_FILE_MB",),
    ),
    kind(
        "model-stdin-too-big",
        "run",
        "-c",
        "-",
        stdin=MODEL.encode() + b"#" * 3_000_000,
        env={"ATTNTRACE_MAX_FILE_MB": "1"},
    ),
]

# ------------------------------------------------------------------ .npy beside a model

NPY_WQ = MODEL.replace("WQ: [[1, 0], [0, 1]]", "WQ: q.npy")


def npy_file(name: str, make: Make | None) -> Kind:
    assert make is not None
    return kind(
        f"npy-{name}-as-WQ",
        "run",
        "-c",
        "m.yaml",
        files={"m.yaml": NPY_WQ, "q.npy": make},
        timeout=30,
    )


NPY_KINDS = [
    kind("npy-missing-as-WQ", "run", "-c", "m.yaml", files={"m.yaml": NPY_WQ}),
    *[
        npy_file(name, ODD[name])
        for name in (
            "directory",
            "empty",
            "binary",
            "fifo-no-writer",
            "dev-zero",
            "symlink-loop",
            "sparse-300mb",
        )
    ],
    npy_file("wrong-shape", npy_of([[1, 0, 0], [0, 1, 0]])),
    npy_file("complex", npy_of([[1, 0], [0, 1]], "<c16")),
    npy_file("strings", npy_of([["a", "b"], ["c", "d"]], "<U1")),
    npy_file("nan", npy_of([[float("nan"), 0], [0, 1]])),
    npy_file("inf", npy_of([[float("inf"), 0], [0, 1]])),
    npy_file("huge", npy_of([[1e308, 1e308], [1e308, 1e308]])),
    npy_file("three-dims", npy_of([[[1, 0], [0, 1]]])),
    npy_file(
        "fortran-order",
        npy_of([[1, 0], [0, 1]]).replace(b"'fortran_order': False", b"'fortran_order': True "),
    ),
    npy_file("version-9", b"\x93NUMPY\x09\x00" + npy_of([[1, 0], [0, 1]])[8:]),
    npy_file("magic-only", b"\x93NUMPY"),
    npy_file("pickle", b"\x80\x04\x95" + bytes(64)),
    kind(
        "npy-path-escapes",
        "run",
        "-c",
        "m.yaml",
        files={"m.yaml": MODEL.replace("WQ: [[1, 0], [0, 1]]", "WQ: /dev/zero.npy")},
    ),
    kind(
        "npy-name-in-parent",
        "run",
        "-c",
        "sub/m.yaml",
        files={"sub/m.yaml": MODEL.replace("WQ: [[1, 0], [0, 1]]", "WQ: ../../q.npy")},
    ),
]

# -------------------------------- terminal escapes and HTML in what a model holds

SELF = ("--from", "cat", "--to", "cat")  # a loss for grad and train
ESCAPE = "\x1b[2J\x1b]0;owned\x07"
SCRIPT = "</script><script>alert(1)</script>"
IMAGE = "<img/src=x/onerror=alert(1)>"


def escaped(name: str, model: str, *argv: str, **options: object) -> Kind:
    return kind(
        f"hostile-text-{name}",
        *argv,
        "-c",
        "m.json",
        files={"m.json": model},
        expect="ok",
        **options,
    )


ESC_TOKEN = model_json(sentence=f"cat {ESCAPE}", embeddings={"cat": [1, 2], ESCAPE: [3, 1]})
ESC_NAME = model_json(name=ESCAPE, description=ESCAPE, sentence="cat eats")
HTML_TOKEN = model_json(
    sentence=f"cat {SCRIPT} {IMAGE}", embeddings={"cat": [1, 2], SCRIPT: [3, 1], IMAGE: [2, 4]}
)
HTML_NAME = model_json(name=SCRIPT, description=IMAGE, sentence="cat eats")
NOT_IN_PAGE = ("<script>alert(1)", IMAGE)

HOSTILE_TEXT = [
    escaped("escape-token-run", ESC_TOKEN, "run", check=checks.no_escape),
    escaped("escape-token-map", ESC_TOKEN, "run", "--map", check=checks.no_escape),
    escaped("escape-token-overview", ESC_TOKEN, "run", "--overview", check=checks.no_escape),
    escaped("escape-token-focus", ESC_TOKEN, "run", "--focus", "cat", check=checks.no_escape),
    escaped("escape-token-grad", ESC_TOKEN, "grad", *SELF, check=checks.no_escape),
    escaped("escape-token-flash", ESC_TOKEN, "flash", check=checks.no_escape),
    escaped("escape-token-decode", ESC_TOKEN, "decode", check=checks.no_escape),
    escaped(
        "escape-token-train", ESC_TOKEN, "train", "--steps", "2", *SELF, check=checks.no_escape
    ),
    escaped(
        "escape-token-diff",
        ESC_TOKEN,
        "diff",
        "--set",
        "causal=true",
        check=checks.no_escape,
        verdicts=(0, 1),
    ),
    escaped("escape-name-run", ESC_NAME, "run", check=checks.no_escape),
    escaped(
        "escape-token-step", ESC_TOKEN, "run", "--step", stdin=b"\n" * 20, check=checks.no_escape
    ),
    kind("hostile-text-escape-in-unknown-token", "run", "cat \x1b[31mred", "-s", "cat-eats-fish"),
    kind("hostile-text-escape-in-file-name", "run", "-c", "\x1b[2J.yaml"),
    kind("hostile-text-escape-in-focus", "run", "--focus", "\x1b[2Jx"),
    kind("hostile-text-bidi-in-sample", "run", "-s", "\u202ecausal"),
    escaped(
        "html-token-export",
        HTML_TOKEN,
        "run",
        "--export",
        "p.html",
        check=checks.file_lacks("p.html", *NOT_IN_PAGE),
    ),
    escaped(
        "html-name-export",
        HTML_NAME,
        "run",
        "--export",
        "p.html",
        check=checks.file_lacks("p.html", *NOT_IN_PAGE),
    ),
    escaped(
        "html-token-grad-export",
        HTML_TOKEN,
        "grad",
        *SELF,
        "--export",
        "p.html",
        check=checks.file_lacks("p.html", *NOT_IN_PAGE),
    ),
    escaped(
        "html-token-flash-export",
        HTML_TOKEN,
        "flash",
        "--export",
        "p.html",
        check=checks.file_lacks("p.html", *NOT_IN_PAGE),
    ),
    escaped(
        "html-token-decode-export",
        HTML_TOKEN,
        "decode",
        "--export",
        "p.html",
        check=checks.file_lacks("p.html", *NOT_IN_PAGE),
    ),
    escaped(
        "html-token-diff-export",
        HTML_TOKEN,
        "diff",
        "--set",
        "causal=false",
        "--export",
        "p.html",
        check=checks.file_lacks("p.html", *NOT_IN_PAGE),
    ),
    escaped(
        "html-token-svg-export",
        HTML_TOKEN,
        "run",
        "--export",
        "p.svg",
        check=checks.file_lacks("p.svg", *NOT_IN_PAGE),
    ),
]

KINDS: list[Kind] = [*FILE_KINDS, *STDIN_KINDS, *NPY_KINDS, *HOSTILE_TEXT]
