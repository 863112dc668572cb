"""The cases of issue 29, each as a kind (II): lone surrogates (U+FFFD in every document
written), the API's non-string keys, and the small items of its section 4."""

from __future__ import annotations

from hostile import checks
from hostile.makers import MODEL, directory, link_to, model_json
from hostile.runner import Kind, kind

ATTEND_CAUSAL = ("--from", "sat", "--to", "cat")  # a loss for grad and train on "causal"

# --------------------------------------------------- 3. lone surrogates: U+FFFD out

SURROGATE_TOKEN = model_json(
    sentence="cat \udcff",
    embeddings={"cat": [1, 2], "\udcff": [3, 1]},
    target=[[0, 0], [1, 1]],
)
SURROGATE_NAME = model_json(name="m\udcff", sentence="cat eats")
SURROGATE_DESCRIPTION = model_json(description="d\udcff", sentence="cat eats")


def lone(name: str, *argv: str | bytes, model: str = SURROGATE_TOKEN, **options: object) -> Kind:
    return kind(
        f"surrogate-{name}", *argv, "-c", "m.json", expect="ok", files={"m.json": model}, **options
    )


SURROGATES = [
    lone("token-run-json", "run", "--json", check=checks.json_replaced),
    lone("name-run-json", "run", "--json", model=SURROGATE_NAME, check=checks.json_replaced),
    lone(
        "token-run-export-html", "run", "--export", "x.html", check=checks.file_replaced("x.html")
    ),
    lone(
        "name-run-export-html",
        "run",
        "--export",
        "x.html",
        model=SURROGATE_NAME,
        check=checks.file_replaced("x.html"),
    ),
    lone(
        "description-export-html",
        "run",
        "--export",
        "x.html",
        model=SURROGATE_DESCRIPTION,
        check=checks.file_utf8("x.html"),
    ),
    lone("token-run-export-svg", "run", "--export", "x.svg", check=checks.file_utf8("x.svg")),
    lone("token-run-export-txt", "run", "--export", "x.txt", check=checks.file_utf8("x.txt")),
    lone("token-run-tables", "run"),
    lone("token-grad-json", "grad", "--json", check=checks.json_replaced),
    lone("token-grad-export", "grad", "--export", "g.html", check=checks.file_replaced("g.html")),
    lone("token-flash-json", "flash", "--json", check=checks.json_replaced),
    lone("token-train-json", "train", "--steps", "2", "--json", check=checks.json_replaced),
    lone(
        "token-train-save-json",
        "train",
        "--steps",
        "2",
        "--save",
        "t.json",
        check=checks.file_replaced("t.json"),
    ),
    lone(
        "token-train-save-yaml",
        "train",
        "--steps",
        "2",
        "--save",
        "t.yaml",
        check=checks.file_replaced("t.yaml"),
    ),
    lone(
        "name-train-save-yaml",
        "train",
        "--steps",
        "2",
        "--from",
        "cat",
        "--to",
        "eats",
        "--save",
        "t.yaml",
        model=SURROGATE_NAME,
        check=checks.file_replaced("t.yaml"),
    ),
    lone("token-decode-json", "decode", "--json", check=checks.json_replaced),
    lone(
        "token-diff-json",
        "diff",
        "--set",
        "causal=true",
        "--json",
        check=checks.json_replaced,
        verdicts=(0, 1),
    ),
    lone("sentence-byte-ff-run-json", "run", b"cat \xff", "--json", check=checks.json_replaced),
    lone("sentence-byte-ff-grad-json", "grad", b"cat \xff", "--json", check=checks.json_replaced),
    kind(
        "surrogate-notebook-repr",
        python=(
            "from attntrace import trace_attention\n"
            "import json, sys\n"
            f"model = json.loads({SURROGATE_TOKEN!r})\n"
            "page = trace_attention(model=model)._repr_html_()\n"
            "sys.stdout.buffer.write(page.encode('utf-8'))\n"
        ),
        expect="ok",
        check=checks.matches("\ufffd"),
    ),
]

# ----------------------------------------------------------- 3. the API's odd keys

WEIGHTS = {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[0, 1], [1, 0]]}
ODD_KEYS = {
    "embeddings-int-key": "{'embeddings': {1: [1, 2]}, 'weights': W}",
    "embeddings-none-key": "{'embeddings': {None: [1, 2]}, 'weights': W}",
    "embeddings-tuple-key": "{'embeddings': {('cat',): [1, 2]}, 'weights': W}",
    "weights-int-key": "{'embeddings': {'cat': [1, 2]}, 'weights': {**W, 7: [[1]]}}",
    "biases-int-key": "{'embeddings': {'cat': [1, 2]}, 'weights': W, 'biases': {0: [1, 2]}}",
    "top-level-int-key": "{'embeddings': {'cat': [1, 2]}, 'weights': W, 3: 4}",
    "top-level-bytes-key": "{'embeddings': {'cat': [1, 2]}, 'weights': W, b'name': 'x'}",
}


def odd_key(name: str, model: str) -> Kind:
    code = (
        "from attntrace import trace_attention\n"
        f"W = {WEIGHTS!r}\n"
        "try:\n"
        f"    trace_attention('cat', model={model})\n"
        "except TypeError:\n"
        "    print('TypeError')\n"
    )
    return kind(f"api-{name}", python=code, expect="ok", check=checks.prints(b"TypeError\n"))


API = [odd_key(name, model) for name, model in ODD_KEYS.items()]

# ---------------------------------------------------------------------- 4. small

TINY = MODEL.replace("cat: [1, 2]", "cat: [1.0e-9, 1.0e-12]")
SUBNORMAL = MODEL.replace("cat: [1, 2]", "cat: [5.0e-324, 1.0e-310]")
CANCELS = (
    "embeddings:\n  cat: [1.0e+8, 1, 1.0e+8]\n  eats: [1.0e+8, 1, -1.0e+8]\n"
    "weights:\n  WQ: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]\n  WK: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]\n"
    "  WV: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]\n"
)
NO_FILE_COMMANDS = {
    "softmax": ("softmax", "1", "2"),
    "kv-cache": ("kv-cache", "--preset", "llama2-7b"),
    "scaling": ("scaling", "--samples", "10", "--max-dk", "4"),
    "models": ("models",),
    "samples": ("samples",),
    "samples-name": ("samples", "causal"),
    "run-sample": ("run", "-s", "causal"),
    "run-built-in": ("run",),
    "decode-sample": ("decode", "-s", "causal"),
}

SMALL = [
    kind(
        "focus-tiny-operands",
        "run",
        "cat eats fish",
        "-c",
        "m.yaml",
        "--focus",
        "cat",
        files={"m.yaml": TINY},
        expect="ok",
        check=checks.matches(r"e-0?9|e-12|×\s*10", absent="[0, 0]·"),
    ),
    kind(
        "focus-subnormal-operands",
        "run",
        "cat eats fish",
        "-c",
        "m.yaml",
        "--focus",
        "cat",
        files={"m.yaml": SUBNORMAL},
        expect="ok",
        check=checks.matches(r"e-3[0-2]\d|×\s*10"),
    ),
    kind(
        "focus-sum-cancels",
        "run",
        "cat eats",
        "-c",
        "m.yaml",
        "--focus",
        "cat",
        files={"m.yaml": CANCELS},
        expect="ok",
    ),
    kind(
        "export-dangling-symlink",
        "run",
        "-s",
        "causal",
        "--export",
        "out.html",
        files={"out.html": link_to("target.html")},
        expect="either",
        never=("no such folder",),
        check=checks.file_written("out.html"),
    ),
    kind("export-unwritable-html", "run", "-s", "causal", "--export", "/sys/x.html"),
    kind("export-unwritable-svg", "run", "-s", "causal", "--export", "/sys/x.svg"),
    kind("export-unwritable-txt", "run", "-s", "causal", "--export", "/sys/x.txt"),
    kind("export-unwritable-decode", "decode", "-s", "causal", "--export", "/sys/x.html"),
    kind(
        "export-unwritable-grad", "grad", "-s", "causal", *ATTEND_CAUSAL, "--export", "/sys/x.html"
    ),
    kind("export-unwritable-flash", "flash", "-s", "causal", "--export", "/sys/x.html"),
    kind(
        "export-unwritable-diff",
        "diff",
        "-s",
        "causal",
        "--set",
        "causal=false",
        "--export",
        "/sys/x.html",
    ),
    kind(
        "save-unwritable-train",
        "train",
        "-s",
        "causal",
        "--steps",
        "1",
        *ATTEND_CAUSAL,
        "--save",
        "/sys/x.yaml",
    ),
    kind(
        "export-directory-svg",
        "run",
        "-s",
        "causal",
        "--export",
        "d.svg",
        files={"d.svg": directory},
    ),
    kind(
        "export-directory-html",
        "run",
        "-s",
        "causal",
        "--export",
        "d.html",
        files={"d.html": directory},
    ),
    kind(
        "export-directory-txt",
        "run",
        "-s",
        "causal",
        "--export",
        "d.txt",
        files={"d.txt": directory},
    ),
    kind(
        "export-directory-grad",
        "grad",
        "-s",
        "causal",
        *ATTEND_CAUSAL,
        "--export",
        "d.html",
        files={"d.html": directory},
    ),
    kind(
        "export-directory-flash",
        "flash",
        "-s",
        "causal",
        "--export",
        "d.html",
        files={"d.html": directory},
    ),
    kind(
        "export-directory-decode",
        "decode",
        "-s",
        "causal",
        "--export",
        "d.html",
        files={"d.html": directory},
    ),
    kind(
        "save-directory-train",
        "train",
        "-s",
        "causal",
        "--steps",
        "1",
        *ATTEND_CAUSAL,
        "--save",
        "d.yaml",
        files={"d.yaml": directory},
    ),
    *[
        kind(
            f"max-file-mb-abc-{name}",
            *argv,
            env={"ATTNTRACE_MAX_FILE_MB": "abc"},
            says=("ATTNTRACE_MAX_FILE_MB",),
        )
        for name, argv in NO_FILE_COMMANDS.items()
    ],
]


KINDS: list[Kind] = [*SURROGATES, *API, *SMALL]
