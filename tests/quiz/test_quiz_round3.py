"""Issue 32, round 3 of the quiz: coaching that keeps later answers secret, hint 3 that
is never the answer, a score that counts hints, exercise files that ask each cell once
and in the trace's order, and quiz's own --help."""

from __future__ import annotations

import json
import math
from pathlib import Path

import yaml
from helpers import invoke, one_line_error
from naive import naive_attention

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = ROOT / "attntrace/quiz/exercises"


def question_part(output: str, number: int) -> str:
    """What the screen says from ``Question N`` to the next question (or the end)."""
    part = output.split(f"Question {number} of ")[1]
    return part.split(f"Question {number + 1} of ")[0]


def exercise_file(tmp_path: Path, questions: list[dict[str, object]]) -> str:
    path = tmp_path / "ex.yaml"
    path.write_text(
        yaml.safe_dump({"model": {"sample": "it-animal"}, "questions": questions}), "utf-8"
    )
    return str(path)


# ---- 1. the worked answer shows no later question's cell -----------------------------


def test_the_walkthroughs_worked_answer_keeps_later_shares_secret() -> None:
    result = invoke("quiz", "--exercise", "softmax-walkthrough", input="0\n0\n0\n0\n")
    first = question_part(result.stdout, 1)
    assert "out of hints" in first
    for share in ("0.1386", "0.0154", "0.0008"):  # questions 2-4's answers
        assert share not in first, share
    # the asked cell's arithmetic whole: every exp, their sum, the share
    for figure in ("0.165299", "0.0183156", "1.19276", "0.838394"):
        assert figure in first, figure


def test_any_exercise_keeps_a_later_cell_of_the_same_row_out_of_the_worked_answer(
    tmp_path: Path,
) -> None:
    name = exercise_file(
        tmp_path,
        [
            {"stage": "softmax", "cell": "it,animal"},
            {"stage": "softmax", "cell": "it,street"},
        ],
    )
    result = invoke("quiz", "--exercise", name, input="0\n0\n0\n0\n")
    first = question_part(result.stdout, 1)
    assert "the answer: softmax[it, animal] = 0.6486" in first
    assert "0.2013" not in first  # softmax[it, street], question 2's answer


# ---- 2. hint 3 is never the answer; it-animal asks real arithmetic --------------------


def test_a_single_nonzero_product_is_not_written_out_in_hint_3() -> None:
    from attntrace.cli.model_flags import ModelFlags
    from attntrace.forward.cell_terms import figure
    from attntrace.quiz.hints import default_hints
    from attntrace.quiz.question import choose

    trace = ModelFlags(sample="it-animal").trace(None)
    for stage, cell in (("output", "it,d2"), ("scores", "it,animal"), ("Q", "it,d0")):
        question = choose(trace, stage, cell)
        hints = default_hints(trace, question)
        assert len(hints) == 3
        assert f"= {figure(question.expected)}" not in hints[2], (stage, hints[2])
        assert hints[2] not in hints[:2]


def test_several_nonzero_products_are_still_written_out() -> None:
    from attntrace.cli.model_flags import ModelFlags
    from attntrace.quiz.hints import default_hints
    from attntrace.quiz.question import choose

    trace = ModelFlags(sample="cat-eats-fish").trace(None)
    hints = default_hints(trace, choose(trace, "output", "fish,d0"))
    assert hints[2].count(" = ") >= 2  # products with their values, to be added


TOKENS = ["The", "animal", "didn't", "cross", "the", "street", "because", "it", "was", "tired", "."]


def it_animal_stages() -> dict[str, list[list[float]]]:
    """it-animal's stages by the textbook loops (the tokenizer splits off the ".")."""
    sample = yaml.safe_load((ROOT / "attntrace/samples/it-animal.yaml").read_text("utf-8"))
    table = {str(k): v for k, v in sample["embeddings"].items()}
    tokens = TOKENS
    x = [[float(v) for v in table.get(t, table.get(t.lower(), []))] for t in tokens]
    w = sample["weights"]
    return naive_attention(x, w["WQ"], w["WK"], w["WV"])


def test_it_animal_asks_no_answer_on_a_screen_or_twice() -> None:
    exercise = yaml.safe_load((EXERCISES / "it-animal.yaml").read_text("utf-8"))
    stages = it_animal_stages()
    tokens = TOKENS
    answers = []
    for asked in exercise["questions"]:
        row, col = asked["cell"].split(",")
        j = tokens.index(col) if col in tokens else int(col[1:])
        answers.append(stages[asked["stage"]][tokens.index(row)][j])
    assert all(not math.isclose(a, b) for i, a in enumerate(answers) for b in answers[:i])
    last = exercise["questions"][-1]
    assert last["stage"] != "output"  # every output cell of it-animal is one V entry
    assert last["cell"] == "it,tired"
    assert math.isclose(answers[-1], 0.09997, abs_tol=1e-4)


# ---- 3. the score counts hints -------------------------------------------------------

TESTER = "5\n6\n7\n4\n20\n14.1421\n0.9983\n3.9958\n"


def test_a_question_right_after_hints_earns_half_its_points() -> None:
    result = invoke("quiz", "--exercise", "worked-example", input=TESTER)
    assert result.exit_code == 0
    assert "score: 6 of 7 points (5 of 5 questions right, 1 after hints)" in result.stdout


def test_the_json_counts_questions_after_hints() -> None:
    import jsonschema

    result = invoke("quiz", "--exercise", "worked-example", "--json", input=TESTER)
    document = json.loads(result.stdout)
    schema = json.loads((ROOT / "attntrace/schema/quiz-v1.schema.json").read_text("utf-8"))
    jsonschema.validate(document, schema, cls=jsonschema.Draft202012Validator)
    assert (document["score"], document["total"], document["after_hints"]) == (6, 7, 1)
    first = document["questions"][0]
    assert (first["points"], first["score"], len(first["hints"])) == (1, 0, 3)


def test_two_points_after_a_hint_earn_one() -> None:
    from attntrace.quiz.question import Question
    from attntrace.quiz.session import Outcome

    question = Question("softmax", 0, 0, 0, "a", "a", 0.5, points=2)
    assert Outcome(question, "0.5", hints=["h"], correct=True).score == 1
    assert Outcome(question, "0.5", correct=True).score == 2
    assert Outcome(question, "0.5", hints=["h"], correct=False).score == 0


# ---- 4. an exercise asks each cell once, in the trace's order -------------------------


def test_the_same_cell_twice_is_refused(tmp_path: Path) -> None:
    # 7,1 and it,animal are the same cell
    name = exercise_file(
        tmp_path, [{"stage": "softmax", "cell": "it,animal"}, {"stage": "softmax", "cell": "7,1"}]
    )
    line = one_line_error(invoke("quiz", "--exercise", name))
    assert "questions[1]: the same cell as questions[0]" in line


def test_a_question_before_an_earlier_stage_is_refused(tmp_path: Path) -> None:
    name = exercise_file(
        tmp_path, [{"stage": "output", "cell": "it,d0"}, {"stage": "softmax", "cell": "it,animal"}]
    )
    line = one_line_error(invoke("quiz", "--exercise", name))
    assert "questions[1].stage" in line
    assert "softmax comes before output" in line


def test_the_shipped_exercises_are_in_the_traces_order() -> None:
    for name in ("worked-example", "softmax-walkthrough", "it-animal"):
        assert invoke("quiz", "--exercise", name, input="").exit_code == 1


# ---- 5. quiz --help says what quiz takes ----------------------------------------------


def test_quiz_help_says_config_is_not_stdin() -> None:
    result = invoke("quiz", "--help")
    assert result.exit_code == 0
    assert "- for stdin" not in result.stdout
    assert "(not" in result.stdout
    assert "the answers come from" in result.stdout
    lines = result.stdout.split("\n")
    assert all(line.strip() not in ("...).", "...)") for line in lines)
    assert any("echo 0.9983 | attntrace quiz" in line for line in lines)


def test_quiz_config_still_takes_a_file() -> None:
    sample = ROOT / "attntrace/samples/cat-eats-fish.yaml"
    result = invoke(
        "quiz",
        "--config",
        str(sample),
        "--stage",
        "softmax",
        "--cell",
        "fish,fish",
        input="0.9983\n",
    )
    assert result.exit_code == 0, result.stdout
