"""The pane that spells out the selected cell's arithmetic.

It shows a :class:`~attntrace.forward.cell_story.CellStory` for the cell under the
cursor: the cell's heading, the stage's formula, then the arithmetic line by line. The
lines are plain text built from tokens, so each goes through
:func:`attntrace.visible.visible` and reaches the screen as :class:`~rich.text.Text`.

A line wider than the pane is wrapped here, not by Rich: a break falls only before an
operator (``= 0.310367`` moves down whole, never ``0.31`` / ``0367``) or between words,
and the continuation is indented under its line, so it cannot be read as a line of
its own. A number is never cut, unless one word is wider than the whole pane.
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.widget import Widget

from attntrace.forward.cell_story import CellStory
from attntrace.visible import visible

# A story's line is cut past this many characters (a dot product over 4,096 dimensions
# written out would be a screenful of one line; the pane wraps what it keeps).
LINE_LIMIT = 4000
HANG = 4  # a continuation's indent past its line's own
# words a line may break before, each kept with the operand after it
OPERATORS = frozenset(["=", "+", "−", "-", "×", "·", "/", "÷", "≤", "≥", "<", ">", "∘", "→"])
WORD = re.compile(r"( *)(\S+)")


def story_lines(story: CellStory) -> list[tuple[str, str]]:
    """(line, style) of the story, made visible: heading, formula, the arithmetic."""
    shown = [(visible(story.heading, LINE_LIMIT), "bold")]
    shown.append((visible(story.formula, LINE_LIMIT), "cyan"))
    shown += [(visible(line, LINE_LIMIT), "") for line in story.lines]
    return shown


def units(line: str) -> list[tuple[str, str]]:
    """``line`` as (spaces before, unit): words, an operator glued to what follows it."""
    found: list[tuple[str, str]] = []
    glue = False
    for spaces, word in WORD.findall(line):
        if glue and found:
            before, unit = found[-1]
            found[-1] = (before, f"{unit}{spaces}{word}")
        else:
            found.append((spaces, word))
        glue = word in OPERATORS
    return found


def wrapped(line: str, width: int) -> list[str]:
    """``line`` in lines of at most ``width`` cells, broken only between units; the
    continuations indented :data:`HANG` past the line's own indent."""
    if cell_len(line) <= width or width < 8:
        return [line]
    indent = " " * min(len(line) - len(line.lstrip(" ")) + HANG, width // 2)
    rows: list[str] = []
    current = ""
    for spaces, unit in units(line):
        if not current:
            current = spaces + unit  # the line's own indent, kept
        elif cell_len(current) + len(spaces) + cell_len(unit) <= width:
            current += spaces + unit
        else:
            rows.append(current)
            current = indent + unit
        while cell_len(current) > width:  # one unit wider than the pane: folded
            cut = _fits(current, width)
            rows.append(current[:cut])
            current = indent + current[cut:]
    rows.append(current)
    return rows


def _fits(text: str, width: int) -> int:
    """How many characters of ``text`` fit in ``width`` cells (at least one)."""
    used = 0
    for i, char in enumerate(text):
        used += cell_len(char)
        if used > width:
            return max(1, i)
    return len(text)


def story_text(story: CellStory, width: int = LINE_LIMIT) -> Text:
    """The story as the pane shows it at ``width`` cells: every line wrapped to fit."""
    text = Text(no_wrap=True, overflow="crop")
    first = True
    for line, style in story_lines(story):
        for row in wrapped(line, width):
            text.append(("" if first else "\n") + row, style=style)
            first = False
    return text


class StoryText(Widget):
    """The story, wrapped to the pane's width each time it is drawn."""

    DEFAULT_CSS = "StoryText { height: auto; }"

    def __init__(self) -> None:
        super().__init__(id="story-text")
        self.story: CellStory | None = None

    def render(self) -> Text:
        if self.story is None:
            return Text("")
        return story_text(self.story, self.size.width)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if self.story is None:
            return 1
        return len(story_text(self.story, width).plain.split("\n"))


class StoryPane(VerticalScroll):
    """The explanation; it scrolls when the story is longer than the pane."""

    def __init__(self) -> None:
        super().__init__(id="story")
        self.can_focus = False
        self.body = StoryText()

    def compose(self) -> ComposeResult:
        yield self.body

    def tell(self, story: CellStory) -> None:
        self.body.story = story
        self.body.refresh(layout=True)
        self.scroll_home(animate=False)
