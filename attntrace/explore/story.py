"""The pane that spells out the selected cell's arithmetic.

It shows :func:`attntrace.forward.cell_story.cell_story` for the cell under the cursor:
the cell's heading, the stage's formula, then the arithmetic line by line. The lines are
plain text built from tokens, so each goes through :func:`attntrace.visible.visible`
and reaches the screen as :class:`~rich.text.Text`.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from attntrace.forward.cell_story import CellStory
from attntrace.visible import visible

# A story's line is cut past this many characters (a dot product over 4,096 dimensions
# written out would be a screenful of one line; the pane wraps what it keeps).
LINE_LIMIT = 4000


def story_text(story: CellStory) -> Text:
    """The story as the pane shows it: heading, formula, the arithmetic."""
    text = Text()
    text.append(visible(story.heading, LINE_LIMIT), style="bold")
    text.append("\n")
    text.append(visible(story.formula, LINE_LIMIT), style="cyan")
    for line in story.lines:
        text.append("\n" + visible(line, LINE_LIMIT))
    return text


class StoryPane(VerticalScroll):
    """The explanation; it scrolls when the story is longer than the pane."""

    def __init__(self) -> None:
        super().__init__(id="story")
        self.can_focus = False
        self.body = Static(Text(""), id="story-text")

    def compose(self) -> ComposeResult:
        yield self.body

    def tell(self, story: CellStory) -> None:
        self.body.update(story_text(story))
        self.scroll_home(animate=False)
