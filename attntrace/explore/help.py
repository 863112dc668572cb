"""``?``: the keys that work here, over the explorer; any key or a click closes it. Under
them, what the tokenizer's marks mean (``Ġ``, ``▁``, ``##``) where the tokens have any."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.screen import ModalScreen
from textual.widgets import Static

from attntrace.explore.keys import Abilities, key_list


def help_table(can: Abilities) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for keys, what in key_list(can):
        table.add_row(Text(keys), Text(what))
    return table


def help_text(can: Abilities, note: str = "") -> RenderableType:
    """The key list, and ``note`` (the tokenizer marks, :func:`marks_note`) under it."""
    if not note:
        return help_table(can)
    return Group(help_table(can), Text(""), Text(note, style="dim"))


class HelpScreen(ModalScreen[None]):
    """The key list in a box; it closes on any key or click."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Static { width: auto; max-width: 90%; height: auto; max-height: 90%;
        border: round $accent; padding: 0 1; background: $panel; }
    """

    def __init__(self, can: Abilities, note: str = "") -> None:
        super().__init__()
        self.can, self.note = can, note

    def compose(self) -> ComposeResult:
        yield Static(help_text(self.can, self.note), id="help")

    def on_key(self, event: events.Key) -> None:
        event.stop()
        self.dismiss(None)

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.dismiss(None)
