"""decode's last screen: the verdict against full causal attention, the costs step by step.

The verdict names the bound it is judged against; in a narrow dtype, the exact agreement
in that dtype, the error against float64's decode and the cache's bytes beside the
kv-cache calculator's command for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.text import Text

from attntrace.decode.decoder import Decode
from attntrace.forward.views.attention_map import bar
from attntrace.forward.views.dtype import delta, error_text, rule_line
from attntrace.kernel.labels import unique_labels
from attntrace.ui.shown import labels as shown_labels
from attntrace.ui.shown import pad
from attntrace.ui.wrap import Terms, Wrapped

_BAR = 30


def precision_line(run: Decode) -> Wrapped | None:
    """``float16: values rounded to float16; …``: the dtype and its casting rule, as
    run's header says it."""
    return None if run.cast.exact else rule_line(run.cast.dtype, run.cast.rule)


def bytes_text(run: Decode, count: int) -> str:
    """``140 bytes`` in float64, ``70 bytes at float16 (2 each)`` in a narrower dtype."""
    if run.cast.exact:
        return f"{count:,} bytes"
    return f"{count:,} bytes at {run.cast.dtype} ({run.cast.storage_bytes} each)"


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
    over = (
        f": {len(run.steps)} step{'s' if len(run.steps) > 1 else ''} × {model.heads} "
        f"head{'s' if model.heads > 1 else ''}"
    )
    bound = f"|Δ| ≤ {rounded_up(run.bound)} for these numbers"
    if run.matches:
        yield Text.assemble(
            ("decode ", "bold"), ("matches", "bold green"), (" full causal attention", "bold"), over
        )
        yield Text(f"every output within float64 rounding of it: {bound}", style="dim")
    else:
        yield Text.assemble(
            ("decode ", "bold"),
            ("DIFFERS FROM", "bold red"),
            (" full causal attention", "bold"),
            over,
        )
        yield Text(
            f"max |Δ| = {run.max_delta:.1e}, past float64 rounding: {bound}", style="bold red"
        )
    cache_note = (
        f"the cache holds {model.n_kv_heads} K/V head{'s' if model.n_kv_heads > 1 else ''}"
        + (
            f", not {model.heads}: {model.group}× smaller than with full heads"
            if model.group > 1
            else ""
        )
    )
    yield Text(cache_note, style="dim")
    growth = growth_line(run)
    if growth is not None:
        yield growth
    yield Text("")
    yield CostTable(run)
    if run.matches:
        yield Text(
            f"measured here: max |Δ| = {run.max_delta:.1e} (the last bits depend on the "
            "CPU's BLAS)",
            style="dim",
        )


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
        said = (
            f"window {window}{kept}: the cache stopped growing at {most} rows (step "
            f"{full.t + 1} dropped its first row; {dropped} dropped in all), holding "
            f"{bytes_text(run, run.steps[-1].cache_bytes)} from then on"
        )
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
    over = (
        f"{len(run.steps)} step{'s' if len(run.steps) > 1 else ''} × {model.heads} "
        f"head{'s' if model.heads > 1 else ''}"
    )
    if run.matches:
        yield Wrapped(
            Text.assemble(
                ("decode ", "bold"),
                ("equals", "bold green"),
                (f" full causal attention in {dtype} exactly", "bold"),
                ": max |Δ| = 0",
            )
        )
        yield Wrapped(
            Text(
                f"{over}, every output cell: the same rounded operations (a masked "
                "key adds exp(−∞) = 0 to the sum and 0 · v = 0 to the output)",
                style="dim",
            )
        )
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
            yield Wrapped(
                Text(
                    "a token's v is ±inf or NaN: the full product multiplies it by "
                    "a masked key's weight 0 (0 · inf = NaN), which the cache never "
                    "computes",
                    style="bold red",
                )
            )
    error = run.error
    if error is not None:
        style = "bold red" if error.overflowed else ""
        yield Wrapped(
            Text.assemble(("decoded outputs: ", "dim"), (error_text(error, dtype), style))
        )
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
        return Wrapped(
            Text("(kv-cache has no float64: 8 bytes a value, twice its fp32)", style="dim")
        )
    if model.d_k != model.d_v:
        return Wrapped(
            Text(
                f"(kv-cache prices one head width: here d_k {model.d_k} ≠ d_v {model.d_v})",
                style="dim",
            )
        )
    flags = [
        "= kv-cache",
        "--layers 1",
        f"--heads {model.heads}",
        f"--kv-heads {model.n_kv_heads}",
        f"--head-dim {model.d_k}",
        f"--tokens {len(run.steps)}",
        f"--dtype {kv_dtype}",
    ]
    window = model.variants.window
    if window is not None:  # the cache holds at most N + S rows: kv-cache's window of N + S
        flags.append(f"--window {window + model.variants.sinks}")
    return Terms(tuple((" ", Text(flag, style="dim")) for flag in flags))


def _bars_legend(console: Console) -> str:
    """What the bars are, by what tells them apart on this console: their place, and
    their colour only where colour is shown (not under NO_COLOR, in a pipe or a file)."""
    if console.no_color or console.color_system is None:
        return "the running totals as bars (left: with the cache, right: recomputing the prefix)"
    return (
        "the running totals as bars (left, green: with the cache; right, red: "
        "recomputing the prefix)"
    )


@dataclass(frozen=True)
class CostTable:
    """Per step: multiply-adds both ways, their running totals as bars, the cache size."""

    run: Decode

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        run = self.run
        yield Wrapped(Text(f"multiply-adds of each step, and {_bars_legend(console)}", style="dim"))
        totals = np.cumsum([[s.costs.cached, s.costs.recomputed] for s in run.steps], axis=0)
        widest = float(totals[-1, 1])
        labels = unique_labels(shown_labels(run.tokens))
        label_width = max(5, *(cell_len(label) for label in labels))
        numbers = max(len(f"{int(totals[-1, 1]):,}"), 7)
        fixed = 4 + label_width + 1 + 2 * (numbers + 1)
        full = min(_BAR, (options.max_width - fixed - 1) // 2)
        full = full if full >= 4 else 0  # bars of fewer cells say nothing: the numbers do
        heading = f"{'t':>3} {'token':<{label_width}} {'cached':>{numbers}} {'recomp.':>{numbers}}"
        named = next(
            (
                n
                for n in (" running totals", " totals")
                if len(heading) + len(n) <= options.max_width
            ),
            "",
        )
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
            ("total", "bold"),
            f"  {run.total_cached:,} with the cache, {run.total_recomputed:,} "
            f"recomputing ({run.total_recomputed / run.total_cached:.1f}×); cache at the end "
            f"{bytes_text(run, run.steps[-1].cache_bytes)}",
        )
