"""``?``: the keys that work here, over the explorer; any key or a click closes it."""

from __future__ import annotations

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


class HelpScreen(ModalScreen[None]):
    """The key list in a box; it closes on any key or click."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Static { width: auto; max-width: 90%; height: auto; max-height: 90%;
        border: round $accent; padding: 0 1; background: $panel; }
    """

    def __init__(self, can: Abilities) -> None:
        super().__init__()
        self.can = can

    def compose(self) -> ComposeResult:
        yield Static(help_table(self.can), id="help")

    def on_key(self, event: events.Key) -> None:
        event.stop()
        self.dismiss(None)

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.dismiss(None)
