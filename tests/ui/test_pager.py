"""Step mode at a terminal's height (issue 30, "Step mode fits the screen"): driven in
process with scripted keys on a Console of a given size, every frame holds the screen's
`Stage k of N` line, title and formula at its top, never more rows than the terminal,
and every table row under its table's column header; paging reaches every line."""

from __future__ import annotations

import re
from collections.abc import Iterator
from io import StringIO

import pytest
from rich.cells import cell_len
from rich.console import Console

from attntrace import trace_attention
from attntrace.cli.prompts import KeyReader
from attntrace.forward.focus import Focus, focus_at, resolve_focus
from attntrace.forward.views.step import run_steps, stage_screen
from attntrace.kernel.trace import Trace
from attntrace.ui.pager import Scroll
from attntrace.ui.view import DEFAULT_VIEW

ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
CLEAR = "\x1b[H\x1b[2J"


def focused(trace: Trace) -> tuple[Focus, ...]:
    """--focus it, as run builds it."""
    index, note = resolve_focus(trace, "it")
    return tuple(focus_at(trace, index, h, note) for h in trace.traced_heads)


def keys(*script: str | Scroll) -> Iterator[str | Scroll | None]:
    yield from script
    while True:
        yield None


def frames(
    width: int, height: int, script: tuple[str | Scroll, ...], *, focus: bool = False
) -> list[list[str]]:
    """Each frame the walk draws (plain lines), on a terminal of width × height."""
    trace = trace_attention(sample="it-animal")
    console = Console(file=StringIO(), width=width, height=height, color_system=None)
    pending = keys(*script)
    run_steps(
        console,
        trace,
        lambda: None,
        focus=focused(trace) if focus else None,
        read_key=lambda: next(pending),
    )
    text = ESCAPES.sub("", console.file.getvalue().replace(CLEAR, "\f"))  # type: ignore[attr-defined]
    # the end of input ends the prompt's line: the last frame's newline
    return [frame.removesuffix("\n").split("\n") for frame in text.split("\f")[1:]]


def whole(width: int, index: int, *, focus: bool = False) -> list[str]:
    """Stage ``index`` printed whole, as a pipe gets it."""
    trace = trace_attention(sample="it-animal")
    out = StringIO()
    console = Console(file=out, width=width, color_system=None)
    stage_screen(trace, index, DEFAULT_VIEW, focused(trace) if focus else None)(console)
    return out.getvalue().split("\n")


def headers_of(lines: list[str]) -> dict[str, str]:
    """Each table row of a whole screen to its column header: the line above the rule
    under it (a rule: a line of ─), for the rows down to the next blank line."""
    owner: dict[str, str] = {}
    header = None
    for above, line in zip(["", *lines], lines, strict=False):
        if not line.strip():
            header = None
        elif set(line.strip()) <= {"─", " "} and len(line.strip()) > 2:
            header = above
        elif header is not None:
            owner[line] = header
    return owner


SOFTMAX = 6  # it-animal's softmax stage, "Stage 7 of 8"
PAGES = (Scroll.PAGE_DOWN,) * 6  # through the softmax stage and on


@pytest.mark.parametrize(("width", "height"), [(80, 24), (80, 12), (60, 9), (160, 50)])
def test_every_page_keeps_the_stage_title_and_formula_and_fits(width: int, height: int) -> None:
    shown = frames(width, height, ("softmax", *PAGES), focus=True)
    assert len(shown) == 2 + len(PAGES)
    for frame in shown:
        assert len(frame) <= height
        assert all(cell_len(line) <= width for line in frame)
        assert re.match(r"Stage \d of 8 · ", frame[0])
    softmax = [frame for frame in shown if frame[0].startswith("Stage 7 of 8 · softmax")]
    assert len(softmax) >= (3 if height < 50 else 1)
    if height >= 12:  # room for the pinned box: the formula stays too
        for frame in softmax:
            top = "\n".join(frame[:6])
            assert "softmax = exp(scaled − row max) / row sum" in top


@pytest.mark.parametrize(("width", "height"), [(80, 24), (80, 14), (80, 12), (160, 50)])
def test_every_table_row_shown_is_under_its_column_header(width: int, height: int) -> None:
    owners = headers_of(whole(width, SOFTMAX, focus=True))
    assert len(set(owners.values())) == 2  # the weights and the focus row's arithmetic
    shown = frames(width, height, ("softmax", *PAGES), focus=True)
    for frame in shown[1:]:
        if not frame[0].startswith("Stage 7 of 8"):
            break
        for at, line in enumerate(frame):
            if line in owners:
                assert owners[line] in frame[:at], line
            if line in owners.values():  # a heading is never left without a row under it
                assert owners.get(frame[at + 2]) == line, frame


@pytest.mark.parametrize(("width", "height"), [(80, 24), (80, 12), (60, 9)])
def test_paging_shows_every_line_of_the_stage(width: int, height: int) -> None:
    lines = [line for line in whole(width, SOFTMAX, focus=True) if line.strip()]
    shown = frames(width, height, ("softmax", *(Scroll.PAGE_DOWN,) * 40), focus=True)
    seen = {line for frame in shown if frame[0].startswith("Stage 7 of 8") for line in frame}
    assert [line for line in lines if line not in seen] == []
    assert any(frame[0].startswith("Stage 8 of 8") for frame in shown)  # space read on


def test_page_up_and_lines_move_back_and_n_b_still_change_stage() -> None:
    script = ("softmax", Scroll.PAGE_DOWN, Scroll.PAGE_UP, Scroll.LINE_DOWN, "n", "b", "q")
    shown = frames(80, 24, script, focus=True)
    first, second, back, down = shown[1:5]
    assert back == first
    assert first[-2].startswith("lines 1–")
    assert second[-2].startswith("lines ")
    assert down[-2].startswith("lines 2–")
    assert shown[5][0].startswith("Stage 8 of 8")
    assert shown[6][0].startswith("Stage 7 of 8")
    assert len(shown) == 7  # q ended the walk


def test_a_screen_that_fits_is_drawn_whole_with_no_page_line() -> None:
    shown = frames(160, 50, ("X", "q"))
    body = [line for line in whole(160, 0) if line.strip()]
    assert all(line in shown[0] for line in body)
    assert not any(line.startswith("lines ") for line in shown[0])


def test_help_and_complaints_fit_above_the_prompt() -> None:
    shown = frames(80, 24, ("softmax", "?", "what"), focus=True)
    assert all(len(frame) <= 24 for frame in shown)
    assert any("Enter or n: next stage" in line for line in shown[2])
    assert "PgUp, ↑/↓, Home/End: move within this stage" in " ".join(shown[2])
    assert "unknown key 'what': type ? for help" in shown[3]
    assert shown[3][-1].startswith("(Enter: next")


def reader(data: bytes) -> tuple[KeyReader, list[str]]:
    stream = iter(data)
    echoed: list[str] = []

    def read(timeout: float | None) -> bytes | None:
        byte = next(stream, None)
        if byte is None:
            return None if timeout is not None else b""
        return bytes([byte])

    return KeyReader(read, echoed.append), echoed


@pytest.mark.parametrize(
    ("data", "read"),
    [
        (b"softmax\r", ["softmax"]),
        (b"\r", [""]),
        (b" ", [Scroll.PAGE_DOWN]),
        (
            b"\x1b[6~\x1b[5~\x1b[B\x1b[A\x1bOB\x1b[H\x1b[F",
            [
                Scroll.PAGE_DOWN,
                Scroll.PAGE_UP,
                Scroll.LINE_DOWN,
                Scroll.LINE_UP,
                Scroll.LINE_DOWN,
                Scroll.TOP,
                Scroll.BOTTOM,
            ],
        ),
        (b"h 1\n", ["h 1"]),  # a space inside a line is typed, not a page key
        (b"sx\x7fcores\r", ["scores"]),
        (b"abc\x15Q\r", ["Q"]),
        (b"\x1b[C\x1bq\r", ["q"]),  # → and a lone Esc do nothing
        (b"\xe7\x8c\xab\r", ["猫"]),
        (b"\x0c", [Scroll.REDRAW]),  # Ctrl-L, or the terminal resized
        (b"", [None]),
        (b"\x04", [None]),
    ],
)
def test_the_terminal_key_reader(data: bytes, read: list[str | Scroll | None]) -> None:
    keys, _ = reader(data)
    assert [keys() for _ in read] == read


def test_a_line_typed_before_a_page_key_is_kept() -> None:
    keys, echoed = reader(b"sof\x1b[Btmax\r")
    assert keys() is Scroll.LINE_DOWN
    assert keys() == "softmax"
    # "sof" echoed as typed, then again after the prompt the page key redrew
    assert "".join(echoed) == "sof" + "softmax\n"
