"""The pieces of a gradient cell's story (:mod:`attntrace.learning.grad_cell_story`):
the cell, a sum of products written term by term, and the steps outside a head, from
the loss to the heads' outputs and from their Q, K and V back to the learned matrices
and X. Every figure by the rule of :mod:`attntrace.forward.cell_terms`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from attntrace.forward.cell_terms import Term, Told, factor, figure, sum_line, term_lines
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Stage
from attntrace.learning.grad_trace import GradTrace

#: The numbers a sum is made of: a stage's row or column, or a list.
Numbers = Sequence[float] | npt.NDArray[np.float64]


@dataclass(frozen=True)
class GradCell:
    """The gradient's cell being told."""

    grad: GradTrace
    stage: Stage
    row: int
    col: int

    @property
    def row_label(self) -> str:
        return unique_labels(self.stage.rows)[self.row]

    @property
    def col_label(self) -> str:
        return unique_labels(self.stage.cols)[self.col]

    @property
    def head(self) -> int | None:
        return self.stage.head

    def gradient(
        self, name: str, head: int | None = None, kv_head: int | None = None
    ) -> Stage | None:
        """The gradient ``name`` of ``head`` (or K/V head ``kv_head``; neither: whole)."""
        for stage in self.grad.stages:
            if stage.name != name or stage.head != head:
                continue
            if kv_head is None or stage.kv_head == kv_head:
                return stage
        return None

    def forward(self, name: str, head: int | None = None) -> Stage | None:
        """The forward stage ``name`` of ``head`` (a shared one where ``head`` is None)."""
        trace = self.grad.forward
        return next((s for s in trace.stages if s.name == name and s.head == head), None)


GradTeller = Callable[[GradCell], Told]


def tell_unknown(cell: GradCell) -> Told:
    return Told([f"{cell.stage.name} is read as the backward pass gives it"])


def products(intro: str, labels: Sequence[str], left: Numbers, right: Numbers) -> Told:
    """A sum of products, term by term: the shape of most steps of the chain rule."""
    terms = [
        Term(label, f"{figure(a)} × {factor(b)}", float(a) * float(b))
        for label, a, b in zip(labels, left, right, strict=True)
    ]
    return Told([intro, *term_lines(terms), sum_line(terms)], terms=tuple(t.value for t in terms))


def sums(intro: str, labels: Sequence[str], values: Numbers) -> Told:
    """A plain sum, term by term (a bias's gradient: a column's sum)."""
    terms = [Term(label, "", float(v)) for label, v in zip(labels, values, strict=True)]
    lines = [intro, *term_lines(terms), sum_line(terms)]
    return Told(lines, terms=tuple(t.value for t in terms))


def missing(what: str) -> Told:
    return Told([f"{what} is not in this trace: the step cannot be written out"])


# ---- from the loss to the heads ----------------------------------------------------------


def tell_entering(cell: GradCell) -> Told:
    """d_projected, or a block output's gradient straight from the loss."""
    loss = cell.grad.loss
    if loss.loss.d_output is None:
        return Told([f"the loss ({loss.formula}) does not read the block's output: 0"])
    return Told(
        [
            f"the loss's gradient at this cell: {loss.formula}",
            "mse: 2 · (output − target) / (rows × columns)"
            if loss.loss.name == "mse"
            else "as the loss gives it",
        ]
    )


def tell_d_wo(cell: GradCell) -> Told:
    """d_WO[r, c] = Σₜ concat[t, r] · d_projected[t, c]."""
    before = cell.forward("concat") or cell.forward("output", 0)
    d = cell.gradient("d_projected")
    if before is None or d is None:
        return missing("concat or d_projected")
    return products(
        f"Σ over the {before.shape[0]} tokens of {before.name}[t, {before.cols[cell.row]}] "
        f"× d_projected[t, {cell.col_label}]:",
        unique_labels(before.rows),
        before.data[:, cell.row],
        d.data[:, cell.col],
    )


def tell_d_bias_of(source: str) -> GradTeller:
    """A bias's gradient: the column's sum of the gradient it is added to."""

    def tell(cell: GradCell) -> Told:
        d = column_gradient(cell, source, cell.col)
        if d is None:
            return missing(source)
        stage, column = d
        return sums(
            f"the sum of {stage.name}'s column {stage.cols[column]} over the "
            f"{stage.shape[0]} rows:",
            unique_labels(stage.rows),
            stage.data[:, column],
        )

    return tell


def column_gradient(cell: GradCell, name: str, col: int) -> tuple[Stage, int] | None:
    """The gradient ``name`` (d_Q, d_K, d_V, d_projected) a whole-model column ``col``
    belongs to, and its column there: d_Q's head ``col // d_k``, d_K's and d_V's K/V head
    (summed over its query heads where several share it)."""
    model = cell.grad.forward.model
    if name == "d_projected":
        stage = cell.gradient(name)
        return None if stage is None else (stage, col)
    width = model.d_v if name == "d_V" else model.d_k
    index, column = divmod(col, width)
    if name == "d_Q":
        stage = cell.gradient(name, index)
    else:
        stage = cell.gradient(name, None, index)
        if stage is None:  # a K/V head of its own: its query head's gradient
            head = next(h for h in range(model.heads) if model.kv_head_of(h) == index)
            stage = cell.gradient(name, head)
    return None if stage is None else (stage, column)


def tell_d_concat(cell: GradCell) -> Told:
    """d_concat[t, k] = Σ_c d_projected[t, c] · WO[k, c]."""
    d = cell.gradient("d_projected")
    wo = cell.grad.forward.weight("WO")
    if d is None or wo is None:
        return tell_entering(cell)
    return products(
        f"d_projected[{cell.row_label}] · WO[{cell.col_label}, ·]: {d.shape[1]} products",
        list(d.cols),
        d.data[cell.row],
        wo.data[cell.col],
    )


# ---- the whole model's -----------------------------------------------------------------------


def tell_d_weight(cell: GradCell) -> Told:
    """d_WQ[r, c] = Σₜ X[t, r] · d_Q[t, c] (X_context's rows for WK and WV under
    cross-attention)."""
    name = cell.stage.name  # d_WQ, d_WK, d_WV
    source = {"d_WQ": "d_Q", "d_WK": "d_K", "d_WV": "d_V"}[name]
    found = column_gradient(cell, source, cell.col)
    context = cell.forward("X_context")
    x = context if context is not None and name != "d_WQ" else cell.forward("X")
    if found is None or x is None:
        return missing(f"{source} or X")
    d, column = found
    return products(
        f"Σ over the {x.shape[0]} tokens of {x.name}[t, {cell.row_label}] × "
        f"{d.name}[t, {d.cols[column]}]{'' if d.head is None else f' of head {d.head}'}:",
        unique_labels(x.rows),
        x.data[:, cell.row],
        d.data[:, column],
    )


def tell_d_norm_weight(cell: GradCell) -> Told:
    """d_q_norm[c] = Σ over rows and heads of d_Q_norm[t, c] · Q[t, c] / rms(Q[t])."""
    letter = cell.stage.name[2].upper()
    eps = cell.grad.forward.model.variants.qk_norm_eps
    labels, left, right = [], [], []
    for stage in cell.grad.stages:
        if stage.name != f"d_{letter}_norm" or stage.head is None:
            continue
        x = cell.forward(letter, stage.head)
        if x is None:
            continue
        for t, token in enumerate(unique_labels(stage.rows)):
            row = x.data[t]
            rms = math.sqrt(math.fsum(float(v) * float(v) for v in row) / len(row) + eps)
            labels.append(f"h{stage.head} {token}")
            left.append(float(stage.data[t, cell.col]))
            right.append(float(row[cell.col]) / rms)
    return products(
        f"Σ over rows and heads of d_{letter}_norm[t, {cell.col_label}] × {letter}[t, "
        f"{cell.col_label}] / rms({letter}[t]):",
        labels,
        left,
        right,
    )


def tell_d_x(cell: GradCell) -> Told:
    """d_X[t, r] = Σ over the heads of d_Q · WQᵀ (+ d_K · WKᵀ + d_V · WVᵀ for the rows
    keys and values are made from): every head's, every column."""
    model = cell.grad.forward.model
    context = cell.grad.forward.context_tokens is not None
    parts = []
    if cell.stage.name == "d_X":
        parts.append(("d_Q", "WQ", model.heads))
    if cell.stage.name == "d_X_context" or not context:
        parts += [("d_K", "WK", model.kv_heads), ("d_V", "WV", model.kv_heads)]
    labels, left, right = [], [], []
    for d_name, w_name, count in parts:
        width = model.d_v if d_name == "d_V" else model.d_k
        for index in range(count):
            found = column_gradient(cell, d_name, index * width)
            w = (
                cell.grad.forward.weight(w_name, head=index)
                if w_name == "WQ"
                else cell.grad.forward.weight(w_name, kv_head=index)
            )
            if found is None or w is None:
                return missing(f"{d_name} or {w_name}")
            d = found[0]
            for c in range(width):
                labels.append(f"{w_name} {w.cols[c]}")
                left.append(float(d.data[cell.row, c]))
                right.append(float(w.data[cell.col, c]))
    what = " + ".join(f"{d}[{cell.row_label}] · {w}[{cell.col_label}]" for d, w, _ in parts)
    return products(
        f"Σ of {what}, over every head:",
        labels,
        left,
        right,
    )
