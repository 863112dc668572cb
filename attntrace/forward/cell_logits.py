"""A head's cells from the scores to its output, as hand arithmetic (the stories of
:mod:`attntrace.forward.cell_story`, the second half).

A score is a dot product of a query row and a key row; a scaled score that score over
√d_k; ALiBi's bias, the soft cap and the mask each one step; a softmax weight an exp over
the row's sum of exps, the row's max subtracted first (the sink logit's exp joins the
sum); an output cell the value column weighted by the row's weights. What a masked cell
is, and why, is the mask's rule (:mod:`attntrace.kernel.masks`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from attntrace.forward.cell_terms import (
    SHORT,
    Cell,
    Teller,
    Term,
    Told,
    factor,
    figure,
    sum_line,
    term_lines,
)
from attntrace.kernel import masks
from attntrace.kernel.labels import unique_labels


def _hidden_why(cell: Cell, key: int) -> str | None:
    """Why the mask hides ``key`` from this cell's query (None: it sees it)."""
    model = cell.trace.model
    if not model.causal:
        return None
    variants = model.variants
    return masks.why_hidden(
        cell.row, key, causal=True, window=variants.window, sinks=variants.sinks
    )


def _tell_scores(cell: Cell) -> Told:
    """scores: the query row times the key row, one product per dimension."""
    q_name, k_name = cell.trace.model.score_inputs
    q, k = cell.same_head(q_name), cell.same_head(k_name)
    if q is None or k is None:
        return Told([f"{q_name} or {k_name} of this head is not in this trace"])
    terms = [
        Term(label, f"{figure(a)} × {factor(b)}", float(a * b))
        for label, a, b in zip(
            unique_labels(q.cols), q.data[cell.row], k.data[cell.col], strict=True
        )
    ]
    key = unique_labels(k.rows)[cell.col]
    lines = [
        f"{q_name}[{cell.row_label}] · {k_name}[{key}]: {len(terms)} products, one per dimension"
    ]
    why = _hidden_why(cell, cell.col)
    if why is not None:
        lines.append(f"(the mask will hide this key: {why.split(':')[0]})")
    lines += [*term_lines(terms), sum_line(terms)]
    return Told(lines, terms=tuple(t.value for t in terms))


def _tell_scaled(cell: Cell) -> Told:
    """scaled: the score over √d_k."""
    scores = cell.same_head("scores")
    if scores is None:
        return Told(["this head's scores are not in this trace"])
    d_k = cell.trace.model.d_k
    s, root = float(scores.data[cell.row, cell.col]), math.sqrt(d_k)
    return Told(
        [
            f"scores[{cell.row_label}, {cell.col_label}] / √d_k, with √{d_k} = {figure(root)}",
            f"{figure(s)} / {figure(root)} = {figure(s / root)}",
        ]
    )


def _slope(cell: Cell) -> float:
    model = cell.trace.model
    return model.variants.slopes(model.heads)[cell.stage.head or 0]


def _tell_alibi(cell: Cell) -> Told:
    """ALiBi: −m · |i − j|, the head's slope times how far the key is from the query."""
    m, i, j = _slope(cell), cell.row, cell.col
    return Told(
        [
            f"the query is at position {i}, the key at {j}: |i − j| = {abs(i - j)}",
            f"m = {masks.slope_text(m)}, head {cell.stage.head}'s slope (ALiBi)",
            f"−m · |i − j| = −{figure(m)} × {abs(i - j)} = {figure(-m * abs(i - j))}",
        ]
    )


def _tell_biased(cell: Cell) -> Told:
    """biased: the scaled score plus ALiBi's bias."""
    scaled, alibi = cell.same_head("scaled"), cell.same_head("alibi")
    if scaled is None or alibi is None:
        return Told(["this head's scaled scores or ALiBi's bias are not in this trace"])
    a = float(scaled.data[cell.row, cell.col])
    b = float(alibi.data[cell.row, cell.col])
    return Told([f"scaled + alibi = {figure(a)} + {factor(b)} = {figure(a + b)}"], terms=(a, b))


def _tell_capped(cell: Cell) -> Told:
    """capped: C · tanh(x / C), x the scaled (or biased) score."""
    source_name = "biased" if cell.same_head("biased") is not None else "scaled"
    source = cell.same_head(source_name)
    cap = cell.trace.model.variants.softcap
    if source is None or cap is None:
        return Told([f"this head's {source_name} scores or the cap are not in this trace"])
    x = float(source.data[cell.row, cell.col])
    c = f"{cap:g}"
    return Told(
        [
            f"x = {source_name}[{cell.row_label}, {cell.col_label}] = {figure(x)}, C = {c}",
            "a score far from 0 is pulled towards ±C; one near 0 barely moves",
            f"C · tanh(x / C) = {c} · tanh({figure(x / cap)}) = {c} × "
            f"{factor(math.tanh(x / cap))} = {figure(cap * math.tanh(x / cap))}",
        ]
    )


def _tell_masked(cell: Cell) -> Told:
    """masked: −∞ where the mask hides the key (and why), else the score unchanged."""
    model = cell.trace.model
    source_name = model.mask_source
    source = cell.same_head(source_name)
    why = _hidden_why(cell, cell.col)
    i, j = cell.row, cell.col
    if why is not None:
        return Told(
            [
                f"the query is at position {i}, the key at {j}",
                f"hidden: {why}",
                "so −∞: its exp is 0 and the softmax gives it no weight",
            ],
            hidden=why,
        )
    variants = model.variants
    seen = "visible: j ≤ i"
    if masks.kept_as_sink(i, j, window=variants.window, sinks=variants.sinks):
        seen = f"kept: a sink, visible however far back ({i - j} back)"
    elif variants.window is not None:
        seen += f", {i - j} back, within the window of {variants.window}"
    lines = [f"the query is at position {i}, the key at {j}", seen]
    if source is not None:
        x = float(source.data[i, j])
        lines.append(
            f"so {source_name}[{cell.row_label}, {cell.col_label}], unchanged = {figure(x)}"
        )
    return Told(lines)


@dataclass(frozen=True)
class _Row:
    """One row of softmax's input and what a person computes from it."""

    source: str  # the stage softmax read
    keys: list[str]
    x: npt.NDArray[np.float64]
    sink: float | None  # the head's sink logit
    top: float  # M: the row's max, or the sink logit where larger
    exps: list[float]  # exp(x − M), 0 where x is −∞
    sink_exp: float
    total: float  # Σ exps (+ the sink's)


def _softmax_row(cell: Cell) -> _Row | None:
    model = cell.trace.model
    source = cell.same_head(model.softmax_source)
    if source is None:
        return None
    x = source.data[cell.row]
    logits = model.variants.sink_logits(model.heads)
    sink = None if logits is None else logits[cell.stage.head or 0]
    finite = x[np.isfinite(x)]
    top = float(finite.max()) if finite.size else -math.inf
    if sink is not None:
        top = max(top, sink)
    exps = [0.0 if v == -math.inf else math.exp(float(v) - top) for v in x]
    sink_exp = 0.0 if sink is None else math.exp(sink - top)
    return _Row(
        source.name,
        unique_labels(source.cols),
        x,
        sink,
        top,
        exps,
        sink_exp,
        math.fsum([*exps, sink_exp]),
    )


def _max_line(row: _Row) -> str:
    if row.sink is None:
        return f"M = the row's max = {figure(row.top)}, subtracted first: every exp ≤ 1"
    return (
        f"M = the larger of the row's max and the sink logit {figure(row.sink)} = {figure(row.top)}"
    )


def _exp_terms(row: _Row) -> list[Term]:
    return [
        Term(key, "exp(−∞)" if v == -math.inf else f"exp({figure(v)} − M)", e)
        for key, v, e in zip(row.keys, row.x, row.exps, strict=True)
    ]


def _sum_lines(row: _Row, query: str) -> list[str]:
    terms = _exp_terms(row)
    lines = [f"the row's exps, exp(x − M), x = {row.source}[{query}, key]:", *term_lines(terms)]
    hidden = sum(1 for v in row.x if v == -math.inf)
    if hidden and len(terms) > SHORT:
        lines.append(f"  ({hidden} of the {len(terms)} keys are hidden by the mask: exp 0)")
    if row.sink is not None:
        lines.append(
            f"  sink  exp({figure(row.sink)} − M) = {figure(row.sink_exp)}  (no value: it only "
            "takes weight)"
        )
        keys = math.fsum(row.exps)
        lines.append(
            f"sum = {figure(keys)} + {figure(row.sink_exp)} (the sink's) = {figure(row.total)}"
        )
    else:
        lines.append(sum_line(terms))
    return lines


def _tell_softmax(cell: Cell) -> Told:
    """softmax: the key's exp over the row's sum of exps, the max subtracted first."""
    row = _softmax_row(cell)
    if row is None:
        return Told(["softmax's input row is not in this trace"])
    x = float(row.x[cell.col])
    why = _hidden_why(cell, cell.col)
    if x == -math.inf:
        reason = why or "masked"
        return Told(
            [
                f"x = {row.source}[{cell.row_label}, {cell.col_label}] = −∞",
                f"hidden: {reason}",
                "exp(−∞) = 0, so its weight is 0",
            ],
            hidden=reason,
        )
    e = row.exps[cell.col]
    lines = [
        _max_line(row),
        f"x = {row.source}[{cell.row_label}, {cell.col_label}] = {figure(x)}",
        f"exp(x − M) = exp({figure(x)} − {factor(row.top)}) = {figure(e)}",
        *_sum_lines(row, cell.row_label),
        f"share = exp / sum = {figure(e)} / {figure(row.total)} = {figure(e / row.total)}",
    ]
    return Told(lines, terms=tuple([*row.exps, row.sink_exp] if row.sink is not None else row.exps))


def _tell_sink(cell: Cell) -> Told:
    """sink: the sink logit's exp over the row's sum: weight that passes no value."""
    row = _softmax_row(cell)
    if row is None or row.sink is None:
        return Told(["softmax's input row or the sink logit is not in this trace"])
    return Told(
        [
            _max_line(row),
            f"exp(s − M) = exp({figure(row.sink)} − {factor(row.top)}) = {figure(row.sink_exp)}",
            *_sum_lines(row, cell.row_label),
            "weight that passes no value: the keys' weights sum to 1 − this",
            f"sink = {figure(row.sink_exp)} / {figure(row.total)} = "
            f"{figure(row.sink_exp / row.total)}",
        ],
        terms=(*row.exps, row.sink_exp),
    )


def _tell_output(cell: Cell) -> Told:
    """output: the V column weighted by the row's softmax weights, summed over the keys."""
    weights, values = cell.same_head("softmax"), cell.same_head("V")
    if weights is None or values is None:
        return Told(["this head's softmax or V is not in this trace"])
    w, v = weights.data[cell.row], values.data[:, cell.col]
    column = values.cols[cell.col]
    terms = [
        Term(key, f"{figure(a)} × {factor(b)}", float(a * b))
        for key, a, b in zip(unique_labels(weights.cols), w, v, strict=True)
    ]
    lines = [f"Σ over the {len(terms)} keys of softmax[{cell.row_label}, key] × V[key, {column}]:"]
    hidden = int(np.sum(w == 0))
    if hidden and cell.trace.model.causal:
        lines.append(f"({hidden} of the weights are 0: keys the mask hides pass nothing)")
    lines += [*term_lines(terms), sum_line(terms)]
    return Told(lines, terms=tuple(t.value for t in terms))


TELLERS: dict[str, Teller] = {
    "scores": _tell_scores,
    "scaled": _tell_scaled,
    "alibi": _tell_alibi,
    "biased": _tell_biased,
    "capped": _tell_capped,
    "masked": _tell_masked,
    "softmax": _tell_softmax,
    "sink": _tell_sink,
    "output": _tell_output,
}
