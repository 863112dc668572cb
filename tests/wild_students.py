"""The wild students of tests/wild/: found by their headers, loaded, and held to loops.

tests/wild/grade/ holds single-head ``attention(X, WQ, WK, WV, causal=False)`` functions
and tests/wild/check/ modules with ``arrays(model, sentence)``, written blind (without
reading attntrace/checking/) from bugs in public code, each citing its source. A file's
``# expect:`` line names the catalogue id it should be diagnosed with (or ``correct``);
a check student's ``# model:`` line names the sample it is checked on (``MODEL``: the
module's own ``MODEL`` dict). Adding a file adds its tests.

``loops`` is attention written as plain loops over heads, rows and keys, with each bug a
switch, from the mistakes' definitions in docs/check.md: the tests hold every student to
it (the correct ones with no switch, each buggy one with its own), so a test that says
"check names this cause" hands over numbers that really have that cause.
"""

from __future__ import annotations

import importlib.util
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml
from paths import ROOT, SAMPLES

WILD = ROOT / "tests" / "wild"


@dataclass(frozen=True)
class Student:
    """One file of tests/wild/: its path, the id it expects, the model it is checked on."""

    path: Path
    expect: str
    model: str | None

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def uses_torch(self) -> bool:
        return bool(re.search(r"^import torch", self.path.read_text(encoding="utf-8"), re.M))


def _header(text: str, key: str) -> str | None:
    found = re.search(rf"^# {key}: *(\S+)", text, re.M)
    return found.group(1) if found else None


def students(kind: str) -> list[Student]:
    """The students of tests/wild/KIND/ (``grade`` or ``check``), by file name."""
    found = []
    for path in sorted((WILD / kind).glob("*.py")):
        text = path.read_text(encoding="utf-8")
        expect = _header(text, "expect")
        assert expect is not None, f"{path} has no '# expect:' line"
        found.append(Student(path, expect, _header(text, "model")))
    return found


def load(student: Student) -> ModuleType:
    """Import a student's file as a module of its own (they are not a package)."""
    spec = importlib.util.spec_from_file_location(f"wild_{student.name}", student.path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Yaml12(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2's booleans: `on`, `no`, `yes` stay strings, as
    attntrace reads them (docs/model-file.md, YAML), so the causal sample's token `on` is
    a token and not True."""


_Yaml12.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def sample(name: str) -> dict[str, Any]:
    """A shipped sample's model file as the plain dict a student reads."""
    text = (SAMPLES / f"{name}.yaml").read_text("utf-8")
    document: dict[str, Any] = yaml.load(text, Loader=_Yaml12)
    return document


def model_of(student: Student, module: ModuleType) -> dict[str, Any]:
    """The model a check student is checked on: a sample, or the module's own MODEL."""
    assert student.model is not None, f"{student.path} has no '# model:' line"
    if student.model == "MODEL":
        model: dict[str, Any] = module.MODEL
        return model
    return sample(student.model)


# --- attention as loops, each mistake a switch -------------------------------------------

Grid = list[list[float]]
Visible = Callable[[int, int], bool]


def causal_mask(i: int, j: int) -> bool:
    return j <= i


@dataclass(frozen=True)
class Bug:
    """The switches of ``loops``; the defaults compute attention right.

    divisor(d_k, m, d_model) scales the scores; visible(i, j) is the mask (None: the
    model's own, j ≤ i when causal, else every key; ``everything`` for none at all);
    fill is what a hidden cell holds before the softmax; empty is what a row that sees
    nothing becomes ("nan": −∞ everywhere; "zeros": torch SDPA's outcome); softmax runs
    along "rows", down "columns" or across "heads"; split "interleaved" gives head h the
    columns h, h + H, ...; kv "tiled" gives query head h K/V head h mod kv_heads;
    transposed_weights multiplies V by softmaxᵀ; mask_after_softmax normalises every key
    and then zeroes the hidden weights; concat "no-transpose" reshapes
    [H, n, d_v] to [n, H·d_v] as it lies; scores_transposed computes K·Qᵀ.
    """

    divisor: Callable[[int, int, int], float] = lambda d_k, m, d_model: math.sqrt(d_k)
    visible: Visible | None = None
    fill: float = -math.inf
    empty: str = "nan"
    softmax: str = "rows"
    split: str = "right"
    kv: str = "interleaved"
    transposed_weights: bool = False
    concat: str = "right"
    scores_transposed: bool = False
    dtype_overflow: float = math.inf  # exp(x) is ∞ past this (88.72 in float32)
    unstable: bool = False
    mask_after_softmax: bool = False


def _matmul(a: Grid, b: Grid) -> Grid:
    return [
        [sum(a[i][t] * b[t][j] for t in range(len(b))) for j in range(len(b[0]))]
        for i in range(len(a))
    ]


def _columns(matrix: Grid, heads: int, h: int, split: str) -> list[int]:
    width = len(matrix[0]) // heads
    if split == "interleaved":
        return [t * heads + h for t in range(width)]
    return list(range(h * width, (h + 1) * width))


def _pick(matrix: Grid, columns: Sequence[int]) -> Grid:
    return [[row[c] for c in columns] for row in matrix]


def _exp(x: float, bug: Bug) -> float:
    return math.inf if x > bug.dtype_overflow else math.exp(x)


def _normalise(cells: list[float], bug: Bug) -> list[float]:
    """Softmax of one line of cells (−∞ for hidden), stable unless the bug says not."""
    finite = [c for c in cells if c != -math.inf]
    if not finite:
        return [math.nan] * len(cells)
    top = 0.0 if bug.unstable else max(finite)
    e = [0.0 if c == -math.inf else _exp(c - top, bug) for c in cells]
    total = sum(e)
    return [x / total if total not in (0.0, math.inf) else math.nan for x in e]


def _softmax(scaled: list[Grid], bug: Bug) -> list[Grid]:
    H, n, m = len(scaled), len(scaled[0]), len(scaled[0][0])
    out = [[[0.0] * m for _ in range(n)] for _ in range(H)]
    if bug.softmax == "rows":
        for h in range(H):
            for i in range(n):
                out[h][i] = _normalise(scaled[h][i], bug)
    elif bug.softmax == "columns":
        for h in range(H):
            for j in range(m):
                column = _normalise([scaled[h][i][j] for i in range(n)], bug)
                for i in range(n):
                    out[h][i][j] = column[i]
    else:  # heads
        for i in range(n):
            for j in range(m):
                across = _normalise([scaled[h][i][j] for h in range(H)], bug)
                for h in range(H):
                    out[h][i][j] = across[h]
    return out


def everything(i: int, j: int) -> bool:
    return True


def _visible(bug: Bug, causal: bool) -> Visible | None:
    return bug.visible or (causal_mask if causal else None)


def _masked(scaled: list[Grid], bug: Bug, causal: bool) -> list[Grid]:
    visible = _visible(bug, causal)
    if visible is None:
        return scaled
    return [
        [
            [c if visible(i, j) else bug.fill for j, c in enumerate(row)]
            for i, row in enumerate(head)
        ]
        for head in scaled
    ]


def _empty_rows(weights: list[Grid], masked: list[Grid], bug: Bug) -> list[Grid]:
    """A row that sees nothing: NaN after a −∞ fill, or SDPA's zeros."""
    if bug.empty != "zeros":
        return weights
    return [
        [
            [0.0] * len(row) if all(c == -math.inf for c in masked[h][i]) else row
            for i, row in enumerate(head)
        ]
        for h, head in enumerate(weights)
    ]


def loops(
    X: Grid,
    WQ: Grid,
    WK: Grid,
    WV: Grid,
    *,
    heads: int = 1,
    kv_heads: int | None = None,
    context: Grid | None = None,
    WO: Grid | None = None,
    causal: bool = False,
    bug: Bug = Bug(),
) -> dict[str, Any]:
    """Every stage of (buggy) attention, heads first, as plain Python lists."""
    kv_heads = kv_heads or heads
    source = context if context is not None else X
    Qf, Kf, Vf = _matmul(X, WQ), _matmul(source, WK), _matmul(source, WV)
    n, m, d_model = len(X), len(source), len(X[0])
    group = heads // kv_heads
    scaled, Vs = [], []
    for h in range(heads):
        g = h % kv_heads if bug.kv == "tiled" else h // group
        Q = _pick(Qf, _columns(Qf, heads, h, bug.split))
        K = _pick(Kf, _columns(Kf, kv_heads, g, bug.split))
        Vs.append(_pick(Vf, _columns(Vf, kv_heads, g, bug.split)))
        d_k = len(Q[0])
        a, b = (K, Q) if bug.scores_transposed else (Q, K)
        divisor = bug.divisor(d_k, m, d_model)
        scaled.append(
            [
                [sum(a[i][t] * b[j][t] for t in range(d_k)) / divisor for j in range(m)]
                for i in range(n)
            ]
        )
    masked = _masked(scaled, bug, causal)
    weights = _empty_rows(_softmax(masked, bug), masked, bug)
    visible = _visible(bug, causal)
    if bug.mask_after_softmax and visible is not None:
        weights = [
            [[w if visible(i, j) else 0.0 for j, w in enumerate(row)] for i, row in enumerate(head)]
            for head in _softmax(scaled, bug)
        ]
    output = []
    for h in range(heads):
        W, V = weights[h], Vs[h]
        d_v = len(V[0])
        if bug.transposed_weights:
            output.append(
                [[sum(W[j][i] * V[j][t] for j in range(m)) for t in range(d_v)] for i in range(n)]
            )
        else:
            output.append(
                [[sum(W[i][j] * V[j][t] for j in range(m)) for t in range(d_v)] for i in range(n)]
            )
    if bug.concat == "no-transpose":
        flat = [x for head in output for row in head for x in row]
        width = len(flat) // n
        concat = [flat[i * width : (i + 1) * width] for i in range(n)]
    else:
        concat = [[x for h in range(heads) for x in output[h][i]] for i in range(n)]
    stages: dict[str, Any] = {
        "scaled": scaled,
        "masked": masked,
        "softmax": weights,
        "output": output,
        "concat": concat,
    }
    if WO is not None:
        stages["projected"] = _matmul(concat, WO)
    return stages


def model_loops(model: dict[str, Any], bug: Bug = Bug()) -> dict[str, Any]:
    """``loops`` for a model dict (its sentence, context, heads and causal flag)."""
    table = model["embeddings"]

    def embed(text: str) -> Grid:
        return [
            [float(x) for x in (table[w] if w in table else table[w.lower()])] for w in text.split()
        ]

    def matrix(name: str) -> Grid | None:
        given = model["weights"].get(name)
        return None if given is None else [[float(x) for x in row] for row in given]

    context = model.get("context")
    WQ, WK, WV = matrix("WQ"), matrix("WK"), matrix("WV")
    assert WQ is not None
    assert WK is not None
    assert WV is not None
    return loops(
        embed(model["sentence"]),
        WQ,
        WK,
        WV,
        heads=int(model.get("heads", 1)),
        kv_heads=model.get("kv_heads"),
        context=embed(context) if context else None,
        WO=matrix("WO"),
        causal=bool(model.get("causal", False)),
        bug=bug,
    )
