"""A real terminal for the tests: a tmux pane on a server of its own.

Each pane gets its own socket (`tmux -S`, in a temporary folder removed after), so tests
running side by side (CI runs the suite twice at once) never share a server: with the
default socket, one test's kill-session could stop the server just as another's
new-session connected to it ("server exited unexpectedly")."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType


class Pane:
    """A detached session of ``width`` × ``height`` in ``cwd``; the server is killed on exit.
    ``environ``, when given, is the whole environment tmux (and so the pane's shell) starts
    with."""

    def __init__(
        self,
        cwd: Path,
        *,
        width: int = 80,
        height: int = 24,
        environ: dict[str, str] | None = None,
    ) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="attntrace-tmux-"))
        self.cwd = cwd
        self.width = width
        self.height = height
        self.environ = environ

    def tmux(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(self.folder / "socket"), *args],
            capture_output=True,
            text=True,
            check=check,
            env=self.environ,
        )
        return done.stdout

    def start(self, *command: str, env: dict[str, str] | None = None) -> Pane:
        """Start the session running ``command`` (a shell when empty), with ``env`` set in it."""
        settings = [arg for name, value in (env or {}).items() for arg in ("-e", f"{name}={value}")]
        size = ["-x", str(self.width), "-y", str(self.height)]
        self.tmux(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "main",
            *size,
            "-c",
            str(self.cwd),
            *settings,
            *command,
        )
        return self

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "main", *keys)

    def capture(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "main")

    def wait_for(self, needle: str, timeout: float = 60) -> str:
        """The screen once ``needle`` is on it; fails after ``timeout`` seconds."""
        end = time.monotonic() + timeout
        while True:
            screen = self.capture()
            if needle in screen:
                return screen
            assert time.monotonic() < end, f"never saw {needle!r}:\n{screen}"
            time.sleep(0.1)

    def __enter__(self) -> Pane:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.tmux("kill-server", check=False)
        shutil.rmtree(self.folder, ignore_errors=True)
