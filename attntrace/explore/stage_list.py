"""The list of stages down the left side: the head's walk, numbered as the keys jump.

Clicking a stage selects it (the app hears :class:`~textual.widgets.OptionList`'s
``OptionSelected``). Stage names come from the trace made visible; they are
:class:`~rich.text.Text`, never markup.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList

from attntrace.explore.walk import Walk
from attntrace.kernel.trace import Stage


class StageList(OptionList):
    """The walk's stages, the one on screen highlighted."""

    def __init__(self) -> None:
        super().__init__(id="stages")
        self.can_focus = False  # the keys go to the table; the mouse still selects
        self.names: list[str] = []

    def show(self, walk: Walk) -> None:
        names = [_entry(stage) for stage in walk.stages]
        if names != self.names:
            self.clear_options()
            self.add_options(
                [Text.assemble((f"{i + 1} ", "dim"), name) for i, name in enumerate(names)]
            )
            self.names = names
        self.highlighted = walk.position


def _entry(stage: Stage) -> str:
    """A stage's name in the list; a K/V head's sum over its query heads (grad's d_K,
    d_V under GQA) marked ``kv0``, apart from the head's own."""
    if stage.head is None and stage.kv_head is not None:
        return f"{stage.name} kv{stage.kv_head}"
    return stage.name
