"""The Rich side of the progress display: imported only once a display is due.

One line per task: the description, a bar, the count (``12/29 layers``, ``47/98 MB``)
and the seconds taken. The line is fitted to the terminal at every redraw: the bar
shrinks and then goes, then the description is shortened with an ellipsis; the count
and the time are never cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskID
from rich.table import Column
from rich.text import Text

from attntrace.ui.progress import Work

BAR_WIDTH = 30  # at most; at least MIN_BAR, or no bar
MIN_BAR = 8
MIN_DESCRIPTION = 12


def count(work: Work, units: bool = True) -> str:
    """``12/29 layers``, ``47/98 MB`` (``12/29`` without ``units``), as wide from the
    first count to the last, so the columns do not shift; a task of one step has no
    count, and says ``done`` once it is over."""
    if work.total is None:
        return "done" if work.ended is not None else ""
    done, total, unit = work.completed, work.total, work.unit
    if unit == "bytes":
        done, total, unit = round(done / 1e6), round(total / 1e6), "MB"
    return f"{done:>{len(str(total))}}/{total}" + (f" {unit}" if units else "")


class _Description(ProgressColumn):
    def __init__(self) -> None:
        super().__init__(table_column=Column(no_wrap=True))
        self.width = 0

    def render(self, task: Task) -> Text:
        text = Text(task.description)  # no markup: a description is shown as written
        text.truncate(self.width, overflow="ellipsis", pad=True)
        return text


class _Count(ProgressColumn):
    def render(self, task: Task) -> Text:
        return Text(task.fields["count"])


class _Took(ProgressColumn):
    def __init__(self, clock: Callable[[], float]) -> None:
        super().__init__(table_column=Column(no_wrap=True))
        self.clock = clock

    def text(self, work: Work) -> str:
        """Seconds from the task's start to its end, or to this redraw (at a report), as
        wide up to 99.9 s. A task of one step running has no report to time it by: no
        time (a frozen 0.0 s would be wrong)."""
        if work.ended is None and work.total is None:
            return " " * 6
        return f"{(self.clock() if work.ended is None else work.ended) - work.begun:.1f} s".rjust(6)

    def render(self, task: Task) -> Text:
        return Text(task.fields["took"])


class Display:
    """A transient Rich Progress on stderr, drawn only when :meth:`draw` is called."""

    def __init__(self, console: Console, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.description = _Description()
        self.bar = BarColumn(bar_width=BAR_WIDTH)
        self.count = _Count(table_column=Column(no_wrap=True))
        self.took = _Took(clock)
        self.progress = Progress(
            console=console,
            auto_refresh=False,  # drawn by draw(), in the thread doing the work
            transient=True,
            redirect_stdout=False,  # the output is printed after the display is gone
            redirect_stderr=False,
            get_time=clock,
        )
        self.units = True  # whether the counts say what they count (fit decides)
        self.ids: list[TaskID] = []
        self.started = False

    def draw(self, works: Sequence[Work]) -> None:
        self.fit(works)
        for index, work in enumerate(works):
            # a task of one step: an empty bar while it runs, full once it is over
            total = work.total if work.total is not None else 1
            done = work.completed if work.total is not None else int(work.ended is not None)
            shown = count(work, self.units)
            took = self.took.text(work)
            if index == len(self.ids):  # a new task (add_task redraws: every field now)
                task = self.progress.add_task(
                    work.description, total=total, completed=done, count=shown, took=took
                )
                self.ids.append(task)
            else:
                self.progress.update(self.ids[index], completed=done, count=shown, took=took)
        if not self.started:
            self.progress.start()
            self.started = True
        self.progress.refresh()

    def fit(self, works: Sequence[Work]) -> None:
        """Choose the columns for this terminal width: the bar goes first, then the units
        of the counts, then the description is shortened (columns are one space apart)."""
        width = self.progress.console.width
        took = max(len(self.took.text(work)) for work in works)
        wanted = max(cell_len(work.description) for work in works)

        def room(units: bool) -> int:  # for the description and the bar
            counts = max(len(count(work, units)) for work in works)
            return width - took - 1 - (counts + 1 if counts else 0)

        columns: list[ProgressColumn] = [self.description]
        self.units = room(True) >= wanted
        space = room(self.units)
        if space - wanted - 1 >= MIN_BAR:
            self.bar.bar_width = min(BAR_WIDTH, space - wanted - 1)
            columns.append(self.bar)
        self.description.width = max(MIN_DESCRIPTION, min(wanted, space))
        columns += [self.count, self.took]
        self.progress.columns = tuple(columns)

    def stop(self) -> None:
        if self.started:
            self.progress.stop()


def new_display(clock: Callable[[], float]) -> Display | None:
    """The display on stderr, or None where Rich cannot redraw it in place (TERM=dumb:
    it would print every frame)."""
    console = Console(stderr=True, highlight=False)  # NO_COLOR is Rich's own rule
    return Display(console, clock) if console.is_interactive else None
