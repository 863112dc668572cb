"""Decoding with a KV cache, drawn step by step: the cache growing, the new row, the cost.

Each step shows the K and V caches (one per K/V head) with the row just appended
marked, the new token's scores and weights over every cached key (one row per query
head), its output, and what the step cost with and without the cache. The summary
compares with full causal attention and shows the two costs diverging.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Text

from attntrace.decode.decoder import Decode, DecodeStep
from attntrace.decode.dtype import Overflow, first_overflow
from attntrace.forward.views.attention_map import bar
from attntrace.forward.views.dtype import delta, error_text, rule_line
from attntrace.forward.views.overview import Packed
from attntrace.kernel import masks
from attntrace.kernel.casting import StageError
from attntrace.kernel.labels import dims, unique_labels
from attntrace.kernel.ops import kv_head_of
from attntrace.kernel.overflow_words import amount, why_infinite
from attntrace.kernel.trace import Stage
from attntrace.ui.shown import labels as shown_labels
from attntrace.ui.shown import model_name, pad, quoted
from attntrace.ui.stage_table import StageTable
from attntrace.ui.view import View, marking_overflows
from attntrace.ui.wrap import Facts, Terms, Wrapped

_BAR = 30


def step_view(
    run: Decode,
    step: DecodeStep,
    view: View,
    head: int | None = None,
    overflow: Overflow | None = None,
) -> Group:
    """One step: the cache tables, the new row's attention, its output and cost.

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
    cached = tuple(f"{label}{' ◀ new' if p == step.t else ''}"
                   for p, label in zip(positions, labels, strict=True))  # fmt: skip
    rows = len(positions)
    parts: list[RenderableType] = [
        Text.assemble(
            ("Step ", "dim"), (f"{step.t + 1}", "bold"),
            (f" of {len(run.steps)} (t = {step.t}): ", "dim"),
            (quoted(step.token), "bold magenta"),
            (f"  appends its k and v to the cache, then its q attends over {rows} "
             f"cached key{'s' if rows > 1 else ''}", "dim"),
        ),
    ]  # fmt: skip
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
            heading = Text.assemble((f"{name} cache{whose}", "bold"), (note, "dim"),
                                    (f"   [{matrix.shape[0]} × {width}]", "cyan"))  # fmt: skip
            caches.append(Group(Wrapped(heading), StageTable(stage, view)))
    parts += [Packed(caches), Text("")]  # side by side where they fit
    head_rows = tuple(
        f"head {h}"
        + (f" (K/V {kv_head_of(h, model.heads, model.n_kv_heads)})" if model.group > 1 else "")
        for h in shown
    )
    keys = tuple(labels)
    token = quoted(step.token)
    q_label = f"q·Kᵀ / √{model.d_k} for {token} over the cache" + (
        f" (q turned by RoPE at position {step.t})" if turned else ""
    )
    parts += [
        Wrapped(Text.assemble(
            ("scaled", "bold"), f" = {q_label}", (f"   [{len(shown)} × {rows}]", "cyan")
        )),
        StageTable(Stage("scaled", "", head_rows, keys, step.scaled[shown]), view),
        *_variant_tables(run, step, head_rows, keys, shown, view),
        Text(""),
        Text.assemble(("softmax", "bold"), f" of each row: where {token} looks",
                      (" (the sink column takes weight and passes no value)", "dim")
                      if step.sink is not None else ""),
        *_error_lines(run, None if errors is None else errors.weights),
        StageTable(_weights_stage(step, head_rows, keys, shown), view),
        Text(""),
        Wrapped(Text.assemble(("output", "bold"), f" = softmax · V cache: the row of {token}",
                              (f"   [{len(shown)} × {model.d_v}]", "cyan"))),
        *_error_lines(run, None if errors is None else errors.output),
        # one head shown: its own columns of concat (d448… for head 7), as run labels them
        StageTable(Stage("output", "", head_rows, dims(model.d_v, (head or 0) * model.d_v),
                         step.output[shown]), view),
    ]  # fmt: skip
    if step.projected is not None and head is None:  # WO mixes every head
        parts += [
            Text(""),
            Text.assemble(("projected", "bold"), " = concat of the heads · WO"),
            *_error_lines(run, None if errors is None else errors.projected),
            StageTable(Stage("projected", "", (labels[-1],), dims(model.d_model),
                             step.projected[None, :]), view),
        ]  # fmt: skip
    parts += [Text(""), cost_line(run, step)]
    return Group(*parts)


def window_line(run: Decode, step: DecodeStep) -> Text:
    """What the sliding window did to the cache at this step: the row it dropped (with
    its position and why), or that nothing has left yet."""
    window, sinks = run.model.variants.window, run.model.variants.sinks
    assert window is not None
    kept = ("" if not sinks else ", the first key kept as a sink" if sinks == 1
            else f", the first {sinks} kept as sinks")  # fmt: skip
    limit = f"window {window}{kept}: the cache holds at most {window + sinks} rows"
    if step.dropped is None:
        return Text.assemble(("nothing dropped", "dim"), (f" ({limit})", "dim"))
    return Text.assemble(
        ("dropped ", "bold yellow"), (quoted(run.tokens[step.dropped]), "bold"),
        (f" (position {step.dropped}): out of the window", "bold yellow"),
        (f", {step.t - step.dropped} tokens back ({limit})", "dim"),
    )  # fmt: skip


def _variant_tables(run: Decode, step: DecodeStep, head_rows: tuple[str, ...],
                    keys: tuple[str, ...], shown: list[int],
                    view: View) -> list[RenderableType]:  # fmt: skip
    """The stages between scaled and softmax that a variant adds, as the trace names them:
    ALiBi's ``biased`` and the soft cap's ``capped``."""
    parts: list[RenderableType] = []
    variants = run.model.variants
    if step.biased is not None:
        slopes = [masks.slope_text(run.model.variants.slopes(run.model.heads)[h]) for h in shown]
        title = Text.assemble(("biased", "bold"), " = scaled − m · (t − position) (ALiBi, m = "
                              f"{', '.join(slopes)})")  # fmt: skip
        table = StageTable(Stage("biased", "", head_rows, keys, step.biased[shown]), view)
        parts += [Text(""), Wrapped(title), table]
    if step.capped is not None and variants.softcap is not None:
        cap = f"{variants.softcap:g}"
        before = "biased" if step.biased is not None else "scaled"
        title = Text.assemble(("capped", "bold"), f" = {cap} · tanh({before} / {cap})")
        table = StageTable(Stage("capped", "", head_rows, keys, step.capped[shown]), view)
        parts += [Text(""), Wrapped(title), table]
    return parts


def _weights_stage(step: DecodeStep, head_rows: tuple[str, ...], keys: tuple[str, ...],
                   shown: list[int]) -> Stage:  # fmt: skip
    """The weights over the cache, and the sink's share as one more column."""
    if step.sink is None:
        return Stage("softmax", "", head_rows, keys, step.weights[shown])
    data = np.concatenate([step.weights[shown], step.sink[shown]], axis=1)
    return Stage("softmax", "", head_rows, (*keys, "sink"), data)


_FORMULAS = {"q": "x·WQ", "k": "x·WK", "v": "x·WV", "scores": "q·Kᵀ", "scaled": "q·Kᵀ / √d_k",
             "weights": "softmax", "output": "softmax·V", "projected": "concat·WO"}  # fmt: skip
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
    col = (f"key {quoted(labels[where.col])}" if where.stage in ("scores", "scaled", "weights")
           else f"d{where.col}")  # fmt: skip
    at = ", ".join(part for part in (row, col) if part)
    name = f"{where.stage} of {quoted(run.steps[where.t].token)}: {_FORMULAS[where.stage]}"
    if where.stage == "weights" or not math.isinf(where.value):
        return (f"{name} is NaN at {at} (float64: {amount(where.exact)}): it comes from an "
                f"inf − inf or 0 · inf of the {dtype} values before it")  # fmt: skip
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


def precision_line(run: Decode) -> Wrapped | None:
    """``float16: values rounded to float16; …``: the dtype and its casting rule, as
    run's header says it."""
    return None if run.cast.exact else rule_line(run.cast.dtype, run.cast.rule)


def bytes_text(run: Decode, count: int) -> str:
    """``140 bytes`` in float64, ``70 bytes at float16 (2 each)`` in a narrower dtype."""
    if run.cast.exact:
        return f"{count:,} bytes"
    return f"{count:,} bytes at {run.cast.dtype} ({run.cast.storage_bytes} each)"


def decode_header(run: Decode, head: int | None) -> Facts:
    """``smollm2 L3 · decoding 12 tokens · head 8 of 9 (K/V head 2)``."""
    model = run.model
    facts = [f"decoding {len(run.tokens)} token{'s' if len(run.tokens) > 1 else ''}"]
    if head is not None:
        kv = kv_head_of(head, model.heads, model.n_kv_heads)
        facts.append(f"head {head} of {model.heads}"
                     + (f" (K/V head {kv})" if model.group > 1 else ""))  # fmt: skip
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
        (f"{costs.cached:,}", "bold green"), " multiply-adds with the cache, ",
        (f"{costs.recomputed:,}", "bold red"), f" recomputing the prefix ({ratio:.1f}×); ",
        ("cache now ", "dim"), (bytes_text(run, step.cache_bytes), "bold"),
    )  # fmt: skip


def summary(run: Decode) -> Iterator[RenderableType]:
    """The comparison with full causal attention, and the costs step by step.

    The verdict names the float64 rounding bound it is judged against, a figure of the
    numbers alone, the same on every machine; the difference measured here comes last,
    said to be this machine's: its last bits depend on the CPU's BLAS kernel.
    """
    model = run.model
    if not run.cast.exact:
        yield from _low_summary(run)
        return
    over = (f": {len(run.steps)} step{'s' if len(run.steps) > 1 else ''} × {model.heads} "
            f"head{'s' if model.heads > 1 else ''}")  # fmt: skip
    bound = f"|Δ| ≤ {rounded_up(run.bound)} for these numbers"
    if run.matches:
        yield Text.assemble(("decode ", "bold"), ("matches", "bold green"),
                            (" full causal attention", "bold"), over)  # fmt: skip
        yield Text(f"every output within float64 rounding of it: {bound}", style="dim")
    else:
        yield Text.assemble(("decode ", "bold"), ("DIFFERS FROM", "bold red"),
                            (" full causal attention", "bold"), over)  # fmt: skip
        yield Text(f"max |Δ| = {run.max_delta:.1e}, past float64 rounding: {bound}",
                   style="bold red")  # fmt: skip
    cache_note = (
        f"the cache holds {model.n_kv_heads} K/V head{'s' if model.n_kv_heads > 1 else ''}"
        + (f", not {model.heads}: {model.group}× smaller than with full heads"
           if model.group > 1 else "")
    )  # fmt: skip
    yield Text(cache_note, style="dim")
    growth = growth_line(run)
    if growth is not None:
        yield growth
    yield Text("")
    yield CostTable(run)
    if run.matches:
        yield Text(f"measured here: max |Δ| = {run.max_delta:.1e} (the last bits depend on the "
                   "CPU's BLAS)", style="dim")  # fmt: skip


def growth_line(run: Decode) -> Wrapped | None:
    """With a sliding window: where the cache stopped growing (None without a window)."""
    window, sinks = run.model.variants.window, run.model.variants.sinks
    if window is None:
        return None
    most = window + sinks
    kept = f" + {sinks} sink{'s' if sinks > 1 else ''}" if sinks else ""
    full = next((s for s in run.steps if s.dropped is not None), None)
    dropped = sum(1 for s in run.steps if s.dropped is not None)
    if full is None:
        said = (
            f"window {window}{kept}: the cache stops growing at {most} rows; these "
            f"{len(run.steps)} tokens never fill it, so nothing was dropped"
        )
    else:
        said = (f"window {window}{kept}: the cache stopped growing at {most} rows (step "
                f"{full.t + 1} dropped its first row; {dropped} dropped in all), holding "
                f"{bytes_text(run, run.steps[-1].cache_bytes)} from then on")  # fmt: skip
    return Wrapped(Text(said, style="dim"))


def rounded_up(bound: float) -> str:
    """``2.3e-15``: the bound to two significant digits, rounded up, so that what is
    shown is never less than what was checked."""
    if bound <= 0:
        return "0"
    text = f"{bound:.1e}"
    if float(text) < bound:  # rounded down: one more in the last digit
        mantissa, exponent = text.split("e")
        text = f"{float(mantissa) + 0.1:.1f}e{exponent}"
        text = f"{float(text):.1e}"  # 9.9 + 0.1 = 10.0 -> 1.0e+next
    return text


def _low_summary(run: Decode) -> Iterator[RenderableType]:
    """In a low-precision dtype: the exact agreement with the full causal attention in
    that dtype, the error against float64's decode, the cache's bytes beside kv-cache's."""
    model, dtype = run.model, run.cast.dtype
    rule = precision_line(run)
    if rule is not None:
        yield rule
    over = (f"{len(run.steps)} step{'s' if len(run.steps) > 1 else ''} × {model.heads} "
            f"head{'s' if model.heads > 1 else ''}")  # fmt: skip
    if run.matches:
        yield Wrapped(Text.assemble(("decode ", "bold"), ("equals", "bold green"),
                                    (f" full causal attention in {dtype} exactly", "bold"),
                                    ": max |Δ| = 0"))  # fmt: skip
        yield Wrapped(Text(f"{over}, every output cell: the same rounded operations (a masked "
                           "key adds exp(−∞) = 0 to the sum and 0 · v = 0 to the output)",
                           style="dim"))  # fmt: skip
    else:
        cells = f"{run.differing:,} cell{'s' if run.differing > 1 else ''}"
        yield Wrapped(
            Text.assemble(
                ("decode ", "bold"),
                ("DIFFERS FROM", "bold red"),
                (f" full causal attention in {dtype}", "bold"),
                f": {cells} of {over}; max |Δ| = {delta(run.max_delta)} over the cells "
                "both hold finite",
            )
        )
        if any(not np.isfinite(step.v).all() for step in run.steps):
            yield Wrapped(Text("a token's v is ±inf or NaN: the full product multiplies it by "
                               "a masked key's weight 0 (0 · inf = NaN), which the cache never "
                               "computes", style="bold red"))  # fmt: skip
    error = run.error
    if error is not None:
        style = "bold red" if error.overflowed else ""
        yield Wrapped(Text.assemble(("decoded outputs: ", "dim"),
                                    (error_text(error, dtype), style)))  # fmt: skip
    yield Wrapped(
        Text.assemble(
            ("cache at the end: ", "dim"), (bytes_text(run, run.steps[-1].cache_bytes), "bold")
        )
    )
    yield kv_cache_note(run)
    growth = growth_line(run)
    if growth is not None:
        yield growth
    yield Text("")
    yield CostTable(run)


def kv_cache_note(run: Decode) -> RenderableType:
    """``= kv-cache --layers 1 … --dtype fp16``: the calculator's command for the same
    bytes (broken only between its flags), where it can price this cache (one head
    width, a dtype it has)."""
    model, kv_dtype = run.model, run.kv_cache_dtype
    if kv_dtype is None:
        return Wrapped(Text("(kv-cache has no float64: 8 bytes a value, twice its fp32)",
                            style="dim"))  # fmt: skip
    if model.d_k != model.d_v:
        return Wrapped(Text(f"(kv-cache prices one head width: here d_k {model.d_k} ≠ d_v "
                            f"{model.d_v})", style="dim"))  # fmt: skip
    flags = ["= kv-cache", "--layers 1", f"--heads {model.heads}",
             f"--kv-heads {model.n_kv_heads}", f"--head-dim {model.d_k}",
             f"--tokens {len(run.steps)}", f"--dtype {kv_dtype}"]  # fmt: skip
    window = model.variants.window
    if window is not None:  # the cache holds at most N + S rows: kv-cache's window of N + S
        flags.append(f"--window {window + model.variants.sinks}")
    return Terms(tuple((" ", Text(flag, style="dim")) for flag in flags))


@dataclass(frozen=True)
class CostTable:
    """Per step: multiply-adds both ways, their running totals as bars, the cache size."""

    run: Decode

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        run = self.run
        yield Text("multiply-adds of each step, and the running totals as bars "
                   "(green: with the cache, red: recomputing the prefix)", style="dim")  # fmt: skip
        totals = np.cumsum([[s.costs.cached, s.costs.recomputed] for s in run.steps], axis=0)
        widest = float(totals[-1, 1])
        labels = unique_labels(shown_labels(run.tokens))
        label_width = max(5, *(cell_len(label) for label in labels))
        numbers = max(len(f"{int(totals[-1, 1]):,}"), 7)
        fixed = 4 + label_width + 1 + 2 * (numbers + 1)
        full = min(_BAR, (options.max_width - fixed - 1) // 2)
        full = full if full >= 4 else 0  # bars of fewer cells say nothing: the numbers do
        heading = f"{'t':>3} {'token':<{label_width}} {'cached':>{numbers}} {'recomp.':>{numbers}}"
        named = next((n for n in (" running totals", " totals")
                      if len(heading) + len(n) <= options.max_width), "")  # fmt: skip
        yield Text(heading + (named if full else ""), style="bold")
        for step, (cached, recomputed) in zip(run.steps, totals, strict=True):
            line = Text()
            line.append(f"{step.t:>3} {pad(labels[step.t], label_width)} ", style="bold")
            line.append(f"{step.costs.cached:>{numbers},} {step.costs.recomputed:>{numbers},}")
            if full:
                line.append(" ")
                line.append(bar(cached / widest, full).ljust(full), style="green")
                line.append(" ")
                line.append(bar(recomputed / widest, full), style="red")
            yield line
        yield Text.assemble(
            ("total", "bold"), f"  {run.total_cached:,} with the cache, {run.total_recomputed:,} "
            f"recomputing ({run.total_recomputed / run.total_cached:.1f}×); cache at the end "
            f"{bytes_text(run, run.steps[-1].cache_bytes)}",
        )  # fmt: skip


Screen = Callable[[Console], None]


def screens(run: Decode, view: View, head: int | None = None) -> list[Screen]:
    """One screen per step, then the summary: for printing in turn or paging through.

    Each step screen opens with the model's name, so a page read alone says whose
    cache it shows.
    """
    view = marking_overflows(view, not run.cast.exact)
    first = None if run.cast.exact else first_overflow(run)

    def step_screen(step: DecodeStep) -> Screen:
        def draw(console: Console) -> None:
            console.print(decode_header(run, head), crop=False)
            rule = precision_line(run)
            if rule is not None:
                console.print(rule, crop=False)
            console.print(step_view(run, step, view, head, first), crop=False)

        return draw

    def summary_screen(console: Console) -> None:
        for renderable in summary(run):
            console.print(renderable, crop=False)

    return [*(step_screen(step) for step in run.steps), summary_screen]
