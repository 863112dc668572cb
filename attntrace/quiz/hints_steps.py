"""The hints of the stages that are a step or two each: scaled, ALiBi's bias, the cap,
the mask, concat, X and the positions, RoPE (:mod:`attntrace.quiz.hints`
has the rule and the sums).

A two-step stage (scaled: √d_k, then the quotient; the cap: x / C, tanh, then × C)
gives three hints, its third the first step done. A one-step stage (biased = scaled +
alibi, X = embeddings + positions, a concat's copy, the mask's keep-or-hide) gives two:
the formula and the operands, never the result (a copy's operand is the answer, so its
second hint says where to find it). A number nobody computes here (a learned embedding,
a real model's X) gets one hint saying so.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from attntrace.forward.cell_terms import factor, figure
from attntrace.kernel import masks
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Stage, Trace
from attntrace.quiz.question import Question

Hints = tuple[str, ...]


def _same_head(trace: Trace, name: str, stage: Stage) -> Stage | None:
    return next((s for s in trace.stages if s.name == name and s.head == stage.head), None)


def _value(trace: Trace, name: str, stage: Stage, question: Question) -> float:
    found = _same_head(trace, name, stage)
    assert found is not None
    return float(found.data[question.row, question.col])


def _scaled(trace: Trace, stage: Stage, question: Question) -> Hints:
    r, c, d_k = question.row_label, question.col_label, trace.model.d_k
    score = _value(trace, "scores", stage, question)
    return (
        f"{question.cell} = scores[{r}, {c}] / √d_k",
        f"scores[{r}, {c}] = {figure(score)};  d_k = {d_k}",
        f"√d_k = √{d_k} = {figure(math.sqrt(d_k))}; now divide the score by it",
    )


def _alibi(trace: Trace, stage: Stage, question: Question) -> Hints:
    model, i, j = trace.model, question.row, question.col
    slope = model.variants.slopes(model.heads)[stage.head or 0]
    return (
        f"{question.cell} = −m · |i − j|: head {stage.head}'s slope m times how far the "
        "key (position j) is from the query (position i)",
        f"i = {i}, j = {j};  m = {masks.slope_text(slope)} = {figure(slope)}",
        f"|i − j| = {abs(i - j)}; now multiply by −m",
    )


def _biased(trace: Trace, stage: Stage, question: Question) -> Hints:
    r, c = question.row_label, question.col_label
    a = _value(trace, "scaled", stage, question)
    b = _value(trace, "alibi", stage, question)
    return (
        f"{question.cell} = scaled[{r}, {c}] + alibi[{r}, {c}]: the scaled score plus ALiBi's bias",
        f"scaled[{r}, {c}] = {figure(a)};  alibi[{r}, {c}] = {figure(b)}",
    )


def _capped(trace: Trace, stage: Stage, question: Question) -> Hints:
    source = "biased" if _same_head(trace, "biased", stage) is not None else "scaled"
    cap = trace.model.variants.softcap or 1.0
    x = _value(trace, source, stage, question)
    r, c = question.row_label, question.col_label
    return (
        f"{question.cell} = C · tanh(x / C), with x = {source}[{r}, {c}] and C the cap",
        f"x = {figure(x)};  C = {cap:g}",
        f"x / C = {figure(x / cap)};  tanh(x / C) = {figure(math.tanh(x / cap))}; "
        "now multiply by C",
    )


def _masked(trace: Trace, stage: Stage, question: Question) -> Hints:
    """The mask keeps the score or writes −∞: hint 2 says where the query and key sit,
    never the score (for a visible key that is the answer)."""
    model, variants = trace.model, trace.model.variants
    rule = "a query sees the keys at or before it (j ≤ i)"
    if variants.window is not None:
        rule += f", and only the {variants.window} latest of them (itself included)"
    if variants.sinks:
        rule += f"; the first {variants.sinks} positions (sinks) are always seen"
    source = model.mask_source
    i, j = question.row, question.col
    return (
        f"{question.cell} = {source}[{question.row_label}, {question.col_label}] where the "
        f"mask lets the query see the key, −∞ where it hides it: {rule}",
        f"the query is at position {i}, the key at position {j} ({i - j} back)",
    )


def _concat(trace: Trace, stage: Stage, question: Question) -> Hints:
    d_v = trace.model.d_v
    head, column = divmod(question.col, d_v)
    output = next((s for s in trace.stages if s.name == "output" and s.head == head), None)
    where = "" if output is None else f" = output[{question.row_label}, {output.cols[column]}]"
    return (
        f"{question.cell}: concat puts the heads' outputs side by side, head 0's {d_v} "
        "columns first, then head 1's, ...",
        f"column {question.col_label} is column {column} of head {head}'s output{where} of "
        f"head {head}: copy it from that table",
    )


def _x(trace: Trace, stage: Stage, question: Question) -> Hints:
    suffix = stage.name.removeprefix("X")
    where = f"[{question.row_label}, {question.col_label}]"
    embeddings = _same_head(trace, f"embeddings{suffix}", stage)
    positions = _same_head(trace, f"positions{suffix}", stage)
    if embeddings is not None and positions is not None:
        e = float(embeddings.data[question.row, question.col])
        p = float(positions.data[question.row, question.col])
        return (
            f"{question.cell} = embeddings{suffix}{where} + positions{suffix}{where}: the "
            "token's embedding plus its position's vector",
            f"embeddings{suffix}{where} = {figure(e)};  positions{suffix}{where} = {factor(p)}",
        )
    if stage.formula.endswith("= embeddings"):
        return (
            f"{question.cell}: X is the embedding table's row for this token, as the model "
            "file gives it: learned, nothing to compute",
        )
    return (
        f"{question.cell}: given, by the model's earlier layers ({stage.formula}): "
        "attntrace reads it, nothing to compute by hand",
    )


def _learned(trace: Trace, stage: Stage, question: Question) -> Hints:
    return (f"{question.cell}: {stage.formula}: learned, as the model file gives it",)


def _positions(trace: Trace, stage: Stage, question: Question) -> Hints:
    if "sinusoidal" not in stage.formula:
        return _learned(trace, stage, question)
    p, c, d_model = question.row, question.col, stage.shape[1]
    pair = c - c % 2
    fn = "sin" if c % 2 == 0 else "cos"
    angle = p / 10000.0 ** (pair / d_model)
    return (
        f"{question.cell} = sin(p / 10000^(2i/d_model)) in an even column 2i, cos in the "
        "odd one after it",
        f"p = {p} (the position), column {c}: 2i = {pair}, d_model = {d_model}, so {fn}",
        f"p / 10000^({pair}/{d_model}) = {figure(angle)}; now take its {fn}",
    )


def _rope(trace: Trace, stage: Stage, question: Question) -> Hints:
    model = trace.model
    name = stage.formula.split(" = ")[1].split(" ")[0]
    source = _same_head(trace, name, stage)
    placed = model.rope_pair(question.col)
    if source is None or placed is None:
        return (f"{question.cell}: {stage.formula} (this dimension is not turned)",)
    pair, partner, first = placed
    labels = unique_labels(source.cols)
    p, r = question.row, question.row_label
    a = float(source.data[p, question.col])
    b = float(source.data[p, partner])
    frequency = float(model.turn_frequencies[pair])
    sign = "−" if first else "+"
    mine, theirs = labels[question.col], labels[partner]
    return (
        f"{question.cell} = {name}[{r}, {mine}] · cos θ {sign} {name}[{r}, {theirs}] · sin θ, "
        f"θ = position × the pair's frequency",
        f"{name}[{r}, {mine}] = {figure(a)};  {name}[{r}, {theirs}] = {figure(b)};  "
        f"position {p}, pair {pair}'s frequency = {figure(frequency)}",
        f"θ = {figure(p * frequency)};  cos θ = {figure(math.cos(p * frequency))}, "
        f"sin θ = {figure(math.sin(p * frequency))}; now turn the pair",
    )


HintMaker = Callable[[Trace, Stage, Question], Hints]
HINTS: dict[str, HintMaker] = {
    "scaled": _scaled,
    "alibi": _alibi,
    "biased": _biased,
    "capped": _capped,
    "masked": _masked,
    "concat": _concat,
    "X": _x,
    "X_context": _x,
    "embeddings": _learned,
    "embeddings_context": _learned,
    "positions": _positions,
    "positions_context": _positions,
    "Q_rope": _rope,
    "K_rope": _rope,
}
