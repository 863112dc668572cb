"""The explorer: a stage list, the stage's table under its pinned title, the cell's story.

:class:`ExploreApp` walks a book (:mod:`.book`): the trace's stages, decode's steps
(``d``) or grad's gradients (``g``), each kept in a :class:`~attntrace.explore.walk.Walk`.
Every key is a move of the walk, then :meth:`ExploreApp.refresh_all` draws the walk's
place. What is computed after the screen opens (a real model's other layers, the decode,
the gradients) runs in a worker thread (:mod:`.sources`), the table covered by a loading
indicator and the status line saying how far the work has got.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, OptionList, Static

from attntrace.errors import InputError
from attntrace.explore.book import Book, trace_book
from attntrace.explore.heading import where_line
from attntrace.explore.help import HelpScreen
from attntrace.explore.keys import Abilities, status_hints
from attntrace.explore.sources import Layers, Reporter, Sources
from attntrace.explore.stage_list import StageList
from attntrace.explore.stage_table import StageTable
from attntrace.explore.story import StoryPane
from attntrace.explore.walk import Walk
from attntrace.kernel.labels import marks_note
from attntrace.kernel.progress import reporting_to
from attntrace.kernel.trace import Trace
from attntrace.visible import visible

CSS = """
#where { height: 1; }
#main { height: 1fr; }
/* a name too long for the list (decode's steps are tokens) ends in … */
#stages { width: 14; height: 100%; border: none; padding: 0 1 0 0;
    text-wrap: nowrap; text-overflow: ellipsis; }
#right { width: 1fr; }
#heading { height: auto; max-height: 4; }
#tables { height: 13; }  /* split_height sets it */
#table { width: 1fr; height: 100%; }
#mirror { width: 1fr; height: 100%; display: none; border-left: solid $accent; }
#tables.stacked { layout: vertical; }
#tables.stacked #table { width: 100%; height: 1fr; }
#tables.stacked #mirror { width: 100%; height: 1fr; border-left: none; border-top: solid $accent; }
#story { height: 1fr; border-top: solid $accent; }
#status { height: 1; }  /* 2 for a message wider than the screen: show_status */
#command { height: 1; border: none; padding: 0; display: none; }
"""
STACKED_BELOW = 110  # columns: narrower, grad's forward table goes below the gradient's
LIST_WIDTH = 14  # the stage list's columns (#stages)
HEADING_LINES = 4  # the heading's most lines (#heading)
TABLE_ROWS = 3  # rows of a table kept in view however small the screen, where it has them


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
        Binding("t", "view('trace')", "the trace"),
        Binding("d", "view('decode')", "decode"),
        Binding("g", "view('grad')", "grad"),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
        # Textual's own ctrl+c only says "press ctrl+q": here it quits, as q does
        Binding("ctrl+c", "quit", "quit", show=False, priority=True),
        *(Binding(str(k), f"jump('{k}')", show=False) for k in range(1, 10)),
    ]

    def __init__(
        self, trace: Trace, layers: Layers | None = None, sources: Sources | None = None
    ) -> None:
        super().__init__()
        self.layers = layers
        self.sources = sources or Sources()
        self.books: dict[str, Book] = {}
        self.walks: dict[str, Walk] = {}
        self.view = "trace"
        self.open_book(trace_book(trace))
        self.walk.jump("softmax")  # attention's heart first, where the trace has one
        # Ġ, ▁, ## in the tokens: what they mean, said once as the screen opens (and in ?)
        self.note = marks_note(trace.tokens, trace.context_tokens or ())
        self.message = self.note
        self.busy = False
        self.typing = False  # after ":", until Enter or Esc: the keys are the name's

    def open_book(self, book: Book, like: Walk | None = None) -> None:
        """Show ``book``, at ``like``'s place where it has one (a layer recomputed), on
        the head shown before (one head for every view)."""
        walk = book.walk()
        if like is not None:
            walk.go(min(like.position, len(walk.indices) - 1))
            walk.cell(like.row, like.col)
        shown = like or self.walks.get(self.view)
        if shown is not None:
            walk.take_head(shown.head)
        self.books[book.view] = book
        self.walks[book.view] = walk
        self.view = book.view

    @property
    def walk(self) -> Walk:
        return self.walks[self.view]

    @property
    def book(self) -> Book:
        return self.books[self.view]

    @property
    def trace(self) -> Trace:
        return self.book.trace

    @property
    def abilities(self) -> Abilities:
        return Abilities(
            heads=self.book.heads,
            layers=self.layers is not None,
            decode=self.sources.decode is not None,
            grad=self.sources.grad is not None,
        )

    def compose(self) -> ComposeResult:
        yield Static(id="where")
        with Horizontal(id="main"):
            yield StageList()
            with Vertical(id="right"):
                yield Static(id="heading")
                with Horizontal(id="tables"):
                    yield StageTable()
                    yield StageTable("mirror")
                yield StoryPane()
        yield Static(id="status")
        yield Input(id="command", placeholder="a stage's name or number, then Enter")

    def on_mount(self) -> None:
        self.query_one("#mirror", StageTable).can_focus = False
        self.query_one("#command", Input).can_focus = False  # the app types into it
        self.query_one("#table", StageTable).focus()
        self.refresh_all()

    def on_resize(self, event: events.Resize) -> None:
        # grad's two tables: side by side they would be some 30 columns each below
        # STACKED_BELOW columns, too few for three numbers; one above the other instead
        self.query_one("#tables").set_class(event.size.width < STACKED_BELOW, "stacked")
        self.split_height()
        self.show_status()  # its hints fitted to the new width

    def split_height(self) -> None:
        """The tables' pane as tall as its rows need, up to what leaves the story a third
        (at least 6 lines); the story the rest. However small the screen, the tables keep
        :data:`TABLE_ROWS` rows where they have them. (A fixed story once left blank lines
        under it-animal's rows at 120 × 50 with the story cut, and no row at 40 × 15.)"""
        width, height = self.size
        if height <= 0:
            return
        right = max(1, width - LIST_WIDTH)
        heading = self.query_one("#heading", Static)  # its lines as Textual wraps them
        lines = min(HEADING_LINES, heading.get_content_height(self.size, self.size, right))
        given = self.query_one("#status").styles.height
        status = 1 if given is None else int(given.value)
        free = height - 1 - status - lines  # below the top line and heading, above the status
        stacked = self.query_one("#tables").has_class("stacked")
        tables = [self.query_one("#table", StageTable)]
        if self.book.mirror is not None and self.book.mirror(self.walk.stage) is not None:
            tables.append(self.query_one("#mirror", StageTable))
        across = right if stacked or len(tables) == 1 else right // 2
        needs: list[tuple[int, int]] = []  # each table's lines: all its rows, the fewest
        for table in tables:
            rows = 0 if table.shown is None else table.shown.shape[0]
            bar = 1 if table.virtual_size.width > across else 0  # the horizontal scrollbar
            needs.append((1 + rows + bar, 1 + min(rows, TABLE_ROWS) + bar))
        if stacked:  # one above the other, a border line between them
            need = sum(n for n, _ in needs) + len(needs) - 1
            least = sum(m for _, m in needs) + len(needs) - 1
        else:
            need, least = max(n for n, _ in needs), max(m for _, m in needs)
        share = free - max(6, free // 3)
        self.query_one("#tables").styles.height = max(1, min(need, max(share, least)))

    # --- drawing ---------------------------------------------------------------

    def refresh_all(self) -> None:
        walk, book = self.walk, self.book
        self.query_one("#where", Static).update(where_line(walk, book.view, book.dtype))
        self.query_one("#heading", Static).update(book.heading(walk))
        self.query_one(StageList).show(walk)
        self.query_one("#table", StageTable).show(walk.stage, self.trace, walk.row, walk.col)
        self.show_mirror()
        self.split_height()
        self.explain()
        self.show_status()

    def show_mirror(self) -> None:
        """grad: the forward stage beside the gradient, its cursor on the same cell."""
        mirror = self.query_one("#mirror", StageTable)
        walk = self.walk
        beside = None if self.book.mirror is None else self.book.mirror(walk.stage)
        mirror.display = beside is not None
        if beside is not None:
            same = beside.shape == walk.stage.shape
            mirror.show_cursor = same
            mirror.show(beside, self.trace, walk.row if same else 0, walk.col if same else 0)
            if same:  # the same rows and columns in view in both, as far as they fit
                table = self.query_one("#table", StageTable)
                mirror.scroll_to(table.scroll_x, table.scroll_y, animate=False)
                mirror.scroll_to_cursor()

    def explain(self) -> None:
        self.query_one(StoryPane).tell(self.book.story(self.walk))
        if self.book.mirror is not None:
            self.show_mirror()

    def show_status(self) -> None:
        """The keys' hints, or the last key's message: wrapped onto a second line where
        it is wider than the screen (the tables give the line up), never cut."""
        can = self.abilities
        width = max(1, self.size.width)
        if self.message:
            text = Text(self.message, style="yellow")
        else:
            text = Text(status_hints(can, self.walk.noun, width), style="dim")
        lines = 2 if cell_len(text.plain) > width else 1
        text.no_wrap = lines == 1
        text.overflow = "ellipsis"
        status = self.query_one("#status", Static)
        status.update(text)
        if status.styles.height is None or status.styles.height.value != lines:
            status.styles.height = lines
            self.split_height()

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
        self.push_screen(HelpScreen(self.abilities, self.note))

    def action_command(self) -> None:
        line = self.query_one("#command", Input)
        line.value = ""
        line.display = True
        self.typing = True

    async def on_event(self, event: events.Event) -> None:
        """After ``:`` every key is the name's until Enter or Esc, however fast it comes:
        the app takes them, ``:`` too, before they are passed on to the table's queue.
        (A line given the focus gets it only after the keys already queued, which
        reached the table as moves: ``d`` of ``:d_K`` opened decode.)"""
        if isinstance(event, events.Key | events.Paste) and not event.is_forwarded:
            if self.typing:
                self.type(event)
                return
            over_help = self.screen is not self.screen_stack[0]
            if isinstance(event, events.Key) and event.key == "colon" and not over_help:
                event.stop()
                self.action_command()
                return
        await super().on_event(event)

    def type(self, event: events.Key | events.Paste) -> None:
        """One key (or a paste) of the name after ``:``."""
        event.stop()
        event.prevent_default()
        line = self.query_one("#command", Input)
        if isinstance(event, events.Paste):
            line.value += event.text.replace("\n", " ")
        elif event.key == "escape":
            self.close_command()
        elif event.key == "enter":
            self.close_command()
            if line.value.strip():
                self.moved(self.walk.jump(line.value))
        elif event.key == "backspace":
            line.value = line.value[:-1]
        elif event.key == "ctrl+c":
            self.close_command()
            self.exit()
        elif event.is_printable and event.character is not None:
            line.value += event.character
        line.cursor_position = len(line.value)

    def close_command(self) -> None:
        self.typing = False
        self.query_one("#command", Input).display = False

    def on_stage_table_cell_moved(self, event: StageTable.CellMoved) -> None:
        """The cursor moved (arrows), or a cell was chosen (Enter, a click): explain it.
        A click on the forward stage beside a gradient moves the gradient's cursor."""
        table = self.query_one("#table", StageTable)
        if event.table is not table:
            if event.table.shown is None or event.table.shown.shape != self.walk.stage.shape:
                return
            table.place(event.row, event.col, chosen=True)
            return
        if table.shown is self.walk.stage:
            self.walk.cell(event.row, event.col)
            self.explain()

    def on_stage_table_cell_chosen(self, event: StageTable.CellChosen) -> None:
        self.on_stage_table_cell_moved(event)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.moved(self.walk.go(event.option_index))

    # --- views and layers, computed in a worker ----------------------------------

    def action_view(self, view: str) -> None:
        if view in self.books:
            head = self.walk.head
            self.view = view
            self.walk.take_head(head)
            self.moved("")
            return
        sources = self.sources
        layer = 0 if self.layers is None else self.layers.current
        make: Callable[[], Book] | None = None
        if view == "decode" and sources.decode is not None:
            compute = sources.decode

            def make() -> Book:
                from attntrace.explore.decode_book import decode_book

                return decode_book(compute(layer))
        elif view == "grad" and sources.grad is not None:
            gradients = sources.grad

            def make() -> Book:
                from attntrace.explore.grad_book import grad_book

                return grad_book(gradients(layer))

        if make is None:
            self.say(sources.why_not_decode if view == "decode" else sources.why_not_grad)
            return
        self.start(f"computing {view}…", make, lambda book: self.opened(book, None))

    def action_layer(self, by: int) -> None:
        layers = self.layers
        if layers is None:
            self.say("l and L change the layer of a real model (explore --model MODEL)")
            return
        target = layers.after(by)
        self.start(
            f"computing layer {target} of {visible(layers.model)}…",
            lambda: trace_book(layers.trace(target)),
            lambda book: self.layer_done(layers, target, book),
        )

    def start(self, doing: str, make: Callable[[], Book], done: Callable[[Book], None]) -> None:
        """Run ``make`` in a worker thread, then ``done`` with its book on the screen's."""
        if self.busy:
            self.say("still computing what was asked for last")
            return
        self.busy = True
        self.query_one("#tables").loading = True
        self.say(doing)

        def work() -> None:
            reporter = Reporter(lambda text: self.call_from_thread(self.say, text))
            try:
                with reporting_to(reporter):
                    book = make()
            except InputError as error:
                self.call_from_thread(self.failed, str(error))
                return
            self.call_from_thread(done, book)

        self.run_worker(work, thread=True, exclusive=True)

    def opened(self, book: Book, like: Walk | None, message: str = "") -> None:
        self.busy = False
        self.query_one("#tables").loading = False
        self.open_book(book, like)
        self.moved(message)

    def layer_done(self, layers: Layers, target: int, book: Book) -> None:
        self.layers = Layers(layers.model, layers.count, target, layers.trace)
        was = self.view
        self.walks["trace"].take_head(self.walk.head)  # the head on screen, in any view
        # decode and grad were of the old layer: computed again when asked for
        for view in ("decode", "grad"):
            self.books.pop(view, None)
            self.walks.pop(view, None)
        self.opened(book, self.walks["trace"], f"layer {target} of {layers.count}")
        if was != "trace":
            self.say(f"layer {target}: the trace (press {was[0]} for its {was} again)")

    def failed(self, message: str) -> None:
        self.busy = False
        self.query_one("#tables").loading = False
        self.say(message)
