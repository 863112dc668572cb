"""The hints a wrong answer earns, in order: the formula, the operands, a partial result.

Each is plain text (no Rich: the view makes it safe to show, since tokens come from
files), its figures written by the cell stories' one rule (six significant digits,
:func:`attntrace.forward.cell_terms.figure`). The partial result is the cell's story
(:mod:`attntrace.forward.cell_story`) without its last step, so it never gives the
answer away; the worked answer, after the last hint, is the view's (as --focus writes it).
"""

from __future__ import annotations

from collections.abc import Sequence

from attntrace.forward.cell_story import cell_story
from attntrace.forward.cell_terms import figure
from attntrace.kernel.trace import Stage, Trace
from attntrace.quiz.question import Question, stage_of

# A vector longer than this is written as its first and last figures around a count.
VECTOR_SHOWN = 12
PARTIAL_LINES = 12  # the partial result's lines at most (a long sum's story is cut anyway)


def default_hints(trace: Trace, question: Question) -> tuple[str, ...]:
    """The three hints for ``question``: its formula, its operands, a partial result."""
    stage = stage_of(trace, question)
    return (
        formula_hint(trace, stage, question),
        operands_hint(trace, stage, question),
        partial_hint(trace, stage, question),
    )


def vector(values: Sequence[float]) -> str:
    """``[2, 4]``; a long one ``[0.1, 0.2, 0.3, … 570 more …, 0.9, 1]`` (past 12)."""
    figures = [figure(float(v)) for v in values]
    if len(figures) > VECTOR_SHOWN:
        left = len(figures) - 5
        figures = [*figures[:3], f"… {left} more …", *figures[-2:]]
    return "[" + ", ".join(figures) + "]"


def formula_hint(trace: Trace, stage: Stage, question: Question) -> str:
    """What the cell is, as a formula over named operands."""
    r, c, cell = question.row_label, question.col_label, question.cell
    name = stage.name
    if name in ("Q", "K", "V"):
        plus = "" if trace.bias_for(stage) is None else f" + b{name}[{c}]"
        return f"{cell} = Σ_d X[{r}, d] × W{name}[d, {c}]{plus}: X's row times W{name}'s column"
    if name == "scores":
        q, k = trace.model.score_inputs
        return f"{cell} = Σ_d {q}[{r}, d] × {k}[{c}, d]: the query row times the key row"
    if name == "scaled":
        return f"{cell} = scores[{r}, {c}] / √d_k"
    if name == "softmax":
        x = trace.model.softmax_source
        return (
            f"{cell} = exp(x_{c} − M) / Σ_k exp(x_k − M), with x = {x}[{r}] (the whole row) "
            "and M its largest value"
        )
    if name == "output":
        return f"{cell} = Σ_k softmax[{r}, k] × V[k, {c}]: the weights times V's column"
    if name == "masked":
        source = trace.model.mask_source
        return f"{cell} = {source}[{r}, {c}] where the key is visible, −∞ where the mask hides it"
    return f"{cell}: {stage.formula}"


def operands_hint(trace: Trace, stage: Stage, question: Question) -> str:
    """The numbers the cell is computed from."""
    i, j = question.row, question.col
    r, c = question.row_label, question.col_label
    name, head = stage.name, stage.head

    def row(of: str, at: int) -> Sequence[float]:
        return [float(v) for v in trace.stage(of, head=head).data[at]]

    if name in ("Q", "K", "V"):
        weight = trace.weight_for(stage)
        x = [float(v) for v in trace.stage("X").data[i]]
        if weight is None or weight.data.shape[0] != len(x):
            return _story_operands(trace, stage, question)
        column = [float(v) for v in weight.data[:, j]]
        return f"X[{r}] = {vector(x)};  W{name}[·, {c}] = {vector(column)}"
    if name == "scores":
        q, k = trace.model.score_inputs
        return f"{q}[{r}] = {vector(row(q, i))};  {k}[{c}] = {vector(row(k, j))}"
    if name == "scaled":
        score = float(trace.stage("scores", head=head).data[i, j])
        return f"scores[{r}, {c}] = {figure(score)};  d_k = {trace.model.d_k}"
    if name == "softmax":
        source = trace.model.softmax_source
        values = row(source, i)
        return f"{source}[{r}] = {vector(values)};  M = {figure(max(values))}"
    if name == "output":
        weights = row("softmax", i)
        column = [float(v) for v in trace.stage("V", head=head).data[:, j]]
        return f"softmax[{r}] = {vector(weights)};  V[·, {c}] = {vector(column)}"
    return _story_operands(trace, stage, question)


def _story_operands(trace: Trace, stage: Stage, question: Question) -> str:
    """Another stage's operands: the first line of its cell's story."""
    lines = cell_story(trace, stage, question.row, question.col).lines
    return lines[0] if len(lines) > 1 else f"{question.cell}: {stage.formula}"


def partial_hint(trace: Trace, stage: Stage, question: Question) -> str:
    """The cell's story up to its last step: every term of a sum, not the sum; the
    exps and their sum, not the share; √d_k, not the quotient."""
    lines = list(cell_story(trace, stage, question.row, question.col).lines[:-1])
    if len(lines) > 1:
        lines = lines[:-1]  # the step that gives the cell
    lines = lines[:PARTIAL_LINES]
    if stage.name in ("scores", "Q", "K", "V", "output"):
        lines.append("now add the terms")
    elif stage.name == "softmax":
        lines.append("now divide this key's exp by the sum")
    return "\n".join(lines)
