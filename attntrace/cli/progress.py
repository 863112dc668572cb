"""The progress display of long work, and the variable that delays it.

Only a real model's work takes long enough to show one (hashing, layers, decoding); the
display goes to stderr when that is a terminal, and its modules are imported only then.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from attntrace.cli.prompts import is_terminal

PROGRESS_AFTER_VARIABLE = "ATTNTRACE_PROGRESS_AFTER"
PROGRESS_AFTER = 1.0  # seconds of work before a progress display appears


def progress_after() -> float:
    """Seconds of work before the progress display appears: 1, or ATTNTRACE_PROGRESS_AFTER
    (0: at once; inf: never)."""
    from attntrace.environment import env_number

    return env_number(
        PROGRESS_AFTER_VARIABLE, PROGRESS_AFTER, 0, math.inf, "a number of seconds ≥ 0"
    )


@contextmanager
def progress_shown() -> Iterator[None]:
    """Long work inside (a real model's hashing, layers, decoding) drawn on stderr when
    stderr is a terminal, cleared before anything is printed; never on a pipe or a file,
    so it cannot mix with --json or a saved log. Must be inside bad_input_fails, so an
    error's line comes after the display is gone."""
    after = progress_after()
    if not is_terminal(sys.stderr):
        yield  # not even the display's module is imported
        return
    from attntrace.kernel.progress import reporting_to
    from attntrace.ui.progress import StderrProgress

    with StderrProgress(after) as display, reporting_to(display):
        yield
