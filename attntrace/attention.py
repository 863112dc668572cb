"""ModelSpec + tokens -> Trace: scaled dot-product attention, one stage at a time.

    Attention(Q, K, V) = softmax(Q · Kᵀ / √d_k) · V          (Vaswani et al. 2017, eq. 1)

Each stage's formula is written once, here, next to the line that computes it; the
tables, step mode and JSON all show this same string.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attntrace.errors import InputError
from attntrace.ops import Matrix, softmax
from attntrace.spec import ModelSpec
from attntrace.trace import ModelInfo, Stage, Trace, weight_title


def dims(width: int) -> tuple[str, ...]:
    """Column labels for an axis that runs over dimensions: d0, d1, ..."""
    return tuple(f"d{i}" for i in range(width))


def trace_head(model: ModelSpec, tokens: Sequence[str]) -> Trace:
    """Trace one head of self-attention over ``tokens``.

    Raises :class:`InputError` for unknown tokens, an empty sentence, or arithmetic that
    overflows float64 (a stage with ±inf or NaN is never returned).
    """
    words = tuple(tokens)
    stages: list[Stage] = []

    def add(name: str, formula: str, data: Matrix, cols: tuple[str, ...]) -> Matrix:
        _require_finite(name, data, words, cols)
        head = None if name == "X" else 0
        kv_head = None if name == "X" else 0
        stages.append(Stage(name, formula, words, cols, data, head=head, kv_head=kv_head))
        return data

    with np.errstate(over="ignore", invalid="ignore"):
        # [n, d_model]
        X = add("X", "X = embeddings", model.embed(words), dims(model.d_model))
        # [n, d_model] · [d_model, d_k] -> [n, d_k]
        Q = add("Q", "Q = X · WQ", X @ model.WQ, dims(model.d_k))
        K = add("K", "K = X · WK", X @ model.WK, dims(model.d_k))
        # [n, d_model] · [d_model, d_v] -> [n, d_v]
        V = add("V", "V = X · WV", X @ model.WV, dims(model.d_v))
        # [n, d_k] · [d_k, n] -> [n, n]
        scores = add("scores", "scores = Q · Kᵀ", Q @ K.T, words)
        scaled = add("scaled", "scaled = scores / √d_k", scores / np.sqrt(model.d_k), words)
        # row-wise, max-shifted: [n, n] -> [n, n]
        weights = add(
            "softmax", "softmax = exp(scaled − row max) / row sum", softmax(scaled), words
        )
        # [n, n] · [n, d_v] -> [n, d_v]
        add("output", "output = softmax · V", weights @ V, dims(model.d_v))

    info = ModelInfo(
        name=model.name,
        d_model=model.d_model,
        d_k=model.d_k,
        d_v=model.d_v,
        description=model.description,
    )
    return Trace(model=info, tokens=words, stages=tuple(stages), weights=weight_stages(model))


def weight_stages(model: ModelSpec) -> tuple[Stage, ...]:
    """The learned matrices, labelled like stages, so a reader can check Q = X · WQ."""
    d_model = dims(model.d_model)
    return tuple(
        Stage(name, weight_title(name), d_model, dims(matrix.shape[1]), matrix)
        for name, matrix in (("WQ", model.WQ), ("WK", model.WK), ("WV", model.WV))
    )


def _require_finite(name: str, data: Matrix, rows: tuple[str, ...], cols: tuple[str, ...]) -> None:
    """Refuse a stage whose float64 arithmetic overflowed (inf, or NaN from inf − inf)."""
    if not np.all(np.isfinite(data)):
        bad_rows, bad_cols = np.nonzero(~np.isfinite(data))
        i, j = int(bad_rows[0]), int(bad_cols[0])
        raise InputError(
            f"float64 overflowed to {data[i, j]} at row {rows[i]!r}, column {cols[j]!r}; "
            "scale the embeddings or weights down",
            field=f"stage {name}",
        )
