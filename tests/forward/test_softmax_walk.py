"""`attntrace softmax`: the article's walkthrough, and why the max is subtracted."""

from __future__ import annotations

import json
import math
from importlib import resources
from typing import Any

import jsonschema
import pytest
from helpers import invoke
from tolerances import FLOAT64_APPROX

from attntrace.forward.softmax_walk import walk

ARTICLE = ["3.2", "4.0", "1.0", "6.2", "8.0"]


def test_the_articles_numbers() -> None:
    """exp = 24.53, 54.60, 2.72, 492.75, 2980.96; sum 3555.56; 0.69% ... 83.84%."""
    out = invoke("softmax", *ARTICLE).stdout
    rows = [line.removeprefix("◀").split() for line in out.splitlines()[3:8]]
    assert [row[0] for row in rows] == ["1", "2", "3", "4", "5"]
    assert [row[2] for row in rows] == ["24.53", "54.60", "2.72", "492.75", "2980.96"]
    assert [row[6] for row in rows] == ["0.69%", "1.54%", "0.08%", "13.86%", "83.84%"]
    assert out.splitlines()[7].startswith("◀ 5")  # the largest weight is marked
    total = next(line for line in out.splitlines() if line.startswith("sum"))
    assert total.split()[1] == "3555.56"


def test_matches_the_closed_form() -> None:
    values = [3.2, 4.0, 1.0, 6.2, 8.0]
    steps = walk(values)
    total = math.fsum(math.exp(v) for v in values)
    for i, v in enumerate(values):
        assert steps.weights[i] == pytest.approx(math.exp(v) / total, **FLOAT64_APPROX)
        assert steps.naive_exp[i] == pytest.approx(math.exp(v), **FLOAT64_APPROX)
        assert steps.exp_shifted[i] == pytest.approx(math.exp(v - 8.0), **FLOAT64_APPROX)
    assert steps.winner == 4
    assert not steps.overflows


def test_overflow_shows_the_naive_formula_failing_beside_the_stable_one() -> None:
    out = invoke("softmax", "800", "799", "-1.5").stdout
    assert "inf" in out
    assert "exp(800.00) overflows float64" in " ".join(out.split())
    steps = walk([800.0, 799.0, -1.5])
    assert steps.overflows
    assert math.isnan(steps.naive_weights[0])
    assert steps.weights[0] == pytest.approx(math.e / (1 + math.e + math.exp(-801.5)))
    document = valid_walk(invoke("softmax", "800", "799", "--json").stdout)
    assert document["naive"] == {
        "exp": [None, None],
        "sum": None,
        "weights": [None, None],
        "overflows": True,
        "underflows": False,
    }
    assert document["weights"][0] == pytest.approx(math.e / (1 + math.e))


def valid_walk(text: str) -> dict[str, Any]:
    """Parse softmax --json output and validate it against the shipped schema."""
    schema_path = resources.files("attntrace") / "schema" / "softmax-v1.schema.json"
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    document: dict[str, Any] = json.loads(text)
    jsonschema.validate(document, schema, cls=jsonschema.Draft202012Validator)
    return document


def test_a_sum_that_overflows_where_no_exp_does_is_explained() -> None:
    """exp(709.78) ≈ 1.79e308 fits in float64 (largest ≈ 1.80e308); twice it does not."""
    assert math.isfinite(math.exp(709.78))
    assert not math.isfinite(2 * math.exp(709.78))
    result = invoke("softmax", "709.78", "709.78")
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "Each exp(x) fits in float64, but their sum overflows it" in out
    assert "exp(x) / inf = 0 for every share" in out
    steps = walk([709.78, 709.78])
    assert steps.overflows
    assert steps.naive_weights == (0.0, 0.0)
    document = valid_walk(invoke("softmax", "709.78", "709.78", "--json").stdout)
    assert document["naive"]["sum"] is None
    assert document["naive"]["weights"] == [0.0, 0.0]
    assert document["weights"] == [0.5, 0.5]


def test_underflow_is_explained_too() -> None:
    out = " ".join(invoke("softmax", "--", "-800", "-801").stdout.split())
    assert "the naive formula gives 0 / 0 = nan" in out
    document = valid_walk(invoke("softmax", "--json", "--", "-800", "-801").stdout)
    assert document["naive"]["underflows"] is True
    assert document["naive"]["weights"] == [None, None]
    assert document["weights"][0] == pytest.approx(math.e / (1 + math.e))


def test_a_range_beyond_float64_is_exit_2() -> None:
    result = invoke("softmax", "--", "1e308", "-1e308")
    assert result.exit_code == 2
    assert result.stderr == (
        "attntrace: error: expected values whose range (max − min) fits in float64, "
        "got max 1e+308 and min -1e+308\n"
    )


def test_json_gives_the_numbers() -> None:
    result = invoke("softmax", *ARTICLE, "--json")
    assert result.exit_code == 0
    document = valid_walk(result.stdout)
    assert document["schema"] == "attntrace/softmax/v1"
    assert document["values"] == [3.2, 4.0, 1.0, 6.2, 8.0]
    assert [round(p, 2) for p in document["percent"]] == [0.69, 1.54, 0.08, 13.86, 83.84]
    assert round(document["naive"]["sum"], 2) == 3555.56
    assert document["winner"] == 4


def test_negative_numbers_are_values_not_options() -> None:
    result = invoke("softmax", "-1", "-2.5", "3e-1", "--json")
    assert result.exit_code == 0, result.output
    assert valid_walk(result.stdout)["values"] == [-1.0, -2.5, 0.3]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["1", "abc"], "value 2: expected a number, got 'abc'"),
        (["1", "inf"], "value 2: expected a finite number, got 'inf'"),
        (["nan"], "value 1: expected a finite number, got 'nan'"),
        (["1e400"], "value 1: expected a finite number, got '1e400'"),
    ],
)
def test_bad_values_are_exit_2(args: list[str], message: str) -> None:
    result = invoke("softmax", *args)
    assert result.exit_code == 2
    assert result.stderr == f"attntrace: error: {message}\n"
    assert result.stdout == ""


def test_no_values_is_a_usage_error() -> None:
    assert invoke("softmax").exit_code == 2


@pytest.mark.parametrize("columns", [40, 55, 80])
def test_a_narrow_terminal_splits_the_table_never_a_number(columns: int) -> None:
    """Every number of the walkthrough appears whole on one line, at any width; below
    the table's natural width its columns are drawn in parts under one another."""
    values = [3.2, 4.0, 1.0, 6.2, 8.0]
    out = invoke("softmax", *map(str, values), columns=columns).stdout
    assert max(len(line) for line in out.splitlines()) <= columns
    cells = {cell for line in out.splitlines() for cell in line.split()}
    exps = [math.exp(v) for v in values]
    shifted = [math.exp(v - 8.0) for v in values]
    for number in (*exps, *shifted, sum(exps), sum(shifted)):
        assert f"{number:.2f}" in cells or f"{number:.4f}" in cells, number
    for share in (e / sum(exps) for e in exps):
        assert f"{share:.4f}" in cells
        assert f"{100 * share:.2f}%" in cells
    parts = sum(line.startswith("─") for line in out.splitlines())  # a rule per part
    assert parts == (1 if columns >= 80 else 2)


def test_the_focus_softmax_table_splits_at_a_narrow_width() -> None:
    out = invoke("run", "--sample", "it-animal", "--focus", "it", columns=50).stdout
    section = out.split("softmax = exp(")[1].split("the row max")[0]
    assert max(len(line) for line in section.splitlines()) <= 50
    assert sum(line.startswith("─") for line in section.splitlines()) == 2  # two parts
    rows = [line.split() for line in section.splitlines() if line.startswith("animal")]
    assert rows == [
        ["animal", "◀", "4.6400", "0.0000", "1.000000"],
        ["animal", "◀", "0.6486", "64.86%"],
    ]


@pytest.mark.parametrize("word", ["1_000", " 1", "1 ", "\u0661", "0x10", "1e"])
def test_a_value_is_a_number_as_a_model_file_writes_one(word: str) -> None:
    """Python's float() takes 1_000, ' 1' and Arabic-Indic digits; a model file does not,
    and neither does softmax."""
    result = invoke("softmax", "--", "2", word)
    assert result.exit_code == 2
    assert result.stderr.startswith("attntrace: error: value 2: expected a number, got '")


def test_an_option_after_the_values_end_is_named_as_no_number() -> None:
    result = invoke("softmax", "--", "-800", "-900", "--json")
    assert result.stderr == (
        "attntrace: error: '--json' is no number and no option of softmax (V1 V2 ..., "
        "--json, --precision N, --dtype D, --online; after --, every word is a value)\n"
    )
