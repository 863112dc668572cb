"""The progress display of long work, and the variables every command checks at start.

Whatever runs long reports through :mod:`attntrace.kernel.progress` (reading a model
file, tracing, decoding, the JSON and the page, a real model's hashing and layers);
:func:`progress_shown` listens for a whole command, drawing on stderr when that is a
terminal, and its display modules are imported only then.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from attntrace.cli.prompts import is_terminal

if TYPE_CHECKING:
    from attntrace.kernel.progress import Task

PROGRESS_AFTER_VARIABLE = "ATTNTRACE_PROGRESS_AFTER"
PROGRESS_AFTER = 1.0  # seconds of work before a progress display appears


def progress_after() -> float:
    """Seconds of work before the progress display appears: 1, or ATTNTRACE_PROGRESS_AFTER
    (0: at once; inf: never)."""
    from attntrace.environment import env_number

    return env_number(
        PROGRESS_AFTER_VARIABLE, PROGRESS_AFTER, 0, math.inf, "a number of seconds ≥ 0"
    )


def environment_checked() -> None:
    """Every ATTNTRACE_* variable read, so a bad one is refused (exit 2) by every command
    at its start, whether or not the command would have come to read it: a typo in a
    shell's profile shows at once, not on the one day a file is read. No numpy."""
    from attntrace.kernel.budget import memory_budget
    from attntrace.kernel.reading import max_file_bytes

    progress_after()
    max_file_bytes()
    memory_budget()


@contextmanager
def drawing(description: str, total: int | None = None) -> Iterator[Task]:
    """Tables drawn into a file or a pipe, reported as long work (``total`` pages, or one
    step); on a terminal the tables show how far they got themselves, and a display
    drawn between their lines would tear them, so there nothing is reported."""
    from attntrace.kernel import progress

    if is_terminal(sys.stdout):
        yield progress.Task(None, 0)
        return
    with progress.task(description, total, "pages" if total is not None else "") as task:
        yield task


@contextmanager
def progress_shown() -> Iterator[None]:
    """Long work inside drawn on stderr when stderr is a terminal, erased whenever no
    work runs (so the error line and the tables are printed on a clean screen); never on
    a pipe or a file, so it cannot mix with --json or a saved log. The CLI enters it
    once, around the whole command."""
    after = progress_after()
    if not is_terminal(sys.stderr):
        yield  # not even the display's module is imported
        return
    from attntrace.kernel.progress import reporting_to
    from attntrace.ui.progress import StderrProgress

    with StderrProgress(after) as display, reporting_to(display):
        yield
