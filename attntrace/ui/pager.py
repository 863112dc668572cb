"""A step-mode screen at any terminal height: its top pinned, the rest paged in place.

A screen (a stage, a gradient, a tile, a decoding step) is drawn in two parts: the
pinned top (where the walk is, the title, the formula) and the body (paragraph, tables,
the arithmetic). On a terminal shorter than the screen, the top stays and the body is
shown a page at a time; a page that starts inside a table opens with that table's title
and column header again, so no number is read without the heading that names it.
Piped, a screen is printed whole, as before: :class:`Paged` is then just both parts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from io import StringIO

from rich.cells import cell_len
from rich.console import Console

Draw = Callable[[Console], None]

RULE = re.compile(r"─{3,}[─ ]*")  # a table's line under its column header
HEADER_MOST = 5  # lines of a table's heading repeated: a title of up to 3 lines, header, rule
BODY_LEAST = 3  # rows of body a page keeps; below it the pinned top gives way
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Scroll(Enum):
    """A key that moves inside a screen rather than between screens."""

    LINE_DOWN = "↓"
    LINE_UP = "↑"
    PAGE_DOWN = "space / PageDown"
    PAGE_UP = "PageUp"
    TOP = "Home"
    BOTTOM = "End"
    REDRAW = "Ctrl-L"  # or a resized terminal: the same page, drawn again


@dataclass(frozen=True)
class Paged:
    """A screen as its pinned top and its body; called, it draws both (the piped form)."""

    pinned: Draw
    body: Draw

    def __call__(self, console: Console) -> None:
        self.pinned(console)
        self.body(console)


@dataclass(frozen=True)
class Lines:
    """Drawn lines: as written to the terminal (with colour) and as plain text."""

    styled: tuple[str, ...]
    plain: tuple[str, ...]

    def __add__(self, other: Lines) -> Lines:
        return Lines(self.styled + other.styled, self.plain + other.plain)

    def __len__(self) -> int:
        return len(self.plain)


def recording_console(like: Console) -> Console:
    """A console drawing as ``like`` does (width, colours) into memory, recording."""
    return Console(
        file=StringIO(),
        record=True,
        width=like.width,
        highlight=False,
        color_system=like.color_system,  # type: ignore[arg-type]
        no_color=like.no_color,
        force_terminal=like.is_terminal,
    )


def captured(like: Console, draw: Draw) -> Lines:
    """What ``draw`` prints on a console like ``like`` (width, colours), as lines."""
    capture = recording_console(like)
    draw(capture)
    styled = capture.file.getvalue().split("\n")  # type: ignore[attr-defined]
    if styled and styled[-1] == "":
        styled.pop()  # the last line's newline ends it: no line after
    plain = tuple(ESCAPES.sub("", line) for line in styled)
    return Lines(tuple(styled), plain)


def rows_of(line: str, width: int) -> int:
    """Terminal rows a plain line takes at ``width`` (a line wider than it wraps)."""
    return max(1, math.ceil(cell_len(line) / max(1, width)))


def table_headings(plain: tuple[str, ...]) -> list[tuple[int, int] | None]:
    """For each line, the heading (start, stop) of the table it is a row of, or None.

    A table is known by the rule under its column header (a line of ``─``); its heading
    is that rule and the lines above it back to a blank line (at most
    :data:`HEADER_MOST`), and its rows run from the rule to the next blank line.
    """
    owners: list[tuple[int, int] | None] = [None] * len(plain)
    current: tuple[int, int] | None = None
    for i, line in enumerate(plain):
        if not line.strip():
            current = None
        elif RULE.fullmatch(line.strip()) and i > 0:
            start = i
            while start > 0 and i - start + 1 < HEADER_MOST and plain[start - 1].strip():
                start -= 1
            current = (start, i + 1)
        elif current is not None:
            owners[i] = current
    return owners


@dataclass(frozen=True)
class Window:
    """One page: the heading lines repeated on top, then body lines start:stop."""

    heading: tuple[int, ...]
    start: int
    stop: int


class Layout:
    """A screen laid out in ``rows`` terminal rows of ``width`` cells: the pinned top,
    then pages of the body. Where the top leaves fewer than :data:`BODY_LEAST` rows,
    only its first line (where the walk is) stays and the rest joins the body."""

    def __init__(self, pinned: Lines, body: Lines, width: int, rows: int) -> None:
        self.width = width
        top = sum(rows_of(line, width) for line in pinned.plain)
        if top + BODY_LEAST > rows and len(pinned) > 1:
            pinned, body = (
                Lines(pinned.styled[:1], pinned.plain[:1]),
                Lines(pinned.styled[1:], pinned.plain[1:]) + body,
            )
            top = rows_of(pinned.plain[0], width)
        while len(body) > 1 and not body.plain[-1].strip():  # a screen's closing blank
            body = Lines(body.styled[:-1], body.plain[:-1])
        self.pinned, self.body = pinned, body
        self.room = max(1, rows - top)  # rows for the body on every page
        self.headings = table_headings(body.plain)
        self.spans = sorted({owner for owner in self.headings if owner is not None})

    def _rows(self, index: int) -> int:
        return rows_of(self.body.plain[index], self.width)

    def window(self, start: int) -> Window:
        """The page that starts at body line ``start``."""
        heading: tuple[int, ...] = ()
        owner = self.headings[start] if start < len(self.body) else None
        if owner is not None:  # a page opening on a table's rows: its heading first
            lines = tuple(range(*owner))
            if sum(map(self._rows, lines)) < self.room:  # and a row under it
                heading = lines
        left = self.room - sum(map(self._rows, heading))
        stop = start
        while stop < len(self.body) and (stop == start or self._rows(stop) <= left):
            left -= self._rows(stop)
            stop += 1
        for first, ruled in self.spans:  # a heading with no row under it waits for the next page
            if start < first < stop <= ruled:
                stop = first
        return Window(heading, start, stop)

    @property
    def fits(self) -> bool:
        return self.window(0).stop >= len(self.body)

    @property
    def last_start(self) -> int:
        """Where the last page starts: the earliest start whose page reaches the end."""
        start = len(self.body) - 1
        while start > 0 and self.window(start - 1).stop >= len(self.body):
            start -= 1
        return max(0, start)

    def clamp(self, start: int) -> int:
        return min(max(0, start), self.last_start)

    def scrolled(self, start: int, key: Scroll) -> int | None:
        """Where ``key`` takes the page that starts at ``start``; None past either end
        of the body (the walk's next or previous screen, for the page keys)."""
        last = self.last_start
        if key is Scroll.REDRAW:
            return start
        if key is Scroll.TOP:
            return 0
        if key is Scroll.BOTTOM:
            return last
        if key is Scroll.LINE_DOWN:
            return min(start + 1, last)
        if key is Scroll.LINE_UP:
            return max(start - 1, 0)
        if key is Scroll.PAGE_DOWN:
            return None if start >= last else min(self.window(start).stop, last)
        if start == 0:
            return None
        back = max(0, start - self.room)  # the furthest page back that still reaches start
        while self.window(back).stop < start:
            back += 1
        return back

    def page(self, start: int) -> list[str]:
        """The styled lines of the pinned top and the page starting at ``start``."""
        window = self.window(start)
        body = self.body.styled
        return [
            *self.pinned.styled,
            *(body[i] for i in window.heading),
            *body[window.start : window.stop],
        ]

    def where(self, start: int) -> str:
        """``lines 18–34 of 45`` of the body, for the line under a paged screen."""
        window = self.window(start)
        return f"lines {window.start + 1}–{window.stop} of {len(self.body)}"


@dataclass
class Move:
    """What a typed line asks for: a screen index to show, quit, help, or a complaint."""

    index: int | None = None
    quit: bool = False
    help: bool = False
    error: str | None = None


ReadKey = Callable[[], "str | Scroll | None"]
END = 1 << 62  # a page start past any body: clamped to the last page when drawn


@dataclass(frozen=True)
class Walk:
    """A walk's screens and words: ``screen(i)`` draws screen ``i`` of ``count``,
    ``interpret(line, i)`` turns a typed line into a :class:`Move`, ``prompt(i)`` is the
    prompt's text there and ``usage`` the help; ``noun`` names a screen (stage, step)."""

    count: int
    screen: Callable[[int], Paged]
    interpret: Callable[[str, int], Move]
    prompt: Callable[[int], str]
    usage: str
    noun: str


def paged_walk(console: Console, walk: Walk, read_key: ReadKey) -> None:
    """Walk the screens on a terminal, each drawn to fit its height: the pinned top,
    one page of the body, a line saying which lines are shown, any help or complaint,
    the prompt. A page key moves inside the screen (past its end, to the next screen);
    a typed line moves as in the piped walk. Ends on quit, past the last screen, or at
    the end of input."""
    index, start = 0, 0
    message: tuple[str, str] | None = None
    drawn: tuple[int, int, Lines, Lines] | None = None
    while True:
        width, height = console.size
        if drawn is None or drawn[:2] != (index, width):
            screen = walk.screen(index)
            drawn = (index, width, captured(console, screen.pinned), captured(console, screen.body))
        footer = _footer(console, message, walk.prompt(index))
        rows = height - 1 - sum(rows_of(line, width) for line in footer.plain)
        layout = Layout(drawn[2], drawn[3], width, max(1, rows))
        start = layout.clamp(start)
        status = "" if layout.fits else _status(layout, start, index, walk)
        lines = [*layout.page(start), _dim(console, status), *footer.styled]
        console.file.write("\x1b[H\x1b[2J" + "\n".join(lines))
        console.file.flush()
        key = read_key()
        if key is None:
            console.file.write("\n")
            return
        message = None
        if isinstance(key, Scroll):
            index, start = _scrolled(layout, index, start, key, walk.count)
            continue
        move = walk.interpret(key, index)
        if move.quit:
            return
        if move.help:
            pages = f"space/PgDn, PgUp, ↑/↓, Home/End: move within this {walk.noun}"
            message = (f"{walk.usage} · {pages}", "")
        elif move.error:
            message = (move.error, "yellow")
        elif move.index is not None:
            index, start = move.index, 0


def _scrolled(layout: Layout, index: int, start: int, key: Scroll, count: int) -> tuple[int, int]:
    """The screen and page start after a page key: a page past the body's end is the
    next screen's first, one before its start the previous screen's last."""
    target = layout.scrolled(start, key)
    if target is not None:
        return index, target
    if key is Scroll.PAGE_DOWN and index < count - 1:
        return index + 1, 0
    if key is Scroll.PAGE_UP and index > 0:
        return index - 1, END
    return index, start


def _status(layout: Layout, start: int, index: int, walk: Walk) -> str:
    """The line under a paged screen: which lines show, and what the page keys do."""
    last = layout.last_start
    ahead = (
        "space/↓/PgDn: more"
        if start < last
        else f"space: next {walk.noun}"
        if index < walk.count - 1
        else f"the last {walk.noun}'s end"
    )
    back = " · ↑/PgUp: back" if start > 0 else ""
    return f"{layout.where(start)} · {ahead}{back}"


def _dim(console: Console, text: str) -> str:
    if not text:
        return ""
    from rich.text import Text

    shown = Text(text, style="dim", no_wrap=True, overflow="ellipsis")
    lines = captured(console, lambda c: c.print(shown, end=""))
    return lines.styled[0] if lines.styled else ""


def _footer(console: Console, message: tuple[str, str] | None, prompt: str) -> Lines:
    """The help or complaint, then the prompt (left open for the key)."""
    from rich.text import Text

    from attntrace.ui.wrap import Wrapped

    said = Lines((), ())
    if message is not None:
        text, style = message
        said = captured(console, lambda c: c.print(Wrapped(Text(text, style=style))))
    asked = captured(console, lambda c: c.print(Text.assemble((prompt, "dim"), " > "), end=""))
    return said + asked
