"""`scaling`'s view: the collapse as a chart, every figure in two tables, the worked row.

The chart has two lines per d_k, the unscaled scores' (q·k) and the scaled ones'
(q·k / √d_k), each with two bars: the mean largest softmax weight (0 … 1) and the mean
gradient norm ‖J‖ (0 … ½, the most any row can have: two weights of ½). The two ways
are told apart by their glyph (█ and ▒) and their label, not by colour alone, so the
chart reads the same with ``NO_COLOR`` and through a pipe. Its bars take the width the
terminal has, so it fits at 80 columns and uses 160.

The figures are a Monte Carlo estimate, shown to 3 significant digits (the tables) or
2–3 (the chart): enough to see the trend, not more than the sampling supports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from attntrace.learning.scaling import ARTICLE, ONE_HOT, Level, Scaling, Softmaxed, WorkedRow
from attntrace.ui.fitted import RightTrimmed
from attntrace.ui.wrap import Wrapped

UNSCALED, SCALED = "q·k", "÷√d_k"
UNSCALED_GLYPH, SCALED_GLYPH, EMPTY_GLYPH = "█", "▒", "·"
UNSCALED_STYLE, SCALED_STYLE = "yellow", "cyan"
JACOBIAN_MAX = 0.5  # ‖diag(a) − a·aᵀ‖_F ≤ ½ for any weights a (two of ½ reach it)
# A chart line: "  d_k label " + bar + " 0.00" + gap + bar + " 0.000"
_LABEL = 14  # "  1024 ÷√d_k  "
_NUMBER = 6  # " 0.968"
_GAP = 3
BAR_MIN, BAR_MAX = 6, 50


def figure(value: float, digits: int = 3) -> str:
    """A figure to ``digits`` significant digits, as a reader scans it: ``0.968``,
    ``62.9``, ``1008`` (a whole part is never rounded away), ``1.2e-6``, ``0``."""
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return str(value)
    size = abs(value)
    if size >= 10**digits and size < 1e6:
        return f"{value:.0f}"
    if 1e-3 <= size < 1e6:
        return f"{value:#.{digits}g}".rstrip(".")
    mantissa, _, exponent = f"{value:.{digits - 1}e}".partition("e")
    return f"{mantissa}e{int(exponent)}"


def weight(value: float, rest: float) -> str:
    """A weight; one within 1e-3 of 1 as ``1 − rest`` (``1 − 9.36e-14``), which its
    3 digits (``1.00``) would hide."""
    return f"1 − {figure(rest)}" if 0 < rest < 1e-3 else figure(value)


def score(value: float) -> str:
    """A score: ``95``, not ``95.0``; else its :func:`figure`."""
    return f"{value:.0f}" if value.is_integer() and abs(value) < 1e6 else figure(value)


def percent(share: float) -> str:
    return f"{figure(100 * share, 2)}%"


def scaling_view(result: Scaling) -> RenderableType:
    """The chart, the two tables, the worked example (no line padded with spaces)."""
    gap = Text("")
    return RightTrimmed(
        Group(
            Wrapped(_header(result)),
            gap,
            Chart(result.levels),
            Wrapped(_legend(result)),
            gap,
            Wrapped(_summary(result)),
            gap,
            _table(result, scaled=False),
            gap,
            _table(result, scaled=True),
            gap,
            _worked(result),
        )
    )


def _header(result: Scaling) -> Text:
    text = Text("Why ÷√d_k", style="bold")
    text.append(
        f": for each d_k, {result.samples:,} rows of {result.keys:,} scores q·k, "
        f"q and k of d_k standard normals (seed {result.seed}), through the softmax as "
        "they are and divided by √d_k",
        style="dim",
    )
    return text


def _legend(result: Scaling) -> Text:
    text = Text()
    text.append(UNSCALED_GLYPH * 2, style=UNSCALED_STYLE)
    text.append(f" {UNSCALED}: the scores as they are   ")
    text.append(SCALED_GLYPH * 2, style=SCALED_STYLE)
    text.append(f" {SCALED}: divided by √d_k   ")
    text.append(
        f"(the mean of {result.samples:,} rows; ‖J‖ = ‖diag(a) − a·aᵀ‖_F, the gradient "
        "that flows back through the softmax, 0 when it is one-hot)",
        style="dim",
    )
    return text


def _summary(result: Scaling) -> Text:
    """The chart in words, from its last line."""
    last = result.levels[-1]
    text = Text()
    text.append(
        f"Var(q·k) ≈ d_k ({figure(last.variance)} at d_k {last.d_k}), so the scores spread "
        f"as √d_k: unscaled, at d_k {last.d_k}, {percent(last.unscaled.one_hot)} of the rows "
        f"are one-hot (largest weight > {ONE_HOT}) and the median row's ‖J‖ is "
        f"{figure(last.unscaled.jacobian_median)}: the softmax collapses and the gradient "
        f"vanishes. Divided by √d_k the variance is 1 ({figure(last.variance_scaled)}) at "
        f"every d_k, and the softmax stays put (largest weight "
        f"{figure(last.scaled.largest)}, ‖J‖ {figure(last.scaled.jacobian)})."
    )
    return text


@dataclass(frozen=True)
class Chart:
    """Two lines per d_k, each with its largest-weight bar and its ‖J‖ bar."""

    levels: Sequence[Level]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        bar = (options.max_width - _LABEL - 2 * _NUMBER - _GAP) // 2
        bar = max(BAR_MIN, min(BAR_MAX, bar))
        yield _scale_line(bar, "largest weight", "0", "1", "gradient ‖J‖", "0", "½")
        for level in self.levels:
            yield _chart_line(level.d_k, UNSCALED, level.unscaled, bar, scaled=False)
            yield _chart_line(None, SCALED, level.scaled, bar, scaled=True)


def _scale_line(
    bar: int, left: str, low: str, high: str, right: str, low2: str, high2: str
) -> Text:
    def axis(title: str, start: str, end: str) -> str:
        # "0 largest softmax weight 1", the title centred; just the ends if it is too wide
        inner = bar - len(start) - len(end)
        named = f" {title} " if len(title) + 2 <= inner else ""
        return start + named.center(inner) + end

    text = Text(" d_k".ljust(_LABEL), style="bold")
    text.append(axis(left, low, high), style="dim")
    text.append(" " * (_NUMBER + _GAP))
    text.append(axis(right, low2, high2), style="dim")
    return text


def _bar(share: float, width: int, glyph: str, style: str) -> Text:
    filled = min(width, max(0, round(share * width)))
    text = Text(glyph * filled, style=style)
    text.append(EMPTY_GLYPH * (width - filled), style="dim")
    return text


def _chart_line(d_k: int | None, name: str, figures: Softmaxed, bar: int, *, scaled: bool) -> Text:
    glyph, style = (SCALED_GLYPH, SCALED_STYLE) if scaled else (UNSCALED_GLYPH, UNSCALED_STYLE)
    label = f"{'' if d_k is None else d_k:>6} {name:<6} "
    text = Text(label.ljust(_LABEL))
    text.append_text(_bar(figures.largest, bar, glyph, style))
    text.append(f" {figure(figures.largest, 2):<{_NUMBER - 1}}")
    text.append(" " * _GAP)
    text.append_text(_bar(figures.jacobian / JACOBIAN_MAX, bar, glyph, style))
    text.append(f" {figure(figures.jacobian, 2)}")
    return text


def _table(result: Scaling, *, scaled: bool) -> Table:
    title = "divided by √d_k: q·k / √d_k" if scaled else "unscaled: q·k"
    table = Table(
        title=Text(title, style="bold"),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    variance = "Var(q·k/√d_k)" if scaled else "Var(q·k)"
    for header in ("d_k", variance, "largest", "one-hot", "entropy", "‖J‖ mean", "‖J‖ median"):
        table.add_column(header, justify="right", no_wrap=True)
    for level in result.levels:
        figures = level.scaled if scaled else level.unscaled
        table.add_row(
            str(level.d_k),
            figure(level.variance_scaled if scaled else level.variance),
            figure(figures.largest),
            percent(figures.one_hot),
            figure(figures.entropy),
            figure(figures.jacobian),
            figure(figures.jacobian_median),
        )
    uniform = result.uniform
    table.add_row(
        Text("uniform", style="dim"),
        "",
        *(
            Text(cell, style="dim")
            for cell in (
                figure(uniform.largest),
                percent(uniform.one_hot),
                figure(uniform.entropy),
                figure(uniform.jacobian),
                figure(uniform.jacobian_median),
            )
        ),
    )
    if scaled:  # said once, under both tables
        table.caption = Text(
            f"largest: the mean largest weight (1/{result.keys} uniform, 1 one-hot); one-hot: "
            f"the rows whose largest weight is above {ONE_HOT}; entropy in nats "
            f"(log {result.keys} = {figure(uniform.entropy)} uniform, 0 one-hot); ‖J‖ mean "
            "and the median row's",
            style="dim",
        )
        table.caption_justify = "left"
    return table


def _listed(values: Sequence[str]) -> str:
    return ", ".join(values)


def _weights(row: WorkedRow) -> str:
    top = max(range(len(row.weights)), key=lambda i: row.weights[i])
    return _listed(
        [weight(w, row.rest) if i == top else figure(w) for i, w in enumerate(row.weights)]
    )


def _worked(result: Scaling) -> Group:
    worked = result.worked
    raw, scaled = worked.unscaled, worked.scaled
    root = f"√{worked.d_k}"
    heading = Text(
        f"The article's example: d_k = {worked.d_k}, one query's scores "
        f"[{_listed([score(s) for s in raw.scores])}]",
        style="bold",
    )
    heading.append(f"\n(the article: {ARTICLE})", style="dim")
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("", no_wrap=True)
    table.add_column("q·k", overflow="fold")
    table.add_column(f"q·k / {root} = q·k / {figure(worked.scale)}", overflow="fold")
    table.add_row(
        "scores",
        _listed([score(s) for s in raw.scores]),
        _listed([figure(s) for s in scaled.scores]),
    )
    table.add_row("softmax", _weights(raw), _weights(scaled))
    table.add_row(
        "largest weight", weight(raw.largest, raw.rest), weight(scaled.largest, scaled.rest)
    )
    table.add_row("entropy (nats)", figure(raw.entropy), figure(scaled.entropy))
    table.add_row("gradient ‖J‖", figure(raw.jacobian_norm), figure(scaled.jacobian_norm))
    others = [figure(w) for i, w in enumerate(raw.weights) if w != raw.largest]
    words = Text(
        f"Without ÷√d_k the softmax collapses: one weight takes all but {figure(raw.rest)} of "
        f"the row (float64 holds the others as {' and '.join(others)}), and the gradients "
        f"vanish: ‖J‖ = {figure(raw.jacobian_norm)}, so next to nothing flows back to q and "
        f"k. Divided by {root} the row keeps its order, spreads its weight "
        f"({_weights(scaled)}), and ‖J‖ is {figure(scaled.jacobian_norm)}."
    )
    return Group(Wrapped(heading), table, Wrapped(words))
