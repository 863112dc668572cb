"""What the quiz says as it goes: the prompt, a re-ask, "correct", each hint, and the
worked answer as ``run --focus`` writes it (its section for the hidden stage), or the
cell's story where --focus has no section for the stage.

Hints and the story are plain text made visible here: tokens (and an exercise's hints)
come from files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Text

from attntrace.forward.cell_story import cell_story
from attntrace.forward.cell_terms import figure
from attntrace.forward.focus import Focus, focus_at
from attntrace.forward.views.focus import (
    SECTION_OF_STAGE,
    between_section,
    dot_section,
    output_section,
    scale_section,
    softmax_section,
)
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Trace
from attntrace.quiz.answers import DEFAULT_PRECISION, asked, why_not
from attntrace.quiz.question import Question, stage_of
from attntrace.quiz.session import Outcome
from attntrace.ui.view import View
from attntrace.ui.wrap import wrap
from attntrace.visible import visible

NOT_A_NUMBER = "write it as 0.9983, -1.5 or 2e-3 (-inf for a masked cell)"
# How a question that ended unanswered opens its worked answer, by why it ended.
OPENERS = {
    "wrong": "  ✗ out of hints.",
    "end of input": "  ✗ no answer (end of input).",
    "not numbers": "  ✗ five answers in a row were not numbers.",
}


def prompt(question: Question, *, typed: bool = True) -> Text:
    """``softmax[fish, fish] = ? `` (the answer is typed after it; ``typed`` False, an
    answer from a pipe, is written after it, and no space ends the line)."""
    return Text.assemble((visible(question.cell), "bold"), " = ?" + (" " if typed else ""))


@dataclass(frozen=True)
class Indented:
    """``text`` wrapped to the width less ``indent``, each line indented (no trailing
    spaces, where Rich's Padding would fill the line)."""

    text: Text
    indent: int = 4

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in wrap(self.text, options.max_width - self.indent):
            yield Text(" " * self.indent) + line


def not_a_number(line: str) -> Text:
    """``  not a number: write it as ...`` (``not a finite number`` for ``inf``)."""
    return Text(f"  {why_not(line)}: {NOT_A_NUMBER}", style="yellow")


def correct(question: Question, shown: str, precision: int = DEFAULT_PRECISION) -> Text:
    """``  ✓ correct: softmax[fish, fish] = 0.9983 (to 4 places or 1e-3 of
    it)``: the value and the digits the answer was held to."""
    return Text.assemble(
        ("  ✓ correct", "bold green"),
        f": {visible(question.cell)} = {visible(shown)}",
        (f" ({asked(shown, precision)})", "dim"),
    )


def hint(text: str, number: int, of: int) -> Group:
    """``  ✗ not quite. Hint 1 of 3: ...``, the hint's lines indented under it."""
    lines = visible_lines(text)
    first = Text.assemble(("  ✗ not quite. ", "bold red"), (f"Hint {number} of {of}:", "bold"))
    parts: list[RenderableType] = [first]
    parts += [Indented(Text(line, style="cyan")) for line in lines]
    return Group(*parts)


def visible_lines(text: str) -> list[str]:
    """A hint's lines, each made safe to show (a tab or an escape in a teacher's hint
    is written as a code, never sent to the terminal)."""
    return [visible(line) for line in text.split("\n")]


def worked(
    trace: Trace,
    question: Question,
    shown: str,
    view: View,
    why: str,
    later: Sequence[Question] = (),
) -> Group:
    """The worked answer: the --focus section of the hidden stage for the question's
    row (scores, scaled, softmax, output, ALiBi's bias, the cap), else the cell's story;
    then the answer itself. Where a ``later`` question asks another cell of the same
    row of the stage, the section (which writes the whole row: softmax's every share)
    would give its answer away: the cell's story is written instead, the asked cell's
    arithmetic whole (softmax's every exp and their sum, but no other share)."""
    opener = OPENERS.get(why, OPENERS["end of input"])
    secret = any(
        (q.stage, q.head, q.row) == (question.stage, question.head, question.row) for q in later
    )
    section = not secret and question.stage in (*SECTION_OF_STAGE, "alibi", "biased", "capped")
    said = "The worked answer, as run --focus writes it:" if section else "The worked answer:"
    # on one line where it fits 80 columns, else the worked answer's line under it
    first = [Text.assemble((opener, "bold red"), f" {said}")]
    if len(opener) + len(said) >= 80:
        first = [Text(opener, style="bold red"), Text(f"  {said}")]
    parts: list[RenderableType] = [*first, Text("")]
    head = question.head if question.head is not None else 0
    if section:
        parts.append(_section(trace, question, view, focus_at(trace, question.row, head)))
    else:
        story = cell_story(trace, stage_of(trace, question), question.row, question.col)
        parts.append(Text(visible(story.heading), style="bold"))
        parts += [Text(f"  {line}") for line in visible_lines("\n".join(story.lines[:-1]))]
    parts += [Text(""), answer_line(question, shown)]
    return Group(*parts)


def _section(trace: Trace, question: Question, view: View, focus: Focus) -> RenderableType:
    """--focus's section for the question's stage, about the cell asked: the asked key
    written out (and marked ◀ in the softmax table), the asked column of output kept in
    every vector it cuts short, named as V's table and output's name it."""
    name, col = question.stage, question.col
    if name == "output":
        values = stage_of(trace, question)
        v_label = unique_labels(trace.stage("V", head=values.head).cols)[col]
        return output_section(focus, view, (col, v_label, question.col_label))
    makers = {"scores": dot_section, "scaled": scale_section, "softmax": softmax_section}
    return makers.get(name, between_section)(focus, view, col)


def answer_line(question: Question, shown: str) -> Text:
    """``the answer: softmax[fish, fish] = 0.9983 (0.998304)``."""
    exact = figure(question.expected)
    detail = "" if exact == shown else f" ({exact})"
    return Text.assemble(
        ("the answer: ", "bold"), f"{visible(question.cell)} = ", (shown, "bold"), detail
    )


def score_line(outcomes: list[Outcome]) -> Text:
    """``score: 6 of 7 points (5 of 5 questions right, 1 after hints)``: a question
    answered right after hints earns half its points (rounded down), so the score line
    says how many were."""
    got = sum(o.score for o in outcomes)
    total = sum(o.question.points for o in outcomes)
    right = sum(o.correct for o in outcomes)
    helped = sum(o.after_hints for o in outcomes)
    style = "bold green" if got == total else "bold yellow"
    after = f", {helped} after hints" if helped else ""
    return Text.assemble(
        ("score: ", "bold"),
        (f"{got} of {total} point{'' if total == 1 else 's'}", style),
        f" ({right} of {len(outcomes)} question{'' if len(outcomes) == 1 else 's'} right{after})",
    )
