"""The focus panel: one token's row of attention, written out as hand arithmetic.

    fish·cat = [2, 4]·[1, 2] = 2×1 + 4×2 = 10

Each section explains one stage, so step mode can show the section under its stage.
A long sum keeps its largest terms (``4.64×2 + … + 2.77×2``), so what is written out
explains the result; a result is never cut. Every number of the panel is written by
the one :class:`~attntrace.ui.by_hand.Form` that
:func:`~attntrace.forward.views.focus_form.hand_form` chooses for it, so step mode's screens
agree with each other and with ``--focus``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Text

from attntrace.forward.focus import Focus
from attntrace.forward.views.focus_form import (
    TERMS_SHOWN,
    hand_form,
    largest_terms,
    shown_keys,
    sum_note,
)
from attntrace.kernel.trace import Trace
from attntrace.ui.by_hand import Form
from attntrace.ui.fitted import Fitted
from attntrace.ui.numbers import percent, visible_indices
from attntrace.ui.shown import pad
from attntrace.ui.split_table import SplitTable
from attntrace.ui.view import View
from attntrace.ui.wrap import Hanging, Hung, wrap

# A quiz's asked column of output: its index, its label in V's table, in output's.
AskedColumn = tuple[int, str, str]


def result_vector(
    values: Sequence[float], form: Form, asked: AskedColumn | None = None, label: int = 1
) -> str:
    """A computed vector, digits as in the tables: ``[3.9958, 2.0000]``."""
    return _written_vector(values, form.result, asked, label)


def vector(
    values: Sequence[float], form: Form, asked: AskedColumn | None = None, label: int = 1
) -> str:
    """``[2, 4]``; a long vector keeps its first and last entries around ``…`` (and
    ``asked``'s entry, named by its ``label``-th label: ``…, d174: 0.5321, …``)."""
    return _written_vector(values, form.given, asked, label)


def _written_vector(
    values: Sequence[float],
    write: Callable[[float], str],
    asked: AskedColumn | None = None,
    label: int = 1,
) -> str:
    shown = visible_indices(len(values), TERMS_SHOWN)
    if asked is not None and asked[0] not in shown:
        at, name = asked[0], asked[label]
        head = [i for i in shown if i is not None and i < at]
        tail = [i for i in shown if i is not None and i > at]
        parts = [*(write(values[i]) for i in head), "…", f"{name}: {write(values[at])}"]
        parts += ["…", *(write(values[i]) for i in tail)]
        return "[" + ", ".join(parts) + "]"
    return "[" + ", ".join("…" if i is None else write(values[i]) for i in shown) + "]"


def _factor(value: float, form: Form) -> str:
    text = form.given(value)
    return f"({text})" if text.startswith("-") else text


def products(
    left: Sequence[float], right: Sequence[float], form: Form, shown: int = TERMS_SHOWN
) -> str:
    """``2×1 + 4×2``: the terms of a dot product; a long one keeps its largest terms."""
    terms = [a * b for a, b in zip(left, right, strict=True)]
    return " + ".join(
        "…" if i is None else f"{_factor(left[i], form)}×{_factor(right[i], form)}"
        for i in largest_terms(terms, shown)
    )


def heading(number: str, text: str) -> Hung:
    """A section's heading, ``scores = Q · Kᵀ: …``, its continued lines indented."""
    return Hung(Text.assemble((number, "bold cyan"), " ", (text, "bold")))


def dot_section(focus: Focus, view: View, asked: int | None = None) -> Group:
    """scores: one dot product of the query row with each key row."""
    form, keys = hand_form(focus, view, asked), shown_keys(focus, view, asked)
    width = max(cell_len(focus.dots[j].key) for j in keys)
    q, k = focus.score_inputs
    turned = " turned" if q == "Q_rope" else " normed" if q == "Q_norm" else ""
    about = f"the{turned} query of '{focus.label}' times each{turned} key"
    lines: list[RenderableType] = [heading("scores", f"= {q} · {k}ᵀ: {about}")]
    for j in keys:
        dot = focus.dots[j]
        name = f"  {focus.label}·{pad(dot.key, width)} = "
        vectors = f"{vector(dot.query_row, form)}·{vector(dot.key_row, form)} = "
        masked = _why_short(focus, j)
        result = f" = {form.short(dot.score)}{masked}"
        # the largest terms that fit: six, two, or at least the one that weighs most
        terms = [products(dot.query_row, dot.key_row, form, n) for n in (TERMS_SHOWN, 2, 1)]
        lines.append(
            Fitted(
                (
                    name + vectors + terms[0] + result,
                    *(name + written + result for written in terms),
                    name + form.short(dot.score) + masked,
                )
            )
        )
        said = sum_note(dot.score, list(zip(dot.query_row, dot.key_row, strict=True)), form)
        if said is not None:
            lines.append(_Indented(Text(said, style="yellow")))
    return Group(*lines)


def _why_short(focus: Focus, j: int) -> str:
    """``  (masked: the future)``, ``(masked: out of the window)``, ``(kept: a sink)``."""
    why = focus.hidden_why[j] if j < len(focus.hidden_why) else None
    if why is not None and focus.windowed:  # without a window, every hidden key comes later
        return f"  (masked: {why.split(':')[0]})"
    if j < len(focus.sinks_kept) and focus.sinks_kept[j]:
        return "  (kept: a sink, past the window)"
    return "  (masked: comes later)" if focus.softmax[j].masked else ""


def _why_lines(focus: Focus, keys: list[int]) -> list[RenderableType]:
    """Each hidden key's reason in full (docs/variants.md, "What a trace shows"), where a
    window is what hides some: without one, every hidden key is the future."""
    if not any(why is not None and why.startswith("out of") for why in focus.hidden_why):
        return []
    lines: list[RenderableType] = []
    for j in keys:
        why = focus.hidden_why[j]
        said = (
            f"hidden: {why}"
            if why is not None
            else "kept: a sink, visible however far back"
            if focus.sinks_kept[j]
            else None
        )
        if said is not None:  # wrapped under itself, two spaces in, as the lines above
            lines.append(_Indented(Text(f"{focus.softmax[j].key} {said}", style="dim")))
    return lines


@dataclass(frozen=True)
class _Indented:
    """``text`` wrapped two cells in, each line under the first (no trailing spaces)."""

    text: Text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in wrap(self.text, options.max_width - 2):
            yield Text.assemble("  ", line)


def between_section(focus: Focus, view: View, asked: int | None = None) -> Group:
    """ALiBi's bias and the soft cap, between scaled and the mask, key by key."""
    form, keys = hand_form(focus, view, asked), shown_keys(focus, view, asked)
    rows = dict(focus.between)
    width = max(cell_len(focus.dots[j].key) for j in keys)
    parts = []
    if "alibi" in rows:
        parts.append("biased = scaled + alibi")
    if "capped" in rows:
        cap = f"{focus.softcap:g}"
        parts.append(f"capped = {cap} · tanh({'biased' if 'alibi' in rows else 'scaled'} / {cap})")
    name, formula = parts[0].split(" ", 1)  # "biased", "= scaled + alibi"
    lines: list[RenderableType] = [heading(name, "; ".join((formula, *parts[1:])))]
    for j in keys:
        scaled = focus.dots[j].score / focus.sqrt_dk
        text = f"  {focus.label}·{pad(focus.dots[j].key, width)}: {form.given(scaled)}"
        value = scaled
        if "alibi" in rows:
            bias = rows["alibi"][j]
            value = rows["biased"][j]
            sign = "−" if bias < 0 else "+"
            text += f" {sign} {form.given(abs(bias))} = {form.result(value)}"
        if "capped" in rows:
            text += f" → capped {form.result(rows['capped'][j])}"
        lines.append(Text(text))
    return Group(*lines)


def scale_section(focus: Focus, view: View, asked: int | None = None) -> Group:
    """scaled: each score divided by √d_k."""
    form, keys = hand_form(focus, view, asked), shown_keys(focus, view, asked)
    root = form.given(focus.sqrt_dk)
    lines: list[RenderableType] = [
        heading("scaled", f"= scores / √d_k, with √{focus.d_k} = {root}")
    ]
    width = max(cell_len(focus.dots[j].key) for j in keys)
    for dot, row in ((focus.dots[j], focus.softmax[j]) for j in keys):
        scaled = dot.score / focus.sqrt_dk
        masked = "  → masked: −∞" if row.masked else ""
        lines.append(
            Text(
                f"  {focus.label}·{pad(dot.key, width)}: {form.given(dot.score)} / {root}"
                f" = {form.result(scaled)}{masked}"
            )
        )
    return Group(*lines)


def softmax_section(focus: Focus, view: View, asked: int | None = None) -> Group:
    """softmax: the exp / sum / share table, the row max subtracted first."""
    form, keys = hand_form(focus, view, asked), shown_keys(focus, view, asked)
    # In fixed point the inputs are the scale lines' results; in scientific form,
    # operands, with the digits the differences need.
    softmax_input = form.carried if form.scientific else form.result
    source = focus.softmax_source
    # ◀ marks the row whose logit is M, the max subtracted (− max = 0): the heaviest
    # key's, or the sink's where its logit is the larger (both where they tie)
    # A quiz's worked answer marks the key it asked about instead (``asked``).
    heaviest = max(row.weight for row in focus.softmax)
    top = max(row.scaled for row in focus.softmax)
    sink_top = asked is None and focus.sink_logit is not None and focus.sink_logit >= top
    keys_top = focus.sink_logit is None or focus.sink_logit <= top
    rows: list[tuple[RenderableType, ...]] = []
    for j in keys:
        row = focus.softmax[j]
        marks = j == asked if asked is not None else keys_top and row.weight == heaviest
        mark = " ◀" if marks else ""
        rows.append(
            (
                Text(row.key + mark, style="bold" if mark else ""),
                softmax_input(row.scaled),
                form.result(row.shifted),
                form.carried(row.exp),
                form.result(row.weight),
                percent(row.weight),
            )
        )
    total = sum(row.weight for row in focus.softmax)
    if focus.sink_logit is not None and focus.sink_exp is not None:
        sink = focus.sink_weight or 0.0
        total += sink
        rows.append(
            (
                Text(
                    "sink ◀" if sink_top else "sink", style="bold italic" if sink_top else "italic"
                ),
                softmax_input(focus.sink_logit),
                form.result(focus.sink_logit - focus.row_max),
                form.carried(focus.sink_exp),
                form.result(sink),
                percent(sink),
            )
        )
    rows.append(
        (
            Text("sum", style="dim"),
            "",
            "",
            form.carried(focus.exp_sum),
            form.result(total),
            percent(total),
        )
    )
    # Too narrow for every column: drawn in parts, never a number folded over two lines.
    table = SplitTable(
        ("key", source, "− max", "exp", "share", "%"),
        ("left", "right", "right", "right", "right", "right"),
        rows,
    )
    which = (
        "the row max"
        if focus.sink_logit is None
        else "the larger of the row max and the sink logit"
    )
    said = [
        f"{which} {softmax_input(focus.row_max)} is subtracted first: every exp ≤ 1, "
        "nothing overflows",
        f"share = exp / sum = exp / {form.carried(focus.exp_sum)}",
        *(
            [
                "the sink's exp joins the sum and its share passes no value: the keys' "
                "shares sum to 1 − sink"
            ]
            if focus.sink_logit is not None
            else []
        ),
    ]
    if asked is not None:
        said.append("◀ the key asked about")
    # each wrapped under itself, two cells in, as the lines below
    explain = [_Indented(Text(line, style="dim")) for line in said]
    title = heading("softmax", f"= exp({source} − max) / sum, for '{focus.label}'")
    return Group(
        title,
        table,
        *explain,
        *_why_lines(focus, keys),
        *_counted(focus, keys),
        *_hidden(focus, keys, asked is not None and asked not in shown_keys(focus, view)),
    )


def _counted(focus: Focus, keys: list[int]) -> list[RenderableType]:
    """The hidden keys counted by reason, where a window hides some and not every hidden
    (or sink-kept) key has its own line above: a long row's largest weights are all
    visible keys, and without this the window would go unmentioned."""
    shown = set(keys)
    unshown = any(
        (why is not None or kept) and j not in shown
        for j, (why, kept) in enumerate(zip(focus.hidden_why, focus.sinks_kept, strict=True))
    )
    if not (focus.windowed and unshown):
        return []
    return [_Indented(Text(line, style="dim")) for line in focus.hidden_counts]


def output_section(focus: Focus, view: View, asked: AskedColumn | None = None) -> Group:
    """output: the value rows, weighted by the softmax row, added up. ``asked`` (a quiz's
    column: its index, V's label and output's) is kept in every vector cut short,
    named, so the asked cell's own arithmetic is on screen."""
    form, keys = hand_form(focus, view), shown_keys(focus, view)
    width = max(cell_len(focus.terms[j].key) for j in keys)
    lines: list[RenderableType] = [
        heading("output", f"= Σ softmax × V: the value rows mixed by '{focus.label}'")
    ]
    # an operand's digits, so that weight × value reproduces the product shown; in
    # scientific form an exact 0 is shorter than the others, so they are lined up
    weights = [form.carried(focus.terms[j].weight) for j in keys]
    column = max(len(weight) for weight in weights)
    for term, weight in zip((focus.terms[j] for j in keys), weights, strict=True):
        name = f"  {weight:>{column}} × V[{pad(term.key + ']', width + 1)}"
        # never without the V row it multiplies: a line too long goes on under its
        # first '=', a vector broken after a comma, under its first entry
        lines.append(
            Hanging(
                Text(name),
                (
                    Text(f" = {weight} × {vector(term.value_row, form, asked, 1)}"),
                    Text(f" = {result_vector(term.product, form, asked, 1)}"),
                ),
            )
        )
    lines.append(
        Hanging(
            Text("  sum"),
            (
                Text.assemble(" = ", (result_vector(focus.output, form, asked, 2), "bold")),
                Text(f" = output[{focus.label}]"),
            ),
        )
    )
    for column, value in enumerate(focus.output):
        pairs = [(term.weight, term.value_row[column]) for term in focus.terms]
        said = sum_note(value, pairs, form)
        if said is not None:
            lines.append(_Indented(Text(f"d{column}: {said}", style="yellow")))
    return Group(*lines, *_hidden(focus, keys))


def _hidden(focus: Focus, keys: list[int], asked: bool = False) -> list[Text]:
    """How many keys are written out (``asked``: one of them is the key a quiz asked
    about, written in place of the lightest of the largest)."""
    count = len(focus.softmax)
    if len(keys) == count:
        return []
    if asked:
        said = f"the {len(keys) - 1} largest of {count} weights and the key asked are written out"
    else:
        said = f"the {len(keys)} largest of {count} weights are written out"
    return [Text(f"  {said}", style="dim")]


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
        kv = (
            f" (reads K/V head {trace.model.kv_head_of(focus.head)})"
            if trace.model.group > 1
            else ""
        )
        title.append(f" · head {focus.head}{kv}", style="bold yellow")
    parts: list[RenderableType] = [title]
    if focus.note:
        parts.append(Text(focus.note, style="yellow"))
    for stage, make in SECTION_OF_STAGE.items():
        parts += [Text(""), make(focus, view)]
        if stage == "scaled" and focus.between:  # ALiBi's bias, the cap: before the mask
            parts += [Text(""), between_section(focus, view)]
    return Group(*parts)
