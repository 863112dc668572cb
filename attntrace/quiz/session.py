"""One question asked: answers read one line at a time, judged, coached, until right,
out of hints, or out of input.

The loop knows no terminal: it reads lines from ``read`` (None: the input ended) and
tells ``say`` what happened (:class:`Said`), so the command line draws it, --json
keeps quiet, and the tests drive it with a list of lines. The rules
(docs/teaching.md): a wrong answer earns the next hint; a wrong answer after the last
hint, or the end of input, ends the question with the worked answer. A line that is not
a number is re-asked and not counted, but :data:`NOT_NUMBERS` of them in a row end the
question as the end of input does (``yes | attntrace quiz`` cannot loop forever): the
screen says so (``why`` ``not numbers``), the JSON records ``end of input``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from attntrace.quiz.answers import DEFAULT_PRECISION, is_correct, parse_answer
from attntrace.quiz.question import Question

NOT_NUMBERS = 5  # lines in a row that are not numbers before a question gives up


@dataclass(frozen=True)
class Answer:
    """One answer given: the line as typed, its number, whether it was right."""

    text: str
    value: float
    correct: bool


@dataclass(frozen=True)
class Said:
    """What the loop tells the view: ``kind`` is ``ask`` (a prompt), ``not-a-number``,
    ``correct``, ``hint`` (``text`` holds it, ``number`` counts from 1), ``worked``
    (the question ends unanswered: ``why`` is ``wrong``, ``end of input`` or ``not
    numbers``: :data:`NOT_NUMBERS` lines in a row were none)."""

    kind: str
    text: str = ""
    number: int = 0
    why: str = ""


@dataclass
class Outcome:
    """How the question went: the answers, the hints shown, right or not, and why it
    ended (``correct``, ``wrong``: out of hints, ``end of input``)."""

    question: Question
    shown: str  # the cell as the table would have written it
    answers: list[Answer] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    correct: bool = False
    ended: str = "end of input"

    @property
    def after_hints(self) -> bool:
        """Answered right, but only after a hint (a wrong answer first)."""
        return self.correct and bool(self.hints)

    @property
    def score(self) -> int:
        """The question's points where it was answered right at the first try, half of
        them (rounded down) where it was answered right after hints, else 0
        (docs/teaching.md: a 1-point question earns its point at the first try only)."""
        if not self.correct:
            return 0
        return self.question.points // 2 if self.hints else self.question.points


def ask(
    question: Question,
    shown: str,
    hints: Sequence[str],
    read: Callable[[], str | None],
    say: Callable[[Said], None],
    precision: int = DEFAULT_PRECISION,
) -> Outcome:
    """Ask ``question`` (its cell written ``shown`` in the table, at ``precision``
    places) until it is answered right, every hint of ``hints`` is spent and one more
    answer is wrong, or ``read`` gives None; the outcome records every answer."""
    outcome = Outcome(question, shown)
    strays = 0
    why = ""
    say(Said("ask"))
    while True:
        line = read()
        if line is None:
            break
        value = parse_answer(line)
        if value is None:
            strays += 1
            if strays >= NOT_NUMBERS:
                why = "not numbers"
                break
            say(Said("not-a-number", text=line))
            say(Said("ask"))
            continue
        strays = 0
        right = is_correct(value, question.expected, shown, precision)
        outcome.answers.append(Answer(line.strip(), value, right))
        if right:
            outcome.correct, outcome.ended = True, "correct"
            say(Said("correct"))
            return outcome
        if len(outcome.hints) == len(hints):
            outcome.ended = "wrong"
            break
        hint = hints[len(outcome.hints)]
        outcome.hints.append(hint)
        say(Said("hint", text=hint, number=len(outcome.hints)))
        say(Said("ask"))
    say(Said("worked", why=why or outcome.ended))
    return outcome
