"""`run` at 80 columns keeps the keys that matter (issue 30): it-animal's "street" for
"it", the focused token's column, and --rows/--cols' tokens; each number shown is the
trace's own (read from `run --json`, not from the tables)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import invoke, one_line_error

PRECISION = 4


def tables(out: str, name: str) -> list[tuple[list[str], dict[str, list[str]]]]:
    """Each table of stage ``name`` in ``out``: its header's labels and row cells."""
    found = []
    lines = out.splitlines()
    for at, line in enumerate(lines):
        if not line.startswith(f"{name} = "):
            continue
        header = lines[at + 1].split()
        rows = {}
        for row in lines[at + 3 :]:
            if not row.strip() or row.startswith("showing"):
                break
            label, *cells = row.split()
            rows[label] = cells
        found.append((header, rows))
    return found


def the_trace(*args: str) -> dict[str, Any]:
    result = invoke("run", *args, "--json")
    assert result.exit_code == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def values_are_the_trace_s(
    trace: dict[str, Any], name: str, header: list[str], rows: dict[str, list[str]]
) -> None:
    """Every number under a label is the trace's number there, to the digits shown."""
    stage = next(s for s in trace["stages"] if s["name"] == name)
    row_of = {label: i for i, label in enumerate(stage["rows"])}
    col_of = {label: j for j, label in enumerate(stage["cols"])}
    for label, cells in rows.items():
        for column, cell in zip(header, cells, strict=True):
            if label.startswith("…") or column.startswith("…"):
                assert cell == "…"
                continue
            value = stage["data"][row_of[label]][col_of[column]]
            assert abs(float(cell) - value) <= 0.5 * 10.0**-PRECISION + 1e-12, (label, column)


@pytest.mark.parametrize("name", ["scores", "scaled", "softmax"])
def test_it_animal_at_80_columns_shows_street(name: str) -> None:
    out = invoke("run", "-s", "it-animal", columns=80).stdout
    ((header, rows),) = tables(out, name)
    assert {"The", "animal", "street", "."} <= set(header)
    assert "it" in rows
    values_are_the_trace_s(the_trace("-s", "it-animal"), name, header, rows)
    if name == "softmax":
        assert rows["it"][header.index("street")] == "0.2013"


def test_the_tables_before_softmax_keep_its_keys() -> None:
    out = invoke("run", "-s", "it-animal", columns=80).stdout
    headers = [tables(out, name)[0][0] for name in ("scores", "scaled", "softmax")]
    assert headers[0] == headers[1] == headers[2]


def test_focus_keeps_the_focused_token_s_column_in_step_mode() -> None:
    out = invoke("run", "-s", "it-animal", "--step", "--focus", "it", input="softmax\nq\n").stdout
    header, rows = tables(out, "softmax")[0]  # the stage's table; the focus's follows
    assert {"it", "animal", "street", "tired"} <= set(header)  # it's three heaviest keys
    values_are_the_trace_s(the_trace("-s", "it-animal"), "softmax", header, rows)


def test_precision_1_still_shows_street() -> None:
    out = invoke("run", "-s", "it-animal", "--precision", "1", columns=80).stdout
    ((header, rows),) = tables(out, "softmax")
    assert "street" in header
    assert rows["it"][header.index("street")] == "0.2"


def test_cols_and_rows_choose_the_tokens() -> None:
    out = invoke(
        "run", "-s", "it-animal", "--cols", "it,street,1", "--rows", "it,The", columns=80
    ).stdout
    ((header, rows),) = tables(out, "softmax")
    assert header == ["…1", "animal", "…3", "street", "…1", "it", "…3"]
    assert list(rows) == ["The", "…6", "it", "…3"]
    values_are_the_trace_s(the_trace("-s", "it-animal"), "softmax", header, rows)
    # what is hidden was chosen: --max-rows/--max-cols would not show it
    assert "showing 2 of 11 rows and 3 of 11 columns (--rows/--cols chose them)" in out
    ((x_header, _),) = tables(out, "X")  # over dimensions: --cols does not apply
    assert x_header == ["d0", "d1", "d2", "d3", "d4", "d5"]


def test_a_repeated_token_by_name_is_every_occurrence() -> None:
    out = invoke("run", "-s", "causal", "--cols", "the", columns=80).stdout
    ((header, _),) = tables(out, "softmax")
    assert [name for name in header if not name.startswith("…")] == ["the#0", "the#4"]
    out = invoke("run", "-s", "causal", "--cols", "the#4", columns=80).stdout
    ((header, _),) = tables(out, "softmax")
    assert [name for name in header if not name.startswith("…")] == ["the#4"]


def test_a_token_matched_only_without_case_says_which_it_took() -> None:
    """it-animal has "The" (0) and "the" (4). --cols the is "the" exactly, said nothing
    of; THE is either only without case: the first is taken, as --focus THE takes it,
    and a note says so (on stderr: the tables stay as they are)."""
    exact = invoke("run", "-s", "it-animal", "--cols", "the", "--rows", "The", columns=80)
    assert exact.exit_code == 0
    assert exact.stderr == ""
    ((header, rows),) = tables(exact.stdout, "softmax")
    assert [name for name in header if not name.startswith("…")] == ["the"]
    assert [name for name in rows if not name.startswith("…")] == ["The"]
    loose = invoke("run", "-s", "it-animal", "--cols", "THE", "--rows", "it,tHe", columns=80)
    assert loose.exit_code == 0
    ((header, rows),) = tables(loose.stdout, "softmax")
    assert [name for name in header if not name.startswith("…")] == ["The"]
    assert [name for name in rows if not name.startswith("…")] == ["The", "it"]
    assert loose.stderr.splitlines() == [
        "attntrace: note: --rows 'tHe' is at positions 0, 4: it takes position 0 ('The'; "
        "--rows 4 for the next)",
        "attntrace: note: --cols 'THE' is at positions 0, 4: it takes position 0 ('The'; "
        "--cols 4 for the next)",
    ]


def test_render_takes_cols_too(tmp_path: Any) -> None:
    saved = tmp_path / "trace.json"
    saved.write_text(invoke("run", "-s", "it-animal", "--json").stdout, encoding="utf-8")
    out = invoke("render", str(saved), "--cols", "street", columns=80).stdout
    ((header, _),) = tables(out, "softmax")
    assert [name for name in header if not name.startswith("…")] == ["street"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--cols", "zebra"), ("--cols", "zebra", "tokens: 0:The")),
        (("--rows", "11"), ("--rows", "0 to 10")),
        (("--cols", "it,,street"), ("--cols", "separated by commas")),
        (("--cols", "it", "--json"), ("--json", "--cols")),
        (("--rows", "it", "--map"), ("--rows", "--map")),
        (("--cols", "it", "--focus", "it"), ("--cols", "--focus")),
    ],
)
def test_a_token_not_in_the_sentence_is_one_line(
    args: tuple[str, ...], words: tuple[str, ...]
) -> None:
    one_line_error(invoke("run", "-s", "it-animal", *args), *words)


def test_grad_keeps_softmax_s_keys_and_takes_cols() -> None:
    out = invoke("grad", "-s", "it-animal", "--from", "it", "--to", "street", columns=80).stdout
    names = ("softmax", "d_softmax", "scaled", "d_scaled", "scores", "d_scores")
    headers = [tables(out, name)[0][0] for name in names]
    assert all(header == headers[0] for header in headers), headers
    assert "street" in headers[0]
    out = invoke(
        "grad", "-s", "it-animal", "--from", "it", "--to", "street", "--cols", "street"
    ).stdout
    header, _ = tables(out, "d_scaled")[0]
    assert [name for name in header if not name.startswith("…")] == ["street"]
    one_line_error(
        invoke("grad", "-s", "it-animal", "--from", "it", "--to", "street", "--rows", "zebra"),
        "--rows",
        "zebra",
    )


def test_overview_tables_beside_others_keep_every_key_softmax_shows() -> None:
    """--overview places scores and scaled in slots narrower than the screen: they keep
    the keys softmax's own table shows (all three here), not the keys softmax would
    keep squeezed into their slot. (softmax's 8.5e-04 is wider than scaled's 7.07.)"""
    out = invoke("run", "--overview", "--precision", "2", columns=100).stdout
    assert "showing" not in out
    for name in ("scores", "scaled", "softmax"):
        title = next(line for line in out.splitlines() if f"{name} [3×3]" in line)
        header = out.splitlines()[out.splitlines().index(title) + 1]
        start = title.index(f"{name} [3×3]")
        assert header[start:].split()[:3] == ["cat", "eats", "fish"], (name, header)
