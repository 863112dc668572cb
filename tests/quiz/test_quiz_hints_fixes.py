"""Fresh eyes on quiz's coaching (issue 32): every hint right and distinct, the worked
answer about the cell asked, and an answer judged to the digits asked. Every number is
checked against tests/naive.py's loops or hand arithmetic, never the code's output."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import pytest
import yaml
from helpers import invoke
from naive import naive_attention

from attntrace.kernel.trace import Trace
from attntrace.quiz.answers import is_correct, parse_answer, why_not
from attntrace.quiz.question import Question
from attntrace.quiz.session import NOT_NUMBERS, Said, ask

ROOT = Path(__file__).resolve().parents[2]


def sample_stages(name: str, tokens: list[str] | None = None) -> dict[str, list[list[float]]]:
    """A single-head sample's stages by the textbook loops, from its file (``tokens``:
    as the tokenizer splits the sentence, where it is not at spaces)."""
    sample = yaml.safe_load((ROOT / "attntrace/samples" / f"{name}.yaml").read_text("utf-8"))
    table = {str(k): v for k, v in sample["embeddings"].items()}
    tokens = tokens or str(sample["sentence"]).split()
    x = [[float(v) for v in table.get(t, table.get(t.lower(), []))] for t in tokens]
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


# ---- 1. the softmax's third hint: every key and the sum ------------------------------


def trace_of(sample: str, sentence: str | None = None) -> Trace:
    from attntrace.cli.model_flags import ModelFlags

    return ModelFlags(sample=sample).trace(sentence)


def hints_for(sample: str, stage: str, cell: str, sentence: str | None = None) -> tuple[str, ...]:
    from attntrace.quiz.hints import default_hints
    from attntrace.quiz.question import choose

    trace = trace_of(sample, sentence)
    return default_hints(trace, choose(trace, stage, cell))


def number_after(line: str) -> float:
    """The figure a hint's line ends with (``  animal  exp(4.64 − M) = 1`` -> 1)."""
    return float(line.rsplit("= ", 1)[1].split()[0].replace("−", "-"))


def test_the_third_softmax_hint_has_every_key_and_the_sum() -> None:
    tokens = [
        "The",
        "animal",
        "didn't",
        "cross",
        "the",
        "street",
        "because",
        "it",
        "was",
        "tired",
        ".",
    ]
    stages = sample_stages("it-animal", tokens)
    row = stages["scaled"][tokens.index("it")]
    top = max(row)
    exps = [math.exp(x - top) for x in row]
    hint = hints_for("it-animal", "softmax", "it,animal")[2]
    lines = hint.split("\n")
    for token, e in zip(tokens, exps, strict=True):
        line = next(ln for ln in lines if ln.split() and ln.split()[0] == token)
        assert number_after(line) == pytest.approx(e, rel=1e-5), token
    total_line = next(ln for ln in lines if ln.startswith("sum of the 11 exps"))
    assert number_after(total_line) == pytest.approx(math.fsum(exps), rel=1e-5)
    assert lines[-1] == "now divide this key's exp by the sum"
    share = exps[1] / math.fsum(exps)
    assert f"{share:.4f}" not in hint  # never the answer itself


def test_a_long_rows_third_hint_keeps_the_key_the_largest_and_the_sum() -> None:
    # 44 tokens: the it-animal sentence four times; the asked key is a light one
    sentence = " ".join(["The animal didn't cross the street because it was tired ."] * 4)
    from attntrace.quiz.hints import default_hints
    from attntrace.quiz.question import choose

    trace = trace_of("it-animal", sentence)
    question = choose(trace, "softmax", "7,30")  # it -> 'was' of the third sentence (was#30)
    x = [float(v) for v in trace.stage("scaled").data[7]]
    top = max(x)
    exps = [math.exp(v - top) for v in x]
    hint = default_hints(trace, question)[2]
    lines = hint.split("\n")
    label = question.col_label
    asked = next(ln for ln in lines if ln.split() and ln.split()[0] == label)
    assert number_after(asked) == pytest.approx(exps[30], rel=1e-5)
    written = [ln for ln in lines if ln.startswith("  ") and "exp(" in ln]
    assert len(written) < 44
    left = next(ln for ln in lines if "not written add up to" in ln)
    count = int(left.split("the ")[1].split()[0])
    assert count == 44 - len(written)
    assert float(left.split("add up to ")[1].split()[0]) == pytest.approx(
        math.fsum(exps) - math.fsum(number_after(ln) for ln in written), rel=1e-4
    )
    total_line = next(ln for ln in lines if ln.startswith("sum of the 44 exps"))
    assert number_after(total_line) == pytest.approx(math.fsum(exps), rel=1e-5)
    # the largest exps (1 for animal, each time) are there
    assert sum(1 for ln in written if number_after(ln) == 1.0) >= 4


# ---- 2. later stages: the formula, the operands, a partial result, each new -----------

STAGES = [
    ("alibi", "biased", "the#4,on"),
    ("alibi", "alibi", "the#4,on"),
    ("alibi", "masked", "the#4,on"),
    ("two-heads", "concat", "eats,d2"),
    ("two-heads", "projected", "eats,d1"),
    ("cross", "X_context", "0,0"),
    ("positions", "X", "bites,d1"),
    ("positions", "positions", "bites,d1"),
    ("gemma-like", "capped", "down,the"),
    ("gemma-like", "Q_norm", "cat,0"),
    ("rope", "Q_rope", "man,d0"),
    ("cat-eats-fish", "scaled", "fish,cat"),
    ("cat-eats-fish", "Q", "fish,d1"),
    ("cat-eats-fish", "scores", "fish,cat"),
    ("cat-eats-fish", "output", "eats,d1"),
    ("window", "softmax", "mat,the#0"),
    ("sink-logit", "sink", "eats,sink"),
]


@pytest.mark.parametrize(("sample", "stage", "cell"), STAGES)
def test_hints_differ_and_never_give_the_value(sample: str, stage: str, cell: str) -> None:
    from attntrace.forward.cell_terms import figure
    from attntrace.quiz.question import choose

    hints = hints_for(sample, stage, cell)
    assert 1 <= len(hints) <= 3
    assert len(set(hints)) == len(hints), hints
    for earlier, later in itertools.pairwise(hints):
        assert not later.startswith(earlier)  # never the one before with a line added
    value = choose(trace_of(sample), stage, cell).expected
    for hint in hints[1:]:
        # a term's own line may equal the cell where the other terms are 0 (one-hot
        # weights): that is arithmetic; no other line may give the value
        said = [line for line in hint.split("\n") if not line.startswith("  ")]
        assert f"= {figure(value)}" not in "\n".join(said), hint


def test_biased_is_one_step_two_hints_by_hand() -> None:
    # ALiBi sample, head 1, the#4 (i = 4) and on (j = 3): scaled 1/(2√2), bias −1/256
    hints = hints_for("alibi", "biased", "the#4,on")
    assert len(hints) == 2
    assert "0.353553" in hints[1]
    assert "-0.00390625" in hints[1]
    assert "0.349647" not in "".join(hints)  # 0.353553 − 0.00390625, the answer


def test_two_hints_on_screen_say_2_of_2() -> None:
    result = invoke(
        "quiz", "-s", "alibi", "--stage", "biased", "--cell", "the#4,on", input="1\n2\n3\n"
    )
    assert "Hint 2 of 2:" in result.stdout
    assert "Hint 3" not in result.stdout


# ---- 3. the sink logit: hint 1 leads to the answer ------------------------------------


def test_the_sink_logits_hints_lead_to_the_answer() -> None:
    # head 1 of sink-logit: Q = K = X[:, 2:4], d_k 2, sink logit −2 (the sample's file)
    fish, cat, eats = [0.5, 1.0], [1.0, 0.5], [0.25, 0.25]
    row = [
        sum(a * b for a, b in zip(fish, k, strict=True)) / math.sqrt(2) for k in (cat, eats, fish)
    ]
    top = max([*row, -2.0])
    exps = [math.exp(v - top) for v in row]
    sink = math.exp(-2.0 - top)
    answer = exps[0] / (math.fsum(exps) + sink)
    assert round(answer, 4) == 0.3445
    hints = hints_for("sink-logit", "softmax", "fish,cat")
    assert "exp(s − M)" in hints[0]
    assert "sink" in hints[0]
    assert "s = -2" in hints[1]
    lines = hints[2].split("\n")
    cat_exp = number_after(next(ln for ln in lines if ln.split()[0] == "cat"))
    summed = number_after(next(ln for ln in lines if ln.startswith("sum of")))
    assert summed == pytest.approx(math.fsum(exps) + sink, rel=1e-5)
    assert cat_exp / summed == pytest.approx(answer, rel=1e-5)


def test_a_window_row_says_hidden_keys_give_exp_0() -> None:
    hints = hints_for("window", "softmax", "mat,the#0")
    assert "−∞: its exp is 0" in hints[0]
    assert "exp(−∞) = 0" in hints[2]


# ---- 4. the worked answer's ◀ marks the key asked ------------------------------------


def worked_of(output: str) -> str:
    return output[output.index("The worked answer") :]


def marked(worked: str) -> list[str]:
    """The keys a softmax table marks ◀ (the first word of each marked line)."""
    return [line.split()[0] for line in worked.split("\n") if "◀" in line.split("  ")[0]]


def test_the_worked_answer_marks_the_key_asked_not_the_heaviest() -> None:
    # two-heads, head 0: fish's weights on cat and fish tie; the question asks cat
    result = invoke("quiz", "-s", "two-heads", "--stage", "softmax", "--cell", "fish,cat", input="")
    worked = worked_of(result.stdout)
    assert marked(worked) == ["cat"]
    assert "◀ the key asked about" in worked


def test_an_exercises_worked_answer_marks_its_own_key() -> None:
    # softmax-walkthrough's last question: softmax[max, through]; the heaviest is max
    # (the questions before it write the cell's story: their row holds later answers)
    result = invoke("quiz", "--exercise", "softmax-walkthrough", input="1\n" * 40)
    answers = result.stdout.split("The worked answer")[1:]
    last = answers[3].split("the answer:")[0]
    assert marked(last) == ["through"]


def test_run_focus_keeps_its_own_mark_on_the_row_max() -> None:
    result = invoke("run", "-s", "two-heads", "--focus", "fish")
    table = result.stdout[result.stdout.rindex("softmax = exp") :].split("\nsum")[0]
    assert sorted(marked(table)) == ["cat", "fish"]  # head 1: both hold the row max


# ---- 5. a real model's worked answer keeps the cell's own arithmetic ------------------


def test_a_long_output_row_keeps_the_asked_column_in_every_vector() -> None:
    from rich.console import Console

    from attntrace.forward.focus import focus_at
    from attntrace.forward.views.focus import output_section
    from attntrace.ui.view import View

    # a 40-wide value: the it-animal sentence, V widened by a model file of d_v 40
    trace = trace_of("it-animal")
    focus = focus_at(trace, 7, 0)
    wide = [tuple(float(i + 10 * k) for i in range(40)) for k in range(len(focus.terms))]
    from dataclasses import replace

    terms = tuple(replace(t, value_row=row) for t, row in zip(focus.terms, wide, strict=True))
    output = tuple(
        math.fsum(t.weight * row[c] for t, row in zip(focus.terms, wide, strict=True))
        for c in range(40)
    )
    focus = replace(focus, terms=terms, output=output)
    console = Console(width=200, no_color=True, record=True)
    console.print(output_section(focus, View(), asked=(23, "d23", "d23")))
    text = console.export_text()
    rows = [line for line in text.split("\n") if "× [" in line]
    assert len(rows) == len(focus.terms)
    for k, line in enumerate(rows):
        assert f"d23: {23 + 10 * k}" in line, line  # V[key, d23], by hand: 23 + 10k
    total_line = next(line for line in text.split("\n") if "sum = [" in line)
    assert f"d23: {output[23]:.4f}" in total_line


def test_a_long_rows_worked_answer_writes_the_light_key_asked() -> None:
    sentence = " ".join(["The animal didn't cross the street because it was tired ."] * 4)
    result = invoke(
        "quiz", "-s", "it-animal", sentence, "--stage", "softmax", "--cell", "7,30", input=""
    )
    worked = worked_of(result.stdout)
    assert marked(worked) == ["was#30"]
    # the key's own line, by hand: exp(0 − 4.64) and its share of the row's sum
    line = next(ln for ln in worked.split("\n") if ln.startswith("was#30"))
    assert f"{math.exp(-4.64):.6f}" in line
    assert "the 19 largest of 44 weights and the key asked are written out" in worked
