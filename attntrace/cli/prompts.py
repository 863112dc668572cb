"""Step mode's keys: read from stdin one line at a time, prompts where a person sees them.

``run --step`` and ``decode --step`` page through screens on the Enter key; the keys may
also come from a pipe or a file (a script, a test), or stdin may be closed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

from attntrace.cli.exits import EXIT_INTERRUPTED
from attntrace.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console


@contextmanager
def interrupted(*, end_line: bool = True) -> Iterator[None]:
    """Ctrl-C at a step prompt: end the prompt's line and exit 130, no traceback.
    ``end_line=False`` writes nothing (train's output to a file or pipe: a document is
    written whole or not at all, and a stray newline would be all of it)."""
    try:
        yield
    except KeyboardInterrupt:
        if end_line:
            sys.stdout.write("\n")
        raise typer.Exit(EXIT_INTERRUPTED) from None


def prompt_console() -> Console | None:
    """stderr for prompts when the screens go to a file but a person types the keys."""
    from rich.console import Console

    return Console(stderr=True) if stdin_is_terminal() and not sys.stdout.isatty() else None


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal; False with it closed (None) or with no file
    behind it (a test's capture)."""
    try:
        return os.isatty(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return False


def stdin_is_terminal() -> bool:
    """Whether a person types the keys (stdin a terminal); False with stdin closed."""
    return is_terminal(sys.stdin)


# The longest line a prompt reads: a key, a token, a stage's name. Past it the line is
# refused, so ``--step < /dev/zero`` (a line that never ends) cannot fill the memory.
LINE_LIMIT = 4096


def read_line() -> str | None:
    """One line of stdin without its newline, or None at end of input (or no stdin); a
    line longer than :data:`LINE_LIMIT` characters is an :class:`InputError`."""
    if sys.stdin is None:  # started with stdin closed (<&-): nothing will come
        return None
    line = sys.stdin.readline(LINE_LIMIT + 1)
    if len(line) > LINE_LIMIT and not line.endswith("\n"):
        raise InputError(
            f"stdin: a line of more than {LINE_LIMIT:,} characters, where a key was expected "
            "(is stdin a file or a device rather than typed keys?)"
        )
    return line.rstrip("\r\n") if line else None
