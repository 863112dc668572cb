"""The hints a wrong answer earns, in order: the formula, the operands, a partial result.

The rule (docs/teaching.md): hint 1 is the cell's formula, hint 2 its operands as numbers
(never the result), hint 3 a partial result (never the final value), each different
from the one before. A stage whose whole arithmetic is one step (X = embeddings +
positions, biased = scaled + alibi, a concat's copy, the mask) has no partial result
short of the answer: it gets two hints, or one where there is nothing to compute (a
learned or given number).

Each hint is plain text (no Rich: the view makes it safe to show, since tokens come from
files), its figures written by the cell stories' one rule (six significant digits,
:func:`attntrace.forward.cell_terms.figure`). A long vector or sum (a real model's
d_model 576, a row of 300 keys) is written as its first and last figures, the one the
cell asks about and the largest terms, with a count of the figures left out and what
they add up to, so the partial result still adds up. The one-step stages' hints are in
:mod:`attntrace.quiz.hints_steps`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from attntrace.forward.cell_terms import factor, figure, total
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Stage, Trace
from attntrace.quiz import hints_steps
from attntrace.quiz.question import Question, stage_of

# A vector longer than this is written as its first and last figures around a count.
VECTOR_SHOWN = 12
# A sum of at most this many terms is written out whole; a longer one keeps its first
# FIRST and last LAST terms, the asked one, and its LARGEST largest.
SHORT = 12
FIRST, LAST, LARGEST = 3, 2, 4

Hints = tuple[str, ...]
Term = tuple[str, str, float]  # label, how it is made ("2 × 1.5"), value


def default_hints(trace: Trace, question: Question) -> Hints:
    """The hints for ``question`` (three, or fewer for a one-step stage)."""
    stage = stage_of(trace, question)
    maker = HINTS.get(stage.name) or hints_steps.HINTS.get(stage.name)
    if maker is None:
        return (f"{question.cell}: {stage.formula}",)
    return maker(trace, stage, question)


def vector(values: Sequence[float], keep: int | None = None, label: str = "") -> str:
    """``[2, 4]``; a long one ``[0.1, 0.2, 0.3, … 570 more …, 0.9, 1]`` (past 12), the
    entry ``keep`` kept and named (``… 200 more …, animal: 4.64, … 98 more …``)."""
    count = len(values)
    if count <= VECTOR_SHOWN:
        return "[" + ", ".join(figure(float(v)) for v in values) + "]"
    shown = sorted({*range(FIRST), *range(count - LAST, count), *([] if keep is None else [keep])})
    parts: list[str] = []
    before = -1
    for i in shown:
        if i > before + 1:
            parts.append(f"… {i - before - 1} more …")
        named = f"{label}: " if i == keep and FIRST <= i < count - LAST else ""
        parts.append(named + figure(float(values[i])))
        before = i
    return "[" + ", ".join(parts) + "]"


def term_lines(terms: Sequence[Term], keep: int | None = None, valued: bool = True) -> list[str]:
    """The terms of a sum, one a line; a long one cut to its first and last, ``keep``
    and its largest, the terms left out counted and added up. ``valued`` False writes
    each term as it is made (``0.1 × 1``), without its value or the sum."""
    count = len(terms)
    if count <= SHORT:
        shown = list(range(count))
    else:
        largest = sorted(range(count), key=lambda i: -abs(terms[i][2]))[:LARGEST]
        chosen = {*range(FIRST), *range(count - LAST, count), *largest}
        shown = sorted(chosen | ({keep} if keep is not None else set()))
    width = max(len(terms[i][0]) for i in shown) if shown else 0
    lines = [
        f"  {terms[i][0]:<{width}}  {terms[i][1]}" + (f" = {figure(terms[i][2])}" if valued else "")
        for i in shown
    ]
    left = [terms[i][2] for i in range(count) if i not in set(shown)]
    if left and not valued:
        lines.append(f"  … and {len(left)} more ({count} terms in all)")
    elif left:
        lines.append(
            f"  … the {len(left)} terms not written add up to {figure(total(left))} "
            f"({count} terms in all)"
        )
    return lines


def _labels(stage: Stage, axis: str) -> tuple[str, ...]:
    return tuple(unique_labels(stage.rows if axis == "rows" else stage.cols))


# ---- dot products: Q, K, V, scores, projected --------------------------------------------


def _dot_hints(
    question: Question,
    left: tuple[str, Sequence[float]],
    right: tuple[str, Sequence[float]],
    what: str,
    bias: tuple[str, float] | None = None,
    dims: Sequence[str] = (),
) -> Hints:
    """A dot product's hints, ``left`` and ``right`` each a name as written
    (``X[cat]``, ``WQ[·, d1]``) and its numbers; ``what`` says what the two are."""
    (a_name, a), (b_name, b) = left, right
    plus = "" if bias is None else f" + {bias[0]}"
    formula = f"{question.cell} = Σ_d {_at(a_name, 'd')} × {_at(b_name, 'd')}{plus}: {what}"
    operands = f"{a_name} = {vector(a)};  {b_name} = {vector(b)}"
    if bias is not None:
        operands += f";  {bias[0]} = {figure(bias[1])}"
    labels = list(dims) if len(dims) == len(a) else [f"d{i}" for i in range(len(a))]
    terms = [
        (label, f"{figure(x)} × {factor(y)}", float(x) * float(y))
        for label, x, y in zip(labels, a, b, strict=True)
    ]
    then = "now add them" + ("" if bias is None else f", then {bias[0]}")
    if _one_term(terms, 0.0 if bias is None else bias[1]):
        return (formula, operands, _products_named(terms, "the products, one per d"))
    partial = "\n".join([f"the {len(terms)} products, one per d:", *term_lines(terms), then])
    return (formula, operands, partial)


def _one_term(terms: Sequence[Term], added: float) -> bool:
    """Whether the sum is one term (the others 0, nothing added): its value written out
    would be the answer itself, never a partial result."""
    return added == 0 and sum(1 for term in terms if term[2] != 0) <= 1


def _products_named(terms: Sequence[Term], what: str) -> str:
    """Hint 3 where one product is the whole sum: the products named, not worked out
    (a step short of the answer, which a product's value would be)."""
    return "\n".join(
        [
            f"{what} (every one is 0 but at most one: work that one out):",
            *term_lines(terms, valued=False),
        ]
    )


def _at(name: str, index: str) -> str:
    """``X[cat]`` -> ``X[cat, d]``; ``WQ[·, d1]`` -> ``WQ[d, d1]``."""
    if "[·, " in name:
        return name.replace("[·, ", f"[{index}, ")
    return f"{name[:-1]}, {index}]"


def _projection(trace: Trace, stage: Stage, question: Question) -> Hints:
    """Q, K, V (X's row times a column of the head's weight slice, plus the bias) and
    projected (concat's row times a column of WO, plus bO)."""
    if stage.name == "projected":
        source_name = "concat" if trace.model.heads > 1 else "output"
        source = next((s for s in trace.stages if s.name == source_name), None)
        weight, bias = trace.weight("WO"), trace.weight("bO")
    else:
        source_name = stage.formula.split(" = ")[1].split(" · ")[0]  # X or X_context
        source = next((s for s in trace.stages if s.name == source_name), None)
        weight, bias = trace.weight_for(stage), trace.bias_for(stage)
    if source is None or weight is None or weight.data.shape[0] != source.shape[1]:
        return (f"{question.cell}: {stage.formula}",)
    i, j, r = question.row, question.col, question.row_label
    column = _labels(weight, "cols")[j]
    added = None if bias is None else (f"{bias.name}[{column}]", float(bias.data[0, j]))
    return _dot_hints(
        question,
        (f"{source_name}[{r}]", [float(v) for v in source.data[i]]),
        (f"{weight.name}[·, {column}]", [float(v) for v in weight.data[:, j]]),
        f"{source_name}'s row times {weight.name}'s column",
        added,
        _labels(source, "cols"),
    )


def _scores(trace: Trace, stage: Stage, question: Question) -> Hints:
    """scores: the query row times the key row (turned or normed where the model does)."""
    q_name, k_name = trace.model.score_inputs
    q, k = trace.stage(q_name, head=stage.head), trace.stage(k_name, head=stage.head)
    key = _labels(k, "rows")[question.col]
    return _dot_hints(
        question,
        (f"{q_name}[{question.row_label}]", [float(v) for v in q.data[question.row]]),
        (f"{k_name}[{key}]", [float(v) for v in k.data[question.col]]),
        "the query row times the key row",
        dims=_labels(q, "cols"),
    )


def _output(trace: Trace, stage: Stage, question: Question) -> Hints:
    """output: the head's softmax row times a column of V, over the keys. V's column is
    named as V's table names it (a real model's head writes output's d430 from its K/V
    head's V column d174)."""
    weights = trace.stage("softmax", head=stage.head)
    values = trace.stage("V", head=stage.head)
    r, c, j = question.row_label, question.col_label, question.col
    vc = _labels(values, "cols")[j]
    same = "" if vc == c else f" (output's {c} is V's column {vc})"
    keys = _labels(weights, "cols")
    w = [float(v) for v in weights.data[question.row]]
    v = [float(x) for x in values.data[:, j]]
    formula = (
        f"{question.cell} = Σ_k softmax[{r}, k] × V[k, {vc}]: the weights times V's column{same}"
    )
    operands = f"softmax[{r}] = {vector(w)};  V[·, {vc}] = {vector(v)}"
    terms = [
        (key, f"{figure(a)} × {factor(b)}", a * b) for key, a, b in zip(keys, w, v, strict=True)
    ]
    if _one_term(terms, 0.0):
        return (formula, operands, _products_named(terms, f"softmax[{r}, key] × V[key, {vc}]"))
    partial = "\n".join(
        [f"softmax[{r}, key] × V[key, {vc}], key by key:", *term_lines(terms), "now add them"]
    )
    return (formula, operands, partial)


# ---- softmax and the sink ------------------------------------------------------------


def _softmax_row(trace: Trace, stage: Stage, question: Question) -> tuple[Stage, float | None]:
    """The stage softmax read (scaled, masked, ...) and the head's sink logit, if any."""
    model = trace.model
    source = trace.stage(model.softmax_source, head=stage.head)
    logits = model.variants.sink_logits(model.heads)
    return source, None if logits is None else float(logits[stage.head or 0])


def _softmax(trace: Trace, stage: Stage, question: Question) -> Hints:
    """softmax (and the sink's column): a key's exp over the row's sum of exps, the max
    subtracted first; the sink logit's exp joins the sum, a hidden key's exp is 0."""
    source, sink = _softmax_row(trace, stage, question)
    r, name = question.row_label, source.name
    x = [float(v) for v in source.data[question.row]]
    keys = _labels(source, "cols")
    finite = [v for v in x if math.isfinite(v)]
    top = max([*finite, *([] if sink is None else [sink])], default=0.0)
    is_sink = stage.name == "sink"
    asked = "s" if is_sink else f"x_{question.col_label}"
    hidden = any(v == -math.inf for v in x)
    if sink is None:
        formula = (
            f"{question.cell} = exp({asked} − M) / Σ_k exp(x_k − M), with x = {name}[{r}] "
            "(the whole row) and M its largest value"
        )
    else:
        formula = (
            f"{question.cell} = exp({asked} − M) / (Σ_k exp(x_k − M) + exp(s − M)), with "
            f"x = {name}[{r}] (the whole row), s = the head's sink logit (its exp joins the "
            "sum; it has no value) and M the largest of x and s"
        )
    if hidden:
        formula += "; a hidden key's x is −∞: its exp is 0"
    keep = None if is_sink else question.col
    operands = f"{name}[{r}] = {vector(x, keep, question.col_label)}"
    operands += "" if sink is None else f";  s = {figure(sink)}"
    operands += f";  M = {figure(top)}"
    exps = [0.0 if v == -math.inf else math.exp(v - top) for v in x]
    terms: list[Term] = [
        (key, "exp(−∞)" if v == -math.inf else f"exp({figure(v)} − M)", e)
        for key, v, e in zip(keys, x, exps, strict=True)
    ]
    lines = [f"M = {figure(top)}; the exps, exp(x − M):", *term_lines(terms, keep)]
    everything = list(exps)
    if sink is not None:
        sink_exp = math.exp(sink - top)
        lines.append(f"  sink  exp({figure(sink)} − M) = {figure(sink_exp)}  (in the sum)")
        everything.append(sink_exp)
    what = f"the {len(exps)} exps" + ("" if sink is None else " and the sink's")
    lines.append(f"sum of {what} = {figure(total(everything))}")
    lines.append(f"now divide {'the sink' if is_sink else 'this key'}'s exp by the sum")
    return (formula, operands, "\n".join(lines))


def _norm(trace: Trace, stage: Stage, question: Question) -> Hints:
    name = stage.name.removesuffix("_norm")
    source = next((s for s in trace.stages if s.name == name and s.head == stage.head), None)
    if source is None:
        return (f"{question.cell}: {stage.formula}",)
    variants = trace.model.variants
    row = [float(v) for v in source.data[question.row]]
    weight = variants.q_norm if name == "Q" else variants.k_norm
    w = None if weight is None else float(np.asarray(weight)[question.col])
    times = "" if w is None else f" × {name.lower()}_norm[{question.col}]"
    r, c = question.row_label, question.col_label
    mean = math.fsum(v * v for v in row) / len(row)
    rms = math.sqrt(mean + variants.qk_norm_eps)
    operands = f"{name}[{r}] = {vector(row)};  eps = {variants.qk_norm_eps:g}"
    operands += "" if w is None else f";  {name.lower()}_norm[{question.col}] = {figure(w)}"
    return (
        f"{question.cell} = {name}[{r}, {c}] / rms{times}, rms = √(mean of {name}[{r}]² + eps)",
        operands,
        f"mean of the squares = {figure(mean)};  rms = {figure(rms)}; now divide "
        f"{name}[{r}, {c}] by it{'' if w is None else ' and multiply by the weight'}",
    )


HintMaker = Callable[[Trace, Stage, Question], Hints]
HINTS: dict[str, HintMaker] = {
    "Q": _projection,
    "K": _projection,
    "V": _projection,
    "projected": _projection,
    "scores": _scores,
    "softmax": _softmax,
    "sink": _softmax,
    "output": _output,
    "Q_norm": _norm,
    "K_norm": _norm,
}
