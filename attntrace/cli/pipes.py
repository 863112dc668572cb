"""Writing to stdout: a reader that leaves early (``| head``) is no failure.

Every command's output is written inside :func:`quiet_pipe`, on a console from
:func:`stdout_console`, so a closed pipe ends with exit 0 and nothing on stderr, and a
write that fails for another reason (a full disk) is one line and exit 1.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from rich.console import Console


@contextmanager
def quiet_pipe(verdict: int = 0, failed: int = 1) -> Iterator[None]:
    """End quietly (exit ``verdict``, 0 but for check's and diff's answer) when the reader
    of stdout goes away, as ``| head`` does; a write that fails otherwise (a full disk) is
    one line on stderr and exit ``failed`` (1; 2 for check and diff, whose 1 is an answer)."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        drop_stdout()
        raise typer.Exit(verdict) from None
    except OSError as error:
        drop_stdout()
        sys.stderr.write(f"attntrace: error: cannot write the output: {error.strerror}\n")
        raise typer.Exit(failed) from None


def drop_stdout() -> None:
    """Point stdout at /dev/null, so the final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def stdout_console(*, record: bool = False) -> Console:
    """A Console on stdout whose broken pipe ends in :func:`quiet_pipe` (Rich would exit 1)."""
    from rich.console import Console

    class PipeQuietConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return PipeQuietConsole(highlight=False, record=record)
