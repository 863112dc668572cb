"""Any cell of any stage, spelled out as the arithmetic a person would do to get it.

The explorer's explanation pane (``attntrace explore``) shows this for the cell under
the cursor; ``--focus`` and the page say the same for their cells. The numbers are read
from the :class:`Trace`; only the pieces a person writes down (a dot product's terms,
a softmax row's exps and their sum, the weighted value rows) are recomputed, and tests
hold them to an independent loop. No Rich here: the lines are plain text, and whoever
shows them makes them safe (tokens come from files).

The stages up to V and the learned matrices are told here; the head's stages from the
scores on are told in :mod:`attntrace.forward.cell_logits`. Every figure is written by
the one rule of :mod:`attntrace.forward.cell_terms`. docs/cells.md says what each
stage's story holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from attntrace.forward import cell_logits
from attntrace.forward.cell_terms import (
    Cell,
    Teller,
    Term,
    Told,
    factor,
    figure,
    sum_line,
    term_lines,
    value_line,
)
from attntrace.kernel import fields
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import BIAS_OF_STAGE, Stage, Trace


@dataclass(frozen=True)
class CellStory:
    """One cell of one stage and how it is computed, line by line.

    ``heading`` names the cell (``softmax[it, animal], head 0``); ``formula`` is the
    stage's; ``lines`` are the arithmetic, term by term, in plain text; ``value`` is the
    trace's own number for the cell. ``terms`` are every term of the sum the cell is
    (all of them, where ``lines`` cut a long one), empty where it is no sum; ``hidden``
    says why a masked cell is −∞ (or its weight 0), else it is None.
    """

    stage: str
    head: int | None
    row: str
    col: str
    value: float
    heading: str
    formula: str
    lines: tuple[str, ...]
    terms: tuple[float, ...] = field(default=(), repr=False)
    hidden: str | None = None


def cell_story(trace: Trace, stage: Stage, row: int, col: int) -> CellStory:
    """The cell ``stage[row, col]`` of ``trace`` as hand arithmetic.

    ``stage`` is one of the trace's stages or learned matrices (``trace.weights``). A row
    or column out of range is an :class:`InputError`.
    """
    rows, cols = stage.shape
    row = fields.index(row, "row", rows, f"a row of {stage.name}")
    col = fields.index(col, "col", cols, f"a column of {stage.name}")
    cell = Cell(trace, stage, row, col)
    told = _tell(cell)
    return CellStory(
        stage=stage.name,
        head=stage.head,
        row=cell.row_label,
        col=cell.col_label,
        value=cell.value,
        heading=f"{stage.name}[{cell.row_label}, {cell.col_label}]{_whose(cell)}",
        formula=stage.formula,
        lines=(*told.lines, value_line(cell.value)),
        terms=told.terms,
        hidden=told.hidden,
    )


def _tell(cell: Cell) -> Told:
    name = cell.stage.name
    if name in LEARNED:
        return _tell_learned(cell)
    low = cell.trace.precision
    if low is not None and name not in ("embeddings", "embeddings_context"):
        return Told(
            [
                f"this cell holds {low.dtype}'s result, by the rule: {low.rule}",
                "the arithmetic by hand is float64's, so it is not written out for a "
                f"{low.dtype} trace: trace it without --dtype to see it",
            ]
        )
    teller = TELLERS.get(name) or cell_logits.TELLERS.get(name)
    if teller is None:
        return Told([f"{name} is not a stage attntrace computes: its value is read as given"])
    return teller(cell)


def _whose(cell: Cell) -> str:
    """``, head 1 (reads K/V head 0)``; ``, K/V head 0`` for a K/V head's weights."""
    model, stage = cell.trace.model, cell.stage
    if stage.head is not None and model.heads > 1:
        reads = ""
        if model.group > 1 and stage.kv_head is not None:
            reads = f" (reads K/V head {stage.kv_head})"
        return f", head {stage.head}{reads}"
    if stage.head is None and stage.kv_head is not None and model.kv_heads > 1:
        return f", K/V head {stage.kv_head}"
    return ""


# ---- the model's own numbers ----------------------------------------------------------

LEARNED = frozenset(("WQ", "WK", "WV", "WO", "bQ", "bK", "bV", "bO"))


def _tell_learned(cell: Cell) -> Told:
    """A learned weight: nothing to compute; where its row and column sit in the model."""
    stage, name = cell.stage, cell.stage.name
    lines = ["learned: the model file's number, as it gives it"]
    if name in ("WQ", "WK", "WV"):
        whose = f"head {stage.head}'s" if stage.kv_head is None else f"K/V head {stage.kv_head}'s"
        first, last = stage.cols[0], stage.cols[-1]
        lines.append(
            f"row {cell.row_label}: X's dimension; column {cell.col_label}: of {whose} "
            f"columns {first} … {last}"
        )
        product = {"WQ": "Q", "WK": "K", "WV": "V"}[name]
        lines.append(f"it multiplies X[·, {cell.row_label}] in {product}[·, {cell.col_label}]")
    elif name == "WO":
        d_v = cell.trace.model.d_v
        lines.append(
            f"row {cell.row_label}: column {cell.row % d_v} of head {cell.row // d_v}'s "
            f"output; column {cell.col_label}: of projected"
        )
    elif name in BIAS_OF_STAGE.values():
        lines.append(f"added to column {cell.col_label} of every row")
    else:  # q_norm, k_norm: QK-norm's weights
        lines.append(f"multiplies column {cell.col_label} of every normed row")
    if cell.trace.precision is not None:
        lines.append(f"rounded to {cell.trace.precision.dtype}, as the trace holds it")
    return Told(lines)


def _tell_x(cell: Cell) -> Told:
    """X: the embedding of the row's token, plus its position's vector where the model
    adds one; a real model's X is given by its earlier layers."""
    name = cell.stage.name
    suffix = name.removeprefix("X")
    embeddings = cell.same_head(f"embeddings{suffix}")
    positions = cell.same_head(f"positions{suffix}")
    where = f"[{cell.row_label}, {cell.col_label}]"
    if embeddings is not None and positions is not None:
        e = float(embeddings.data[cell.row, cell.col])
        p = float(positions.data[cell.row, cell.col])
        token = cell.stage.rows[cell.row]
        return Told(
            [
                f"embeddings{suffix}{where} = {figure(e)}  (the row of '{token}')",
                f"positions{suffix}{where} = {figure(p)}  (position {cell.row})",
                f"{figure(e)} + {factor(p)} = {figure(e + p)}",
            ],
            terms=(e, p),
        )
    formula = cell.stage.formula
    if formula == f"{name} = embeddings":
        kind = cell.trace.model.positions
        after = {
            "rope": "positions enter later: RoPE turns Q and K by position",
            "alibi": "positions enter later: ALiBi's bias on the scaled scores",
        }.get(kind, "this model adds no positions: the order of the words changes no score")
        return Told(
            [
                f"learned: the embedding table's row for '{cell.stage.rows[cell.row]}', "
                "as the file gives it",
                after,
            ]
        )
    return Told(
        [
            f"given: {formula.removeprefix(f'{name} = ')}",
            "the model computed it before this layer's attention; attntrace reads it",
            "as given",
        ]
    )


def _tell_embedding(cell: Cell) -> Told:
    return Told(
        [
            f"learned: the embedding table's row for '{cell.stage.rows[cell.row]}', "
            "as the file gives it"
        ]
    )


def _tell_positions(cell: Cell) -> Told:
    """A position's vector: learned, or the paper's sines and cosines, worked out."""
    p, c = cell.row, cell.col
    if "sinusoidal" not in cell.stage.formula:
        return Told([f"learned: row {p} of the file's positions (position {p}), column {c}"])
    d_model = cell.stage.shape[1]
    pair = c - c % 2
    angle = p / 10000.0 ** (pair / d_model)
    turn, fn = (math.sin, "sin") if c % 2 == 0 else (math.cos, "cos")
    return Told(
        [
            f"position {p}, column {c}: {fn}(p / 10000^({pair}/{d_model}))",
            f"angle = {p} / 10000^({pair}/{d_model}) = {figure(angle)}",
            f"{fn}({figure(angle)}) = {figure(turn(angle))}",
        ]
    )


# ---- a head's projections, norms and turns ----------------------------------------------


def _tell_projection(cell: Cell) -> Told:
    """Q, K or V: the row of X times a column of the head's weight slice, plus the bias."""
    trace, stage = cell.trace, cell.stage
    weight, bias = trace.weight_for(stage), trace.bias_for(stage)
    source_name = stage.formula.split(" = ")[1].split(" · ")[0]  # X or X_context
    source = next((s for s in trace.stages if s.name == source_name), None)
    if weight is None or source is None:
        return Told([f"{WEIGHT_NAMES[stage.name]} is not in this trace: the terms are unknown"])
    w_name = weight.name
    x = source.data[cell.row]
    w = weight.data[:, cell.col]
    terms = [
        Term(label, f"{figure(a)} × {factor(b)}", float(a * b))
        for label, a, b in zip(source.cols, x, w, strict=True)
    ]
    lines = [
        f"{source_name}[{cell.row_label}] · {w_name}[·, {cell.col_label}]: "
        f"{len(terms)} products, one per dimension of {source_name}"
    ]
    if trace.model.group > 1 and stage.name in ("K", "V"):
        lines.append(_shared(cell))
    lines += [*term_lines(terms), sum_line(terms)]
    values = [t.value for t in terms]
    if bias is not None:
        b = float(bias.data[0, cell.col])
        lines.append(f"+ {bias.name}[{cell.col_label}] = {figure(b)}")
        values.append(b)
        lines.append(f"= {figure(math.fsum(values))}")
    return Told(lines, terms=tuple(values))


WEIGHT_NAMES = {"Q": "WQ", "K": "WK", "V": "WV"}


def _shared(cell: Cell) -> str:
    """Which query heads read this K/V head's rows (GQA, MQA)."""
    model, g = cell.trace.model, cell.stage.kv_head
    readers = [h for h in range(model.heads) if model.kv_head_of(h) == g]
    return f"K/V head {g} is read by query heads {', '.join(map(str, readers))}"


def _tell_norm(cell: Cell) -> Told:
    """QK-norm: the row divided by its root mean square, times the norm's weight."""
    source_name = cell.stage.name.removesuffix("_norm")
    source = cell.same_head(source_name)
    if source is None:
        return Told([f"{source_name} is not in this trace"])
    variants = cell.trace.model.variants
    x = source.data[cell.row]
    terms = [
        Term(label, f"{factor(a)}²", float(a * a)) for label, a in zip(source.cols, x, strict=True)
    ]
    mean = math.fsum(t.value for t in terms) / len(terms)
    rms = math.sqrt(mean + variants.qk_norm_eps)
    a = float(x[cell.col])
    where = f"{source_name}[{cell.row_label}, {cell.col_label}]"
    lines = [
        f"the squares of {source_name}[{cell.row_label}]:",
        *term_lines(terms),
        f"{sum_line(terms)}; mean = that / {len(terms)} = {figure(mean)}",
        f"rms = √({figure(mean)} + {variants.qk_norm_eps:g}) = {figure(rms)}",
        f"{where} / rms = {figure(a)} / {figure(rms)} = {figure(a / rms)}",
    ]
    weight = variants.q_norm if source_name == "Q" else variants.k_norm
    if weight is not None:
        w = float(np.asarray(weight)[cell.col])
        name = f"{source_name.lower()}_norm"
        lines.append(
            f"× {name}[{cell.col}] = {figure(a / rms)} × {factor(w)} = {figure(a / rms * w)}"
        )
    return Told(lines)


def _tell_rope(cell: Cell) -> Told:
    """RoPE: the cell's dimension and its partner turned by the position's angle, with the
    frequency the trace used (``rope_base^(−2i/d_k)``, or a real model's own)."""
    model = cell.trace.model
    source_name = cell.stage.formula.split(" = ")[1].split(" ")[0]  # Q, K, Q_norm, K_norm
    source = cell.same_head(source_name)
    if source is None:
        return Told([f"{source_name} is not in this trace"])
    width, c, p = cell.stage.shape[1], cell.col, cell.row
    labels = unique_labels(source.cols)
    row = f"{source_name}[{cell.row_label}"
    a = float(source.data[p, c])
    frequencies = model.turn_frequencies
    placed = model.rope_pair(c)
    if placed is None:  # a partial rotary width: the dimensions past it are not turned
        turned_width = 2 * len(frequencies)
        return Told(
            [
                f"{labels[c]} is past the {turned_width} turned dimensions of {width}: not turned",
                f"= {row}, {labels[c]}] = {figure(a)}",
            ]
        )
    pair, partner, first = placed
    frequency = float(frequencies[pair])
    angle = p * frequency
    cos, sin = math.cos(angle), math.sin(angle)
    b = float(source.data[p, partner])
    sign = "−" if first else "+"
    turned = a * cos - b * sin if first else a * cos + b * sin
    if model.rope_frequencies is None:
        how = f"θ = {p} · {model.rope_base or 10000.0:g}^(−2·{pair}/{width}) = {figure(angle)}"
    else:  # given one by one (scaled RoPE): the frequency is the model's own
        how = f"θ = {p} · frequency[{pair}] = {p} × {figure(frequency)} = {figure(angle)}"
    return Told(
        [
            f"position {p}; {labels[c]} is turned with {labels[partner]} "
            f"(pair {pair} of {len(frequencies)})",
            how,
            f"cos θ = {figure(cos)}, sin θ = {figure(sin)}",
            f"{row}, {labels[c]}] · cos θ {sign} {row}, {labels[partner]}] · sin θ",
            f"= {figure(a)} × {factor(cos)} {sign} {factor(b)} × {factor(sin)} = {figure(turned)}",
        ]
    )


# ---- after the heads ----------------------------------------------------------------------


def _tell_concat(cell: Cell) -> Told:
    """concat: a column of one head's output, put beside the others'."""
    d_v = cell.trace.model.d_v
    head, column = divmod(cell.col, d_v)
    output = next(
        (s for s in cell.trace.stages if s.name == "output" and s.head == head),
        None,
    )
    if output is None:
        return Told([f"head {head}'s output is not in this trace"])
    return Told(
        [
            f"column {cell.col_label} is head {head}'s output, its column {column} of {d_v}",
            f"= output[{cell.row_label}, {output.cols[column]}] of head {head} "
            f"= {figure(float(output.data[cell.row, column]))}",
        ]
    )


def _tell_projected(cell: Cell) -> Told:
    """projected: the row of concat (or the one head's output) times a column of WO."""
    trace = cell.trace
    source_name = "concat" if trace.model.heads > 1 else "output"
    source = next((s for s in trace.stages if s.name == source_name), None)
    weight, bias = trace.weight("WO"), trace.weight("bO")
    if source is None or weight is None:
        return Told([f"{source_name} or WO is not in this trace: the terms are unknown"])
    x, w = source.data[cell.row], weight.data[:, cell.col]
    terms = [
        Term(label, f"{figure(a)} × {factor(b)}", float(a * b))
        for label, a, b in zip(source.cols, x, w, strict=True)
    ]
    lines = [
        f"{source_name}[{cell.row_label}] · WO[·, {cell.col_label}]: {len(terms)} products",
        *term_lines(terms),
        sum_line(terms),
    ]
    values = [t.value for t in terms]
    if bias is not None:
        b = float(bias.data[0, cell.col])
        lines += [f"+ bO[{cell.col_label}] = {figure(b)}", f"= {figure(math.fsum([*values, b]))}"]
        values.append(b)
    return Told(lines, terms=tuple(values))


TELLERS: dict[str, Teller] = {
    "X": _tell_x,
    "X_context": _tell_x,
    "embeddings": _tell_embedding,
    "embeddings_context": _tell_embedding,
    "positions": _tell_positions,
    "positions_context": _tell_positions,
    "Q": _tell_projection,
    "K": _tell_projection,
    "V": _tell_projection,
    "Q_norm": _tell_norm,
    "K_norm": _tell_norm,
    "Q_rope": _tell_rope,
    "K_rope": _tell_rope,
    "concat": _tell_concat,
    "projected": _tell_projected,
}
