"""The cases of issue 29, each as a kind (I): memory past the budget (scaled to 256 MiB),
files that lie about their size or shrink while mapped, headers numpy chokes on."""

from __future__ import annotations

import json
from typing import Any

from hostile.makers import (
    LONG_SENTENCE,
    MODEL,
    f64_tensor,
    npy,
    npy_of,
    npy_raw,
    npz,
    safetensors,
    sparse_npy,
    tall_json,
)
from hostile.runner import Kind, kind

BUDGET = ("ATTNTRACE_MAX_MEMORY_MB",)
ATTEND = ("--from", "cat", "--to", "fish")  # grad's and train's loss, where no target is

# ----------------------------------------------------------- 1. memory past the budget

# A sparse int8 .npy of 16000 × 16000 (244 MiB on paper, nothing on disk).
BIG = sparse_npy(16000, 16000)
SMALL_WITH_BIG_WQ = MODEL.replace("WQ: [[1, 0], [0, 1]]", "WQ: big.npy")
VOCABULARY = "[" + ", ".join(f"t{i}" for i in range(16000)) + "]"
FIVE_TIMES = (
    f"embeddings: big.npy\nvocabulary: {VOCABULARY}\n"
    "weights: {WQ: big.npy, WK: big.npy, WV: big.npy, WO: big.npy}\n"
)
FIVE = {"model.yaml": FIVE_TIMES, "big.npy": BIG}


# From a fresh-eyes run: WQ and WK 2 × 200,000 (three tokens, d_k 200,000) took a command
# to 2.5-5 times its estimate, labels and copies of the rows uncounted. Each runs with
# the budget just past its own estimate: taken at that budget, it must stay within it.
WIDE = "embeddings: {cat: [1, 2], eats: [3, 1], fish: [2, 4]}\nsentence: cat eats fish\n"
WIDE += "weights: {WQ: wide.npy, WK: wide.npy, WV: [[0, 1], [1, 0]]}\n"
WIDE_FILES = {"model.yaml": WIDE, "wide.npy": sparse_npy(2, 200_000)}
WIDE_COMMANDS = {  # the budget in MiB: each command's estimate, and a MiB
    "run": (("run",), 35),
    "run-focus": (("run", "--focus", "cat"), 108),
    "decode": (("decode",), 73),
    "flash": (("flash",), 35),
    "grad": (("grad", *ATTEND), 135),
    "diff-set": (("diff", "--set", "WQ[0][0]=1"), 115),
    "train": (("train", "--steps", "2", *ATTEND), 254),
}


def wide(name: str) -> Kind:
    argv, budget = WIDE_COMMANDS[name]
    return kind(
        f"npy-wide-dk-200000-{name}",
        *argv,
        "-c",
        "model.yaml",
        expect="ok",
        verdicts=(0, 1),
        files=WIDE_FILES,
        budget_mb=budget,
    )


# From the same run: 2,048 heads of width 1 (WQ..WO 2,048 × 2,048) over three tokens,
# each head's stages and slices of the weights uncounted, at its own estimate.
HEADS = "embeddings: he.npy\nvocabulary: [cat, eats, fish]\nsentence: cat eats fish\n"
HEADS += "heads: 2048\nweights: {WQ: hw.npy, WK: hw.npy, WV: hw.npy, WO: hw.npy}\n"
HEADS_FILES = {
    "model.yaml": HEADS,
    "he.npy": sparse_npy(3, 2048, "<f4"),
    "hw.npy": sparse_npy(2048, 2048, "<f4"),
}


def many_heads(name: str, budget: int, *extra: str) -> Kind:
    return kind(
        f"npy-2048-heads-{name}",
        "run",
        "-c",
        "model.yaml",
        *extra,
        expect="ok",
        files=HEADS_FILES,
        budget_mb=budget,
    )


def sixteen_thousand(command: str, *extra: str) -> Kind:
    return kind(
        f"npy-int8-16000-five-times-{command}{''.join(extra)}",
        command,
        "t0 t1",
        "-c",
        "model.yaml",
        *extra,
        files=FIVE,
        says=BUDGET,
    )


def long_sentence(name: str, *argv: str, **options: object) -> Kind:
    """9,300 tokens of the built-in model: a trace past 256 MiB, refused before work."""
    return kind(f"tokens-9300-{name}", *argv, says=BUDGET, timeout=90, **options)


D1 = "embeddings:\n  cat: [1]\n  eats: [2]\nweights: {WQ: [[1]], WK: [[1]], WV: [[1]]}\n"

MEMORY = [
    kind(
        "npy-int8-16000-as-WQ-of-d2",
        "run",
        "-c",
        "model.yaml",
        files={"model.yaml": SMALL_WITH_BIG_WQ, "big.npy": BIG},
    ),
    sixteen_thousand("run"),
    sixteen_thousand("run", "--json"),
    sixteen_thousand("grad", "--from=t0", "--to=t1"),
    sixteen_thousand("flash"),
    sixteen_thousand("decode"),
    sixteen_thousand("train", "--steps=1", "--from=t0", "--to=t1"),
    sixteen_thousand("diff", "--set=causal=true"),
    *(wide(name) for name in WIDE_COMMANDS),
    many_heads("run", 162),
    many_heads("json", 293, "--json"),
    kind(
        "tall-json-d2000000-run",
        "run",
        "cat eats",
        "-c",
        "tall.json",
        expect="either",
        files={"tall.json": tall_json(2_000_000)},
        timeout=30,
    ),
    kind(
        "tall-json-d2000000-json",
        "run",
        "cat eats",
        "-c",
        "tall.json",
        "--json",
        expect="either",
        files={"tall.json": tall_json(2_000_000)},
        timeout=30,
    ),
    kind(
        "tall-json-d400000-grad",
        "grad",
        "cat eats",
        "-c",
        "tall.json",
        "--from",
        "cat",
        "--to",
        "eats",
        expect="either",
        files={"tall.json": tall_json(400_000)},
        timeout=30,
    ),
    long_sentence("run", "run", LONG_SENTENCE),
    long_sentence("run-json", "run", LONG_SENTENCE, "--json"),
    long_sentence("run-map", "run", LONG_SENTENCE, "--map"),
    long_sentence("run-overview", "run", LONG_SENTENCE, "--overview"),
    long_sentence("run-focus", "run", LONG_SENTENCE, "--focus", "cat"),
    long_sentence("run-float16", "run", LONG_SENTENCE, "--dtype", "float16"),
    long_sentence("run-bfloat16-json", "run", LONG_SENTENCE, "--dtype", "bfloat16", "--json"),
    long_sentence("run-export", "run", LONG_SENTENCE, "--export", "page.html"),
    long_sentence("diff-set", "diff", LONG_SENTENCE, "--set", "WQ[0][0]=2"),
    long_sentence("grad", "grad", LONG_SENTENCE, *ATTEND),
    long_sentence("grad-json", "grad", LONG_SENTENCE, "--json", *ATTEND),
    long_sentence("flash", "flash", LONG_SENTENCE),
    long_sentence("flash-json", "flash", LONG_SENTENCE, "--json"),
    long_sentence("decode", "decode", LONG_SENTENCE),
    long_sentence("train", "train", LONG_SENTENCE, "--steps", "1", *ATTEND),
    long_sentence(
        "config-run-json", "run", LONG_SENTENCE, "-c", "m.yaml", "--json", files={"m.yaml": MODEL}
    ),
    long_sentence("stdin-config", "run", LONG_SENTENCE, "-c", "-", stdin=MODEL.encode()),
    kind(
        "check-Q-1x3000000-d1",
        "check",
        "arrays.safetensors",
        "cat eats",
        "-c",
        "m.yaml",
        files={"m.yaml": D1, "arrays.safetensors": f64_tensor("Q", [1, 3_000_000])},
        budget_mb=16,
    ),
    kind(
        "check-Q-1x3000000-npz",
        "check",
        "arrays.npz",
        "cat eats",
        "-c",
        "m.yaml",
        files={"m.yaml": D1, "arrays.npz": npz({"Q": npy("(1, 3000000)", body=bytes(24_000_000))})},
        budget_mb=16,
    ),
    kind(
        "check-scores-2000x2000-differs",
        "check",
        "arrays.safetensors",
        "cat eats",
        "-c",
        "m.yaml",
        budget_mb=16,
        files={"m.yaml": D1, "arrays.safetensors": f64_tensor("scores", [2000, 2000])},
    ),
    kind(
        "check-scores-2000x2000-npz",
        "check",
        "arrays.npz",
        "cat eats",
        "-c",
        "m.yaml",
        budget_mb=16,
        files={
            "m.yaml": D1,
            "arrays.npz": npz({"scores": npy("(2000, 2000)", body=bytes(32_000_000))}),
        },
    ),
    kind(
        "decode-model-file-600-tokens",
        "decode",
        " ".join(["cat eats fish"] * 200),
        "-c",
        "m.yaml",
        expect="either",
        timeout=60,
        files={"m.yaml": MODEL},
    ),
]

# ------------------------------------------- 2. files that hold less than they claim

SHORT = [
    kind(
        "npy-shorter-than-its-header",
        "run",
        "-c",
        "m.yaml",
        files={
            "m.yaml": MODEL.replace("WQ: [[1, 0], [0, 1]]", "WQ: q.npy"),
            "q.npy": npy("(2, 2)", body=b"\0" * 8),
        },
    ),
    kind(
        "npz-member-shorter-than-its-header",
        "check",
        "a.npz",
        "-s",
        "the-cat-sat",
        files={"a.npz": npz({"Q": npy("(3, 2)", body=b"\0" * 8)})},
    ),
    kind(
        "safetensors-shorter-than-its-offsets",
        "check",
        "a.safetensors",
        "-s",
        "the-cat-sat",
        files={"a.safetensors": f64_tensor("Q", [3, 2], count=1)},
    ),
]

# A file shortened while it is mapped, made deterministic: numpy's own np.load and
# np.memmap are wrapped (in the child, by ``python -c``) so that the file is cut to a few
# bytes right after attntrace maps it, as ``np.save`` does when another process saves
# over it. Reading the lost pages then is SIGBUS unless attntrace reads rather than maps,
# or guards its map. The data lie past the first page, where the cut is felt.
CUT_AFTER_NP_LOAD = """
_load = np.load
def load(file, *args, **kwargs):
    array = _load(file, *args, **kwargs)
    if kwargs.get("mmap_mode"):
        os.truncate(file, 16)
    return array
np.load = load
"""
CUT_AFTER_NP_MEMMAP = """
_memmap = np.memmap
def memmap(file, *args, **kwargs):
    mapped = _memmap(file, *args, **kwargs)
    name = getattr(file, "name", file)  # a path, or the descriptor of a read-only file
    os.truncate(os.readlink(f"/proc/self/fd/{name}") if isinstance(name, int) else name, 16)
    return mapped
np.memmap = memmap
"""


def cut_while_mapped(id: str, hook: str, *argv: str, **options: Any) -> Kind:
    code = (
        "import os, sys\nimport numpy as np\n"
        + hook
        + f"sys.argv = ['attntrace', *{argv!r}]\n"
        + "from attntrace.cli import main\nmain()\n"
    )
    return kind(id, python=code, expect="either", **options)


TOKENS = [f"t{i}" for i in range(2000)]
EMBEDDINGS_NPY = f"embeddings: emb.npy\nvocabulary: {TOKENS}\n" + MODEL[MODEL.index("weights") :]
Q_HEADER = {"Q": {"dtype": "F64", "shape": [3, 2], "data_offsets": [0, 48]}}
Q_PAST_A_PAGE = safetensors(json.dumps(Q_HEADER).encode().ljust(5000), bytes(48))
SHRUNK = [
    cut_while_mapped(
        "cut-while-mapped-npy-run",
        CUT_AFTER_NP_LOAD,
        "run",
        "t0 t1",
        "-c",
        "m.yaml",
        files={"m.yaml": EMBEDDINGS_NPY, "emb.npy": npy_of([[1.0, 2.0]] * 2000)},
    ),
    cut_while_mapped(
        "cut-while-mapped-safetensors-check",
        CUT_AFTER_NP_MEMMAP,
        "check",
        "a.safetensors",
        "-s",
        "the-cat-sat",
        files={"a.safetensors": Q_PAST_A_PAGE},
        verdicts=(0, 1),
    ),
]

# ----------------------------------------------------- 3. headers numpy cannot take

NPY_HEADERS = {
    "tokenize-error-open-paren": "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2",
    "tokenize-error-open-string": "{'descr': '<f8', 'fortran_order': False, 'shape': '''(2, 2)",
    "shape-10e400": "{'descr': '<f8', 'fortran_order': False, 'shape': ("
    + "1"
    + "0" * 400
    + ", 2), }",
    "shape-2e62": "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }",
    "shape-negative": "{'descr': '<f8', 'fortran_order': False, 'shape': (-2, 2), }",
    "shape-float": "{'descr': '<f8', 'fortran_order': False, 'shape': (2.0, 2), }",
    "descr-object": "{'descr': '|O', 'fortran_order': False, 'shape': (2, 2), }",
    "descr-unknown": "{'descr': '<x9', 'fortran_order': False, 'shape': (2, 2), }",
    "not-a-dict": "[1, 2, 3]",
    "call-in-header": "{'descr': __import__('os').system('true'), 'shape': (2, 2)}",
}


def npy_in_model(name: str, header: str) -> Kind:
    return kind(
        f"npy-header-{name}-as-WQ",
        "run",
        "-c",
        "m.yaml",
        files={
            "m.yaml": MODEL.replace("WQ: [[1, 0], [0, 1]]", "WQ: q.npy"),
            "q.npy": npy_raw(header, b"\0" * 64),
        },
    )


def npy_in_check(name: str, header: str) -> Kind:
    return kind(
        f"npz-member-header-{name}",
        "check",
        "a.npz",
        "-s",
        "the-cat-sat",
        files={"a.npz": npz({"Q": npy_raw(header, b"\0" * 64)})},
    )


HEADERS = [npy_in_model(n, h) for n, h in NPY_HEADERS.items()] + [
    npy_in_check(n, h) for n, h in NPY_HEADERS.items()
]

KINDS: list[Kind] = [*MEMORY, *SHORT, *SHRUNK, *HEADERS]
