"""How far long work has got: the kernel reports it, and whoever listens shows it.

Hashing a weight file, running a real model's layers and decoding token by token can
take seconds. That work reports through :func:`task`; nothing listens unless a caller
installs a :class:`Listener` with :func:`reporting_to` (the CLI does: a Rich display on
stderr when stderr is a terminal, see ``attntrace.ui.progress``). With no listener a
report costs a context-variable lookup and an addition: the kernel never draws anything
and imports no display.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol


class Listener(Protocol):
    """Who is told about long work: a task starts, advances, and ends (also on an error
    or Ctrl-C)."""

    def started(self, description: str, total: int | None, unit: str) -> int:
        """A task of ``total`` ``unit`` (``"layers"``, ``"bytes"``; None: one step of
        unknown length): its key."""

    def advanced(self, key: int, completed: int) -> None:
        """Task ``key`` has done ``completed`` of its total."""

    def finished(self, key: int) -> None:
        """Task ``key`` is over."""


_listener: ContextVar[Listener | None] = ContextVar("attntrace_progress", default=None)
_innermost: ContextVar[Task | None] = ContextVar("attntrace_task", default=None)


class Task:
    """One piece of long work, ``total`` units, advanced as each is done."""

    __slots__ = ("_key", "_listener", "completed")

    def __init__(self, listener: Listener | None, key: int) -> None:
        self._listener, self._key = listener, key
        self.completed = 0

    def advance(self, amount: int = 1) -> None:
        self.completed += amount
        if self._listener is not None:
            self._listener.advanced(self._key, self.completed)


@contextmanager
def task(description: str, total: int | None = None, unit: str = "") -> Iterator[Task]:
    """Report the work inside as ``description``: ``total`` ``unit`` in all, advanced by
    the :class:`Task` it gives (None: one step, nothing to count)."""
    listener = _listener.get()
    if listener is None:
        yield Task(None, 0)
        return
    key = listener.started(description, total, unit)
    work = Task(listener, key)
    token = _innermost.set(work)
    try:
        yield work
    finally:
        _innermost.reset(token)
        listener.finished(key)


def beat() -> None:
    """Tell whoever listens that the innermost task is still at work, its count unchanged:
    for work whose steps are uneven or uncounted (the stages of a trace), so that a
    display due after its delay is drawn at the next beat rather than at the task's end.
    With no listener, a context-variable lookup."""
    work = _innermost.get()
    if work is not None:
        work.advance(0)


def listener() -> Listener | None:
    """Who listens now (None: nobody)."""
    return _listener.get()


@contextmanager
def reporting_to(listener: Listener | None) -> Iterator[None]:
    """Send the reports of the work inside (in this thread or context) to ``listener``
    (None: to nobody, for work whose caller shows its progress its own way)."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)
