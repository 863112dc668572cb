"""Decoding with a KV cache, drawn step by step: the cache growing, the new row, the cost.

Each step shows the K and V caches (one per K/V head) with the row just appended
marked, the new token's scores and weights over every cached key (one row per query
head), its output, and what the step cost with and without the cache. The summary
(views/summary.py) compares with full causal attention and shows the two costs diverging.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from rich.console import Console, Group, RenderableType
from rich.text import Text

from attntrace.decode.decoder import Decode, DecodeStep
from attntrace.decode.dtype import Overflow, first_overflow
from attntrace.decode.views.summary import bytes_text, precision_line, summary
from attntrace.forward.views.dtype import error_text
from attntrace.forward.views.overview import Packed
from attntrace.kernel import masks
from attntrace.kernel.casting import StageError
from attntrace.kernel.labels import dims, marks_note, unique_labels
from attntrace.kernel.ops import kv_head_of
from attntrace.kernel.overflow_words import amount, why_infinite
from attntrace.kernel.trace import Stage
from attntrace.ui.pager import Paged
from attntrace.ui.shown import labels as shown_labels
from attntrace.ui.shown import model_name, quoted
from attntrace.ui.stage_table import StageTable
from attntrace.ui.view import View, marking_overflows
from attntrace.ui.wrap import Facts, Wrapped


def step_view(
    run: Decode,
    step: DecodeStep,
    view: View,
    head: int | None = None,
    overflow: Overflow | None = None,
) -> Group:
    """One step: its title line, the cache tables, the new row's attention, its output
    and cost (:func:`step_parts`, in one group)."""
    return Group(*step_parts(run, step, view, head, overflow))


def step_parts(
    run: Decode,
    step: DecodeStep,
    view: View,
    head: int | None = None,
    overflow: Overflow | None = None,
) -> list[RenderableType]:
    """One step: the cache tables, the new row's attention, its output and cost; the
    first part is the step's title line (``Step 2 of 6 (t = 1): 'cat' ...``).

    ``head`` limits the rows to that query head (and the caches to the K/V head it
    reads), as ``decode --model --head`` asks; the numbers are the whole layer's.
    ``overflow`` is the run's first (:func:`first_overflow`, found once for all its
    steps: looking for it on every step was quadratic in the sentence), explained on
    its step.
    """
    model = run.model
    low = not run.cast.exact
    errors = run.errors[step.t] if low else None
    shown = list(range(model.heads)) if head is None else [head]
    kv_shown = sorted({kv_head_of(h, model.heads, model.n_kv_heads) for h in shown})
    windowed = model.variants.window is not None
    positions = step.positions or tuple(range(step.t + 1))
    # with a window a row is not its position: each says where it sits in the sentence,
    # which tells two of one token apart as well
    every = shown_labels(run.tokens) if windowed else unique_labels(shown_labels(run.tokens))
    labels = [f"{every[p]} @{p}" if windowed else every[p] for p in positions]
    cached = tuple(
        f"{label}{' ◀ new' if p == step.t else ''}"
        for p, label in zip(positions, labels, strict=True)
    )
    rows = len(positions)
    parts: list[RenderableType] = [
        Wrapped(
            Text.assemble(
                ("Step ", "dim"),
                (f"{step.t + 1}", "bold"),
                (f" of {len(run.steps)} (t = {step.t}): ", "dim"),
                (quoted(step.token), "bold magenta"),
                (
                    f"  appends its k and v to the cache, then its q attends over {rows} "
                    f"cached key{'s' if rows > 1 else ''}",
                    "dim",
                ),
            )
        ),
    ]
    if windowed:
        parts.append(Wrapped(window_line(run, step)))
    if overflow is not None and overflow.t == step.t:
        parts.append(Wrapped(Text(overflow_note(run, overflow), style="bold red")))
    parts.append(Text(""))
    caches: list[RenderableType] = []
    turned = model.position_kind == "rope"  # a LLaMA cache holds keys already turned
    for g in kv_shown:
        whose = f", K/V head {g}" if model.n_kv_heads > 1 else ""
        for name, matrix, width in (
            ("K", step.keys[g], model.d_k),
            ("V", step.values[g], model.d_v),
        ):
            stage = Stage(f"{name} cache", "", cached, dims(width, g * width), matrix)
            note = " (turned by RoPE)" if turned and name == "K" else ""
            heading = Text.assemble(
                (f"{name} cache{whose}", "bold"),
                (note, "dim"),
                (f"   [{matrix.shape[0]} × {width}]", "cyan"),
            )
            caches.append(Group(Wrapped(heading), StageTable(stage, view)))
    parts += [Packed(caches), Text("")]  # side by side where they fit
    head_rows = tuple(
        f"head {h}"
        + (f" (K/V {kv_head_of(h, model.heads, model.n_kv_heads)})" if model.group > 1 else "")
        for h in shown
    )
    keys = tuple(labels)
    # the keys the weights' table keeps (the heaviest) are the ones scaled's tables keep
    weights = Stage("softmax", "", head_rows, keys, step.weights[shown])
    token = quoted(step.token)
    q_label = f"q·Kᵀ / √{model.d_k} for {token} over the cache" + (
        f" (q turned by RoPE at position {step.t})" if turned else ""
    )
    parts += [
        Wrapped(
            Text.assemble(
                ("scaled", "bold"), f" = {q_label}", (f"   [{len(shown)} × {rows}]", "cyan")
            )
        ),
        StageTable(Stage("scaled", "", head_rows, keys, step.scaled[shown]), view, weights),
        *_variant_tables(run, step, head_rows, keys, shown, view, weights),
        Text(""),
        Text.assemble(
            ("softmax", "bold"),
            f" of each row: where {token} looks",
            (" (the sink column takes weight and passes no value)", "dim")
            if step.sink is not None
            else "",
        ),
        *_error_lines(run, None if errors is None else errors.weights),
        StageTable(_weights_stage(step, head_rows, keys, shown), view),
        Text(""),
        Wrapped(
            Text.assemble(
                ("output", "bold"),
                f" = softmax · V cache: the row of {token}",
                (f"   [{len(shown)} × {model.d_v}]", "cyan"),
            )
        ),
        *_error_lines(run, None if errors is None else errors.output),
        # one head shown: its own columns of concat (d448… for head 7), as run labels them
        StageTable(
            Stage(
                "output",
                "",
                head_rows,
                dims(model.d_v, (head or 0) * model.d_v),
                step.output[shown],
            ),
            view,
        ),
    ]
    if step.projected is not None and head is None:  # WO mixes every head
        parts += [
            Text(""),
            Text.assemble(("projected", "bold"), " = concat of the heads · WO"),
            *_error_lines(run, None if errors is None else errors.projected),
            StageTable(
                Stage("projected", "", (labels[-1],), dims(model.d_model), step.projected[None, :]),
                view,
            ),
        ]
    parts += [Text(""), cost_line(run, step)]
    return parts


def window_line(run: Decode, step: DecodeStep) -> Text:
    """What the sliding window did to the cache at this step: the row it dropped (with
    its position and why), or that nothing has left yet."""
    window, sinks = run.model.variants.window, run.model.variants.sinks
    assert window is not None
    kept = (
        ""
        if not sinks
        else ", the first key kept as a sink"
        if sinks == 1
        else f", the first {sinks} kept as sinks"
    )
    limit = f"window {window}{kept}: the cache holds at most {window + sinks} rows"
    if step.dropped is None:
        return Text.assemble(("nothing dropped", "dim"), (f" ({limit})", "dim"))
    return Text.assemble(
        ("dropped ", "bold yellow"),
        (quoted(run.tokens[step.dropped]), "bold"),
        (f" (position {step.dropped}): out of the window", "bold yellow"),
        (f", {step.t - step.dropped} tokens back ({limit})", "dim"),
    )


def _variant_tables(
    run: Decode,
    step: DecodeStep,
    head_rows: tuple[str, ...],
    keys: tuple[str, ...],
    shown: list[int],
    view: View,
    weights: Stage | None = None,
) -> list[RenderableType]:
    """The stages between scaled and softmax that a variant adds, as the trace names them:
    ALiBi's ``biased`` and the soft cap's ``capped`` (their keys: ``weights``' heaviest)."""
    parts: list[RenderableType] = []
    variants = run.model.variants
    if step.biased is not None:
        slopes = [masks.slope_text(run.model.variants.slopes(run.model.heads)[h]) for h in shown]
        title = Text.assemble(
            ("biased", "bold"), f" = scaled − m · (t − position) (ALiBi, m = {', '.join(slopes)})"
        )
        table = StageTable(Stage("biased", "", head_rows, keys, step.biased[shown]), view, weights)
        parts += [Text(""), Wrapped(title), table]
    if step.capped is not None and variants.softcap is not None:
        cap = f"{variants.softcap:g}"
        before = "biased" if step.biased is not None else "scaled"
        title = Text.assemble(("capped", "bold"), f" = {cap} · tanh({before} / {cap})")
        table = StageTable(Stage("capped", "", head_rows, keys, step.capped[shown]), view, weights)
        parts += [Text(""), Wrapped(title), table]
    return parts


def _weights_stage(
    step: DecodeStep, head_rows: tuple[str, ...], keys: tuple[str, ...], shown: list[int]
) -> Stage:
    """The weights over the cache, and the sink's share as one more column."""
    if step.sink is None:
        return Stage("softmax", "", head_rows, keys, step.weights[shown])
    data = np.concatenate([step.weights[shown], step.sink[shown]], axis=1)
    return Stage("softmax", "", head_rows, (*keys, "sink"), data)


_FORMULAS = {
    "q": "x·WQ",
    "k": "x·WK",
    "v": "x·WV",
    "scores": "q·Kᵀ",
    "scaled": "q·Kᵀ / √d_k",
    "weights": "softmax",
    "output": "softmax·V",
    "projected": "concat·WO",
}


_WHAT_FOLLOWS = {
    "q": "and its scores against every key follow it",
    "k": "and the cache keeps it for every later step",
    "v": "and the cache keeps it for every later step",
    "scores": "and softmax of that row is NaN (inf − inf)",
    "scaled": "and softmax of that row is NaN (inf − inf)",
    "output": "and WO carries it into the projected row",
    "projected": "the layer's output",
}


def overflow_note(run: Decode, where: Overflow) -> str:
    """One line that says why the first ±inf or NaN appears, in numbers:
    ``scores: q·Kᵀ = 70,144 at head 0, key 'cat' is past 65,504, the largest float16: it
    rounds to inf, and softmax of that row is NaN (inf − inf)``."""
    dtype = run.cast.dtype
    labels = unique_labels(shown_labels(run.tokens))
    if where.stage in ("k", "v"):
        row = f"K/V head {where.row}"
    else:
        row = "" if where.stage == "projected" else f"head {where.row}"
    col = (
        f"key {quoted(labels[where.col])}"
        if where.stage in ("scores", "scaled", "weights")
        else f"d{where.col}"
    )
    at = ", ".join(part for part in (row, col) if part)
    name = f"{where.stage} of {quoted(run.steps[where.t].token)}: {_FORMULAS[where.stage]}"
    if where.stage == "weights" or not math.isinf(where.value):
        return (
            f"{name} is NaN at {at} (float64: {amount(where.exact)}): it comes from an "
            f"inf − inf or 0 · inf of the {dtype} values before it"
        )
    into = run.cast.accumulates_in if where.stage in _PRODUCTS else None
    why = why_infinite(where.value, where.exact, dtype, into)
    return f"{name} = {amount(where.exact)} at {at} {why}, {_WHAT_FOLLOWS[where.stage]}"


# The steps' stages that are a matrix product: where a partial sum can overflow on the way.
_PRODUCTS = ("q", "k", "v", "scores", "output", "projected")


def _error_lines(run: Decode, error: StageError | None) -> list[RenderableType]:
    """The line under a stage's title giving its error against float64 (none in float64);
    red where a cell overflowed."""
    if error is None:
        return []
    style = "bold red" if error.overflowed else "dim"
    return [Wrapped(Text(error_text(error, run.cast.dtype), style=style))]


def decode_header(run: Decode, head: int | None) -> Facts:
    """``smollm2 L3 · decoding 12 tokens · head 8 of 9 (K/V head 2)``."""
    model = run.model
    facts = [f"decoding {len(run.tokens)} token{'s' if len(run.tokens) > 1 else ''}"]
    if head is not None:
        kv = kv_head_of(head, model.heads, model.n_kv_heads)
        facts.append(
            f"head {head} of {model.heads}" + (f" (K/V head {kv})" if model.group > 1 else "")
        )
    elif model.heads > 1:
        facts.append(f"{model.heads} heads, {model.n_kv_heads} K/V")
    if not run.cast.exact:
        facts.append(run.cast.dtype)
    return Facts(model_name(model.name), tuple(facts))


def cost_line(run: Decode, step: DecodeStep) -> Text:
    costs = step.costs
    ratio = costs.recomputed / costs.cached
    return Text.assemble(
        ("cost of this step: ", "dim"),
        (f"{costs.cached:,}", "bold green"),
        " multiply-adds with the cache, ",
        (f"{costs.recomputed:,}", "bold red"),
        f" recomputing the prefix ({ratio:.1f}×); ",
        ("cache now ", "dim"),
        (bytes_text(run, step.cache_bytes), "bold"),
    )


Screen = Callable[[Console], None]  # a step's is Paged: its title pinned, its tables paged


def screens(run: Decode, view: View, head: int | None = None) -> list[Screen]:
    """One screen per step, then the summary: for printing in turn or paging through.

    Each step screen opens with the model's name, so a page read alone says whose
    cache it shows.
    """
    view = marking_overflows(view, not run.cast.exact)
    first = None if run.cast.exact else first_overflow(run)

    def step_screen(step: DecodeStep) -> Screen:
        def pinned(console: Console) -> None:  # the model, the dtype's rule, the step
            console.print(decode_header(run, head), crop=False)
            marks = marks_note(run.tokens) if step is run.steps[0] else ""
            if marks:  # a trained model's tokens: what Ġ or ▁ in them mean, once
                console.print(Wrapped(Text(marks, style="dim")), crop=False)
            rule = precision_line(run)
            if rule is not None:
                console.print(rule, crop=False)
            console.print(step_parts(run, step, view, head, first)[0], crop=False)

        def body(console: Console) -> None:
            console.print(Group(*step_parts(run, step, view, head, first)[1:]), crop=False)

        return Paged(pinned, body)

    def summary_screen(console: Console) -> None:
        for renderable in summary(run):
            console.print(renderable, crop=False)

    return [*(step_screen(step) for step in run.steps), summary_screen]
