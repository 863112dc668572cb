"""The explorer: a stage list, the stage's table under its pinned title, the cell's story.

:class:`ExploreApp` holds one trace (made visible: tokens are a stranger's text) and a
:class:`~attntrace.explore.walk.Walk` through it; every key is a move of the walk, then
:meth:`ExploreApp.refresh_all` draws the walk's place. A real model's other layers are
traced in a worker thread (:mod:`.layers`), the table covered by a loading indicator
and the status line saying how far the work has got.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Input, OptionList, Static

from attntrace.errors import InputError
from attntrace.explore.heading import stage_heading, where_line
from attntrace.explore.help import HelpScreen
from attntrace.explore.keys import Abilities
from attntrace.explore.layers import Layers, Reporter
from attntrace.explore.stage_list import StageList
from attntrace.explore.stage_table import StageTable
from attntrace.explore.story import StoryPane
from attntrace.explore.walk import Walk
from attntrace.forward.cell_story import cell_story
from attntrace.kernel.progress import reporting_to
from attntrace.kernel.trace import Trace
from attntrace.ui.shown import shown_trace
from attntrace.visible import visible

CSS = """
#where { height: 1; }
#main { height: 1fr; }
#stages { width: 14; height: 100%; border: none; padding: 0; }
#right { width: 1fr; }
#heading { height: auto; max-height: 4; }
#table { height: 1fr; }
#story { height: 7; border-top: solid $accent; }
#status { height: 1; }
#command { height: 1; border: none; padding: 0; display: none; }
"""


class ExploreApp(App[None]):
    """A trace explored full-screen (docs/explore.md)."""

    CSS = CSS
    TITLE = "attntrace explore"
    BINDINGS: ClassVar[list[BindingType]] = [
        # the table scrolls a page on PageUp/PageDown: here they move a stage
        Binding("n,pagedown", "stage(1)", "next stage", priority=True),
        Binding("b,pageup", "stage(-1)", "previous stage", priority=True),
        Binding("h", "head(1)", "next head"),
        Binding("H", "head(-1)", "previous head"),
        Binding("l", "layer(1)", "next layer"),
        Binding("L", "layer(-1)", "previous layer"),
        Binding("colon", "command", "jump by name"),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
        *(Binding(str(k), f"jump('{k}')", show=False) for k in range(1, 10)),
    ]

    def __init__(self, trace: Trace, layers: Layers | None = None) -> None:
        super().__init__()
        self.layers = layers
        self.walk = Walk(shown_trace(trace))
        self.walk.jump("softmax")  # attention's heart first, where the trace has one
        self.message = ""
        self.busy = False

    @property
    def trace(self) -> Trace:
        return self.walk.trace

    @property
    def abilities(self) -> Abilities:
        return Abilities(
            heads=len(self.trace.traced_heads) > 1,
            layers=self.layers is not None,
            decode=False,
            grad=False,
        )

    def compose(self) -> ComposeResult:
        yield Static(id="where")
        with Horizontal(id="main"):
            yield StageList()
            with Vertical(id="right"):
                yield Static(id="heading")
                yield StageTable()
                yield StoryPane()
        yield Static(id="status")
        yield Input(id="command", placeholder="a stage's name or number, then Enter")

    def on_mount(self) -> None:
        self.query_one(StageTable).focus()
        self.refresh_all()

    def on_resize(self, event: events.Resize) -> None:
        self.query_one(StoryPane).styles.height = max(7, event.size.height // 3)

    # --- drawing ---------------------------------------------------------------

    def refresh_all(self) -> None:
        walk = self.walk
        self.query_one("#where", Static).update(where_line(walk, self.trace))
        self.query_one("#heading", Static).update(stage_heading(walk, self.trace))
        self.query_one(StageList).show(walk)
        self.query_one(StageTable).show(walk.stage, self.trace, walk.row, walk.col)
        self.explain()
        self.show_status()

    def explain(self) -> None:
        walk = self.walk
        self.query_one(StoryPane).tell(cell_story(self.trace, walk.stage, walk.row, walk.col))

    def show_status(self) -> None:
        can = self.abilities
        if self.message:
            text = Text(self.message, style="yellow")
        else:
            hints = ["n/b stage", "arrows cell"]
            hints += ["h/H head"] if can.heads else []
            hints += ["l/L layer"] if can.layers else []
            hints += [":name jump", "? help", "q quit"]
            text = Text(" · ".join(hints), style="dim")
        text.no_wrap = True
        text.overflow = "ellipsis"
        self.query_one("#status", Static).update(text)

    def say(self, message: str) -> None:
        self.message = message
        self.show_status()

    def moved(self, message: str) -> None:
        self.message = message
        self.refresh_all()

    # --- keys ------------------------------------------------------------------

    def action_stage(self, by: int) -> None:
        self.moved(self.walk.step(by))

    def action_jump(self, key: str) -> None:
        self.moved(self.walk.jump(key))

    def action_head(self, by: int) -> None:
        self.moved(self.walk.other_head(by))

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.abilities))

    def action_command(self) -> None:
        line = self.query_one("#command", Input)
        line.value = ""
        line.display = True
        line.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.close_command()
        if event.value.strip():
            self.moved(self.walk.jump(event.value))

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape" and self.query_one("#command", Input).display:
            self.close_command()

    def close_command(self) -> None:
        line = self.query_one("#command", Input)
        line.display = False
        self.query_one(StageTable).focus()

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        walk = self.walk
        if self.query_one(StageTable).shown is not walk.stage:
            return  # a highlight from the table as it was refilled
        if (event.coordinate.row, event.coordinate.column) != (walk.row, walk.col):
            walk.cell(event.coordinate.row, event.coordinate.column)
            self.explain()

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        self.walk.cell(event.coordinate.row, event.coordinate.column)
        self.explain()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.moved(self.walk.go(event.option_index))

    # --- layers ----------------------------------------------------------------

    def action_layer(self, by: int) -> None:
        layers = self.layers
        if layers is None:
            self.say("l and L change the layer of a real model (explore --model NAME)")
            return
        if self.busy:
            self.say("still computing the last layer asked for")
            return
        self.busy = True
        target = layers.after(by)
        self.query_one(StageTable).loading = True
        self.say(f"computing layer {target} of {visible(layers.model)}…")
        self.run_worker(lambda: self.compute_layer(layers, target), thread=True, exclusive=True)

    def compute_layer(self, layers: Layers, target: int) -> None:
        """In the worker thread: trace the layer, then hand it to the screen's thread."""
        reporter = Reporter(lambda text: self.call_from_thread(self.say, text))
        try:
            with reporting_to(reporter):
                trace = layers.trace(target)
        except InputError as error:
            self.call_from_thread(self.layer_failed, str(error))
            return
        self.call_from_thread(self.layer_done, layers, target, trace)

    def layer_done(self, layers: Layers, target: int, trace: Trace) -> None:
        self.busy = False
        self.layers = Layers(layers.model, layers.count, target, layers.trace)
        old = self.walk
        walk = Walk(shown_trace(trace), head=old.head)
        walk.go(min(old.position, len(walk.indices) - 1))
        walk.cell(old.row, old.col)
        self.walk = walk
        self.query_one(StageTable).loading = False
        self.moved(f"layer {target} of {layers.count}")

    def layer_failed(self, message: str) -> None:
        self.busy = False
        self.query_one(StageTable).loading = False
        self.say(message)
