"""One question's loop, driven by a list of lines: hints in order, the worked answer
after the last, the end of input, and lines that are not numbers."""

from __future__ import annotations

from collections.abc import Callable

from attntrace.quiz.question import Question
from attntrace.quiz.session import NOT_NUMBERS, Outcome, Said, ask

QUESTION = Question("softmax", None, 2, 2, "fish", "fish", 0.9983042291141669)
HINTS = ("the formula", "the operands", "a partial result")


def lines(*given: str) -> Callable[[], str | None]:
    queue = list(given)
    return lambda: queue.pop(0) if queue else None


def run(*given: str, hints: tuple[str, ...] = HINTS) -> tuple[list[Said], Outcome]:
    said: list[Said] = []
    outcome = ask(QUESTION, "0.9983", hints, lines(*given), said.append)
    return said, outcome


def kinds(said: list[Said]) -> list[str]:
    return [s.kind for s in said if s.kind != "ask"]


def test_right_at_once() -> None:
    said, outcome = run("0.9983")
    assert kinds(said) == ["correct"]
    assert outcome.correct
    assert outcome.ended == "correct"
    assert outcome.score == 1


def test_each_wrong_answer_earns_the_next_hint_then_the_worked_answer() -> None:
    said, outcome = run("0.5", "0.6", "0.7", "0.8", "0.9983")
    assert kinds(said) == ["hint", "hint", "hint", "worked"]
    assert [s.text for s in said if s.kind == "hint"] == list(HINTS)
    assert [s.number for s in said if s.kind == "hint"] == [1, 2, 3]
    assert said[-1].why == "wrong"
    assert not outcome.correct
    assert outcome.ended == "wrong"
    assert len(outcome.answers) == 4  # the fifth line is never read


def test_right_after_a_hint() -> None:
    said, outcome = run("0.5", "0.99830")
    assert kinds(said) == ["hint", "correct"]
    assert outcome.hints == ["the formula"]
    assert outcome.correct


def test_the_end_of_input_ends_it_with_the_worked_answer() -> None:
    said, outcome = run("0.5")
    assert kinds(said) == ["hint", "worked"]
    assert said[-1].why == "end of input"
    assert outcome.ended == "end of input"
    said, outcome = run()
    assert kinds(said) == ["worked"]


def test_a_line_that_is_no_number_is_asked_again_not_counted() -> None:
    said, outcome = run("abc", "", "0.9983")
    assert kinds(said) == ["not-a-number", "not-a-number", "correct"]
    assert [a.text for a in outcome.answers] == ["0.9983"]


def test_endless_lines_that_are_no_numbers_end_it() -> None:
    said, outcome = run(*["y"] * 1000)  # yes | attntrace quiz
    assert kinds(said).count("not-a-number") == NOT_NUMBERS - 1
    assert said[-1].kind == "worked"
    assert outcome.ended == "end of input"


def test_a_teachers_hints_replace_the_defaults_and_set_the_tries() -> None:
    said, _ = run("1", "2", "3", hints=("only one",))
    assert kinds(said) == ["hint", "worked"]
    said, _ = run("1", hints=())
    assert kinds(said) == ["worked"]
