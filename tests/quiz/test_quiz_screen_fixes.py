"""What fresh eyes found on quiz's screens and exercise files (issue 32): no screen
gives an answer away (a weight's row, a later question's cell, a column's width), the
operands a cell needs are on screen whatever the token count, the screen fits its
width, and an exercise file's mistakes name their field and never print a file's
content. Expected values come from tests/naive.py's loops."""

from __future__ import annotations

import json
import math
import random
import re
import time
from pathlib import Path

import jsonschema
import pytest
import yaml
from helpers import invoke, needs_weights, one_line_error, schema
from naive import naive_attention

from attntrace.quiz.exercise import exercises_dir

ROOT = Path(__file__).resolve().parents[2]
IT_ANIMAL = ["the", "animal", "didn't", "cross", "the", "street", "because", "it", "was"]
IT_ANIMAL += ["tired", "."]
SHIPPED = {
    "worked-example": ("attntrace/samples/cat-eats-fish.yaml", ["cat", "eats", "fish"]),
    "softmax-walkthrough": (
        "attntrace/quiz/exercises/models/article-row.yaml",
        ["scores", "walk", "through", "soft", "max"],
    ),
    "it-animal": ("attntrace/samples/it-animal.yaml", IT_ANIMAL),
}


def stages(path: str, tokens: list[str]) -> dict[str, list[list[float]]]:
    model = yaml.safe_load((ROOT / path).read_text("utf-8"))
    table = {str(k): v for k, v in model["embeddings"].items()}
    x = [[float(v) for v in table[t]] for t in tokens]
    w = model["weights"]
    return naive_attention(x, w["WQ"], w["WK"], w["WV"])


def answers(name: str) -> list[float]:
    """Each shipped question's value by the loops."""
    path, tokens = SHIPPED[name]
    computed = stages(path, tokens)
    found = []
    for question in yaml.safe_load((exercises_dir() / f"{name}.yaml").read_text("utf-8"))[
        "questions"
    ]:
        row, col = question["cell"].split(",")
        j = int(col[1:]) if re.fullmatch(r"d[0-9]+", col) else tokens.index(col)
        found.append(computed[question["stage"]][tokens.index(row)][j])
    return found


def screens(name: str) -> tuple[list[str], list[str]]:
    """Each question's screen (its text up to the question line) and each answer as
    its table writes it, answering every question right."""
    piped = "".join(f"{value:.6g}\n" for value in answers(name))
    result = invoke("quiz", "--exercise", name, input=piped)
    assert result.exit_code == 0, result.output
    shown = [
        q["shown"]
        for q in json.loads(invoke("quiz", "--exercise", name, "--json", input=piped).stdout)[
            "questions"
        ]
    ]
    parts = re.split(r"\nQuestion \d+ of \d+", result.stdout)[1:]
    return [part.split("\nWhat is ")[0] for part in parts], shown


# 1. No screen gives an answer away.


def test_a_weight_asked_hides_the_rest_of_its_row() -> None:
    result = invoke("quiz", "-s", "it-animal", "--stage", "softmax", "--cell", "it,animal")
    screen = result.stdout.split("What is")[0]
    weights = stages("attntrace/samples/it-animal.yaml", IT_ANIMAL)["softmax"][7]
    assert f"{weights[5]:.4f}" == "0.2013"  # it → street, by the loops
    for value in weights:
        assert f"{value:.4f}" not in screen.split("softmax = ")[1]
    assert re.search(r"^it(\s+[·…])+\s+\?(\s+[·…])+\s*$", screen, re.MULTILINE), screen


def test_the_softmax_walkthrough_cannot_be_answered_by_subtraction() -> None:
    piped = "0.8383\n0.1386\n0.0154\n0.0008\n"
    result = invoke("quiz", "--exercise", "softmax-walkthrough", input=piped)
    first = result.stdout.split("Question 2 of")[0].split("What is")[0]
    for later in ("0.1386", "0.0154", "0.0008"):
        assert later not in first


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_no_screen_shows_a_later_answer(name: str) -> None:
    """Nowhere on an earlier screen; in it-animal, nowhere in the later question's own
    stage's table: that sample's scaled scores are WQ's entries by design (WK doubles
    one-hot features, √d_k = 2 halves them), so 4.6400 is in WQ and Q on every screen."""
    texts, shown = screens(name)
    assert len(texts) == len(shown)
    asked = yaml.safe_load((exercises_dir() / f"{name}.yaml").read_text("utf-8"))["questions"]
    for index, screen in enumerate(texts):
        for later, question in zip(shown[index + 1 :], asked[index + 1 :], strict=True):
            where = screen
            if name == "it-animal":
                tables = screen.split(f"\n{question['stage']} = ")[1:]
                where = "".join(table.split("\n\n")[0] for table in tables)
            found = re.search(rf"(?<![0-9.]){re.escape(later)}(?![0-9])", where)
            assert found is None, (index, later)


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_no_two_shipped_answers_are_the_same(name: str) -> None:
    values = [round(v, 4) for v in answers(name)]
    assert len(set(values)) == len(values), values


def test_the_shipped_exercises_follow_the_article() -> None:
    row = [3.2, 4.0, 1.0, 6.2, 8.0]  # the article's scores; the closed form of softmax
    exps = [math.exp(x - 8.0) for x in row]
    weights = {
        t: e / sum(exps)
        for t, e in zip(["scores", "walk", "through", "soft", "max"], exps, strict=True)
    }
    asked = yaml.safe_load((exercises_dir() / "softmax-walkthrough.yaml").read_text("utf-8"))
    expected = [weights[q["cell"].split(",")[1]] for q in asked["questions"]]
    assert answers("softmax-walkthrough") == pytest.approx(expected, rel=1e-12)
    it = yaml.safe_load((exercises_dir() / "it-animal.yaml").read_text("utf-8"))
    assert any(q["stage"] == "softmax" and q["cell"] == "it,animal" for q in it["questions"])
    worked = yaml.safe_load((exercises_dir() / "worked-example.yaml").read_text("utf-8"))
    assert all(q["cell"].startswith("fish,") for q in worked["questions"])


def test_an_exercise_asking_scaled_then_scores_is_refused(tmp_path: Path) -> None:
    (tmp_path / "row.yaml").write_text(
        (exercises_dir() / "models" / "article-row.yaml").read_text("utf-8"), "utf-8"
    )
    path = tmp_path / "ex.yaml"  # d_k = 1: scaled copies scores, cell for cell
    path.write_text(
        "model: {file: row.yaml}\nquestions:\n"
        "  - {stage: scaled, cell: 'max,soft'}\n  - {stage: scores, cell: 'max,walk'}\n",
        "utf-8",
    )
    # round 3: a question on an earlier stage than the one before is refused (its
    # screen would show the earlier question's operand); in the trace's order, a later
    # question's cell is on no earlier screen
    result = invoke("quiz", "--exercise", str(path), input="6.2\n4\n")
    assert result.exit_code == 2
    assert "questions[1].stage: scores comes before scaled" in result.stderr


# 2. The operands the cell needs, whatever the token count.


def test_the_output_stage_shows_the_softmax_row_and_the_v_column() -> None:
    result = invoke("quiz", "-s", "it-animal", "--stage", "output")
    screen = result.stdout.split("What is")[0]
    assert "What is output[was, d2]?" in result.stdout
    v_table = screen.split("V = X · WV")[1].split("scores = ")[0]
    for token in ("The", "animal", "street", "it", "was", "tired", "."):
        assert re.search(rf"^{re.escape(token)}\s+\S", v_table, re.MULTILINE), token
    weights = screen.split("softmax = ")[1].split("output = ")[0]
    headers = " ".join(line for line in weights.splitlines() if not line.startswith("was"))
    for token in ("The", "animal", "street", "tired", "."):
        assert token in headers.split(), token
    computed = stages("attntrace/samples/it-animal.yaml", IT_ANIMAL)["softmax"][8]
    for value in computed:
        assert f"{value:.4f}" in weights


def test_the_scores_stage_shows_the_query_row_and_the_key_row() -> None:
    result = invoke("quiz", "-s", "it-animal", "--stage", "scores", "--cell", "it,tired")
    screen = result.stdout.split("What is")[0]
    q = screen.split("Q = X · WQ")[1].split("WK (")[0]
    k = screen.split("K = X · WK")[1].split("WV (")[0]
    computed = stages("attntrace/samples/it-animal.yaml", IT_ANIMAL)
    assert re.search(r"^it\s+" + r"\s+".join(f"{v:.4f}" for v in computed["Q"][7]), q, re.M)
    assert re.search(r"^tired\s+" + r"\s+".join(f"{v:.4f}" for v in computed["K"][9]), k, re.M)


# 3. The screen fits its width.


@pytest.mark.parametrize("cell", ["was,tired", "the#0,.", "it,street"])
def test_every_table_fits_a_narrow_width(cell: str) -> None:
    for stage in ("scores", "softmax", "output"):
        if stage == "output":
            cell = cell.split(",")[0] + ",d2"
        result = invoke("quiz", "-s", "it-animal", "--stage", stage, "--cell", cell, columns=50)
        screen = result.stdout.split("What is")[0]
        assert "?" in screen
        assert max(len(line) for line in screen.splitlines()) <= 50, screen


def wide_model(tmp_path: Path) -> Path:
    """Three tokens of 40 dimensions, numbers of up to five digits: a table too wide."""
    rng = random.Random(1)
    d = 40
    embeddings = {t: [round(rng.uniform(-900, 900), 3) for _ in range(d)] for t in "abc"}
    w = [[round(rng.uniform(-9, 9), 2) for _ in range(d)] for _ in range(d)]
    path = tmp_path / "wide.json"
    model = {"sentence": "a b c", "embeddings": embeddings, "weights": {"WQ": w, "WK": w, "WV": w}}
    path.write_text(json.dumps(model), "utf-8")
    return path


@pytest.mark.parametrize("stage", ["Q", "V", "output"])
def test_an_asked_column_cut_by_the_width_still_fits(tmp_path: Path, stage: str) -> None:
    path = wide_model(tmp_path)
    result = invoke("quiz", "-c", str(path), "--stage", stage, "--cell", "b,d25", "--width", "80")
    screen = result.stdout.split("What is")[0]
    assert re.search(r"^b\s.*\?", screen, re.MULTILINE)
    assert max(len(line) for line in screen.splitlines()) <= 80, screen


def test_an_operand_too_wide_is_shown_whole_in_parts(tmp_path: Path) -> None:
    path = wide_model(tmp_path)
    x_b = json.loads(path.read_text("utf-8"))["embeddings"]["b"]
    result = invoke("quiz", "-c", str(path), "--stage", "Q", "--cell", "b,d25", "--width", "80")
    x_table = result.stdout.split("X = embeddings")[1].split("WQ (")[0]
    for value in x_b:
        assert f"{value:.4f}" in x_table
    assert "showing 1 of 3 rows: what the cell needs" in x_table


@pytest.mark.long
@needs_weights
@pytest.mark.parametrize("seed", ["1", "2", "3", "6"])
def test_a_real_models_screen_fits_80_columns(seed: str) -> None:
    result = invoke("quiz", "--model", "smollm2", "--layer", "3", "--seed", seed, "--width", "80")
    assert result.exit_code in (0, 1), result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


# 8. A secret's column width tells nothing.


def test_a_hidden_cells_column_width_does_not_depend_on_its_value() -> None:
    def table(fish: str) -> list[str]:
        args = ["-s", "cat-eats-fish", "--set", f"embeddings.fish={fish}"]
        result = invoke("quiz", *args, "--stage", "scores", "--cell", "fish,fish")
        return result.stdout.split("What is")[0].split("scores = Q · Kᵀ")[1].splitlines()[1:6]

    # 12500 and 6100 hidden; every other cell as wide in both (200 / 160, 350 / 230)
    big, small = table("[100,50]"), table("[60,50]")
    assert [len(line) for line in big] == [len(line) for line in small]
    assert big[0].rstrip().endswith("fish")
    assert big[4].rstrip().endswith("?")


# 4. A model file stays in the exercise's folder; its content is never printed.


@pytest.mark.parametrize("where", ["absolute", "escaping"])
def test_a_model_file_outside_the_exercise_folder_is_refused(tmp_path: Path, where: str) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:SECRET-CONTENT\n", "utf-8")
    folder = tmp_path / "course"
    folder.mkdir()
    named = str(secret) if where == "absolute" else "../secret.txt"
    path = folder / "ex.yaml"
    path.write_text(f"model: {{file: '{named}'}}\nquestions: [{{stage: Q, cell: '0,0'}}]\n")
    line = one_line_error(invoke("quiz", "--exercise", str(path)), "model.file")
    assert "SECRET" not in line
    assert "root:x" not in line


def test_a_symlink_out_of_the_exercise_folder_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text("root:x:0:0:SECRET-CONTENT\n", "utf-8")
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "model.yaml").symlink_to(secret)
    path = folder / "ex.yaml"
    path.write_text("model: {file: model.yaml}\nquestions: [{stage: Q, cell: '0,0'}]\n")
    line = one_line_error(invoke("quiz", "--exercise", str(path)), "model.file", "outside")
    assert "SECRET" not in line


def test_a_file_that_is_no_model_file_is_named_without_its_content(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("root:x:0:0:SECRET-CONTENT\n", "utf-8")
    path = tmp_path / "ex.yaml"
    path.write_text("model: {file: notes.txt}\nquestions: [{stage: Q, cell: '0,0'}]\n")
    line = one_line_error(invoke("quiz", "--exercise", str(path)), "model.file", "not a model file")
    assert "SECRET" not in line
    assert "root:x" not in line


def test_a_model_file_in_a_subfolder_is_read(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "row.yaml").write_text(
        (exercises_dir() / "models" / "article-row.yaml").read_text("utf-8"), "utf-8"
    )
    path = tmp_path / "ex.yaml"
    path.write_text("model: {file: models/row.yaml}\nquestions: [{stage: scaled, cell: 'max,0'}]\n")
    assert invoke("quiz", "--exercise", str(path), input="3.2\n").exit_code == 0


def test_the_schema_refuses_what_attntrace_refuses() -> None:
    validator = jsonschema.Draft202012Validator(schema("exercise-v1.schema.json"))
    question = [{"stage": "Q", "cell": "0,0"}]
    assert validator.is_valid({"model": {"file": "models/row.yaml"}, "questions": question})
    assert not validator.is_valid({"model": {"file": "/etc/passwd"}, "questions": question})
    long = {"model": {"sample": "cat-eats-fish"}, "questions": question, "title": "x" * 201}
    assert not validator.is_valid(long)


# 5. Mistakes name their field and what was found.

FIELDS = [
    (
        "model: {sample: cat-eats-fish}\nquestions: [{stage: scores, cell: 'fish,cat', head: 1}]\n",
        ["questions[0].head", "1"],
    ),
    (
        "model: {sample: cat-eats-fish, sentence: dog eats fish}\n"
        "questions: [{stage: Q, cell: '0,0'}]\n",
        ["model.sentence", "dog"],
    ),
    (
        "model: {sample: cat-eats-fish}\nquestions: [{stage: Q, cell: [1.5, 0]}]\n",
        ["questions[0].cell[0]", "1.5"],
    ),
    (
        "model: {sample: cat-eats-fish}\nquestions: [{stage: Q, cell: [true, 0]}]\n",
        ["questions[0].cell[0]", "true"],
    ),
    (
        "model: {sample: cat-eats-fish}\nquestions: [{stage: Q, cell: [0, [1]]}]\n",
        ["questions[0].cell[1]"],
    ),
]


@pytest.mark.parametrize(("text", "words"), FIELDS)
def test_a_mistake_names_its_field(tmp_path: Path, text: str, words: list[str]) -> None:
    path = tmp_path / "ex.yaml"
    path.write_text(text, "utf-8")
    one_line_error(invoke("quiz", "--exercise", str(path)), str(path), *words)


# 6. Size caps.


def test_an_exercise_file_over_1_mib_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("description: '" + "x" * (4 << 20) + "'\nmodel: {sample: cat-eats-fish}\n")
    started = time.monotonic()
    line = one_line_error(invoke("quiz", "--exercise", str(path)), "1 MiB")
    assert time.monotonic() - started < 1.0
    assert len(line) < 300


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("title", "title: '{long}'\n"),
        ("description", "description: '{long}'\n"),
        ("questions[0].hints[0]", ""),
    ],
)
def test_long_texts_are_refused_with_their_cap(tmp_path: Path, field: str, text: str) -> None:
    long = "x" * 20_000
    hints = f", hints: ['{long}']" if "hints" in field else ""
    path = tmp_path / "ex.yaml"
    path.write_text(
        text.format(long=long)
        + f"model: {{sample: cat-eats-fish}}\nquestions: [{{stage: Q, cell: '0,0'{hints}}}]\n"
    )
    line = one_line_error(invoke("quiz", "--exercise", str(path)), field, "characters")
    assert long not in line


# 7. An over-long answer line.


def test_an_over_long_answer_line_says_so_in_the_quizs_words() -> None:
    fish = ["-s", "cat-eats-fish", "--stage", "softmax", "--cell", "fish,fish"]
    result = invoke("quiz", *fish, input="0." + "9" * 5000 + "\n")
    assert result.exit_code == 2
    assert "an answer line longer than 4,096 characters" in result.stderr
    assert "key" not in result.stderr
    assert "Traceback" not in result.output


# 9. Minor wordings.


def test_a_repeated_token_is_refused_with_its_choices() -> None:
    result = invoke("quiz", "-s", "causal", "--stage", "scores", "--cell", "the,cat")
    one_line_error(result, "--cell row", "the#0", "the#4")


def test_a_bad_dimension_says_a_dimension() -> None:
    result = invoke("quiz", "-s", "cat-eats-fish", "--stage", "Q", "--cell", "fish,d7")
    line = one_line_error(result, "--cell column", "a dimension", "d0", "d1")
    assert "a token of the sentence" not in line


def test_a_model_file_given_as_an_exercise_says_use_config() -> None:
    sample = str(ROOT / "attntrace/samples/cat-eats-fish.yaml")
    one_line_error(invoke("quiz", "--exercise", sample), "model file", "--config")


def test_a_cut_table_names_no_flag_the_quiz_lacks() -> None:
    """The quiz keeps the rows a question needs and has no --rows or --max-rows: a cut
    table says so in the quiz's words, not by naming run's flags."""
    result = invoke("quiz", "-s", "it-animal", "--stage", "output", "--width", "80", input="")
    notes = [line for line in result.stdout.splitlines() if line.startswith("showing ")]
    assert notes, result.stdout
    assert "showing 1 of 11 rows (the rows the question needs)" in notes
    assert not [line for line in notes if "--rows" in line or "--max-rows" in line]
