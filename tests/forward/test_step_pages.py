"""grad, flash and decode --step at a terminal's height (issue 30): driven in process
with space on a Console of 80 × 24, every frame fits and opens with its screen's
`Gradient k of N`, `Tile k of N` or `Step k of N` line; space reaches every screen."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from io import StringIO

import pytest
from rich.console import Console

from attntrace import trace_attention
from attntrace.decode.decoder import decode
from attntrace.decode.views.decode import screens as decode_screens
from attntrace.forward.views.step import page_through
from attntrace.kernels.flash_report import flash_report
from attntrace.kernels.views.flash_step import screens as flash_screens
from attntrace.learning.grad_trace import grad_trace
from attntrace.learning.objective import Objective
from attntrace.learning.views.grad import shown_grad
from attntrace.learning.views.grad_step import run_grad_steps
from attntrace.modelfile.model_file import load_model
from attntrace.modelfile.samples import sample_path
from attntrace.ui.pager import Scroll
from attntrace.ui.view import DEFAULT_VIEW

ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
WIDTH, HEIGHT = 80, 24
IT_ANIMAL = ["The", "animal", "didn't", "cross", "the", "street", "because", "it", "was"]
IT_ANIMAL += ["tired", "."]


def spaces(count: int) -> Callable[[], str | Scroll | None]:
    pending: Iterator[Scroll] = iter([Scroll.PAGE_DOWN] * count)
    return lambda: next(pending, None)


def frames(walk: Callable[[Console], None]) -> list[list[str]]:
    out = StringIO()
    walk(Console(file=out, width=WIDTH, height=HEIGHT, color_system=None))
    text = ESCAPES.sub("", out.getvalue().replace("\x1b[H\x1b[2J", "\f"))
    return [frame.removesuffix("\n").split("\n") for frame in text.split("\f")[1:]]


def grad_walk(console: Console) -> None:
    model = load_model(sample_path("it-animal"))
    grad = grad_trace(model, IT_ANIMAL, None, Objective("attend", "it", "animal"))
    run_grad_steps(console, shown_grad(grad), lambda: None, read_key=spaces(80))


def flash_walk(console: Console) -> None:
    report = flash_report(trace_attention(sample="causal"), 0, 2, 2)
    pages = flash_screens(report, DEFAULT_VIEW)
    page_through(console, pages, lambda: None, noun="tile", read_key=spaces(80))


def decode_walk(console: Console) -> None:
    run = decode(load_model(sample_path("it-animal")), IT_ANIMAL)
    pages = decode_screens(run, DEFAULT_VIEW)
    page_through(console, pages, lambda: None, noun="step", read_key=spaces(200))


@pytest.mark.parametrize(
    ("walk", "title", "top", "count"),
    [
        (grad_walk, r"Gradient (\d+) of (\d+) · ", 1, None),
        (flash_walk, r"Tile (\d+) of (\d+) computed", 1, None),
        (decode_walk, r"Step (\d+) of (\d+) \(t = ", 2, len(IT_ANIMAL)),
    ],
    ids=["grad", "flash", "decode"],
)
def test_every_page_fits_and_keeps_its_title_on_top(
    walk: Callable[[Console], None], title: str, top: int, count: int | None
) -> None:
    shown = frames(walk)
    seen: set[int] = set()
    total = 0
    for frame in shown:
        assert len(frame) <= HEIGHT
        found = [re.match(title, line) for line in frame[:top]]
        matched = next((m for m in found if m is not None), None)
        if matched is None:  # the summary, after the last counted screen
            assert seen, frame
            continue
        seen.add(int(matched.group(1)))
        total = int(matched.group(2))
    assert seen == set(range(1, total + 1))
    if count is not None:
        assert total == count
    assert any(line.startswith("lines ") for frame in shown for line in frame)  # paged
