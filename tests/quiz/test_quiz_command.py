"""`attntrace quiz` as a learner and a script see it: the issue's done-when (0.9983 for
softmax[fish, fish] accepted, a wrong answer coached to the worked value), cells named
by token or index, the seed, --json against its schema, and the usage errors. Every
expected value comes from tests/naive.py's loops, never from the code under test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from helpers import invoke, one_line_error, raw_controls, schema
from naive import naive_attention

ROOT = Path(__file__).resolve().parents[2]
FISH = ["-s", "cat-eats-fish", "--stage", "softmax", "--cell", "fish,fish"]


def naive_sample(name: str, tokens: list[str]) -> dict[str, list[list[float]]]:
    """A sample's stages by the textbook loops, from its file (keys as written)."""
    sample = yaml.safe_load((ROOT / "attntrace/samples" / f"{name}.yaml").read_text("utf-8"))
    table = {str(k): v for k, v in sample["embeddings"].items()}
    x = [[float(v) for v in table[t]] for t in tokens]
    w = sample["weights"]
    return naive_attention(x, w["WQ"], w["WK"], w["WV"])


def fish_weight() -> float:
    return naive_sample("cat-eats-fish", ["cat", "eats", "fish"])["softmax"][2][2]


def quiz_document(text: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(text)
    jsonschema.validate(
        document, schema("quiz-v1.schema.json"), cls=jsonschema.Draft202012Validator
    )
    return document


def test_the_issue_example_accepts_the_articles_figure() -> None:
    assert round(fish_weight(), 4) == 0.9983  # the issue's figure, by the loops
    result = invoke("quiz", *FISH, input="0.9983\n")
    assert result.exit_code == 0, result.output
    assert "fish        ·        ·        ?" in result.stdout  # the cell and its row hidden
    assert "0.9983" not in result.stdout.split("✓ correct")[0].replace("? 0.9983", "")
    assert "✓ correct: softmax[fish, fish] = 0.9983" in result.stdout
    assert "Traceback" not in result.output


def test_a_wrong_answer_is_coached_to_the_worked_value() -> None:
    result = invoke("quiz", *FISH, input="0.5\n0.6\n0.7\n0.8\n")
    assert result.exit_code == 1, result.output
    out = result.stdout
    for number in (1, 2, 3):
        assert f"Hint {number} of 3:" in out
    assert out.index("Hint 1") < out.index("Hint 2") < out.index("Hint 3")
    assert "scaled[fish] = [7.07107, 7.07107, 14.1421];  M = 14.1421" in out  # the operands
    assert "sum of the 3 exps = 1.00170" in out  # the partial result
    assert "out of hints" in out
    worked = out[out.index("out of hints") :]
    assert "fish ◀   14.1421" in worked  # --focus's softmax table
    assert f"the answer: softmax[fish, fish] = {fish_weight():.4f}" in worked


def test_the_end_of_input_gives_the_worked_answer_and_exit_1() -> None:
    result = invoke("quiz", *FISH, input="")
    assert result.exit_code == 1
    assert "no answer (end of input)" in result.stdout
    assert f"= {fish_weight():.4f}" in result.stdout


def test_a_right_answer_after_a_hint() -> None:
    result = invoke("quiz", *FISH, input="1\nnot sure\n0.99830\n")
    assert result.exit_code == 0
    assert result.stdout.count("Hint ") == 1
    assert "not a number" in result.stdout


def test_a_stage_by_the_name_people_give_it() -> None:
    result = invoke("quiz", "-s", "cat-eats-fish", "--stage", "attn", "--cell", "2,2", "--json")
    assert quiz_document(result.stdout)["questions"][0]["stage"] == "softmax"


@pytest.mark.parametrize("cell", ["fish,fish", "2,2", "fish,2", "FISH,fish"])
def test_a_cell_by_token_or_index(cell: str) -> None:
    result = invoke("quiz", "-s", "cat-eats-fish", "--stage", "softmax", "--cell", cell, "--json")
    document = quiz_document(result.stdout)
    [question] = document["questions"]
    assert (question["row"], question["col"]) == (2, 2)
    assert question["expected"] == pytest.approx(fish_weight(), rel=1e-12)


def test_a_repeated_token_by_its_label() -> None:
    words = ["fish", "eats", "fish"]
    expected = naive_sample("cat-eats-fish", words)["scores"][2][0]
    result = invoke(
        "quiz",
        "-s",
        "cat-eats-fish",
        *words,
        "--stage",
        "scores",
        "--cell",
        "fish#2,fish#0",
        "--json",
        input=f"{expected}\n",
    )
    document = quiz_document(result.stdout)
    [question] = document["questions"]
    assert (question["row"], question["col"]) == (2, 0)
    assert (question["row_label"], question["col_label"]) == ("fish#2", "fish#0")
    assert question["correct"]
    assert result.exit_code == 0


def test_it_animal_by_tokens() -> None:
    tokens = ["the", "animal", "didn't", "cross", "the", "street", "because", "it", "was"]
    expected = naive_sample("it-animal", [*tokens, "tired", "."])["softmax"][7][1]
    result = invoke(
        "quiz",
        "-s",
        "it-animal",
        "--stage",
        "softmax",
        "--cell",
        "it,animal",
        "--json",
        input=f"{expected:.4f}\n",
    )
    document = quiz_document(result.stdout)
    assert document["questions"][0]["expected"] == pytest.approx(expected, rel=1e-12)
    assert result.exit_code == 0


def test_the_seed_chooses_the_same_question_every_time() -> None:
    def asked(*flags: str) -> tuple[str, int, int]:
        result = invoke("quiz", "-s", "it-animal", *flags, "--json")
        question = quiz_document(result.stdout)["questions"][0]
        return question["stage"], question["row"], question["col"]

    assert asked() == asked("--seed", "0") == asked()
    assert asked("--seed", "7") == asked("--seed", "7")
    seen = {asked("--seed", str(seed)) for seed in range(8)}
    assert len(seen) > 1


def test_a_seeded_question_is_never_a_masked_cell() -> None:
    for seed in range(12):
        result = invoke(
            "quiz",
            "-s",
            "cat-eats-fish",
            "--causal",
            "--stage",
            "softmax",
            "--seed",
            str(seed),
            "--json",
        )
        question = quiz_document(result.stdout)["questions"][0]
        assert question["col"] <= question["row"], seed


def test_json_holds_every_answer_and_the_score() -> None:
    result = invoke("quiz", *FISH, "--json", input="0.5\nx\n0.9983\n")
    assert result.exit_code == 0
    assert result.stderr == ""  # no person at a terminal: nothing but the document
    document = quiz_document(result.stdout)
    assert document["schema"] == "attntrace/quiz/v1"
    assert document["seed"] == 0
    assert document["exercise"] is None
    [question] = document["questions"]
    assert [a["text"] for a in question["answers"]] == ["0.5", "0.9983"]
    assert [a["correct"] for a in question["answers"]] == [False, True]
    assert len(question["hints"]) == 1
    assert question["hints"][0].startswith("softmax[fish, fish]")
    assert question["ended"] == "correct"
    # right after a hint: half of 1 point, rounded down (round 3)
    assert (document["score"], document["total"], document["correct"]) == (0, 1, True)
    assert document["after_hints"] == 1


def test_json_for_a_wrong_quiz_exits_1() -> None:
    result = invoke("quiz", *FISH, "--json", input="1\n2\n3\n4\n")
    document = quiz_document(result.stdout)
    assert result.exit_code == 1
    assert document["questions"][0]["ended"] == "wrong"
    assert len(document["questions"][0]["hints"]) == 3
    assert (document["score"], document["correct"]) == (0, False)


def test_a_masked_cell_is_answered_minus_infinity() -> None:
    result = invoke(
        "quiz",
        "-s",
        "cat-eats-fish",
        "--causal",
        "--stage",
        "masked",
        "--cell",
        "cat,fish",
        "--json",
        input="-inf\n",
    )
    document = quiz_document(result.stdout)
    assert document["questions"][0]["expected"] is None  # −∞
    assert result.exit_code == 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--stage", "sofmax"], ["--stage", "softmax"]),
        (["--stage", "softmax", "--cell", "fish"], ["--cell", "ROW,COL"]),
        (["--stage", "softmax", "--cell", "fish,dog"], ["--cell column", "dog"]),
        (["--stage", "softmax", "--cell", "7,0"], ["--cell row", "0 to 2"]),
        (["--exercise", "worked-example", "--stage", "softmax"], ["--exercise", "--stage"]),
        (["--exercise", "no-such-exercise"], ["--exercise", "worked-example"]),
        (["--config", "-"], ["stdin"]),
    ],
)
def test_bad_flags_are_one_line(args: list[str], words: list[str]) -> None:
    extra = [] if "--exercise" in args or "--config" in args else ["-s", "cat-eats-fish"]
    one_line_error(invoke("quiz", *extra, *args, input="1\n"), *words)


@pytest.mark.long
def test_every_stage_of_a_trace_can_be_asked() -> None:
    """Any stage, by its story's hints, never a traceback: X, the weights' products,
    the variants' stages."""
    for sample in ("cat-eats-fish", "rope", "alibi", "gemma-like"):
        names = json.loads(invoke("run", "-s", sample, "--json").stdout)["stages"]
        for stage in dict.fromkeys(s["name"] for s in names):
            result = invoke(
                "quiz", "-s", sample, "--stage", stage, input="-12345\n-12346\n-12347\n-12348\n"
            )
            assert result.exit_code == 1, (sample, stage, result.output)
            assert "the answer:" in result.stdout, (sample, stage)
            assert "Traceback" not in result.output


def test_text_from_outside_never_reaches_the_terminal_raw(tmp_path: Path) -> None:
    result = invoke("quiz", *FISH, input="\x1b[2J\n\x07 0.5\n")
    assert raw_controls(result.stdout) == []
    assert "\\x1b[2J" in result.stdout  # the piped line, shown as code
    exercise = tmp_path / "ex.yaml"
    exercise.write_text(
        'title: "\\e]0;owned\\a quiz"\nmodel: {sample: cat-eats-fish}\n'
        'questions: [{stage: scores, cell: "0,0", hints: ["\\e[31mred\\e[0m"]}]\n',
        "utf-8",
    )
    result = invoke("quiz", "--exercise", str(exercise), input="1\n")
    assert result.exit_code == 1
    assert raw_controls(result.stdout) == []
    assert "red" in result.stdout
