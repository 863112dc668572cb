"""How a command ends on bad input: one ``attntrace: error: ...`` line on stderr, exit 2.

Scripts grep that line, so every refusal (a flag that does not mix, a file that does not
parse) goes through :func:`fail`, whether it was found here or raised as an InputError
further down.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn

import typer

if TYPE_CHECKING:
    from attntrace.errors import InputError

EXIT_INPUT = 2
EXIT_INTERRUPTED = 130


def fail(error: InputError) -> NoReturn:
    """Report bad input as one line on stderr and exit 2."""
    sys.stderr.write(f"attntrace: error: {error}\n")
    raise typer.Exit(EXIT_INPUT)


def usage(message: str) -> NoReturn:
    from attntrace.errors import InputError

    fail(InputError(message))


def flags_choose(flags: list[str]) -> str:
    """``--heads chooses`` or ``--stages and --heads choose``: the flags given, named."""
    return f"{' and '.join(flags)} {'choose' if len(flags) > 1 else 'chooses'}"


@contextmanager
def bad_input_fails(source: str | None = None) -> Iterator[None]:
    """An InputError raised inside is :func:`fail`: one line on stderr, exit 2 (named
    after ``source`` where the error does not name its own)."""
    from attntrace.errors import InputError

    try:
        yield
    except InputError as error:
        fail(error if source is None else error.with_source(source))
