"""The list of stages down the left side: the head's walk, numbered as the keys jump.

Clicking a stage selects it (the app hears :class:`~textual.widgets.OptionList`'s
``OptionSelected``). Stage names come from the trace made visible; they are
:class:`~rich.text.Text`, never markup.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList

from attntrace.explore.walk import Walk, entry


class StageList(OptionList):
    """The walk's stages, the one on screen highlighted."""

    def __init__(self) -> None:
        super().__init__(id="stages")
        self.can_focus = False  # the keys go to the table; the mouse still selects
        self.names: list[str] = []

    def show(self, walk: Walk) -> None:
        names = [entry(stage) for stage in walk.stages]
        if names != self.names:
            self.clear_options()
            self.add_options(
                [Text.assemble((f"{i + 1} ", "dim"), name) for i, name in enumerate(names)]
            )
            self.names = names
        self.highlighted = walk.position
