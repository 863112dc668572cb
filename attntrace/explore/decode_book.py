"""decode as a book: one page per new token, the KV cache as it stands at that step.

Each step (and head) is a table: a row for every token the cache holds (the one this
step appends marked ``◀ new``, as decode's terminal marks it), its cached k and v,
then the new token's q against it: ``q·k``, scaled by √d_k (ALiBi's bias and the
softcap where the model has them) and the weight softmax gives it. The numbers are
decode's own (:func:`attntrace.decode.decoder.decode`); a cell's story writes out the
sum, the division or the softmax that made it, from the row's own numbers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from rich.cells import cell_len
from rich.text import Text

from attntrace.decode.decoder import Decode, DecodeStep
from attntrace.explore.book import Book
from attntrace.explore.stage_table import LABEL_LIMIT
from attntrace.explore.walk import Walk
from attntrace.forward.cell_story import CellStory
from attntrace.forward.cell_terms import Term, factor, figure, sum_line, term_lines, value_line
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import ModelInfo, Stage, Trace
from attntrace.ui.shown import label, model_name, shortened
from attntrace.ui.titles import head_label

# Terms of a dot product written out before the rest are summed as "…".
TERMS = 8
NEW = " ◀ new"  # the row of the token this step appends, as decode's terminal marks it


def decode_book(result: Decode) -> Book:
    """Every step of ``result`` for every head, walked a step at a time."""
    model = result.model
    tokens = [label(t) for t in unique_labels(result.tokens)]
    info = ModelInfo(
        name=model_name(model.name),
        d_model=model.d_model,
        d_k=model.d_k,
        d_v=model.d_v,
        heads=model.heads,
        kv_heads=model.n_kv_heads,
        causal=True,
    )
    stages = tuple(
        _step_stage(result, step, head, tokens)
        for head in range(model.heads)
        for step in result.steps
    )
    trace = Trace(model=info, tokens=tuple(tokens), stages=stages)

    def heading(walk: Walk) -> Text:
        step = result.steps[walk.position]
        head = walk.stage.head or 0
        text = Text.assemble(
            (f"step {step.t + 1}: ", "bold"),
            (tokens[step.t], "bold"),
            (f" joins the cache: {_rows(len(step.positions))}", "bold"),
            (head_label(walk.stage, info), "bold yellow"),
        )
        text.append("\nq = " + _vector(step.q[head]), style="cyan")
        text.append("\noutput = Σ weight · v = " + _vector(step.output[head]), style="cyan")
        text.no_wrap = True
        text.overflow = "ellipsis"
        return text

    def story(walk: Walk) -> CellStory:
        step = result.steps[walk.position]
        return step_story(result, step, walk.stage, walk.row, walk.col, tokens)

    dtype = None if result.cast.dtype == "float64" else result.cast.dtype
    return Book("decode", "step", trace, heading, story, dtype=dtype)


def _rows(count: int) -> str:
    return f"{count} row" if count == 1 else f"{count} rows"


def _columns(model_d_k: int, model_d_v: int, step: DecodeStep) -> list[str]:
    cols = [f"k{i}" for i in range(model_d_k)] + [f"v{i}" for i in range(model_d_v)]
    cols += ["q·k", "÷√d_k"]
    cols += ["biased"] if step.biased is not None else []
    cols += ["capped"] if step.capped is not None else []
    return [*cols, "weight"]


def _step_stage(result: Decode, step: DecodeStep, head: int, tokens: list[str]) -> Stage:
    model = result.model
    kv = head // model.group
    parts = [step.keys[kv], step.values[kv], step.scores[head][:, None], step.scaled[head][:, None]]
    for extra in (step.biased, step.capped):
        if extra is not None:
            parts.append(extra[head][:, None])
    parts.append(step.weights[head][:, None])
    return Stage(
        name=tokens[step.t],
        formula=f"step {step.t + 1}: q[{tokens[step.t]}] against the cache",
        rows=tuple(_row_label(tokens[p], new=p == step.t) for p in step.positions),
        cols=tuple(_columns(model.d_k, model.d_v, step)),
        data=np.column_stack(parts),
        head=head,
        kv_head=kv if model.group > 1 else None,
    )


def _row_label(token: str, *, new: bool) -> str:
    """The row's token; the new one's marked, shortened first so the mark always shows
    (the table gives up a long label's middle past LABEL_LIMIT cells)."""
    if not new:
        return token
    return shortened(token, LABEL_LIMIT - cell_len(NEW)) + NEW


def _vector(values: npt.NDArray[Any]) -> str:
    shown = [f"{v:.4f}" for v in values[:TERMS].tolist()]
    return "[" + ", ".join(shown) + (", …]" if len(values) > TERMS else "]")


def step_story(
    result: Decode, step: DecodeStep, stage: Stage, row: int, col: int, tokens: list[str]
) -> CellStory:
    """The cell ``stage[row, col]`` of one step: where a cached number came from, or the
    arithmetic of q·k, its scaling, or the weight. ``tokens`` are the sentence's labels
    (a row's label may be shortened and marked new)."""
    model = result.model
    head = stage.head or 0
    position = step.positions[row]
    name, key = stage.cols[col], tokens[position]
    value = float(stage.data[row, col])
    if name.startswith(("k", "v")) and name[1:].isdecimal():
        which = "key" if name[0] == "k" else "value"
        lines = [
            f"{name} of {key}'s {which}, cached at step {position + 1} when {key} was the "
            "new token: read, not recomputed"
        ]
    elif result.cast.dtype != "float64":
        lines = [
            f"this cell holds {result.cast.dtype}'s result; the arithmetic by hand is "
            "float64's, so it is not written out: explore without --dtype to see it"
        ]
    elif name == "q·k":
        q, k = step.q[head], step.keys[head // model.group][row]
        terms = [
            Term(f"d{i}", f"{figure(a)} × {factor(b)}", a * b)
            for i, (a, b) in enumerate(zip(q.tolist(), k.tolist(), strict=True))
        ]
        lines = [f"q · k[{key}]: {len(terms)} products", *term_lines(terms), sum_line(terms)]
    elif name == "÷√d_k":
        score = float(step.scores[head][row])
        root = math.sqrt(model.d_k)
        lines = [f"q·k / √{model.d_k} = {figure(score)} / {figure(root)} = {figure(score / root)}"]
    elif name == "weight":
        # the sink's logit, the model's own (step.sink is the weight the sink took)
        logits = model.variants.sink_logits(model.heads)
        sink = None if logits is None else float(logits[head])
        lines = _weight_lines(stage, row, sink)
    else:
        lines = []
    return CellStory(
        stage=stage.name,
        head=stage.head,
        row=key,
        col=name,
        value=value,
        heading=f"step {step.t + 1} ({stage.name}): {name}[{key}]"
        + (f", head {head}" if model.heads > 1 else ""),
        formula=stage.formula,
        lines=(*lines, value_line(value)),
    )


def _weight_lines(stage: Stage, row: int, sink: float | None) -> list[str]:
    """softmax over the column of logits before the weight (scaled, biased or capped),
    the sink logit (gpt-oss's) joining the max and the sum where the model has one."""
    logits = stage.data[:, -2].tolist()
    top = max([*logits, *([] if sink is None else [sink])])
    exps = [math.exp(x - top) if x != -math.inf else 0.0 for x in logits]
    total = math.fsum([*exps, *([] if sink is None else [math.exp(sink - top)])])
    lines = [
        f"M = the max of the cache's logits{'' if sink is None else ' and the sink'}"
        f" = {figure(top)}",
        f"exp({figure(logits[row])} − M) = {figure(exps[row])}",
        f"Σ exp(logit − M) over the {len(logits)} cached rows"
        + ("" if sink is None else " and the sink")
        + f" = {figure(total)}",
        f"weight = {figure(exps[row])} / {figure(total)} = {figure(exps[row] / total)}",
    ]
    if sink is not None:
        lines.insert(1, f"the sink logit {figure(sink)} is in the max and the sum, not a row")
    return lines
