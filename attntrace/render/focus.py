"""The focus panel: one token's row of attention, written out as hand arithmetic.

    fish·cat = [2, 4]·[1, 2] = 2×1 + 4×2 = 10

Each section explains one stage, so step mode can show the section under its stage.
A long sum keeps its largest terms (``4.64×2 + … + 2.77×2``), so what is written out
explains the result; a result is never cut. Inputs are written as a person writes them
(``2×1``), computed results at the table's precision, so they match the tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.console import Group, RenderableType
from rich.text import Text

from attntrace.focus import Focus
from attntrace.render.fitted import Fitted
from attntrace.render.numbers import format_number, visible_indices
from attntrace.render.split_table import SplitTable
from attntrace.render.tables import View
from attntrace.trace import Trace

# How many terms of a long sum are written out (the largest ones).
TERMS_SHOWN = 6


def short(value: float, precision: int) -> str:
    """A number as a person writes it: ``10``, ``0.5``, ``7.0711``, ``-2`` (never ``-0``)."""
    text = f"{value:.{precision}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def fixed_vector(values: Sequence[float], precision: int) -> str:
    """A computed vector, digits as in the tables: ``[3.9958, 2.0000]``."""
    shown = visible_indices(len(values), TERMS_SHOWN)
    cells = ("…" if i is None else format_number(values[i], precision) for i in shown)
    return "[" + ", ".join(cells) + "]"


def vector(values: Sequence[float], precision: int) -> str:
    """``[2, 4]``; a long vector keeps its first and last entries around ``…``."""
    shown = visible_indices(len(values), TERMS_SHOWN)
    return "[" + ", ".join("…" if i is None else short(values[i], precision) for i in shown) + "]"


def _factor(value: float, precision: int) -> str:
    text = short(value, precision)
    return f"({text})" if text.startswith("-") else text


def largest_terms(terms: Sequence[float], shown: int) -> list[int | None]:
    """Indices of the ``shown`` largest terms by size, in order, ``None`` for each gap."""
    if len(terms) <= shown:
        return list(range(len(terms)))
    keep = sorted(sorted(range(len(terms)), key=lambda i: -abs(terms[i]))[:shown])
    out: list[int | None] = []
    for position, index in enumerate(keep):
        if (index > 0 and position == 0) or (position > 0 and index > keep[position - 1] + 1):
            out.append(None)
        out.append(index)
    if keep[-1] < len(terms) - 1:
        out.append(None)
    return out


def products(
    left: Sequence[float], right: Sequence[float], precision: int, shown: int = TERMS_SHOWN
) -> str:
    """``2×1 + 4×2``: the terms of a dot product; a long one keeps its largest terms."""
    terms = [a * b for a, b in zip(left, right, strict=True)]
    return " + ".join(
        "…" if i is None else f"{_factor(left[i], precision)}×{_factor(right[i], precision)}"
        for i in largest_terms(terms, shown)
    )


def heading(number: str, text: str) -> Text:
    return Text.assemble((number, "bold cyan"), " ", (text, "bold"))


def dot_section(focus: Focus, view: View) -> Group:
    """scores: one dot product of the query row with each key row."""
    precision, keys = view.precision, shown_keys(focus, view)
    width = max(len(focus.dots[j].key) for j in keys)
    q, k = focus.score_inputs
    turned = " turned" if q != "Q" else ""
    about = f"the{turned} query of {focus.label!r} times each{turned} key"
    lines: list[RenderableType] = [heading("scores", f"= {q} · {k}ᵀ: {about}")]
    for j in keys:
        dot = focus.dots[j]
        name = f"  {focus.label}·{dot.key:<{width}} = "
        vectors = f"{vector(dot.query_row, precision)}·{vector(dot.key_row, precision)} = "
        masked = "  (masked: comes later)" if focus.softmax[j].masked else ""
        result = f" = {short(dot.score, precision)}{masked}"
        # the largest terms that fit: six, two, or at least the one that weighs most
        terms = [products(dot.query_row, dot.key_row, precision, n) for n in (TERMS_SHOWN, 2, 1)]
        lines.append(
            Fitted(
                (
                    name + vectors + terms[0] + result,
                    *(name + written + result for written in terms),
                    name + short(dot.score, precision) + masked,
                )
            )
        )
    return Group(*lines)


def scale_section(focus: Focus, view: View) -> Group:
    """scaled: each score divided by √d_k."""
    precision, keys = view.precision, shown_keys(focus, view)
    root = short(focus.sqrt_dk, precision)
    lines: list[RenderableType] = [
        heading("scaled", f"= scores / √d_k, with √{focus.d_k} = {root}")
    ]
    width = max(len(focus.dots[j].key) for j in keys)
    for dot, row in ((focus.dots[j], focus.softmax[j]) for j in keys):
        scaled = dot.score / focus.sqrt_dk
        masked = "  → masked: −∞" if row.masked else ""
        lines.append(
            Text(
                f"  {focus.label}·{dot.key:<{width}}: {short(dot.score, precision)} / {root}"
                f" = {format_number(scaled, precision)}{masked}"
            )
        )
    return Group(*lines)


def softmax_section(focus: Focus, view: View) -> Group:
    """softmax: the exp / sum / share table, the row max subtracted first."""
    precision, keys = view.precision, shown_keys(focus, view)
    source = focus.softmax_source
    heaviest = max(row.weight for row in focus.softmax)
    rows: list[tuple[RenderableType, ...]] = []
    for row in (focus.softmax[j] for j in keys):
        mark = " ◀" if row.weight == heaviest else ""
        rows.append((
            Text(row.key + mark, style="bold" if mark else ""),
            format_number(row.scaled, precision),
            format_number(row.shifted, precision),
            format_number(row.exp, precision + 2),
            format_number(row.weight, precision),
            f"{100 * row.weight:.2f}%",
        ))  # fmt: skip
    total = sum(row.weight for row in focus.softmax)
    rows.append((
        Text("sum", style="dim"), "", "", format_number(focus.exp_sum, precision + 2),
        format_number(total, precision), f"{100 * total:.2f}%",
    ))  # fmt: skip
    # Too narrow for every column: drawn in parts, never a number folded over two lines.
    table = SplitTable(("key", source, "− max", "exp", "share", "%"),
                       ("left", "right", "right", "right", "right", "right"), rows)  # fmt: skip
    explain = Text(
        f"  the row max {format_number(focus.row_max, precision)} is subtracted first: every "
        f"exp ≤ 1, nothing overflows\n  share = exp / sum = exp / "
        f"{format_number(focus.exp_sum, precision + 2)}",
        style="dim",
    )
    title = heading("softmax", f"= exp({source} − max) / sum, for {focus.label!r}")
    return Group(title, table, explain, *_hidden(focus, keys))


def output_section(focus: Focus, view: View) -> Group:
    """output: the value rows, weighted by the softmax row, added up."""
    precision, keys = view.precision, shown_keys(focus, view)
    width = max(len(focus.terms[j].key) for j in keys)
    lines: list[RenderableType] = [
        heading("output", f"= Σ softmax × V: the value rows mixed by {focus.label!r}")
    ]
    for term in (focus.terms[j] for j in keys):
        # two more digits than the tables, so weight × value reproduces the product shown
        weight = format_number(term.weight, precision + 2)
        name = f"  {weight} × V[{term.key}]{' ' * (width - len(term.key))}"
        lines.append(
            Fitted(
                (
                    f"{name} = {weight} × {vector(term.value_row, precision)}"
                    f" = {fixed_vector(term.product, precision)}",
                    f"{name} = {fixed_vector(term.product, precision)}",
                )
            )
        )
    lines.append(
        Text.assemble(
            "  sum = ", (fixed_vector(focus.output, precision), "bold"),
            f" = output[{focus.label}]",
        )
    )  # fmt: skip
    return Group(*lines, *_hidden(focus, keys))


def shown_keys(focus: Focus, view: View) -> list[int]:
    """The keys written out: all of them, or the ``max_rows`` largest weights, in order."""
    count = len(focus.softmax)
    if count <= view.max_rows:
        return list(range(count))
    by_weight = sorted(range(count), key=lambda j: -focus.softmax[j].weight)
    return sorted(by_weight[: view.max_rows])


def _hidden(focus: Focus, keys: list[int]) -> list[Text]:
    count = len(focus.softmax)
    if len(keys) == count:
        return []
    return [Text(f"  the {len(keys)} largest of {count} weights are written out", style="dim")]


SectionMaker = Callable[[Focus, View], Group]
# Which section explains which stage, for step mode.
SECTION_OF_STAGE: dict[str, SectionMaker] = {
    "scores": dot_section,
    "scaled": scale_section,
    "softmax": softmax_section,
    "output": output_section,
}


def focus_panel(focus: Focus, trace: Trace, view: View) -> Group:
    """Every section, in stage order, under a line naming the row (and head)."""
    count = len(trace.tokens)
    title = Text.assemble(
        ("Focus: ", "bold magenta"),
        (focus.label, "bold"),
        f", position {focus.index} (counting from 0) of the {count} "
        f"token{'' if count == 1 else 's'} of {trace.model.name}",
    )
    if focus.head is not None:
        kv = (f" (reads K/V head {trace.model.kv_head_of(focus.head)})"
              if trace.model.group > 1 else "")  # fmt: skip
        title.append(f" · head {focus.head}{kv}", style="bold yellow")
    parts: list[RenderableType] = [title]
    if focus.note:
        parts.append(Text(focus.note, style="yellow"))
    for make in SECTION_OF_STAGE.values():
        parts += [Text(""), make(focus, view)]
    return Group(*parts)
