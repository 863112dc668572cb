"""Fresh eyes on quiz's coaching (issue 32): every hint right and distinct, the worked
answer about the cell asked, and an answer judged to the digits asked. Every number is
checked against tests/naive.py's loops or hand arithmetic, never the code's output."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import yaml
from helpers import invoke
from naive import naive_attention

from attntrace.quiz.answers import is_correct, parse_answer, why_not
from attntrace.quiz.question import Question
from attntrace.quiz.session import NOT_NUMBERS, Said, ask

ROOT = Path(__file__).resolve().parents[2]


def sample_stages(name: str) -> dict[str, list[list[float]]]:
    """A single-head sample's stages by the textbook loops, from its file."""
    sample = yaml.safe_load((ROOT / "attntrace/samples" / f"{name}.yaml").read_text("utf-8"))
    table = {str(k): v for k, v in sample["embeddings"].items()}
    tokens = str(sample["sentence"]).split()
    x = [[float(v) for v in table[t]] for t in tokens]
    w = sample["weights"]
    return naive_attention(x, w["WQ"], w["WK"], w["WV"])


def hints_of(output: str) -> list[str]:
    """Each hint's text, as shown (the lines under ``Hint N of M:``)."""
    parts = re.split(r"✗ not quite\. Hint \d of \d:\n", output)[1:]
    return [part.split(" = ? ")[0].rsplit("\n", 1)[0] for part in parts]


# ---- 6. the tolerance: the digits asked --------------------------------------------


def test_the_default_precision_takes_half_a_digit_or_1e_3_relative() -> None:
    # output[eats, d1] of cat-eats-fish: 2.478457 (the loops), shown 2.4785
    value = sample_stages("cat-eats-fish")["output"][1][1]
    assert round(value, 6) == 2.478457
    assert is_correct(2.4809, value, "2.4785")  # 1e-3 of 2.478 is 0.0025
    assert not is_correct(2.4810, value, "2.4785")


def test_more_precision_asks_for_more_digits() -> None:
    value = sample_stages("cat-eats-fish")["output"][1][1]
    assert not is_correct(2.4809, value, "2.478457", precision=6)
    assert not is_correct(2.4785, value, "2.478457", precision=6)
    assert is_correct(2.478457, value, "2.478457", precision=6)
    assert is_correct(2.4784569, value, "2.478457", precision=6)  # 0.4e-6 off
    assert not is_correct(2.4784572, value, "2.478457", precision=6)  # 0.65e-6 off
    # and fewer: --precision 2 asks for two places, never 1e-3 of a large value
    assert not is_correct(20.01, 20.0, "20.00", precision=2)
    assert is_correct(20.004, 20.0, "20.00", precision=2)


def test_precision_6_from_the_command_line_is_strict_and_says_so() -> None:
    cell = ["-s", "cat-eats-fish", "--stage", "output", "--cell", "eats,d1"]
    wrong = invoke("quiz", *cell, "--precision", "6", input="2.4809\n")
    assert wrong.exit_code == 1, wrong.output
    right = invoke("quiz", *cell, "--precision", "6", input="2.478457\n")
    assert right.exit_code == 0, right.output
    assert "(to 6 places)" in right.stdout
    default = invoke("quiz", *cell, input="2.4809\n")
    assert default.exit_code == 0, default.output
    assert "(to 4 places or 1e-3 of it)" in default.stdout


# ---- 7. what is a number -----------------------------------------------------------


@pytest.mark.parametrize("line", ["1_0", "0.99_83", "1e1_0"])
def test_underscores_are_no_number(line: str) -> None:
    assert parse_answer(line) is None
    assert why_not(line) == "not a number"


@pytest.mark.parametrize("line", ["inf", "+inf", "∞", "1e400", "-1e400", "−1e999"])
def test_an_infinite_answer_is_said_to_be_no_finite_number(line: str) -> None:
    assert parse_answer(line) is None
    assert why_not(line) == "not a finite number"


def test_minus_infinity_is_still_a_masked_cells_answer() -> None:
    assert parse_answer("-inf") == -math.inf
    assert parse_answer("−∞") == -math.inf


def test_five_lines_that_are_no_numbers_say_so() -> None:
    question = Question("softmax", None, 2, 2, "fish", "fish", 0.9983042291141669)
    queue = ["y"] * 10
    said: list[Said] = []
    outcome = ask(question, "0.9983", ("a",), lambda: queue.pop(0), said.append)
    assert said[-1].kind == "worked"
    assert said[-1].why == "not numbers"
    assert NOT_NUMBERS == 5
    assert outcome.ended == "end of input"  # the JSON's word: the schema's enum


def test_five_lines_that_are_no_numbers_on_screen() -> None:
    result = invoke("quiz", "-s", "cat-eats-fish", "--stage", "softmax", input="y\n" * 8)
    assert result.exit_code == 1
    assert "five answers in a row were not numbers" in result.stdout
    assert "end of input" not in result.stdout
    result = invoke("quiz", "-s", "cat-eats-fish", "--stage", "softmax", input="inf\n1\n")
    assert "not a finite number" in result.stdout


def test_the_default_precision_is_the_tables() -> None:
    from attntrace.quiz import answers
    from attntrace.ui import view

    assert answers.DEFAULT_PRECISION == view.DEFAULT_PRECISION
