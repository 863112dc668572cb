"""`run --dtype` on the command line: the refusals (one line, exit 2), the JSON's shape
validated by the schema, render reading it back to the same view, the display flags on
a low-precision trace, and float64's output left byte for byte as it was."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from helpers import invoke, load_valid_trace, one_line_error, schema

ROOT = Path(__file__).resolve().parents[2]
OVERFLOW = str(ROOT / "docs" / "examples" / "float16-overflow.yaml")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--softmax-dtype", "float16"], ["--softmax-dtype", "--dtype"]),
        (["--accumulate", "dtype"], ["--accumulate", "--dtype"]),
        (["--dtype", "float64", "--accumulate", "dtype"], ["--accumulate"]),
        (["--dtype", "float16", "--focus", "cat"], ["--focus", "--dtype"]),
        (["--dtype", "float8"], ["--dtype", "float8"]),
        (["--dtype", "float16", "--softmax-dtype", "bfloat16"], ["--softmax-dtype", "bfloat16"]),
        (["--dtype", "float16", "--accumulate", "float64"], ["--accumulate", "float64"]),
    ],
)
def test_refused(args: list[str], words: list[str]) -> None:
    one_line_error(invoke("run", *args), *words)


def test_the_overflow_is_shown_not_refused() -> None:
    result = invoke("run", "-c", OVERFLOW, "--dtype", "float16", "--max-cols", "0", columns=160)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "float16: values rounded to float16; matrix products accumulated in float32" in out
    # under scores: the maximum counts its 3 infinite cells (it read `max |Δ| 0 … 3 inf`)
    assert "float16 · max |Δ| inf: 3 cells inf · the rest max |Δ| 0 · max rel 0" in out
    assert "scores: Q · Kᵀ = 70,400 at row 'cat', column 'fish' is past 65,504" in out
    assert "NaN" in out
    assert " inf" in out
    # the explanation sits under the scores' table, before scaled's title
    assert out.index("70,400") < out.index("scaled = scores / √d_k")


def test_json_validates_and_renders_back(tmp_path: Path) -> None:
    result = invoke("run", "-c", OVERFLOW, "--dtype", "fp16", "--json")
    assert result.exit_code == 0, result.stderr
    document = load_valid_trace(result.stdout)
    precision = document["precision"]
    assert precision["dtype"] == "float16"
    assert precision["softmax_dtype"] == "float32"
    assert precision["accumulate"] == "float32"
    assert precision["first_overflow"]["stage"] == "scores"
    stages = {s["name"]: s for s in document["stages"]}
    assert stages["scores"]["data"][1][4] == "inf"
    assert stages["softmax"]["data"][1] == ["nan"] * 5
    assert stages["scores"]["error"] == {"max_abs": 0.0, "max_rel": 0.0, "inf": 3, "nan": 0}
    assert stages["softmax"]["error"]["nan"] == 10
    saved = tmp_path / "low.json"
    saved.write_text(result.stdout, encoding="utf-8")
    shown = invoke("render", str(saved), columns=80)
    ran = invoke("run", "-c", OVERFLOW, "--dtype", "fp16", columns=80)
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout == ran.stdout


def test_causal_json_keeps_the_mask_null() -> None:
    result = invoke("run", "--causal", "--dtype", "bfloat16", "--accumulate", "dtype", "--json")
    document = load_valid_trace(result.stdout)
    masked = next(s for s in document["stages"] if s["name"] == "masked")
    assert masked["data"][0][1] is None
    assert document["precision"]["first_overflow"] is None
    assert invoke("render", "-", input=result.stdout).exit_code == 0


@pytest.mark.parametrize(
    "flags",
    [["--map"], ["--overview"], ["--max-rows", "2"], ["--max-cols", "1"], ["--max-heads", "1"]],
)
def test_display_flags_work_on_a_low_trace(flags: list[str]) -> None:
    result = invoke("run", "-c", OVERFLOW, "--dtype", "float16", *flags)
    assert result.exit_code == 0, result.stderr
    assert "float16" in result.stdout


def test_step_pages_a_low_trace() -> None:
    result = invoke("run", "-c", OVERFLOW, "--dtype", "float16", "--step", input="\n" * 12)
    assert result.exit_code == 0, result.stderr
    assert "70,400" in result.stdout
    # every stage's screen states the rule (8 stages), as run's header does once
    assert result.stdout.count("float16: values rounded to float16") == 8


def test_export_a_low_trace(tmp_path: Path) -> None:
    target = tmp_path / "low.txt"
    result = invoke("run", "-c", OVERFLOW, "--dtype", "float16", "--export", str(target))
    assert result.exit_code == 0, result.stderr
    assert "70,400" in target.read_text(encoding="utf-8")


def test_float64_is_unchanged() -> None:
    """--dtype float64 is the ordinary run, its JSON without precision or error."""
    for extra in ([], ["--json"]):
        plain, named = invoke("run", *extra), invoke("run", "--dtype", "float64", *extra)
        assert plain.exit_code == named.exit_code == 0
        assert plain.stdout == named.stdout
    document = json.loads(invoke("run", "--json").stdout)
    assert "precision" not in document
    assert all("error" not in stage for stage in document["stages"])


def test_the_schema_allows_inf_and_nan_only_in_a_low_precision_trace() -> None:
    low = json.loads(invoke("run", "-c", OVERFLOW, "--dtype", "float16", "--json").stdout)
    jsonschema.validate(low, schema("trace-v1.schema.json"))
    plain = json.loads(invoke("run", "-c", OVERFLOW, "--json").stdout)
    jsonschema.validate(plain, schema("trace-v1.schema.json"))
    plain["stages"][0]["data"][0][0] = "inf"  # a float64 trace never holds one
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(plain, schema("trace-v1.schema.json"))
    del low["precision"]  # nor a stage error without the precision it is measured in
    for stage in low["stages"]:
        stage["data"] = [[0.0 for _ in row] for row in stage["data"]]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(low, schema("trace-v1.schema.json"))


def test_render_refuses_a_cell_the_dtype_cannot_hold(tmp_path: Path) -> None:
    document = json.loads(invoke("run", "-c", OVERFLOW, "--dtype", "float16", "--json").stdout)
    document["stages"][0]["data"][0][0] = 0.1  # float16 holds 0.0999755859375, not 0.1
    saved = tmp_path / "edited.json"
    saved.write_text(json.dumps(document))
    result = invoke("render", str(saved))
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        "stages[0].data[0][0]: expected a value of float16 (the trace's precision.dtype), got 0.1"
    )


def test_render_refuses_a_weight_the_dtype_cannot_hold(tmp_path: Path) -> None:
    document = json.loads(invoke("run", "-c", OVERFLOW, "--dtype", "float16", "--json").stdout)
    document["weights"][0]["data"][0][0] = 10.01  # float16 holds 10.0078125, not 10.01
    saved = tmp_path / "edited.json"
    saved.write_text(json.dumps(document))
    result = invoke("render", str(saved))
    assert result.exit_code == 2
    assert "weights[0].data[0][0]: expected a value of float16" in result.stderr


def test_render_states_the_rule_of_the_cast_not_the_files_text(tmp_path: Path) -> None:
    """The rule's sentence is rebuilt from the saved dtypes: a file's own text (here
    an escape sequence) never reaches the terminal in its place."""
    document = json.loads(invoke("run", "-c", OVERFLOW, "--dtype", "float16", "--json").stdout)
    document["precision"]["rule"] = "\x1b[2J all exact"
    saved = tmp_path / "edited.json"
    saved.write_text(json.dumps(document))
    result = invoke("render", str(saved))
    assert result.exit_code == 0, result.stderr
    assert "all exact" not in result.stdout
    assert "\x1b" not in result.stdout
    assert "matrix products accumulated in float32" in result.stdout
