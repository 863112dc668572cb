"""Writing to stdout: a reader that leaves early (``| head``) is no failure.

Every command's output is written inside :func:`quiet_pipe`, on a console from
:func:`stdout_console`, so a closed pipe ends with exit 0 and nothing on stderr, and a
write that fails for another reason (a full disk) is one line and exit 1.

``--color`` and ``--width`` (:func:`color_given`, :func:`width_given`) are said to
every console through the variables Rich and the rest already read (``NO_COLOR``,
``FORCE_COLOR``, ``COLUMNS``), so the tables, step mode, progress and ``--help`` (but
for ``always``, which Typer's help console does not hear) follow them; the variables
are put back when the command ends (a test runs many commands in one process).
``--color always`` is the one the environment cannot say without lying:
``FORCE_COLOR`` makes Rich take a pipe for a terminal (step mode would clear the
screen, ``train`` redraw), so :func:`stdout_console` is given a colour system instead
and stays a pipe that happens to be coloured.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console
    from rich.segment import Segment
    from typer._click import Context, Parameter

COLORS = ("auto", "always", "never")
WIDTHS = (20, 1000)  # as COLUMNS is kept (cli/process.py)
_TERMINAL_VARIABLES = ("NO_COLOR", "FORCE_COLOR", "COLUMNS")


class _Flags:
    """What ``--color`` and ``--width`` changed, to put back when the command ends."""

    saved: dict[str, str | None] | None = None  # the variables as the command found them
    always = False  # --color always: stdout coloured, a pipe or not


def _changing(ctx: Context) -> dict[str, str | None]:
    """The environment as it was before the first flag changed it; the restoring is
    registered once, on the outermost command, so it runs when everything has drawn."""
    if _Flags.saved is None:
        _Flags.saved = {name: os.environ.get(name) for name in _TERMINAL_VARIABLES}
        ctx.find_root().call_on_close(_restore)
    return _Flags.saved


def _restore() -> None:
    saved, _Flags.saved, _Flags.always = _Flags.saved or {}, None, False
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def color_given(ctx: Context, _param: Parameter, value: str | None) -> None:
    """``--color WHEN``: ``never`` is ``NO_COLOR=1`` (and no ``FORCE_COLOR``); ``always``
    colours stdout into a pipe too; ``auto`` is what the environment says. The last
    given wins (``attntrace --color never run --color auto``)."""
    if value is None or ctx.resilient_parsing:
        return
    if value not in COLORS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(COLORS)}")
    saved = _changing(ctx)
    for name in ("NO_COLOR", "FORCE_COLOR"):  # auto: as the command found them
        if saved[name] is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved[name] or ""
    _Flags.always = value == "always"
    if value == "never":
        os.environ["NO_COLOR"] = "1"
        os.environ.pop("FORCE_COLOR", None)
    elif value == "always":
        os.environ.pop("NO_COLOR", None)


def width_given(ctx: Context, _param: Parameter, value: str | None) -> None:
    """``--width N``: COLUMNS=N for everything that draws (Rich, the column fitting);
    unlike COLUMNS, whose odd values are taken to the range, a bad N is refused."""
    if value is None or ctx.resilient_parsing:
        return
    low, high = WIDTHS
    number = value.strip()
    if not (number.isascii() and number.isdigit() and low <= int(number) <= high):
        raise typer.BadParameter(f"{value!r} is not a whole number from {low} to {high}")
    _changing(ctx)
    os.environ["COLUMNS"] = str(int(number))


def _forced_colors() -> dict[str, Any]:
    """The colour system ``--color always`` draws stdout in, as Rich would choose it for a
    terminal (COLORTERM, then TERM's suffix), without making a pipe a terminal."""
    if not _Flags.always:
        return {}
    if os.environ.get("COLORTERM", "").strip().lower() in ("truecolor", "24bit"):
        system = "truecolor"
    elif os.environ.get("TERM", "").strip().lower().endswith("256color"):
        system = "256"
    else:
        system = "standard"
    return {"color_system": system, "no_color": False}


def text_lines_trimmed(segments: list[Segment]) -> list[Segment]:
    """``segments`` without the spaces Rich's word wrapping leaves where it breaks a line
    of text (``…because it was ⏎``), which a pipe or a file keeps (``cat -A`` shows them,
    ``git diff`` flags them): spaces before a line break inside a run of text. A line
    that ends where its renderable ends (a table's row, a centred caption) is left as
    drawn, padding and all."""

    trimmed = []
    for at, segment in enumerate(segments):
        text = segment.text
        if "\n" in text and not segment.control:
            text = _SPACES_BEFORE_BREAK.sub("\n", text)
        following = segments[at + 1].text if at + 1 < len(segments) else ""
        if following.startswith("\n") and following.strip("\n") and text.strip(" "):
            text = text.rstrip(" ")  # the break begins the next run: a styled word's
        trimmed.append(segment if text == segment.text else segment._replace(text=text))
    return trimmed


_SPACES_BEFORE_BREAK = re.compile(" +\n")


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

        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            if not self.is_terminal:  # a pipe or a file: no line ends in spaces
                buffer = text_lines_trimmed(list(buffer))
            return super()._render_buffer(buffer)

    return PipeQuietConsole(highlight=False, record=record, **_forced_colors())
