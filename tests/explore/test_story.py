"""The cell pane tells the real stories (forward/cell_story.py, learning/grad_cell_story.py)
line for line, each story's value held to numpy on the sample's own YAML; long lines
wrap between terms, never inside a number; hostile tokens show as typed."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import yaml
from explorer import TOKENS, driven, screen_text, settled
from paths import ROOT

from attntrace import ModelSpec, trace_attention
from attntrace.api import prepared
from attntrace.decode.decoder import Decode, decode
from attntrace.explore.app import ExploreApp
from attntrace.explore.sources import Sources
from attntrace.explore.stage_table import StageTable
from attntrace.explore.story import StoryPane, wrapped
from attntrace.forward.cell_story import cell_story
from attntrace.learning.grad_cell_story import grad_cell_story
from attntrace.learning.grad_trace import GradTrace, grad_trace
from attntrace.learning.objective import Objective
from attntrace.ui.shown import shown_trace


def numpy_it_animal() -> dict[str, npt.NDArray[Any]]:
    """it-animal's stages by numpy, from the sample file: X, Q, K, V, scores, scaled,
    softmax (max subtracted), output."""
    sample = yaml.safe_load((ROOT / "attntrace/samples/it-animal.yaml").read_text("utf-8"))
    table = {str(k): v for k, v in sample["embeddings"].items()}
    x = np.array([table[t.lower() if t == "The" else t] for t in TOKENS], dtype=float)
    w = {k: np.array(v, dtype=float) for k, v in sample["weights"].items()}
    q, k, v = x @ w["WQ"], x @ w["WK"], x @ w["WV"]
    scores = q @ k.T
    scaled = scores / np.sqrt(q.shape[1])
    e = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    softmax = e / e.sum(axis=1, keepdims=True)
    return {
        "X": x,
        "Q": q,
        "K": k,
        "V": v,
        "scores": scores,
        "scaled": scaled,
        "softmax": softmax,
        "output": softmax @ v,
    }


CELLS = [("softmax", 7, 5), ("softmax", 7, 1), ("Q", 7, 0), ("scores", 7, 1), ("output", 7, 2)]


def test_the_pane_is_the_cells_story_line_for_line() -> None:
    """At 120 × 40 no line of these stories is wider than the pane: the pane's text is the
    story's heading, formula and lines, one for one; its value is numpy's."""
    panes: list[str] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        for name, row, col in CELLS:
            app.moved(app.walk.jump(name))  # as ":NAME Enter" does (tested in test_app)
            app.query_one("#table", StageTable).place(row, col)
            await pilot.pause()
            panes.append(pane_text(app))

    trace = trace_attention(sample="it-animal")
    driven(trace, drive, (120, 40))
    oracle = numpy_it_animal()
    for (name, row, col), pane in zip(CELLS, panes, strict=True):
        story = cell_story(trace, trace[name], row, col)
        assert pane.split("\n") == [story.heading, story.formula, *story.lines]
        assert f"{name}[{TOKENS[row]}, " in story.heading
        assert math.isclose(story.value, oracle[name][row, col], rel_tol=1e-12, abs_tol=1e-15)
        # the last line gives the value exactly: the shortest text that reads back to it
        last = re.fullmatch(
            r"= (\S+)  \(the cell, exactly as the trace holds it\)", story.lines[-1]
        )
        assert last is not None
        assert float(last.group(1)) == story.value


@pytest.mark.long  # 121 cells, a key each: some 15 s
def test_every_cell_of_softmax_at_80_by_24_is_explained() -> None:
    """The issue's done-when: at 80 × 24 the softmax stage, any cell explained."""
    weights = numpy_it_animal()["softmax"]
    told: dict[tuple[int, int], str] = {}

    async def drive(app: ExploreApp, pilot: Any) -> None:
        for row in range(11):
            for _ in range(11):
                walk = app.walk
                told[walk.row, walk.col] = pane_text(app)
                await pilot.press("right" if row % 2 == 0 else "left")
            await pilot.press("down")

    trace = trace_attention(sample="it-animal")
    driven(trace, drive)
    assert len(told) == 121
    for (row, col), pane in told.items():
        story = cell_story(trace, trace["softmax"], row, col)
        assert pane.startswith(f"softmax[{TOKENS[row]}, {TOKENS[col]}]")
        assert story.lines[-1] in pane.replace("\n    ", " ")
        assert math.isclose(story.value, weights[row, col], rel_tol=1e-12)


def test_a_long_line_wraps_between_terms_and_the_rest_is_indented() -> None:
    """window's hidden key: an 85-character reason, at 80 columns (a pane of some 64)."""

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press(*["down"] * 5, "right")  # softmax[mat, cat]

    trace = trace_attention(sample="window")
    seen = driven(trace, drive)
    story = cell_story(shown_trace(trace), trace["softmax"], 5, 1)
    long = next(line for line in story.lines if len(line) > 70)
    lines = seen.screen.splitlines()
    start = next(i for i, line in enumerate(lines) if long[:30] in line)
    first, rest = lines[start], lines[start + 1]
    indent = first.index(long[:30])
    assert rest[indent : indent + 4] == "    "  # a continuation, not a line of its own
    joined = first[indent:].rstrip(" ▁▂▃▄▅▆▇█") + " " + rest[indent:].strip(" ▁▂▃▄▅▆▇█")
    assert joined == long


@pytest.mark.parametrize("width", [20, 30, 41, 64])
def test_wrapping_never_cuts_a_number(width: int) -> None:
    line = "exp(x − M) = exp(3.47000 − 4.64000) = 0.310367  (the cell, exactly as held)"
    rows = wrapped(line, width)
    assert all(len(row) <= width for row in rows)
    assert all(row.startswith("    ") for row in rows[1:])
    assert " ".join(row.strip() for row in rows).split() == line.split()
    for number in re.findall(r"\d+\.\d+", line):
        assert any(number in row for row in rows), number
    # a break comes before an operator, never after one
    assert not any(row.rstrip().endswith(("−", "=", "×")) for row in rows)


def it_animal_sources() -> Sources:
    ready = prepared(None, sample="it-animal")

    def gradients(layer: int) -> GradTrace:
        objective = Objective(kind="attend", from_token="it", to_token="animal")
        return grad_trace(ready.spec, ready.tokens, None, objective)

    return Sources(grad=gradients)


GRAD_CELLS = [("d_softmax", 7, 1), ("d_scaled", 7, 5)]


def test_the_grad_pane_tells_grad_cell_story() -> None:
    """g: the pane is grad_cell_story's chain-rule step, then the forward number beside
    it; d_softmax[it, animal] of −log softmax[it, animal] is −1 / A, and d_scaled the
    softmax backward, by numpy."""
    panes: list[str] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("g")
        await settled(app, pilot)
        for name, row, col in GRAD_CELLS:
            app.moved(app.walk.jump(name))  # as ":NAME Enter" does (tested in test_app)
            app.query_one("#table", StageTable).place(row, col)
            await pilot.pause()
            panes.append(pane_text(app))

    sources = it_animal_sources()
    driven(trace_attention(sample="it-animal"), drive, (120, 40), sources=sources)
    assert sources.grad is not None
    grad = sources.grad(0)
    a = numpy_it_animal()["softmax"]
    d_a = np.zeros_like(a)
    d_a[7, 1] = -1 / a[7, 1]  # the loss's own gradient; d_output is 0 (L reads no output)
    expected = {
        "d_softmax": d_a,
        "d_scaled": a * (d_a - (d_a * a).sum(axis=1, keepdims=True)),
    }
    for (name, row, col), pane in zip(GRAD_CELLS, panes, strict=True):
        stage = next(s for s in grad.stages if s.name == name)
        story = grad_cell_story(grad, stage, row, col)
        shown = pane.split("\n")
        assert shown[:2] == [story.heading, story.formula]
        assert shown[2 : 2 + len(story.lines)] == list(story.lines)
        assert math.isclose(story.value, expected[name][row, col], rel_tol=1e-12)
        forward = name.removeprefix("d_")
        assert f"beside it, forward {forward}[it, {TOKENS[col]}] = " in shown[-2]


def test_hostile_tokens_show_as_typed_in_the_table_the_pane_and_decode() -> None:
    """A token spelled as markup, and one holding an escape byte: the markup as typed,
    the byte as its escape, in the trace's table and pane and in decode's."""
    spec = ModelSpec(
        embeddings={"[bold]x": np.array([1.0, 0.0]), "\x1b[31mred": np.array([0.0, 1.0])},
        WQ=np.eye(2),
        WK=np.eye(2),
        WV=np.eye(2),
    )
    sentence = "[bold]x \x1b[31mred"

    def decoded(layer: int) -> Decode:
        return decode(spec, ["[bold]x", "\x1b[31mred"])

    shots: list[str] = []
    panes: list[str] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("down")
        shots.append(seen_screen(app))
        panes.append(pane_text(app))
        await pilot.press("d")
        await settled(app, pilot)
        await pilot.press("2", "down", "end")
        shots.append(seen_screen(app))
        panes.append(pane_text(app))

    driven(trace_attention(sentence, model=spec), drive, sources=Sources(decode=decoded))
    for shot, pane in zip(shots, panes, strict=True):
        assert "\x1b" not in shot + pane
        assert "\\x1b[31mred" in shot
        assert "[bold]x" in shot
    assert panes[0].startswith("softmax[\\x1b[31mred, [bold]x]")
    new = next(line for line in shots[1].splitlines() if "◀ new" in line)
    assert re.search(r"\\x1b\[31mr\S* ◀ new", new)  # the new row, shortened to keep its mark
    assert "weight[\\x1b[31mred]" in panes[1]


def seen_screen(app: ExploreApp) -> str:
    return screen_text(app.export_screenshot())


def pane_text(app: ExploreApp) -> str:
    return str(app.query_one(StoryPane).body.render())
