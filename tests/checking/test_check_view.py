"""`attntrace check`'s report as a person reads it (check/views/report.py).

Each report is built from arrays computed here with the loops of tests/naive.py (the
right ones, or with a mistake made by hand), compared by the core, and drawn at 80
columns without colour, as a pipe gets it. The tests read the text a person would: the
stage lines and their marks, where it first goes wrong (its values checked against the
loops' numbers), the region's wrong cells, the diagnosis, the verdict, and that a
token or name from a file shows inert.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable
from typing import Any

import jsonschema
import numpy as np
import pytest
from helpers import raw_controls, schema
from naive import Rows, naive_block
from rich.cells import cell_len
from rich.console import Console
from tolerances import printed

from attntrace.api import prepared
from attntrace.checking.check_json import check_to_dict
from attntrace.checking.compare import check_arrays
from attntrace.checking.given import GivenArray
from attntrace.checking.report import CheckReport
from attntrace.checking.views.report import check_view

Edit = Callable[[dict[str, Any]], None]


def render(
    report: CheckReport,
    width: int = 80,
    *,
    precision: int | None = None,
    color: bool = False,
    source: str | None = "mine.npz",
) -> str:
    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        highlight=False,
        force_terminal=color,
        color_system="truecolor" if color else None,
    )
    console.print(check_view(report, precision, source), crop=False)
    return out.getvalue()


def naive(sample: str | None, model: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """The model, its trace, and every stage by the loops (per head: a list)."""
    chosen = prepared(None, sample=sample, model=model)
    spec = chosen.spec
    trace = chosen.trace()
    x: Rows = trace.stage("X").data.tolist()
    weights = (spec.WQ.tolist(), spec.WK.tolist(), spec.WV.tolist())
    stages = naive_block(
        x, *weights, heads=spec.heads, kv_heads=spec.n_kv_heads, causal=spec.causal
    )
    stages["X"] = x
    return (spec, trace), stages


def report_of(
    sample: str | None,
    given: dict[str, str],
    edit: Edit | None = None,
    *,
    dtype: str = "float32",
    dtypes: dict[str, str] | None = None,
    model: dict[str, Any] | None = None,
) -> tuple[CheckReport, dict[str, Any]]:
    """check's report of the loops' stages ``given`` (name in the file -> stage), after
    ``edit`` changed them; and the loops' own (unedited) numbers."""
    (spec, trace), right = naive(sample, model)
    mine = {
        name: [[list(row) for row in head] for head in value]
        if isinstance(value, list) and value and isinstance(value[0][0], list)
        else [list(row) for row in value]
        for name, value in right.items()
        if value is not None
    }
    if edit is not None:
        edit(mine)
    arrays = {}
    for name, stage in given.items():
        kind = (dtypes or {}).get(name, dtype)
        data = np.array(mine[stage], dtype=np.float64).astype(kind).astype(np.float64)
        arrays[name] = GivenArray(name, data, kind)
    return check_arrays(spec, trace, arrays), right


def stage_line(text: str, stage: str) -> str:
    """The stage line of ``stage`` (its mark, the name, the facts), one space apart."""
    line = next(line for line in text.splitlines() if re.match(rf"^[✓✗·] {stage}\b", line))
    return " ".join(line.split())


def first_difference(text: str) -> re.Match[str]:
    joined = " ".join(text.split())  # the values may go on on the next line
    found = re.search(r"first difference: (.*?): expected (\S+), found (\S+)", joined)
    assert found is not None, text
    return found


def largest_difference(text: str) -> re.Match[str]:
    joined = " ".join(text.split())
    found = re.search(r"largest difference: (.*?): expected (\S+), found (\S+)", joined)
    assert found is not None, text
    return found


def fits(text: str, width: int) -> bool:
    return all(cell_len(line) <= width for line in text.splitlines())


def unscaled(stages: dict[str, Any]) -> None:
    """The scores never divided by √d_k: softmax and output follow from them."""
    heads = len(stages["scores"])
    stages["scaled"] = stages["scores"]
    stages["softmax"] = [[_softmax_row(row) for row in stages["scores"][h]] for h in range(heads)]


def _softmax_row(row: list[float]) -> list[float]:
    exps = [math.exp(x - max(row)) for x in row]
    return [e / math.fsum(exps) for e in exps]


def test_every_stage_matches() -> None:
    given = {name: name for name in ("X", "Q", "K", "V", "scores", "softmax", "output")}
    report, _ = report_of("two-heads", given)
    text = render(report)
    for stage in given:
        assert stage_line(text, stage).startswith(f"✓ {stage} ")
        assert "max |Δ| " in stage_line(text, stage)
    for stage in ("scaled", "concat", "projected"):  # the trace has them; the file does not
        assert stage_line(text, stage).split()[-2:] == ["not", "given"]
    assert "compared as float32: rtol 1e-4, atol 1e-5" in text
    assert "first difference" not in text
    assert "diagnosis" not in text
    assert text.rstrip().splitlines()[-1] == "✓ all 7 given stages match"
    assert text.splitlines()[0].startswith("two-heads · 3 tokens · d_model 4 · 2 heads")
    assert "checked mine.npz against the exact trace" in text
    assert fits(text, 80)


def test_unscaled_scores_are_named_with_the_cell_and_the_region() -> None:
    report, right = report_of("two-heads", {"scaled": "scaled", "attn": "softmax"}, unscaled)
    text = render(report)
    assert stage_line(text, "scaled").startswith("✗ scaled ")
    assert "heads 0, 1" in stage_line(text, "scaled")
    assert stage_line(text, "softmax").startswith("✗ softmax (as attn) ")
    # how many cells differ: the ones a score is not already its own scaled value
    scores = [s for head in right["scores"] for row in head for s in row]
    wrong = sum(abs(s - s / math.sqrt(2)) > 1e-5 * max(1, max(map(abs, scores))) for s in scores)
    assert f"{wrong} of {len(scores)} cells" in stage_line(text, "scaled")
    # the first difference: head 0's first score not 0, reading row by row (issue 30:
    # it was the largest), then the largest, as the loops have them
    head0 = right["scores"][0]
    cells = [(i, j) for i in range(3) for j in range(3)]
    tokens = ["cat", "eats", "fish"]
    for (i, j), said in (
        (next(c for c in cells if head0[c[0]][c[1]] != 0), first_difference(text)),
        (max(cells, key=lambda c: abs(head0[c[0]][c[1]])), largest_difference(text)),
    ):
        where, expected, found = said.groups()
        assert where.endswith(f"row '{tokens[i]}', column '{tokens[j]}'")
        assert float(expected) == pytest.approx(head0[i][j] / math.sqrt(2), abs=printed(4))
        assert float(found) == pytest.approx(head0[i][j], abs=printed(4))
    assert first_difference(text).group(1).startswith("scaled, head 0, row ")
    assert "around the largest: your numbers" in text
    assert "diagnosis: no-scaling — the scores were not divided by √d_k" in text
    table = text.split("where they differ")[1].split("diagnosis")[0]
    assert table.count("✗") == sum(head0[a][b] != 0 for a in range(3) for b in range(3))
    assert len(re.findall(r"^  expected ", table, re.M)) == 3  # each row, then what it should be
    assert text.rstrip().endswith("✗ both given stages differ; the first is scaled")
    assert fits(text, 80)
    assert fits(render(report, 40), 40)


def test_precision_sets_the_digits() -> None:
    report, _ = report_of("two-heads", {"scaled": "scaled"}, unscaled)
    _, expected, found = first_difference(render(report, precision=2)).groups()
    assert re.fullmatch(r"\d+\.\d\d", expected)
    assert re.fullmatch(r"\d+\.\d\d", found)


def test_a_small_difference_gets_the_digits_that_show_it() -> None:
    def nudge(stages: dict[str, Any]) -> None:
        stages["softmax"][1][1][0] += 3e-6

    report, right = report_of("two-heads", {"softmax": "softmax"}, nudge, dtype="float64")
    where, expected, found = first_difference(render(report)).groups()
    assert where == "softmax, head 1, row 'eats', column 'cat'"
    assert expected != found  # at 4 digits both would read the same
    places = len(expected.split(".")[1])
    assert float(expected) == pytest.approx(right["softmax"][1][1][0], abs=printed(places))
    assert float(found) == pytest.approx(right["softmax"][1][1][0] + 3e-6, abs=printed(places))


def test_no_known_mistake_says_so_and_where() -> None:
    def noise(stages: dict[str, Any]) -> None:
        stages["softmax"][1][2][0] += 0.02  # the largest
        stages["softmax"][1][2][1] -= 0.01

    report, _ = report_of("two-heads", {"Q": "Q", "softmax": "softmax"}, noise)
    text = render(report)
    assert report.diagnosis is None
    assert "diagnosis" not in text
    said = " ".join(text.split())
    assert (
        "no known mistake reproduces this; the difference is largest at row 'fish', column 'cat'"
    ) in said
    assert stage_line(text, "softmax").startswith("✗ softmax head 1 max |Δ| 0.02")
    assert "2 of 18 cells" in stage_line(text, "softmax")
    assert stage_line(text, "Q").startswith("✓ Q ")
    assert text.rstrip().endswith("✗ 1 of 2 given stages differ; the first is softmax")


def test_a_shape_that_fits_no_reading() -> None:
    def transposed(stages: dict[str, Any]) -> None:  # [heads, d_v, n]: each head's output.T
        stages["output"] = [[list(c) for c in zip(*head, strict=True)] for head in stages["output"]]

    def cut(stages: dict[str, Any]) -> None:  # [heads, n, 1]: each head's output cut short
        stages["output"] = [[row[:1] for row in head] for head in stages["output"]]

    report, _ = report_of("two-heads", {"Q": "Q", "out": "output"}, transposed)
    text = render(report)
    line = stage_line(text, "output")
    assert line.startswith("✗ output (as out) shape [2, 2, 3], expected [2, 3, 2]")
    assert "first difference: output (as out): shape [2, 2, 3]" in " ".join(text.split())
    assert "saved-transposed" in text  # the numbers are right, saved the other way round
    report, _ = report_of("two-heads", {"Q": "Q", "out": "output"}, cut)
    text = render(report)
    assert "no known mistake reproduces this shape" in text
    assert "where they differ" not in text  # no cells to show
    assert fits(text, 80)
    assert fits(render(report, 40), 40)


def test_a_kv_head_is_named_as_one() -> None:
    def bump(stages: dict[str, Any]) -> None:
        stages["K_kv"][1][2][0] += 0.5

    def per_kv_head(stages: dict[str, Any]) -> None:  # K as the model keeps it, per K/V head
        stages["K_kv"] = [stages["K"][0], stages["K"][2]]  # query heads 0 and 2 read 0 and 1
        bump(stages)

    report, _ = report_of("gqa", {"K": "K_kv", "V": "V"}, per_kv_head)
    text = render(report)
    assert stage_line(text, "K") == "✗ K K/V head 1 max |Δ| 0.5 1 of 8 cells"
    where, _, _ = first_difference(text).groups()
    assert where == "K, K/V head 1, row 'sat', column d1"  # K/V head 1's dimension, as run
    assert "4 heads · d_k 1 · d_v 1 · 2 K/V heads (GQA)" in text.splitlines()[0]


def test_nan_found_reads_as_nan() -> None:
    def nan(stages: dict[str, Any]) -> None:
        stages["softmax"][1][1][2] = math.nan

    report, right = report_of("two-heads", {"P": "softmax"}, nan)
    text = render(report)
    where, expected, found = first_difference(text).groups()
    assert (where, found) == ("softmax (as P), head 1, row 'eats', column 'fish'", "NaN")
    assert float(expected) == pytest.approx(right["softmax"][1][1][2], abs=printed(4))
    assert "NaN✗" in text
    # max |Δ| leaves the NaN out: the NaN leads, and max |Δ| follows as "elsewhere"
    assert "1 NaN or ∞ on one side only" in stage_line(text, "softmax")
    assert "elsewhere" in text
    assert "nan" not in text
    assert "inf" not in text


def test_a_masked_cell_and_repeated_tokens() -> None:
    def zero_fill(stages: dict[str, Any]) -> None:
        stages["masked"] = [
            [[0.0 if s == -math.inf else s for s in row] for row in head]
            for head in stages["masked"]
        ]

    report, _ = report_of("causal", {"masked": "masked"}, zero_fill)
    text = render(report)
    where, expected, found = first_difference(text).groups()
    assert where == "masked, row 'the#0', column 'cat'"  # 'the' is tokens 0 and 4, as run says
    assert (expected, found) == ("−∞", "0.0000")
    table = text.split("where they differ")[1]
    header = table.splitlines()[1].split()
    assert header == ["cat", "sat", "on", "the#4", "mat"]
    assert [line.split()[0] for line in table.splitlines()[3:13:2]] == [
        "the#0",
        "cat",
        "sat",
        "on",
        "the#4",
    ]
    assert "diagnosis: mask-filled-with-zero" in text


def test_text_from_files_shows_inert() -> None:
    hostile = {
        "name": "evil\x1b[2J[bold]model",
        "sentence": "the \x1b[2Jred [bold]loud[/bold] cat",
        "embeddings": {
            "the": [1, 0],
            "\x1b[2Jred": [0, 1],
            "[bold]loud[/bold]": [1, 1],
            "cat": [2, 1],
        },
        "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[0, 1], [1, 0]]},
    }

    def louder(stages: dict[str, Any]) -> None:
        stages["scores"] = [[[1.5 * s for s in row] for row in head] for head in stages["scores"]]

    report, _ = report_of(None, {"X": "X", "scores": "scores"}, louder, model=hostile)
    plain = render(report, source="my\x1b]0;title\x07.npz")
    coloured = render(report, color=True, source="my\x1b]0;title\x07.npz")
    assert raw_controls(plain) == []
    for text in (plain, coloured):
        assert "\x1b[2J" not in text
        assert "\x1b]0" not in text
        assert "\x07" not in text
    assert plain.splitlines()[0].startswith(r"evil\x1b[2J[bold]model · 4 tokens")
    assert r"checked my\x1b]0;title\x07.npz" in plain
    table = plain.split("where they differ")[1]
    assert table.splitlines()[1].split() == ["the", r"\x1b[2Jred", "[bold]loud[…", "cat"]
    assert r"[bold]loud[/bold]" in plain.splitlines()[2]  # the sentence: markup as written
    assert fits(plain, 80)


def test_arrays_saved_in_two_dtypes_name_their_tolerances() -> None:
    report, _ = report_of(
        "two-heads", {"Q": "Q", "softmax": "softmax"}, dtypes={"Q": "float32", "softmax": "float64"}
    )
    said = " ".join(render(report).split())
    assert (
        "compared as float32 (Q): rtol 1e-4, atol 1e-5; as float64 (softmax): rtol 1e-6, atol 1e-8"
    ) in said


@pytest.mark.parametrize("width", [40, 80, 160])
def test_the_marks_need_no_colour(width: int) -> None:
    report, _ = report_of("two-heads", {"Q": "Q", "scaled": "scaled"}, unscaled)
    text = render(report, width)
    assert stage_line(text, "Q")[0] == "✓"
    assert stage_line(text, "scaled")[0] == "✗"
    assert stage_line(text, "K")[0] == "·"
    assert "✗" in re.split(r"where\s+they\s+differ", text)[1]
    assert fits(text, width)


def test_other_mistakes_that_reproduce_it_are_listed() -> None:
    # d_model 16 split into 4 heads of d_k 4: ÷ d_k and ÷ √d_model are both ÷ 4
    rng = np.random.default_rng(3)
    model = {
        "heads": 4,
        "sentence": "a b c",
        "embeddings": {t: rng.normal(size=16).round(3).tolist() for t in "abc"},
        "weights": {w: rng.normal(size=(16, 16)).round(3).tolist() for w in ("WQ", "WK", "WV")},
    }

    def quartered(stages: dict[str, Any]) -> None:
        stages["scaled"] = [[[s / 4 for s in row] for row in head] for head in stages["scores"]]

    report, _ = report_of(None, {"scaled": "scaled"}, quartered, model=model)
    text = render(report)
    assert "diagnosis: scaled-by-d_k — the scores were divided by d_k instead of √d_k" in text
    assert "also reproduced by: scaled-by-d_model" in text
    assert "heads 0 to 3" in stage_line(text, "scaled")


def test_json_keeps_the_worst_cell_and_adds_the_first_in_reading_order() -> None:
    """check's "first difference" was the largest one. The terminal's is now the first
    in reading order; JSON's first_divergent.row/column stay the worst cell (as the
    schema says), and first_cell is the first in reading order."""

    def two_wrong(stages: dict[str, Any]) -> None:
        stages["softmax"][0][0][1] += 0.001  # first in reading order, small
        stages["softmax"][0][2][0] += 0.05  # later, the largest

    report, right = report_of("two-heads", {"softmax": "softmax"}, two_wrong, dtype="float64")
    document = check_to_dict(report, "mine.npz")
    jsonschema.validate(document, schema("check-v1.schema.json"))
    first = document["first_divergent"]
    assert (first["row"], first["column"]) == (2, 0)
    cell = first["first_cell"]
    assert (cell["row"], cell["column"], cell["row_label"], cell["column_label"]) == (
        0,
        1,
        "cat",
        "eats",
    )
    assert cell["expected"] == pytest.approx(right["softmax"][0][0][1], rel=1e-12)
    assert cell["found"] == pytest.approx(right["softmax"][0][0][1] + 0.001, rel=1e-12)
    text = render(report)
    assert first_difference(text).group(1) == "softmax, head 0, row 'cat', column 'eats'"
    assert largest_difference(text).group(1) == "row 'fish', column 'cat'"
