"""Step mode's keys: read from stdin one line at a time, prompts where a person sees them.

``run --step`` and ``decode --step`` page through screens on the Enter key; the keys may
also come from a pipe or a file (a script, a test), or stdin may be closed. At a
terminal, :func:`terminal_keys` reads them a key at a time, so the page keys (space, the
arrows, PageUp/PageDown) act at once.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

import typer

from attntrace.cli.exits import EXIT_INTERRUPTED
from attntrace.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console

    from attntrace.ui.pager import Scroll


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


# What a terminal sends for the keys that move inside a screen (xterm and VT100 forms).
SCROLL_KEYS = {
    "A": "LINE_UP",
    "B": "LINE_DOWN",
    "5~": "PAGE_UP",
    "6~": "PAGE_DOWN",
    "H": "TOP",
    "1~": "TOP",
    "7~": "TOP",
    "F": "BOTTOM",
    "4~": "BOTTOM",
    "8~": "BOTTOM",
}
ESCAPE_WAIT = 0.05  # seconds for the rest of an escape sequence: a lone Esc is ignored

ReadByte = Callable[["float | None"], "bytes | None"]


class KeyReader:
    """Keys from a terminal in cbreak mode: a typed line (echoed, Backspace and Ctrl-U
    edit it, Enter sends it) or, on an empty line, a page key at once (space, the
    arrows, PageUp/PageDown, Home/End). ``read(timeout)`` gives the next byte (b"" at
    end of input, None when ``timeout`` passes); ``write`` echoes."""

    def __init__(self, read: ReadByte, write: Callable[[str], None]) -> None:
        import codecs

        self.read, self.write = read, write
        self.typed = ""  # kept across a page key, echoed again after the next prompt
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def __call__(self) -> str | Scroll | None:
        if self.typed:
            self.write(self.typed)
        while True:
            byte = self.read(None)
            if not byte or (byte == b"\x04" and not self.typed):  # end of input, Ctrl-D
                return None
            key = self._key(byte)
            if key is not None:
                return key

    def _key(self, byte: bytes) -> str | Scroll | None:
        from attntrace.ui.pager import Scroll

        if byte in (b"\r", b"\n"):
            line, self.typed = self.typed, ""
            self.write("\n")
            return line
        if byte == b" " and not self.typed:
            return Scroll.PAGE_DOWN
        if byte == b"\x1b":
            return self._escape()
        if byte == REDRAW:  # Ctrl-L, or the terminal resized
            return Scroll.REDRAW
        if byte in (b"\x7f", b"\x08"):
            if self.typed:
                self.typed = self.typed[:-1]
                self.write("\b \b")
        elif byte == b"\x15":  # Ctrl-U: the line typed so far
            self.write("\b \b" * len(self.typed))
            self.typed = ""
        else:
            text = self.decoder.decode(byte)
            if text.isprintable() and len(self.typed) < LINE_LIMIT:
                self.typed += text
                self.write(text)
        return None

    def _escape(self) -> str | Scroll | None:
        """The rest of an escape sequence, as a page key; None for any other."""
        from attntrace.ui.pager import Scroll

        kind = self.read(ESCAPE_WAIT)
        if kind not in (b"[", b"O"):  # a lone Esc: the byte after it is a key of its own
            return None if not kind else self._key(kind)
        tail = ""
        while len(tail) < 8:
            more = self.read(ESCAPE_WAIT)
            if not more:
                return None
            tail += more.decode("ascii", errors="replace")
            if "@" <= tail[-1] <= "~":
                break
        name = SCROLL_KEYS.get(tail)
        return None if name is None else Scroll[name]


@contextmanager
def terminal_keys() -> Iterator[KeyReader | None]:
    """A :class:`KeyReader` on stdin while the walk runs, when a person types at a
    terminal that also shows the screens; else None (keys are read a line at a time,
    as from a pipe). The terminal's mode is restored on every way out (Ctrl-C still
    interrupts: cbreak keeps its signals). A resized terminal reads as Ctrl-L, so the
    screen is drawn again at its new size."""
    if sys.platform == "win32" or not (stdin_is_terminal() and is_terminal(sys.stdout)):
        yield None  # (Windows has no termios: its keys are read a line at a time)
        return
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    with _resizes() as woken:

        def read(timeout: float | None) -> bytes | None:
            import select

            ready = select.select([fd, woken], [], [], timeout)[0]
            if woken in ready:
                os.read(woken, 64)
                return REDRAW
            return os.read(fd, 1) if ready else None

        def write(text: str) -> None:
            sys.stdout.write(text)
            sys.stdout.flush()

        tty.setcbreak(fd)
        try:
            yield KeyReader(read, write)
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)


REDRAW = b"\x0c"  # Ctrl-L, what a terminal's resize reads as


@contextmanager
def _resizes() -> Iterator[int]:
    """A pipe's reading end that becomes readable when the terminal is resized
    (SIGWINCH), for select() beside stdin; the signal's handler restored after."""
    import signal

    woken, wake = os.pipe()
    os.set_blocking(wake, False)

    def resized(_signal: int, _frame: object) -> None:
        with suppress(OSError):  # the pipe is full: a redraw is already due
            os.write(wake, b"!")

    previous = signal.signal(signal.SIGWINCH, resized)
    try:
        yield woken
    finally:
        signal.signal(signal.SIGWINCH, previous)
        os.close(woken)
        os.close(wake)
