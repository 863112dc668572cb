"""The process's surroundings: streams that cannot encode, bad environment values, closed
and full output streams, and a damaged user cache."""

from __future__ import annotations

import struct
from pathlib import Path

from hostile import checks
from hostile.makers import MODEL, directory, saved_trace, sparse
from hostile.runner import Kind, Make, kind, materialize

from attntrace.real.catalog import CATALOG

# ------------------------------------------- 3. streams that cannot encode the output

ENCODINGS = {
    "ascii": {"PYTHONIOENCODING": "ascii"},
    "latin-1": {"PYTHONIOENCODING": "latin-1"},
    "c-locale": {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"},
}
STEP_KEYS = b"\n" * 40


def saved(path: Path) -> None:
    import json

    path.write_text(json.dumps(saved_trace()), encoding="utf-8")


COMMANDS: dict[str, tuple[tuple[str, ...], dict[str, object]]] = {
    "run": (("run",), {}),
    "run-sample": (("run", "-s", "it-animal"), {}),
    "samples": (("samples",), {}),
    "samples-name": (("samples", "causal"), {}),
    "models": (("models",), {}),
    "kv-cache": (("kv-cache",), {}),
    "kv-cache-preset": (("kv-cache", "--preset", "llama2-70b"), {}),
    "softmax": (("softmax", "1", "2", "3"), {}),
    "softmax-online": (("softmax", "--online", "1", "-2"), {}),
    "focus": (("run", "--focus", "cat"), {}),
    "step": (("run", "--step"), {"stdin": STEP_KEYS}),
    "map": (("run", "--map"), {}),
    "overview": (("run", "--overview"), {}),
    "help": (("-h",), {}),
    "run-help": (("run", "-h"), {}),
    "version": (("--version",), {}),
    "render": (("render", "t.json"), {"files": {"t.json": saved}}),
    "decode": (("decode",), {}),
    "flash": (("flash",), {}),
    "grad": (("grad", "-s", "the-cat-sat", "--from", "sat", "--to", "cat"), {}),
    "train": (("train", "-s", "the-cat-sat", "--steps", "2", "--from", "sat", "--to", "cat"), {}),
    "scaling": (("scaling", "--samples", "10", "--max-dk", "4"), {}),
    "diff": (("diff", "--set", "causal=true"), {"verdicts": (0, 1)}),
    "export": (("run", "--export", "x.svg"), {"check": checks.file_written("x.svg")}),
    "error-line": (("run", "dog"), {"expect": "error"}),
}


def encoding(name: str, env: dict[str, str], command: str) -> Kind:
    argv, options = COMMANDS[command]
    return kind(f"encoding-{name}-{command}", *argv, env=env, **{"expect": "ok", **options})


ENCODING_KINDS = [
    encoding(name, env, command) for name, env in ENCODINGS.items() for command in COMMANDS
]

# ------------------------------------------------------- every ATTNTRACE_* variable

BAD_VALUES: dict[str, tuple[str | bytes, ...]] = {
    "ATTNTRACE_MAX_FILE_MB": ("abc", "-1", "0", "nan", "1e400", "inf", b"\xff", "2e30", "1,5"),
    "ATTNTRACE_MAX_MEMORY_MB": ("abc", "-1", "0", "nan", "1e400", "0.5", b"\xff", "2147483648"),
    "ATTNTRACE_MAX_TRACE_MB": ("abc", "-5", "nan", "1e400"),
    "ATTNTRACE_PROGRESS_AFTER": ("abc", "-1", "nan", "-inf", b"\xff", "1s"),
}
# Each bad value on a command that reads a file, and on one that reads none.
ON = {"config": ("run", "cat eats", "-c", "m.yaml"), "softmax": ("softmax", "1", "2")}


def bad_value(variable: str, value: str | bytes, on: str) -> Kind:
    shown = value.hex() if isinstance(value, bytes) else value
    env: dict[str, str | bytes] = {variable: value}
    if variable == "ATTNTRACE_MAX_TRACE_MB":
        env["ATTNTRACE_MAX_MEMORY_MB"] = ""  # the old name is read where the new is unset
    return kind(
        f"env-{variable.lower()}-{shown}-{on}",
        *ON[on],
        env=env,
        files={"m.yaml": MODEL},
        says=(variable,),
    )


ENV_KINDS = [
    bad_value(variable, value, on)
    for variable, values in BAD_VALUES.items()
    for value in values
    for on in ON
]
# Values that are in range: the run goes on.
GOOD_VALUES = [
    kind("env-progress-after-inf", "run", env={"ATTNTRACE_PROGRESS_AFTER": "inf"}, expect="ok"),
    kind("env-progress-after-0", "run", env={"ATTNTRACE_PROGRESS_AFTER": "0"}, expect="ok"),
    kind("env-max-file-mb-blank", "run", env={"ATTNTRACE_MAX_FILE_MB": "  "}, expect="ok"),
    kind("env-columns-0", "run", env={"COLUMNS": "0"}, expect="ok"),
    kind("env-columns-huge", "run", env={"COLUMNS": "100000000"}, expect="ok"),
    kind("env-columns-abc", "run", env={"COLUMNS": "abc"}, expect="ok"),
    kind("env-lines-minus", "run", "--step", env={"LINES": "-3"}, stdin=STEP_KEYS, expect="ok"),
    kind(
        "env-term-xterm-colour",
        "run",
        env={"TERM": "xterm-256color", "NO_COLOR": "", "FORCE_COLOR": "1"},
        expect="ok",
    ),
    kind("env-blas-threads-abc", "run", env={"OPENBLAS_NUM_THREADS": "abc"}, expect="ok"),
    kind(
        "env-max-file-too-small",
        "run",
        "-c",
        "m.yaml",
        files={"m.yaml": MODEL},
        env={"ATTNTRACE_MAX_FILE_MB": "0.0001"},
        says=("ATTNTRACE_MAX_FILE_MB",),
    ),
    kind(
        "env-max-memory-1-long",
        "run",
        " ".join(["cat"] * 600),
        env={"ATTNTRACE_MAX_MEMORY_MB": "1"},
        budget_mb=1,
        says=("ATTNTRACE_MAX_MEMORY_MB",),
    ),
]

# ---------------------------------------------------- output streams: closed, full

HEADS = {
    "run": ("run",),
    "run-json": ("run", "--json"),
    "run-map": ("run", "--map"),
    "samples": ("samples",),
    "samples-name": ("samples", "it-animal"),
    "models": ("models",),
    "kv-cache": ("kv-cache",),
    "softmax": ("softmax", "1", "2"),
    "scaling-json": ("scaling", "--json", "--samples", "10", "--max-dk", "4"),
    "decode-json": ("decode", "--json"),
    "flash": ("flash",),
    "grad-json": ("grad", "-s", "the-cat-sat", "--json", "--from", "sat", "--to", "cat"),
    "train-json": (
        "train",
        "-s",
        "the-cat-sat",
        "--steps",
        "3",
        "--json",
        "--from",
        "sat",
        "--to",
        "cat",
    ),
    "diff": ("diff", "--set", "causal=false"),
    "help": ("-h",),
}
PIPES = [kind(f"closed-pipe-{name}", *argv, head=1, expect="ok") for name, argv in HEADS.items()]
FULL = [
    kind("full-disk-run", "run", redirect=">/dev/full", exit=1, says=("cannot write",)),
    kind("full-disk-run-json", "run", "--json", redirect=">/dev/full", exit=1),
    kind("full-disk-samples", "samples", redirect=">/dev/full", exit=1),
    kind("full-disk-diff", "diff", "--set", "causal=true", redirect=">/dev/full", exit=2),
    kind("stdout-closed-run", "run", redirect=">&-", exit=1, says=("stdout is closed",)),
    kind("stdout-closed-softmax", "softmax", "1", redirect=">&-", exit=1),
    kind("stdin-closed-config", "run", "-c", "-", redirect="<&-"),
    kind("stdin-closed-render", "render", "-", redirect="<&-"),
    kind("stdin-closed-step", "run", "--step", redirect="<&-", expect="ok"),
    kind("stdin-dev-zero-config", "run", "-c", "-", redirect="</dev/zero"),
    kind("stdin-dev-zero-render", "render", "-", redirect="</dev/zero"),
    kind(
        "stdin-dev-zero-step",
        "run",
        "--step",
        redirect="</dev/zero",
        says=("stdin: a line of more than 4,096 characters",),
        shown_first=True,
    ),
]

# --------------------------------------------- 3. a damaged cache of verified files

REAL = "minilm"
INSTALLED = any(m.name == REAL and m.installed for m in CATALOG)


def cache_with(name: str, make: Make) -> Kind:
    """``run --model minilm`` with ``$XDG_CACHE_HOME/attntrace/verified.json`` damaged:
    ignored and written anew (or, without the weights, the usual missing-weights line)."""

    def setup(folder: Path) -> dict[str, str]:
        cache = folder / "cache" / "attntrace"
        cache.mkdir(parents=True)
        target = cache / "verified.json"
        materialize({target.name: make}, target.parent)
        return {"XDG_CACHE_HOME": str(folder / "cache")}

    return kind(
        f"cache-verified-{name}",
        "run",
        "--model",
        REAL,
        "the cat",
        setup=setup,
        expect="ok" if INSTALLED else "error",
        timeout=90,
    )


CACHE = [
    cache_with("nested-lists-3000", "[" * 3000 + "]" * 3000),
    cache_with("nested-objects-3000", '{"a":' * 3000 + "1" + "}" * 3000),
    cache_with("nested-lists-100000", "[" * 100_000 + "]" * 100_000),
    cache_with("binary", b"\x00\xff\xfe" * 100),
    cache_with("empty", ""),
    cache_with("a-list", "[1, 2, 3]"),
    cache_with("wrong-types", '{"files": {"x": 3}, "version": "a"}'),
    cache_with("directory", directory),
    cache_with("sparse-300mb", sparse(300 << 20)),
    cache_with("not-utf8", b'{"\xff": 1}'),
]

# Gemma 3's weight file, joined from its packages into the cache: a corrupt GGUF there is
# found by its hash and joined again (the header is never trusted before that).
GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
GEMMA = any(m.name == "gemma3" and m.installed for m in CATALOG)


def gemma_cache(name: str, make: Make, *, may_refuse: bool = False) -> Kind:
    def setup(folder: Path) -> dict[str, str]:
        materialize({f"cache/attntrace/{GEMMA_FILE}": make}, folder)
        return {"XDG_CACHE_HOME": str(folder / "cache")}

    return kind(
        f"cache-gemma-gguf-{name}",
        "run",
        "--model",
        "gemma3",
        "the cat",
        setup=setup,
        expect="either" if may_refuse else "ok" if GEMMA else "error",
        timeout=120,
    )


GGUF_CACHE = [
    gemma_cache("tensor-count-2e62", b"GGUF" + struct.pack("<IQQ", 3, 2**62, 0)),
    gemma_cache("metadata-count-2e62", b"GGUF" + struct.pack("<IQQ", 3, 0, 2**62)),
    gemma_cache("version-99", b"GGUF" + struct.pack("<IQQ", 99, 1, 1) + bytes(64)),
    gemma_cache("directory", directory, may_refuse=True),  # cannot be written: one line
]

KINDS: list[Kind] = [*ENCODING_KINDS, *ENV_KINDS, *GOOD_VALUES, *PIPES, *FULL, *CACHE, *GGUF_CACHE]
