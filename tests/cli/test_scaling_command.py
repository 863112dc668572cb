"""`attntrace scaling` on the command line: the view, the JSON and its schema, refusals."""

from __future__ import annotations

import json
import math

import jsonschema
import pytest
from helpers import invoke, schema

SMALL = ("--samples", "200", "--max-dk", "256")


def test_the_view_shows_the_chart_the_tables_and_the_worked_example() -> None:
    result = invoke("scaling", *SMALL)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    out = result.stdout
    assert out.startswith("Why ÷√d_k")
    for part in (
        "largest weight",
        "gradient ‖J‖",
        "unscaled: q·k",
        "divided by √d_k: q·k / √d_k",
        "The article's example: d_k = 512",
    ):
        assert part in out, part
    assert [line.split()[0] for line in out.splitlines() if " q·k " in line and "█" in line] == [
        "2",
        "4",
        "8",
        "16",
        "32",
        "64",
        "128",
        "256",
    ]
    assert max(len(line) for line in out.splitlines()) <= 80
    wide = invoke("scaling", *SMALL, columns=160).stdout
    assert max(len(line) for line in wide.splitlines()) <= 160
    assert wide.count("█") > out.count("█")  # the bars take the width there is


ARTICLE = "How Transformers Actually Compute Attention — A Step-by-Step Breakdown"


@pytest.mark.parametrize(
    "args",
    [("scaling", *SMALL), ("scaling", "--help"), ("samples", "cat-eats-fish")],
    ids=["scaling", "scaling-help", "sample"],
)
def test_the_article_is_named_where_it_is_cited(args: tuple[str, ...]) -> None:
    """Where "the article" is cited, its author and title too, so a reader can find it
    (issue 30). Wrapped lines and the help's box are joined before looking."""
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    words = " ".join(result.stdout.replace("│", " ").split())
    assert f'Swaroop\'s "{ARTICLE}"' in words or f'Swaroop, "{ARTICLE}"' in words


def test_json_validates_and_says_every_figure() -> None:
    result = invoke("scaling", "--json", *SMALL, "--keys", "4", "--seed", "3")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    shipped = schema("scaling-v1.schema.json")
    jsonschema.Draft202012Validator.check_schema(shipped)
    jsonschema.validate(document, shipped, cls=jsonschema.Draft202012Validator)
    assert document["settings"] == {
        "seed": 3,
        "keys": 4,
        "samples": 200,
        "max_dk": 256,
        "one_hot": 0.99,
    }
    assert [level["d_k"] for level in document["levels"]] == [2**p for p in range(1, 9)]
    worked = document["worked"]
    assert worked["unscaled"]["scores"] == [180, 210, 95]
    assert worked["unscaled"]["weights"][0] == pytest.approx(math.exp(-30), rel=1e-12, abs=0)
    assert worked["scale"] == pytest.approx(math.sqrt(512), rel=1e-12, abs=0)
    assert document["uniform"]["entropy"] == pytest.approx(math.log(4), rel=1e-12, abs=0)


def test_the_same_seed_gives_the_same_document() -> None:
    first = invoke("scaling", "--json", *SMALL, "--seed", "5").stdout
    assert first == invoke("scaling", "--json", *SMALL, "--seed", "5").stdout
    assert first != invoke("scaling", "--json", *SMALL, "--seed", "6").stdout


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--keys", "1"], "--keys: expected a whole number ≥ 2, got 1"),
        (["--keys", "5000"], "--keys: expected at most 4,096, got 5,000"),
        (["--samples", "9"], "--samples: expected a whole number ≥ 10, got 9"),
        (["--samples", "200000"], "--samples: expected at most 100,000, got 200,000"),
        (["--max-dk", "1000"], "--max-dk: expected a power of two (2, 4, …, 16,384), got 1,000"),
        (["--max-dk", "0"], "--max-dk: expected a whole number ≥ 2, got 0"),
        (["--seed", "-1"], "--seed: expected a whole number ≥ 0, got -1"),
        (
            ["--max-dk", "16384"],
            "--samples × --keys × --max-dk: expected at most 134,217,728 "
            "(the normals drawn for the largest d_k; lower --samples, --keys or --max-dk), got "
            "2,000 × 8 × 16,384 = 262,144,000",
        ),
    ],
)
def test_every_refusal_is_one_line_and_exit_2(flags: list[str], line: str) -> None:
    result = invoke("scaling", *flags)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"attntrace: error: {line}"), result.stderr
