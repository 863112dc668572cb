"""`attntrace check`'s report as a person reads it (docs/check.md, "What it reports").

Top to bottom: the model and the file checked; one line per stage in computation order
(✓ matches, ✗ differs, · not given) and the tolerance used; at the first stage that
differs, the worst cell in words, the region around it (:mod:`.region`) and the
diagnosis; last, the verdict.

Every mark is a character as well as a colour, so the report reads the same with
``NO_COLOR`` and through a pipe. The tokens, the model's name and the file's came from
files or arguments: they are shown through :mod:`attntrace.ui.shown`. A line too
long for the width is broken between its facts, never inside one (``12 of`` over
``18 cells``, ``[2,`` over ``3, 2]``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Text

from attntrace.checking.report import CheckReport, Divergence, StageResult
from attntrace.checking.tolerance import Tolerance
from attntrace.checking.views.region import (
    WRONG,
    axis_labels,
    cell_label,
    digits,
    number,
    region_table,
)
from attntrace.forward.views.document import model_facts, sentence_line
from attntrace.kernel.labels import marks_note
from attntrace.kernel.trace import ModelInfo
from attntrace.ui.numbers import short_float, significant
from attntrace.ui.shown import NAME_LIMIT, label, model_name, pad
from attntrace.ui.shown import labels as shown_labels
from attntrace.ui.titles import numbered
from attntrace.ui.view import DEFAULT_PRECISION
from attntrace.ui.wrap import Facts, Term, Wrapped, between_terms
from attntrace.visible import visible

MATCH, DIFFERS, MISSING = "✓", WRONG, "·"
_STYLES = {MATCH: "bold green", DIFFERS: "bold red", MISSING: "dim"}

# A fact after the one before it: joined by its joiner, or starting a line of its own.
Fact = tuple[str, str | Text]  # (joiner, fact); the first fact's joiner is not shown


def check_view(
    report: CheckReport, precision: int | None = None, source: str | None = None
) -> Group:
    """The whole report, for ``console.print``; ``source`` names the file checked (as
    the command line was given it), ``precision`` the digits after the point."""
    places = DEFAULT_PRECISION if precision is None else precision
    parts: list[RenderableType] = [header(report)]
    if source is not None:
        parts.append(
            Wrapped(
                Text.assemble(
                    ("checked ", "dim"),
                    (visible(source, NAME_LIMIT), "bold"),
                    (" against the exact trace", "dim"),
                )
            )
        )
    parts += [*_sentence(report), Text(""), StageLines(stage_lines(report))]
    tolerances = tolerance_line(report)
    if tolerances is not None:
        parts.append(tolerances)
    if report.first_divergent is not None:
        parts += [Text(""), *first_difference(report, report.first_divergent, places)]
    parts += [Text(""), Wrapped(verdict(report))]
    return Group(*parts)


def header(report: CheckReport) -> Facts:
    """``two-heads · 3 tokens · d_model 4 · 2 heads · d_k 2 · d_v 2``, as run's header."""
    model = report.model
    heads = None if report.head is None else f"head {report.head} of {model.heads} only"
    cross = report.context_tokens is not None
    return Facts(model_name(model.name), model_facts(model, len(report.tokens), heads, cross=cross))


def _sentence(report: CheckReport) -> list[Wrapped]:
    """The sentence compared (and the context), as run's notes give it, and what the
    tokenizer's marks in them mean, as run says it (and check's page)."""
    tokens = sentence_line(shown_labels(report.tokens))
    marks = marks_note(report.tokens, report.context_tokens or ())
    note = [Wrapped(Text(marks, style="dim"))] if marks else []
    if report.context_tokens is None:
        return [Wrapped(Text(tokens)), *note]
    return [
        Wrapped(Text.assemble(("queries from: ", "dim"), tokens)),
        Wrapped(
            Text.assemble(
                ("keys, values from the context: ", "dim"),
                sentence_line(shown_labels(report.context_tokens)),
            )
        ),
        *note,
    ]


@dataclass(frozen=True)
class Line:
    """``first``, then its facts, as many on a line as fit; a line broken before a fact
    ends with that fact's comma, and the next starts ``indent`` cells in."""

    first: Text
    facts: Sequence[Fact]
    indent: int = 2

    def lines(self, width: int) -> list[Text]:
        terms = []
        for joiner, fact in self.facts:
            text = fact if isinstance(fact, Text) else Text(fact)
            mark = joiner.strip() if joiner.strip() in (",", ";", ":") else ""
            lead = "" if mark or not joiner.strip() else joiner.strip() + " "  # ' or ' -> 'or '
            alone = Text.assemble(" " * self.indent + lead, text)
            if alone.cell_len <= width:
                terms.append(Term(Text.assemble(joiner, text), alone, Text(mark)))
                continue
            # wider than a line of its own: its words go on, indented, as facts do
            for index, word in enumerate(text.split(" ")):
                before = (joiner, lead, mark) if index == 0 else (" ", "", "")
                terms.append(
                    Term(
                        Text.assemble(before[0], word),
                        Text.assemble(" " * self.indent + before[1], word),
                        Text(before[2]),
                    )
                )
        return between_terms(self.first, terms, width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines(options.max_width):
            yield Wrapped(line)  # a single fact wider than the line: between its words


@dataclass(frozen=True)
class StageLine:
    """One stage's line: its mark, its name (and the name the file gave it), the facts."""

    mark: str
    stage: str
    name: str
    facts: tuple[Fact, ...]


@dataclass(frozen=True)
class StageLines:
    """The stage lines, the names in a column, a broken line going on under the facts."""

    lines: Sequence[StageLine]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        names = max(cell_len(line.name) for line in self.lines)
        for line in self.lines:
            style = _STYLES[line.mark]
            first = Text.assemble(
                (line.mark, style),
                " ",
                (pad(line.name, names), "dim" if line.mark == MISSING else "bold"),
            )
            facts = [
                (joiner, Text(str(fact), style="dim" if line.mark == MISSING else ""))
                for joiner, fact in line.facts
            ]
            yield Line(first, facts, indent=2 + names + 2)


def stage_lines(report: CheckReport) -> list[StageLine]:
    """One line per stage of the trace, in computation order (the results are)."""
    by_stage: dict[str, list[StageResult]] = {}
    for result in report.results:
        by_stage.setdefault(result.name, []).append(result)
    return [_stage_line(name, results, report.model) for name, results in by_stage.items()]


def _stage_line(name: str, results: list[StageResult], model: ModelInfo) -> StageLine:
    given = [r for r in results if r.status != "missing"]
    if not given:
        return StageLine(MISSING, name, label(name), (("  ", "not given"),))
    shown = _named(name, given[0].given_as)
    differing = [r for r in given if r.status == "differs"]
    if not differing:
        return StageLine(MATCH, name, shown, tuple(("  ", fact) for fact in _delta(given)))
    shape = next((r for r in differing if r.shape_found is not None), None)
    if shape is not None:
        return StageLine(
            DIFFERS, name, shown, _shape_facts(shape.shape_found, shape.shape_expected)
        )
    cells = f"{sum(r.cells_differing for r in given):,} of {sum(r.cells for r in given):,} cells"
    nonfinite = sum(r.cells_nonfinite for r in given)
    if not nonfinite:
        facts = [fact for fact in (_whose(differing, model), *_delta(given), cells) if fact]
        spaced = tuple(("  " if i == 0 else "   ", fact) for i, fact in enumerate(facts))
        return StageLine(DIFFERS, name, shown, spaced)
    # max |Δ| is over the cells finite on both sides: beside cells that are NaN or ∞ on
    # one side only it would read small, so those lead and it follows as "elsewhere"
    facts = [fact for fact in (_whose(differing, model), cells) if fact]
    joined: list[Fact] = [("  " if i == 0 else "   ", f) for i, f in enumerate(facts)]
    joined.append((", ", f"{nonfinite:,} NaN or ∞ on one side only"))
    joined += [("   ", f"{delta} elsewhere") for delta in _delta(given)]
    return StageLine(DIFFERS, name, shown, tuple(joined))


def _finite(first: Divergence) -> bool:
    return all(v is not None and math.isfinite(v) for v in (first.expected, first.found))


def _named(stage: str, given_as: str | None) -> str:
    """``softmax``, or ``softmax (as attn)`` where the file named it by an alias."""
    name = label(stage)
    return name if given_as in (None, stage) else f"{name} (as {label(given_as or '')})"


def _shape_facts(found: tuple[int, ...] | None, expected: str | None) -> tuple[Fact, ...]:
    """``shape [2, 3]``, ``expected [3, 2]``, ``or [2, 3, 3]``: one fact per shape."""
    shown = ", ".join(str(size) for size in found or ())
    options = (expected or "").split(" or ")
    return (
        ("  ", f"shape [{shown}]"),
        (", ", f"expected {options[0]}"),
        *((" or ", option) for option in options[1:]),
    )


def _delta(results: Sequence[StageResult]) -> list[str]:
    """``max |Δ| 3.2e-08`` over the heads given (nothing where no cell is finite)."""
    deltas = [r.max_abs_delta for r in results if r.max_abs_delta is not None]
    return [f"max |Δ| {delta_text(max(deltas))}"] if deltas else []


def delta_text(delta: float) -> str:
    """A difference to two significant digits: ``5.9``, ``0.073``, ``3.2e-08``, ``0``."""
    return significant(delta, 2)


def _whose(results: Sequence[StageResult], model: ModelInfo) -> str:
    """``heads 1, 3``, ``K/V head 1``, or '' for a shared stage or a one-head model."""
    kv = [r.kv_head for r in results if r.kv_head is not None]
    if kv:
        return numbered("K/V head", kv)
    heads = [r.head for r in results if r.head is not None]
    return numbered("head", heads) if heads and model.heads > 1 else ""


def tolerance_line(report: CheckReport) -> Line | None:
    """``compared as float32: rtol 1e-4, atol 1e-5``; per dtype, naming its stages, when
    the file's arrays were saved in more than one."""
    by_tolerance: dict[Tolerance, list[str]] = {}
    for result in report.results:
        if result.tolerance is not None:
            stages = by_tolerance.setdefault(result.tolerance, [])
            if result.name not in stages:
                stages.append(result.name)
    if not by_tolerance:
        return None
    facts: list[Fact] = []
    for index, (tolerance, stages) in enumerate(by_tolerance.items()):
        whose = "" if len(by_tolerance) == 1 else f" ({', '.join(stages)})"
        rtol, atol = short_float(tolerance.rtol), short_float(tolerance.atol)
        facts.append(
            (
                "; " if index else " ",
                Text(
                    f"{'as ' if index else ''}{tolerance.dtype}{whose}: rtol {rtol}, atol {atol}",
                    style="dim",
                ),
            )
        )
    return Line(Text("compared as", style="dim"), facts)


def first_difference(
    report: CheckReport, first: Divergence, precision: int
) -> Iterator[RenderableType]:
    """The first difference in words, the region around it, and the diagnosis."""
    where: list[Fact] = [(" ", _named(first.stage, first.given_as))]
    if first.region is None:  # the shape fits no reading: the whole array, every head
        shape = _shape_facts(first.shape_found, first.shape_expected)
        yield Line(
            Text("first difference:", style="bold"),
            [(" ", f"{where[0][1]}:"), (" ", shape[0][1]), *shape[1:]],
        )
        yield Text("")
        yield diagnosis(report, ("no known mistake reproduces this shape", ""))
        return
    where += [(", ", whose) for whose in _head_named(first, report.model)]
    places = digits(first.region, first, precision)
    rows, cols = axis_labels(report, first, "rows"), axis_labels(report, first, "cols")
    at = f"row {rows.worst}, column {cols.worst}"
    expected = number(math.nan if first.expected is None else first.expected, places)
    found = number(math.nan if first.found is None else first.found, places)
    values = Text.assemble("expected ", (expected, "bold"), ", found ", (found, "bold red"))
    spot = first.first_cell
    if spot is None or (spot.row, spot.column) == (first.row, first.column):
        yield Line(
            Text("first difference:", style="bold"),
            [*where, (", ", f"row {rows.worst}"), (", ", f"column {cols.worst}:"), (" ", values)],
        )
        around = "around it"
    else:  # the first in reading order, then the largest, which the region surrounds
        first_values = Text.assemble(
            "expected ",
            (number(spot.expected, places), "bold"),
            ", found ",
            (number(spot.found, places), "bold red"),
        )
        yield Line(
            Text("first difference:", style="bold"),
            [
                *where,
                (", ", f"row {cell_label(report, first, 'rows', spot.row, spot.row_label)}"),
                (
                    ", ",
                    f"column {cell_label(report, first, 'cols', spot.column, spot.column_label)}:",
                ),
                (" ", first_values),
            ],
        )
        largest = "largest difference:" if _finite(first) else "not finite:"
        yield Line(
            Text(largest, style="bold"),
            [(" ", f"row {rows.worst}"), (", ", f"column {cols.worst}:"), (" ", values)],
        )
        around = "around the " + ("largest" if _finite(first) else "non-finite one")
    yield Text("")
    yield Wrapped(
        Text(
            f"{around}: your numbers, the expected ones beneath, {WRONG} where they differ",
            style="dim",
        )
    )
    yield region_table(first.region, rows, cols, places)
    yield Text("")
    look = (
        f"the difference is largest at {at}"
        if _finite(first)
        else f"at {at} it is {found} where {expected} was expected"
    )
    yield diagnosis(report, ("no known mistake reproduces this;", look))


def _head_named(first: Divergence, model: ModelInfo) -> list[str]:
    if first.kv_head is not None:
        return [f"K/V head {first.kv_head}"]
    if first.head is not None and model.heads > 1:
        return [f"head {first.head}"]
    return []


def diagnosis(report: CheckReport, unexplained: tuple[str, str]) -> RenderableType:
    """``diagnosis: no-scaling — the scores were not divided by √d_k``, or, when no
    mistake of the catalogue reproduces the numbers, ``unexplained``: that, and where
    to look (on a line of its own where the two do not fit on one)."""
    found = report.diagnosis
    if found is None:
        said, where = unexplained
        return Line(Text(said, style="bold"), [(" ", where)] if where else [])
    text = Text.assemble(
        ("diagnosis: ", "bold"), (found.cause, "bold yellow"), f" — {found.message}"
    )
    if found.also:
        text.append(f"\nalso reproduced by: {', '.join(found.also)}", style="dim")
    return Wrapped(text)


def verdict(report: CheckReport) -> Text:
    """``✓ all 5 given stages match``, or ``✗ 3 of 5 given stages differ; the first is
    scaled``."""
    given = [line for line in stage_lines(report) if line.mark != MISSING]
    wrong = [line for line in given if line.mark == DIFFERS]
    count = len(given)
    if not wrong:
        said = {1: "the given stage matches", 2: "both given stages match"}.get(
            count, f"all {count} given stages match"
        )
        return Text.assemble((MATCH, _STYLES[MATCH]), " ", (said, _STYLES[MATCH]))
    if count == 1:
        return Text.assemble(
            (DIFFERS, _STYLES[DIFFERS]), " ", ("the given stage differs", _STYLES[DIFFERS])
        )
    said = (
        "both given stages differ"
        if len(wrong) == count == 2
        else (f"{len(wrong)} of {count} given stages differ")
    )
    return Text.assemble(
        (DIFFERS, _STYLES[DIFFERS]),
        " ",
        (said, _STYLES[DIFFERS]),
        f"; the first is {label(wrong[0].stage)}",
    )


def check_text(report: CheckReport, width: int = 100, source: str | None = None) -> str:
    """The report as plain text (``print(report)``, and the AssertionError of
    :func:`attntrace.testing.assert_attention_matches`): no terminal, no colour."""
    from io import StringIO

    console = Console(file=StringIO(), width=width, color_system=None, highlight=False)
    console.print(check_view(report, source=source), crop=False)
    return console.file.getvalue().rstrip()  # type: ignore[attr-defined, no-any-return]
