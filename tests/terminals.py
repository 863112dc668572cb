"""A pseudo-terminal for a child process's stderr (or stdout too), read in the
background: how the tests see what a person at a terminal would."""

from __future__ import annotations

import os
import re
import struct
import threading
import time

ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
COLOUR = re.compile(r"\x1b\[[0-9;]*(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])(?:;[0-9;]*)?m")


INHERITED = (
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "TERM",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "ATTNTRACE_PROGRESS_AFTER",
)


def environment(**changes: str) -> dict[str, str]:
    """The test's environment for a terminal: no inherited width, colour rule or delay."""
    env = {k: v for k, v in os.environ.items() if k not in INHERITED}
    env.update(TERM="xterm-256color", **changes)
    return env


class Terminal:
    """A pseudo-terminal of ``columns`` × 40, read in the background until it closes."""

    def __init__(self, columns: int = 80) -> None:
        import fcntl
        import termios

        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
        self.chunks: list[bytes] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                return
            if not chunk:
                return
            self.chunks.append(chunk)

    @property
    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")

    def wait_for(self, needle: str, timeout: float = 60) -> None:
        end = time.monotonic() + timeout
        while needle not in self.text:
            assert time.monotonic() < end, f"never saw {needle!r}: {self.text[-300:]!r}"
            time.sleep(0.02)

    def closed(self) -> str:
        """All the terminal received, once the child has exited."""
        os.close(self.slave)
        self.reader.join(timeout=30)
        os.close(self.master)
        return self.text
