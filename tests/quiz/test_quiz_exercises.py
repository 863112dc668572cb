"""Exercise files: the three shipped ones answered right from values the textbook loops
compute (tests/naive.py), through stdin as a script would pipe them; each valid against
exercise-v1's schema; and every mistake in a teacher's file one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from helpers import invoke, needs_weights, one_line_error, schema
from naive import naive_attention

from attntrace.quiz.exercise import exercises_dir, shipped_names

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("it-animal", "softmax-walkthrough", "worked-example")
# Each shipped exercise's model file and its sentence's tokens, as its embeddings name them.
MODELS = {
    "worked-example": ("attntrace/samples/cat-eats-fish.yaml", "cat eats fish"),
    "softmax-walkthrough": (
        "attntrace/quiz/exercises/models/article-row.yaml",
        "scores walk through soft max",
    ),
    "it-animal": (
        "attntrace/samples/it-animal.yaml",
        "the animal didn't cross the street because it was tired .",
    ),
}


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text("utf-8"))


def naive_answers(name: str) -> list[float]:
    """Each question's value by the loops, its row and column read from the file."""
    path, sentence = MODELS[name]
    model = load(ROOT / path)
    tokens = sentence.split()
    x = [[float(v) for v in model["embeddings"][t]] for t in tokens]
    w = model["weights"]
    stages = naive_attention(x, w["WQ"], w["WK"], w["WV"])
    answers = []
    for question in load(exercises_dir() / f"{name}.yaml")["questions"]:
        row, col = question["cell"].split(",")
        j = int(col[1:]) if col.startswith("d") and col[1:].isdigit() else tokens.index(col)
        answers.append(stages[question["stage"]][tokens.index(row)][j])
    return answers


def test_three_exercises_ship() -> None:
    assert tuple(shipped_names()) == SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_exercise_follows_its_schema(name: str) -> None:
    jsonschema.validate(
        load(exercises_dir() / f"{name}.yaml"),
        schema("exercise-v1.schema.json"),
        cls=jsonschema.Draft202012Validator,
    )


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_exercise_answered_right_through_a_pipe(name: str) -> None:
    answers = naive_answers(name)
    piped = "".join(f"{value:.6g}\n" for value in answers)
    result = invoke("quiz", "--exercise", name, input=piped)
    assert result.exit_code == 0, result.output
    assert result.stdout.count("✓ correct") == len(answers)
    total = sum(q.get("points", 1) for q in load(exercises_dir() / f"{name}.yaml")["questions"])
    assert f"score: {total} of {total} points" in result.stdout
    document = json.loads(invoke("quiz", "--exercise", name, "--json", input=piped).stdout)
    jsonschema.validate(
        document, schema("quiz-v1.schema.json"), cls=jsonschema.Draft202012Validator
    )
    assert document["score"] == document["total"] == total
    assert [q["expected"] for q in document["questions"]] == pytest.approx(answers, rel=1e-12)


def test_an_exercise_with_a_wrong_answer_exits_1_with_its_score() -> None:
    answers = naive_answers("worked-example")
    piped = "".join(f"{value:.6g}\n" for value in answers[:-1]) + "0\n" * 4
    result = invoke("quiz", "--exercise", "worked-example", input=piped)
    assert result.exit_code == 1
    assert "score: 5 of 7 points (4 of 5 questions right)" in result.stdout


def test_an_exercise_by_path_finds_its_model_beside_it(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "row.yaml").write_text(
        (exercises_dir() / "models" / "article-row.yaml").read_text("utf-8"), "utf-8"
    )
    exercise = tmp_path / "mine.yaml"
    exercise.write_text(
        "model: {file: models/row.yaml}\n"
        "questions:\n  - {stage: scaled, cell: [max, 0], hints: [], points: 3}\n",
        "utf-8",
    )
    result = invoke("quiz", "--exercise", str(exercise), "--json", input="3.2\n")
    document = json.loads(result.stdout)
    assert result.exit_code == 0, result.output
    assert document["title"] == "mine"
    assert document["total"] == 3


BAD = [
    ("[1, 2]\n", ["expected a mapping with model and questions"]),
    ("questions: []\n", ["missing required field 'model'"]),
    ("model: {sample: cat-eats-fish}\nquestions: []\n", ["questions", "non-empty list"]),
    (
        "model: {sample: cat-eats-fish}\nquestion: []\n",
        ["unknown field 'question'", "did you mean"],
    ),
    ("model: {}\nquestions: [{stage: softmax, cell: 'fish,fish'}]\n", ["model", "one of sample"]),
    (
        "model: {sample: cat-eats-fish, real: minilm}\nquestions: [{stage: Q, cell: '0,0'}]\n",
        ["model", "sample and real"],
    ),
    ("model: {sample: 3}\nquestions: [{stage: Q, cell: '0,0'}]\n", ["model.sample", "a string"]),
    (
        "model: {sample: cat-eats-fish, layer: 1}\nquestions: [{stage: Q, cell: '0,0'}]\n",
        ["model.layer", "real"],
    ),
    ("model: {sample: cat-eats-fish}\nquestions: [{stage: Q}]\n", ["questions[0]", "'cell'"]),
    (
        "model: {sample: cat-eats-fish}\nquestions: [{stage: Q, cell: 5}]\n",
        ["questions[0].cell", "ROW,COL"],
    ),
    (
        "model: {sample: cat-eats-fish}\nquestions: [{stage: Q, cell: '0,0', points: -1}]\n",
        ["questions[0].points", "≥ 0"],
    ),
    (
        "model: {sample: cat-eats-fish}\nquestions: [{stage: Q, cell: '0,0', hints: [1]}]\n",
        ["questions[0].hints[0]", "a string"],
    ),
    (
        "model: {sample: cat-eats-fish}\nquestions: [{stage: Q, cell: '0,0', hint: []}]\n",
        ["questions[0]", "unknown field 'hint'"],
    ),
    (
        "model: {sample: cat-eats-fish}\nquestions: [{stage: sofmax, cell: '0,0'}]\n",
        ["questions[0].stage", "softmax"],
    ),
    (
        "model: {sample: cat-eats-fish}\nquestions: [{stage: softmax, cell: 'fish,dog'}]\n",
        ["questions[0].cell column", "dog"],
    ),
    (
        "model: {sample: cat-eats-fish}\nquestions: [{stage: softmax, cell: '0,0', head: 3}]\n",
        ["head", "a head of softmax"],
    ),
    (
        "model: {sample: no-such-sample}\nquestions: [{stage: Q, cell: '0,0'}]\n",
        ["model.sample", "no-such-sample"],
    ),
    (
        "model: {file: missing.yaml}\nquestions: [{stage: Q, cell: '0,0'}]\n",
        ["model.file: ", "missing.yaml", "no such file"],
    ),
    ("model: {sample: cat-eats-fish}\nmodel: {sample: it-animal}\nquestions: []\n", ["model"]),
    ("model: !!python/object:os.system {}\n", ["python/object"]),
    ("model: [unclosed\n", ["ex.yaml"]),
    ("", ["empty"]),
]


@pytest.mark.parametrize(("text", "words"), BAD)
def test_a_mistake_in_an_exercise_file_is_one_line(
    tmp_path: Path, text: str, words: list[str]
) -> None:
    path = tmp_path / "ex.yaml"
    path.write_text(text, "utf-8")
    line = one_line_error(invoke("quiz", "--exercise", str(path), input="1\n"), *words)
    assert str(path) in line


def test_an_exercise_that_is_a_folder_is_one_line(tmp_path: Path) -> None:
    one_line_error(invoke("quiz", "--exercise", str(tmp_path)), "directory")


@needs_weights
def test_a_real_models_layer_out_of_range_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "ex.yaml"
    path.write_text("model: {real: minilm, layer: 99}\nquestions: [{stage: Q, cell: '0,0'}]\n")
    one_line_error(invoke("quiz", "--exercise", str(path)), str(path), "model.layer", "99")
