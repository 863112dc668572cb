"""Another layer of a real model, traced off the screen's thread, its progress shown.

``l`` and ``L`` ask :class:`Layers` for a layer's trace; the app runs it in a worker
thread and draws the kernel's progress reports (:mod:`attntrace.kernel.progress`: the
weights read, the earlier layers run) in its status line, through :class:`Reporter`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attntrace.kernel.trace import Trace


@dataclass(frozen=True)
class Layers:
    """A real model's layers: ``count`` of them, ``trace(layer)`` computes one."""

    model: str
    count: int
    current: int
    trace: Callable[[int], Trace]

    def after(self, by: int) -> int:
        return (self.current + by) % self.count


class Reporter:
    """A progress listener that tells ``say`` what is being done, and how far."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.tasks: dict[int, tuple[str, int | None, str]] = {}
        self.next = 0

    def started(self, description: str, total: int | None, unit: str) -> int:
        self.next += 1
        self.tasks[self.next] = (description, total, unit)
        self.say(description + "…")
        return self.next

    def advanced(self, key: int, completed: int) -> None:
        description, total, _ = self.tasks.get(key, ("working", None, ""))
        if total:
            self.say(f"{description}… {100 * completed // total}%")

    def finished(self, key: int) -> None:
        self.tasks.pop(key, None)
