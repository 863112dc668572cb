"""Any cell of a gradient, spelled out as the chain rule's step a person would do.

The twin of :mod:`attntrace.forward.cell_story` for ``grad``'s stages
(:mod:`attntrace.learning.grad_trace`): the explorer's grad screen shows it for the
cell under the cursor. Each story reads the forward stages and the gradient the step
starts from, and writes the terms of that one step (``d_V[j, c] = Σᵢ softmax[i, j] ·
d_output[i, c]``; the softmax backward ``a_j · (dA_j − Σₖ a_k · dA_k)``; a weight's
gradient as X's column times the gradient's), every figure by the rule of
:mod:`attntrace.forward.cell_terms`. Tests hold the terms' sum to the backward pass's
own cell, and the softmax step to tests/naive_backward.py.
"""

from __future__ import annotations

import math

from attntrace.forward.cell_story import CellStory
from attntrace.forward.cell_terms import Told, factor, figure, value_line
from attntrace.kernel import fields
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Stage
from attntrace.learning.grad_cell_parts import (
    GradCell,
    GradTeller,
    missing,
    products,
    sums,
    tell_d_bias_of,
    tell_d_concat,
    tell_d_norm_weight,
    tell_d_weight,
    tell_d_wo,
    tell_d_x,
    tell_entering,
    tell_unknown,
)
from attntrace.learning.grad_trace import GradTrace


def grad_cell_story(grad: GradTrace, stage: Stage, row: int, col: int) -> CellStory:
    """The cell ``stage[row, col]`` of the gradient ``stage`` of ``grad`` as the chain
    rule's step. A row or column out of range is an :class:`InputError`."""
    rows, cols = stage.shape
    row = fields.index(row, "row", rows, f"a row of {stage.name}")
    col = fields.index(col, "col", cols, f"a column of {stage.name}")
    cell = GradCell(grad, stage, row, col)
    teller = TELLERS.get(stage.name, tell_unknown)
    told = teller(cell)
    value = float(stage.data[row, col])
    model = grad.forward.model
    whose = ""
    if stage.head is not None and model.heads > 1:
        whose = f", head {stage.head}"
    elif stage.kv_head is not None and model.kv_heads > 1:
        whose = f", K/V head {stage.kv_head}"
    return CellStory(
        stage=stage.name,
        head=stage.head,
        row=cell.row_label,
        col=cell.col_label,
        value=value,
        heading=f"{stage.name}[{cell.row_label}, {cell.col_label}]{whose}",
        formula=stage.formula,
        lines=(*told.lines, value_line(value)),
        terms=told.terms,
        hidden=told.hidden,
    )


def _tell_d_output(cell: GradCell) -> Told:
    """A head's d_output: its columns of d_concat, or back through WO, or the loss's."""
    model = cell.grad.forward.model
    head = cell.head or 0
    if model.heads > 1:
        d = cell.gradient("d_concat")
        if d is None:
            return missing("d_concat")
        column = head * model.d_v + cell.col
        x = float(d.data[cell.row, column])
        return Told(
            [
                f"head {head}'s columns of d_concat: column {d.cols[column]}",
                f"= d_concat[{cell.row_label}, {d.cols[column]}] = {figure(x)}",
            ]
        )
    if cell.grad.forward.weight("WO") is not None:
        return tell_d_concat(cell)
    return tell_entering(cell)


# ---- a head, backwards ---------------------------------------------------------------------


def _tell_d_v(cell: GradCell) -> Told:
    """d_V[j, c] = Σᵢ softmax[i, j] · d_output[i, c]; a shared K/V head's sums its heads'."""
    if cell.head is None:  # GQA, MQA: the sum over the query heads that read it
        heads = cell.grad.summed.get(cell.stage.kv_head or 0, ())
        parts = [cell.gradient(cell.stage.name, h) for h in heads]
        if any(p is None for p in parts):
            return missing(f"a head's {cell.stage.name}")
        return sums(
            f"Σ over query heads {', '.join(map(str, heads))} of their "
            f"{cell.stage.name}[{cell.row_label}, {cell.col_label}]:",
            [f"head {h}" for h in heads],
            [float(p.data[cell.row, cell.col]) for p in parts if p is not None],
        )
    a, d = cell.forward("softmax", cell.head), cell.gradient("d_output", cell.head)
    if a is None or d is None:
        return missing("softmax or d_output")
    return products(
        f"Σ over the {a.shape[0]} queries of softmax[i, {cell.row_label}] × "
        f"d_output[i, {d.cols[cell.col]}]:",
        unique_labels(a.rows),
        a.data[:, cell.row],
        d.data[:, cell.col],
    )


def _tell_d_softmax(cell: GradCell) -> Told:
    """d_softmax[i, j] = d_output[i] · V[j] (+ the loss's dL/dA at its cell)."""
    d, v = cell.gradient("d_output", cell.head), cell.forward("V", cell.head)
    if d is None or v is None:
        return missing("d_output or V")
    told = products(
        f"d_output[{cell.row_label}] · V[{cell.col_label}]: {d.shape[1]} products",
        list(d.cols),
        d.data[cell.row],
        v.data[cell.col],
    )
    loss = cell.grad.loss.loss.d_softmax
    direct = None if loss is None else loss[cell.head or 0]
    if direct is not None and direct[cell.row, cell.col] != 0:
        extra = float(direct[cell.row, cell.col])
        a = cell.forward("softmax", cell.head)
        weight = "" if a is None else f" = −1 / {figure(float(a.data[cell.row, cell.col]))}"
        return Told(
            [
                *told.lines,
                f"+ dL/dA here, the loss's own cell{weight} = {figure(extra)}",
                f"= {figure(math.fsum([*told.terms, extra]))}",
            ],
            terms=(*told.terms, extra),
        )
    return told


def _tell_softmax_back(cell: GradCell) -> Told:
    """Where the softmax backward lands: a_j · (dA_j − Σₖ a_k · dA_k)."""
    a, d = cell.forward("softmax", cell.head), cell.gradient("d_softmax", cell.head)
    if a is None or d is None:
        return missing("softmax or d_softmax")
    weights, grads = a.data[cell.row], d.data[cell.row]
    inner = products(
        f"Σₖ softmax[{cell.row_label}, k] × d_softmax[{cell.row_label}, k], over "
        f"{len(weights)} keys:",
        unique_labels(a.cols),
        weights,
        grads,
    )
    total = math.fsum(inner.terms)
    aj, dj = float(weights[cell.col]), float(grads[cell.col])
    return Told(
        [
            *inner.lines,
            f"softmax · (d_softmax − Σ) = {figure(aj)} × ({figure(dj)} − {factor(total)})",
            f"= {figure(aj)} × {factor(dj - total)} = {figure(aj * (dj - total))}",
        ],
        terms=inner.terms,
    )


def _tell_through_cap(cell: GradCell) -> Told:
    """Back through the soft cap: d_capped ∘ (1 − (capped / C)²)."""
    d, capped = cell.gradient("d_capped", cell.head), cell.forward("capped", cell.head)
    cap = cell.grad.forward.model.variants.softcap
    if d is None or capped is None or cap is None:
        return missing("d_capped or capped")
    g, y = float(d.data[cell.row, cell.col]), float(capped.data[cell.row, cell.col])
    slope = 1 - (y / cap) ** 2
    return Told(
        [
            f"the cap's slope: 1 − (capped / {cap:g})² = 1 − ({figure(y)} / {cap:g})² "
            f"= {figure(slope)}",
            f"d_capped × slope = {figure(g)} × {factor(slope)} = {figure(g * slope)}",
        ]
    )


def _tell_d_landed(cell: GradCell) -> Told:
    """d_capped, d_biased or d_scaled: the softmax backward where it lands, else the
    step after it (the cap's slope; ALiBi's bias, a constant)."""
    name, head = cell.stage.name, cell.head
    lands_here = "softmax ∘" in cell.stage.formula
    if lands_here:
        return _tell_softmax_back(cell)
    if "d_capped ∘" in cell.stage.formula:
        return _tell_through_cap(cell)
    d = cell.gradient("d_biased", head)  # d_scaled under ALiBi: the bias is a constant
    if name == "d_scaled" and d is not None:
        x = float(d.data[cell.row, cell.col])
        return Told(
            [
                "ALiBi's bias is a constant: its gradient passes unchanged",
                f"= d_biased = {figure(x)}",
            ]
        )
    return tell_unknown(cell)


def _tell_d_scores(cell: GradCell) -> Told:
    """d_scores = d_scaled / √d_k."""
    d = cell.gradient("d_scaled", cell.head)
    if d is None:
        return missing("d_scaled")
    d_k = cell.grad.forward.model.d_k
    x, root = float(d.data[cell.row, cell.col]), math.sqrt(d_k)
    return Told([f"d_scaled / √{d_k} = {figure(x)} / {figure(root)} = {figure(x / root)}"])


def _tell_d_sink(cell: GradCell) -> Told:
    """d_sink_logit = −Σᵢ sinkᵢ · rowsum(d_softmax ∘ softmax)ᵢ."""
    sink = cell.forward("sink", cell.head)
    a, d = cell.forward("softmax", cell.head), cell.gradient("d_softmax", cell.head)
    if sink is None or a is None or d is None:
        return missing("sink, softmax or d_softmax")
    rowsums = [math.fsum(a.data[i] * d.data[i]) for i in range(a.shape[0])]
    return products(
        "−Σ over the queries of sink[i] × rowsum(d_softmax ∘ softmax)[i]:",
        unique_labels(a.rows),
        -sink.data[:, 0],
        rowsums,
    )


def _tell_scores_back(cell: GradCell) -> Told:
    """Back through the scores' product: d_Q = d_scores · K (a row of d_scores times
    K's column), d_K = d_scoresᵀ · Q (a column of d_scores times Q's column); the turned
    or normed rows in place of Q and K where the model has them."""
    formula, head = cell.stage.formula, cell.head
    d = cell.gradient("d_scores", head)
    transposed = "d_scoresᵀ · " in formula
    other_name = formula.split("d_scoresᵀ · " if transposed else "d_scores · ")[1].split()[0]
    other = cell.forward(other_name, head)
    if d is None or other is None:
        return missing(f"d_scores or {other_name}")
    if transposed:
        return products(
            f"Σ over the {d.shape[0]} queries of d_scores[i, {cell.row_label}] × "
            f"{other_name}[i, {other.cols[cell.col]}]:",
            unique_labels(d.rows),
            d.data[:, cell.row],
            other.data[:, cell.col],
        )
    return products(
        f"Σ over the {d.shape[1]} keys of d_scores[{cell.row_label}, j] × "
        f"{other_name}[j, {other.cols[cell.col]}]:",
        unique_labels(d.cols),
        d.data[cell.row],
        other.data[:, cell.col],
    )


def _tell_turned_back(cell: GradCell) -> Told:
    """Back through RoPE: the gradient of the turned row, turned by −θ."""
    model = cell.grad.forward.model
    source = "d_Q_rope" if cell.stage.name.startswith("d_Q") else "d_K_rope"
    d = cell.gradient(source, cell.head)
    if d is None:
        return missing(source)
    c, p = cell.col, cell.row
    placed = model.rope_pair(c)
    if placed is None:  # past a partial rotary width: not turned, so nothing turned back
        value = float(d.data[p, c])
        return Told(
            [
                f"{d.cols[c]} is past the turned dimensions: its gradient passes unturned",
                f"= {source}[{cell.row_label}, {d.cols[c]}] = {figure(value)}",
            ]
        )
    pair, partner, first = placed
    angle = p * float(model.turn_frequencies[pair])
    cos, sin = math.cos(angle), math.sin(angle)
    a, b = float(d.data[p, c]), float(d.data[p, partner])
    sign = "+" if first else "−"
    back = a * cos + b * sin if first else a * cos - b * sin
    return Told(
        [
            f"position {p}, θ = {figure(angle)}: turned back by −θ, with {d.cols[partner]}",
            f"{source}[{cell.row_label}, {d.cols[c]}] · cos θ {sign} "
            f"{source}[{cell.row_label}, {d.cols[partner]}] · sin θ",
            f"= {figure(a)} × {factor(cos)} {sign} {factor(b)} × {factor(sin)} = {figure(back)}",
        ]
    )


def _tell_norm_back(cell: GradCell) -> Told:
    """Back through RMSNorm: r·u_c − r³·x_c·Σ(u∘x)/d_k, u = d_norm ∘ weight, r = 1/rms."""
    letter = cell.stage.name[2]  # Q or K
    d, x_stage = cell.gradient(f"d_{letter}_norm", cell.head), cell.forward(letter, cell.head)
    if d is None or x_stage is None:
        return missing(f"d_{letter}_norm or {letter}")
    variants = cell.grad.forward.model.variants
    weight = variants.q_norm if letter == "Q" else variants.k_norm
    x = [float(v) for v in x_stage.data[cell.row]]
    w = [1.0] * len(x) if weight is None else [float(v) for v in weight]
    u = [float(g) * wi for g, wi in zip(d.data[cell.row], w, strict=True)]
    r = 1 / math.sqrt(math.fsum(v * v for v in x) / len(x) + variants.qk_norm_eps)
    inner = products(
        f"Σ u∘{letter}[{cell.row_label}], u = d_{letter}_norm ∘ {letter.lower()}_norm:",
        unique_labels(x_stage.cols),
        u,
        x,
    )
    total, c = math.fsum(inner.terms), cell.col
    result = r * u[c] - r**3 * x[c] * total / len(x)
    return Told(
        [
            *inner.lines,
            f"r = 1 / rms({letter}[{cell.row_label}]) = {figure(r)}",
            f"r · u − r³ · {letter} · Σ / {len(x)} = {figure(r)} × {factor(u[c])} − "
            f"{figure(r**3)} × {factor(x[c])} × {factor(total)} / {len(x)} = {figure(result)}",
        ],
        terms=inner.terms,
    )


def _tell_q_or_k(cell: GradCell) -> Told:
    """d_Q, d_K, d_Q_norm, d_K_norm: whichever step their formula names."""
    formula = cell.stage.formula
    if cell.head is None:
        return _tell_d_v(cell)  # a shared K/V head's d_K: the sum of its heads'
    if "back through RMSNorm" in formula:
        return _tell_norm_back(cell)
    if "turned back" in formula:
        return _tell_turned_back(cell)
    return _tell_scores_back(cell)


TELLERS: dict[str, GradTeller] = {
    "d_projected": tell_entering,
    "d_WO": tell_d_wo,
    "d_bO": tell_d_bias_of("d_projected"),
    "d_concat": tell_d_concat,
    "d_output": _tell_d_output,
    "d_V": _tell_d_v,
    "d_softmax": _tell_d_softmax,
    "d_sink_logit": _tell_d_sink,
    "d_capped": _tell_d_landed,
    "d_biased": _tell_d_landed,
    "d_scaled": _tell_d_landed,
    "d_scores": _tell_d_scores,
    "d_Q_rope": _tell_scores_back,
    "d_K_rope": _tell_scores_back,
    "d_Q_norm": _tell_q_or_k,
    "d_K_norm": _tell_q_or_k,
    "d_Q": _tell_q_or_k,
    "d_K": _tell_q_or_k,
    "d_WQ": tell_d_weight,
    "d_WK": tell_d_weight,
    "d_WV": tell_d_weight,
    "d_bQ": tell_d_bias_of("d_Q"),
    "d_bK": tell_d_bias_of("d_K"),
    "d_bV": tell_d_bias_of("d_V"),
    "d_q_norm": tell_d_norm_weight,
    "d_k_norm": tell_d_norm_weight,
    "d_X": tell_d_x,
    "d_X_context": tell_d_x,
}
