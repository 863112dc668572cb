"""`attntrace softmax --dtype D` and `--online` on the command line: exit codes, the
one-line refusals, the overflow line's numbers, the JSON against the shipped schema,
the online pass against a closed form written here, and float64 left as it was."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import jsonschema
import pytest
from helpers import invoke, one_line_error, schema
from tolerances import FLOAT64_APPROX

ARTICLE = ["3.2", "4.0", "1.0", "6.2", "8.0"]


def valid(text: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(text)
    jsonschema.validate(
        document, schema("softmax-v1.schema.json"), cls=jsonschema.Draft202012Validator
    )
    return document


def flat(text: str) -> str:
    return " ".join(text.split())


def test_float16_overflow_is_explained_in_numbers() -> None:
    result = invoke("softmax", "--dtype", "float16", "12", "1", "3")
    assert result.exit_code == 0, result.stderr
    out = flat(result.stdout)
    assert "in float16: every value and every step rounded to float16" in out
    assert (
        "exp(12.00) = 162,755 > 65,504, the largest float16: without subtracting the "
        "max this row overflows"
    ) in out
    assert "the stable columns stay finite" in out
    first = next(line for line in result.stdout.splitlines() if line.startswith("◀ 1"))
    assert first.split()[3] == "inf"  # the naive exp(12) in float16


def test_the_spellings_are_the_same_dtype() -> None:
    assert (
        invoke("softmax", "--dtype", "fp16", *ARTICLE).stdout
        == invoke("softmax", "--dtype", "float16", *ARTICLE).stdout
    )


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_wider_dtypes_overflow_past_88(dtype: str) -> None:
    result = invoke("softmax", "--dtype", dtype, "89", "1")
    assert result.exit_code == 0
    out = flat(result.stdout)
    assert f"the largest {dtype}: without subtracting the max this row overflows" in out
    assert "row overflows" not in flat(invoke("softmax", "--dtype", dtype, "88", "1").stdout)


@pytest.mark.parametrize(
    ("dtype", "values"),
    [("fp16", ["-70000", "-80000"]), ("fp16", ["-1e308"]), ("fp32", ["-3.5e38"])],
)
def test_every_score_below_the_lowest_is_a_nan_row_not_a_traceback(
    dtype: str, values: list[str]
) -> None:
    """Every score rounds to −inf: −inf − (−inf) is NaN both ways (the fresh-eyes crash:
    the walk redid x − max from a written −inf)."""
    result = invoke("softmax", "--dtype", dtype, "--", *values)
    assert result.exit_code == 0, result.stderr
    out = flat(result.stdout)
    assert "NaN" in out
    assert "−inf − (−inf) = NaN" in out


def test_a_score_past_float16s_largest_is_explained_not_refused() -> None:
    result = invoke("softmax", "--dtype", "float16", "70000", "1")
    assert result.exit_code == 0
    out = flat(result.stdout)
    assert "70,000 is past 65,504, the largest float16: it rounds to inf as it is read" in out
    assert "inf − inf = NaN" in out
    document = valid(invoke("softmax", "--dtype", "float16", "--json", "70000", "1").stdout)
    assert document["values"] == ["inf", 1.0]
    assert document["shifted"] == ["nan", None]
    assert document["weights"] == ["nan", "nan"]
    assert document["winner"] is None
    assert document["overflow"] == {
        "kind": "input",
        "index": 0,
        "value": 70000.0,
        "exact": 70000.0,
        "largest": 65504.0,
    }


def test_json_carries_the_dtype_and_float16s_values() -> None:
    document = valid(invoke("softmax", "--dtype", "fp16", "--json", "12", "0.1").stdout)
    assert document["dtype"] == "float16"
    assert document["values"] == [12.0, 0.0999755859375]  # float16's 0.1, exactly
    assert document["naive"]["exp"][0] is None
    assert document["naive"]["sum"] is None
    assert document["naive"]["overflows"] is True
    assert document["overflow"]["kind"] == "exp"
    assert document["overflow"]["exact"] == pytest.approx(math.exp(12), **FLOAT64_APPROX)
    assert all(isinstance(w, float) for w in document["weights"])
    clean = valid(invoke("softmax", "--dtype", "fp16", "--json", *ARTICLE).stdout)
    assert clean["overflow"] is None


def test_float64_is_unchanged_by_the_new_options() -> None:
    for args in (ARTICLE, ["800", "799", "-1.5"], ["--json", *ARTICLE], ["--json", "800", "1"]):
        plain = invoke("softmax", *args)
        named = invoke("softmax", "--dtype", "float64", *args)
        assert plain.exit_code == named.exit_code == 0
        assert named.stdout == plain.stdout
    document = valid(invoke("softmax", "--json", *ARTICLE).stdout)
    assert "dtype" not in document
    assert "overflow" not in document
    assert "online" not in document


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--dtype", "float8", "1"), "dtype: expected one of float64"),
        (("--online", "--dtype", "fp16", "1"), "--online"),
        (("--online", "inf", "1"), "finite"),
        (("--online", "--", "1", "nan"), "finite"),
        (("--dtype", "fp16", "--", "1", "abc"), "expected a number"),
    ],
)
def test_refusals_are_one_line_exit_2(args: tuple[str, ...], words: str) -> None:
    assert words in one_line_error(invoke("softmax", *args))


def closed_form(values: list[float]) -> list[float]:
    top = max(values)
    terms = [math.exp(v - top) for v in values]
    total = math.fsum(terms)
    return [t / total for t in terms]


def test_online_shows_each_step_and_agrees() -> None:
    result = invoke("softmax", "--online", *ARTICLE)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    rows = [line.split() for line in lines if line[:1].isdigit()][:5]
    assert [row[4] for row in rows] == ["3.20", "4.00", "4.00", "6.20", "8.00"]  # m new
    assert rows[0][2] == "−∞"
    assert rows[2][5] == "1.0000"  # 1.0 leaves the max at 4.0: the factor is exactly 1
    assert rows[1][5] == f"{math.exp(3.2 - 4.0):.4f}"
    assert "online and two-pass agree: max |Δ| ≤ 1e-15" in result.stdout
    weights = [line.split() for line in lines if line[:1].isdigit()][5:]
    want = closed_form([float(v) for v in ARTICLE])
    assert [row[2] for row in weights] == [f"{w:.4f}" for w in want]
    assert [row[3] for row in weights] == [f"{w:.4f}" for w in want]


def test_online_json_is_the_documented_member() -> None:
    document = valid(invoke("softmax", "--online", "--json", *ARTICLE).stdout)
    assert set(document) == {"schema", "values", "online"}
    online = document["online"]
    assert online["steps"][0]["m_old"] is None
    assert online["steps"][0]["rescale"] == 0.0  # exp(−∞) · d₀ = 0
    assert [s["m_new"] for s in online["steps"]] == [3.2, 4.0, 4.0, 6.2, 8.0]
    assert online["steps"][2]["rescale"] == 1.0
    assert online["max"] == 8.0
    total = math.fsum(math.exp(float(v) - 8.0) for v in ARTICLE)
    assert online["sum"] == pytest.approx(total, **FLOAT64_APPROX)
    for got, two, want in zip(
        online["weights"],
        online["two_pass_weights"],
        closed_form([float(v) for v in ARTICLE]),
        strict=True,
    ):
        assert got == pytest.approx(want, **FLOAT64_APPROX)
        assert two == pytest.approx(want, **FLOAT64_APPROX)
    assert 0.0 <= online["max_difference"] <= 1e-15


@pytest.mark.parametrize(
    "values",
    [
        ["7"],
        ["2", "2", "2"],
        ["-3", "-1.5", "-7"],
        ["9", "1", "2", "2"],
        ["1e300", "-1e300", "5"],
        ["1e308", "-1e308"],
    ],
    ids=["one", "equal", "negative", "max-first", "huge", "range-past-float64"],
)
def test_online_edge_rows(values: list[str]) -> None:
    document = valid(invoke("softmax", "--online", "--json", "--", *values).stdout)
    steps = document["online"]["steps"]
    row = [float(v) for v in values]
    top = max(row)
    assert document["online"]["max"] == top
    assert all(math.isfinite(s["d_new"]) and s["d_new"] >= 1.0 for s in steps)
    if row[0] == top:  # the max came first: the running max never moves again
        assert [s["rescale"] for s in steps[1:]] == [1.0] * (len(steps) - 1)
    terms = [0.0 if v - top == -math.inf else math.exp(v - top) for v in row]
    for got, term in zip(document["online"]["weights"], terms, strict=True):
        assert got == pytest.approx(term / math.fsum(terms), **FLOAT64_APPROX)
    assert invoke("softmax", "--online", "--", *values).exit_code == 0


def test_online_takes_dtype_float64_which_is_its_own() -> None:
    assert invoke("softmax", "--online", "--dtype", "float64", "1", "2").exit_code == 0


def test_ten_thousand_values_online_is_one_line_a_value() -> None:
    """As the walkthrough does, every value is shown: the output grows with the row, no
    more (the step table may be drawn in two parts at 80 columns)."""
    values = [str(i % 97 - 40) for i in range(10_000)]
    document = valid(invoke("softmax", "--online", "--json", "--", *values).stdout)
    assert len(document["online"]["steps"]) == 10_000
    assert document["online"]["max_difference"] <= 1e-12


def test_shares_that_do_not_sum_to_one_say_why() -> None:
    """`softmax --dtype bfloat16` showed a sum of shares of 99.60% without a word."""
    row = ["3.2", "4.0", "1.0", "6.2", "5"]
    result = invoke("softmax", "--dtype", "bfloat16", *row)
    assert result.exit_code == 0, result.stderr
    document = valid(invoke("softmax", "--dtype", "bfloat16", "--json", *row).stdout)
    weights = document["weights"]
    total = sum((Fraction(w) for w in weights), Fraction(0))
    assert total != 1  # each share rounded to bfloat16 on its own
    out = flat(result.stdout)
    said = out.split("The shares sum to ")[1]
    written = Fraction(said.split()[0])
    assert abs(written - total) <= Fraction(1, 10**4) / 2, said
    assert "not 1: each share is rounded to bfloat16 on its own" in said
    # float64's shares sum to 1 within its rounding: nothing to say
    assert "The shares sum to" not in flat(invoke("softmax", *ARTICLE).stdout)


def test_a_sum_of_shares_close_to_one_is_written_apart_from_one() -> None:
    """`softmax --dtype bfloat16 1 2 3 20` said "the shares sum to 1.0000 (100.00%),
    not 1": the figure must take the places that tell it from 1."""
    row = ["1", "2", "3", "20"]
    document = valid(invoke("softmax", "--dtype", "bfloat16", "--json", *row).stdout)
    total = sum((Fraction(w) for w in document["weights"]), Fraction(0))
    assert total != 1
    said = flat(invoke("softmax", "--dtype", "bfloat16", *row).stdout)
    said = said.split("The shares sum to ")[1]
    figure, percentage = said.split()[:2]
    assert Fraction(figure) != 1, said
    assert Fraction(percentage.strip("(%),")) != 100, said
    assert abs(Fraction(figure) - total) <= abs(total - 1), said
