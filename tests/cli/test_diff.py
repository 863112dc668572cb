"""`attntrace diff A B`: exit 0 when nothing changed, 1 when something did, 2 on bad input;
the view marks the changed cells (readable without colour), the JSON follows its schema.

A and B are traces saved with `run --json` from a sample and from a copy of its model
file with one weight changed, so where the change shows is known: "it"'s query.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from helpers import invoke, raw_controls, schema
from rich.cells import cell_len
from typer.testing import CliRunner

from attntrace.cli import app
from attntrace.modelfile.parse import parse_document
from attntrace.modelfile.samples import sample_path

CLEAR = "\x1b[2J"
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def model_file(tmp_path: Path, name: str, edit: tuple[str, int, int, float] | None = None) -> Path:
    """Sample ``name`` as a JSON model file, with ``edit`` (matrix, row, column, value)."""
    path = sample_path(name)
    document: dict[str, Any] = copy.deepcopy(
        dict(parse_document(path.read_text(encoding="utf-8"), str(path), is_json=False))
    )
    if edit is not None:
        matrix, row, col, value = edit
        document["weights"] = {k: [list(r) for r in v] for k, v in document["weights"].items()}
        document["weights"][matrix][row][col] = value
    target = tmp_path / f"{name}-{'edited' if edit else 'as-is'}.json"
    target.write_text(json.dumps(document), encoding="utf-8")
    return target


def saved(tmp_path: Path, model: Path, *extra: str) -> Path:
    result = invoke("run", "--config", str(model), "--json", *extra)
    assert result.exit_code == 0, result.output
    path = model.with_suffix(".trace.json")
    path.write_text(result.stdout, encoding="utf-8")
    return path


@pytest.fixture
def traces(tmp_path: Path) -> tuple[Path, Path, Path]:
    """it-animal as it is (twice, traced apart) and with WQ[pronoun][animate] 4.64 → 4."""
    a = saved(tmp_path, model_file(tmp_path, "it-animal"))
    again = tmp_path / "again.json"
    again.write_text(invoke("run", "--sample", "it-animal", "--json").stdout, encoding="utf-8")
    b = saved(tmp_path, model_file(tmp_path, "it-animal", ("WQ", 3, 0, 4.0)))
    return a, again, b


def test_nothing_changed_is_exit_0(traces: tuple[Path, Path, Path]) -> None:
    a, again, _ = traces
    result = invoke("diff", str(a), str(again))
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert "nothing changed" in result.stdout
    assert "*" not in result.stdout


def test_a_change_is_exit_1_and_its_cells_are_marked(traces: tuple[Path, Path, Path]) -> None:
    a, _, b = traces
    result = invoke("diff", str(a), str(b))
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  X "))
    status = {line[2:].split()[0]: line for line in lines[start : start + 8]}
    assert [name for name, line in status.items() if line.startswith("* ")] == [
        "Q",
        "scores",
        "scaled",
        "softmax",
        "output",
    ]
    assert status["X"].split()[1:] == ["same"]
    assert status["K"].split()[1:] == ["same"]
    assert status["Q"].split()[-4:] == ["1", "of", "44", "cells"]
    assert "first change: Q" in lines
    assert "largest at row 'it', column 'd0': A 4.6400, B 4.0000, Δ -0.6400" in result.stdout
    # Q's table: B's values, the one changed cell marked
    table = lines[lines.index("B's values, * where they changed") + 1 :]
    it_row = next(line for line in table if line.startswith("it "))
    assert it_row.split() == ["it", "4.0000*", "3.4700", "2.7700", "0.0000"]
    assert sum(line.count("*") for line in table[: table.index("")]) == 1
    # softmax's Δ: "it"'s row changed in every column shown, no other row
    at = lines.index("Δ = B − A, * where it changed")
    assert "animal" in lines[at + 1].split()  # the largest change is kept in view
    heat = lines[at + 3 :]
    rows = {line.split()[0]: line.split()[1:] for line in heat[:11]}
    assert all(cell.endswith("*") for cell in rows["it"] if cell != "…")
    assert all(set(cells) <= {"·", "…"} for token, cells in rows.items() if token != "it")
    # 11 keys do not fit 80 columns: those shown and those hidden are the 11 that changed
    note = re.fullmatch(
        r"showing (\d+)/11 columns \(most changed first\); (\d+) changed "
        r"cells hidden",
        heat[11],
    )
    assert note is not None, heat[11]
    shown = sum(cell.endswith("*") for cell in rows["it"])
    assert int(note[1]) == shown
    assert shown + int(note[2]) == 11


def test_json_follows_its_schema(traces: tuple[Path, Path, Path]) -> None:
    a, again, b = traces
    validator = schema("diff-v1.schema.json")
    jsonschema.Draft202012Validator.check_schema(validator)
    for other, code in ((again, 0), (b, 1)):
        result = invoke("diff", str(a), str(other), "--json")
        assert result.exit_code == code, result.output
        assert result.stdout.count("\n") == 1
        document = json.loads(result.stdout)
        jsonschema.validate(document, validator, cls=jsonschema.Draft202012Validator)
        assert document["changed"] is bool(code)
    first = document["first_changed"]
    assert (first["name"], first["head"], first["changed_cells"]) == ("Q", 0, 1)
    assert (first["largest"]["row_label"], first["largest"]["column_label"]) == ("it", "d0")
    assert [s["status"] for s in document["stages"]][:3] == ["same", "changed", "same"]
    assert (document["a"]["source"], document["b"]["source"]) == (str(a), str(b))
    assert document["tolerance"] == {"rtol": 1e-9, "atol": 1e-9}


def test_the_schema_refuses_a_document_that_breaks_it(traces: tuple[Path, Path, Path]) -> None:
    a, _, b = traces
    document = json.loads(invoke("diff", str(a), str(b), "--json").stdout)
    document["stages"][0]["status"] = "different"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, schema("diff-v1.schema.json"))


def test_a_masked_cell_and_a_missing_stage_in_json(tmp_path: Path) -> None:
    """--causal against --no-causal: masked in A only, its −∞ cells null in the JSON."""
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    a.write_text(invoke("run", "--sample", "causal", "--json").stdout, encoding="utf-8")
    b.write_text(
        invoke("run", "--sample", "causal", "--no-causal", "--json").stdout, encoding="utf-8"
    )
    result = invoke("diff", str(a), str(b), "--json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    jsonschema.validate(document, schema("diff-v1.schema.json"))
    masked = next(s for s in document["stages"] if s["name"] == "masked")
    assert (masked["status"], masked["shape_b"], masked["largest"]) == ("only-in-a", None, None)
    assert document["model_changes"] == [{"field": "causal", "a": True, "b": False}]
    view = invoke("diff", str(a), str(b))
    assert "* masked   only in A" in view.stdout
    assert "the model's causal differs: true in A, false in B" in view.stdout


def test_either_may_come_from_stdin(traces: tuple[Path, Path, Path]) -> None:
    a, _, b = traces
    result = invoke("diff", "-", str(b), input=a.read_text(encoding="utf-8"))
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == "A: stdin"
    result = invoke("diff", str(a), "-", "--json", input=a.read_text(encoding="utf-8"))
    assert result.exit_code == 0
    assert json.loads(result.stdout)["b"]["source"] == "stdin"


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["missing.json", "{a}"], "missing.json: no such file"),
        (["{a}", "{model}"], "schema: not a trace this version can read"),
        (["{a}", "{dir}"], "is a directory"),
        (["-", "-"], "A and B cannot both come from stdin"),
        (["{a}"], "give two saved traces"),
        ([], "give two saved traces"),
        (["{a}", "{a}", "{a}"], "give two saved traces"),
        (["{a}", "-"], "stdin: the input is empty"),
    ],
    ids=["missing", "a-model-file", "a-folder", "two-stdin", "one", "none", "three", "empty"],
)
def test_bad_input_is_one_line_and_exit_2(
    words: list[str], said: str, traces: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    a = traces[0]
    model = model_file(tmp_path, "it-animal")
    args = [w.format(a=a, model=model, dir=tmp_path) for w in words]
    result = invoke("diff", *args, input="")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("attntrace: error: ")
    assert said in result.stderr


@pytest.mark.parametrize("columns", [40, 80, 120])
def test_the_view_fits_the_width(columns: int, traces: tuple[Path, Path, Path]) -> None:
    a, _, b = traces
    result = invoke("diff", str(a), str(b), columns=columns)
    assert result.exit_code == 1
    too_wide = [line for line in result.stdout.splitlines() if cell_len(line) > columns]
    assert too_wide == []


def test_text_from_the_files_is_shown_escaped_with_colour_on_and_off(tmp_path: Path) -> None:
    """Tokens, names and formulas holding control characters, and file names too."""
    document: dict[str, Any] = {
        "name": f"evil{CLEAR}",
        "sentence": f"cat {CLEAR} \u202eevil",
        "embeddings": {"cat": [1.0, 2.0], CLEAR: [0.5, 1.0], "\u202eevil": [2.0, 0.0]},
        "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[0, 1], [1, 0]]},
    }
    a_model = tmp_path / "a-model.json"
    a_model.write_text(json.dumps(document), encoding="utf-8")
    document["weights"]["WQ"][0][1] = 3
    b_model = tmp_path / "b-model.json"
    b_model.write_text(json.dumps(document), encoding="utf-8")
    a = saved(tmp_path, a_model)
    b_document = json.loads(saved(tmp_path, b_model).read_text(encoding="utf-8"))
    b_document["stages"][1]["formula"] += CLEAR
    b = tmp_path / f"b{CLEAR}.json"
    b.write_text(json.dumps(b_document), encoding="utf-8")
    result = invoke("diff", str(a), str(b))
    assert result.exit_code == 1, result.output
    assert raw_controls(result.stdout) == []
    assert "\\x1b[2J" in result.stdout  # shown as its escape, not dropped
    env = {"COLUMNS": "80", "FORCE_COLOR": "1", "TERM": "xterm-256color"}
    coloured = CliRunner().invoke(app, ["diff", str(a), str(b)], env=env)
    assert coloured.exit_code == 1
    assert "\x1b[" in coloured.stdout  # colour is on
    assert raw_controls(_SGR.sub("", coloured.stdout)) == []
    assert "*" in _SGR.sub("", coloured.stdout)  # the marks stay with colour on


def test_a_change_below_the_shown_digits_is_shown_with_more(tmp_path: Path) -> None:
    """WQ[0][0] 1 → 1.000001: Q changes in its sixth decimal, which the first change's
    values show (not 3.0000 twice), and the table's mark still says which cells."""
    a = saved(tmp_path, model_file(tmp_path, "cat-eats-fish"))
    b = saved(tmp_path, model_file(tmp_path, "cat-eats-fish", ("WQ", 0, 0, 1.000001)))
    result = invoke("diff", str(a), str(b))
    assert result.exit_code == 1, result.output
    found = re.search(r"column 'd0': A (\S+), B (\S+), Δ (\S+)", result.stdout)
    assert found is not None, result.stdout
    assert found[1] != found[2]
    assert float(found[2]) - float(found[1]) == pytest.approx(float(found[3]), abs=1e-12)
    table = result.stdout.split("B's values, * where they changed\n")[1].split("\n\n")[0]
    assert [line.split()[1] for line in table.splitlines()[2:]] == ["1.0000*", "3.0000*", "2.0000*"]


# ------------------------------------------------------------ one model traced twice


def test_a_model_traced_with_and_without_its_edits(tmp_path: Path) -> None:
    """--set WQ[3][1]=0.5 on it-animal: "it"'s query for places, so the stages after Q
    change and X, K, V do not; the same report as the two traces saved apart."""
    result = invoke("diff", "--sample", "it-animal", "--set", "WQ[3][1]=0.5", "--json")
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    jsonschema.validate(document, schema("diff-v1.schema.json"))
    changed = [s["name"] for s in document["stages"] if s["status"] != "same"]
    assert changed == ["Q", "scores", "scaled", "softmax", "output"]
    assert (document["a"]["source"], document["a"]["edits"]) == ("sample it-animal", [])
    assert document["b"]["edits"] == ["WQ[3][1]=0.5"]
    a = saved(tmp_path, model_file(tmp_path, "it-animal"))
    b = saved(tmp_path, model_file(tmp_path, "it-animal", ("WQ", 3, 1, 0.5)))
    apart = json.loads(invoke("diff", str(a), str(b), "--json").stdout)
    assert apart["stages"] == document["stages"]
    view = invoke("diff", "--sample", "it-animal", "--set", "WQ[3][1]=0.5")
    assert view.stdout.splitlines()[:2] == [
        "A: sample it-animal",
        "B: sample it-animal with --set WQ[3][1]=0.5",
    ]
    assert "it       4.6400   0.5000*  2.7700   0.0000" in view.stdout


def test_edits_that_change_nothing_and_a_sentence_of_ones_own(tmp_path: Path) -> None:
    same = invoke("diff", "--set", "WQ[0][0]=1")  # the worked example's WQ is the identity
    assert same.exit_code == 0, same.output
    assert "nothing changed" in same.stdout
    masked = invoke("diff", "cat", "fish", "--set", "causal=true", "--json")
    assert masked.exit_code == 1
    document = json.loads(masked.stdout)
    assert document["a"]["tokens"] == document["b"]["tokens"] == ["cat", "fish"]
    assert document["first_changed"]["name"] == "masked"
    assert document["model_changes"] == [{"field": "causal", "a": False, "b": True}]
    model = model_file(tmp_path, "two-heads")
    config = invoke("diff", "--config", str(model), "--set", "WK[0][0]=3", "--json")
    assert config.exit_code == 1
    assert json.loads(config.stdout)["a"]["source"] == str(model)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--sample", "it-animal"], "--sample names the model diff traces twice: add --set"),
        (["a.json", "b.json", "--set", "WQ[0][0]=2"], "'a.json' reads as a saved trace"),
        (["-", "--sample", "gqa", "--set", "WQ[0][0]=2"], "'-' reads as a saved trace"),
        (["--config", "-", "--set", "WQ[0][0]=2"], "stdin can be read once"),
        (["--set", "WQ[0][9]=1"], "--set WQ[0][9]: expected an index from 0 to 1"),
        (["--set", "WQ[0][0]=x"], "(with --set WQ[0][0]): weights.WQ[0][0]: expected a number"),
        (["dog", "--set", "WQ[0][0]=2"], "unknown token 'dog'"),
        (["--sample", "gqa", "--config", "m.yaml", "--set", "a=1"], "both name a model"),
    ],
    ids=[
        "no-edits",
        "files-and-set",
        "stdin-and-sample",
        "config-stdin",
        "bad-path",
        "bad-value",
        "unknown-token",
        "two-models",
    ],
)
def test_the_model_form_refuses_in_one_line(args: list[str], said: str) -> None:
    result = invoke("diff", *args, input="")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("attntrace: error: ")
    assert said in result.stderr
