"""What the explorer computes after it opens, off the screen's thread, progress shown.

``l`` and ``L`` ask :class:`Layers` for another layer's trace; ``d`` and ``g`` ask
:class:`Sources` for the decode and the gradients, the first time. The app runs each in
a worker thread and draws the kernel's progress reports (:mod:`attntrace.kernel.progress`:
the weights read, the earlier layers run) in its status line, through :class:`Reporter`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attntrace.kernel.trace import Trace

if TYPE_CHECKING:
    from attntrace.decode.decoder import Decode
    from attntrace.learning.grad_trace import GradTrace


@dataclass(frozen=True)
class Layers:
    """A real model's layers: ``count`` of them, ``trace(layer)`` computes one."""

    model: str
    count: int
    current: int
    trace: Callable[[int], Trace]

    def after(self, by: int) -> int:
        return (self.current + by) % self.count


@dataclass(frozen=True)
class Sources:
    """The other views of the same model and sentence, computed when first asked for:
    ``decode`` (None where the model cannot be decoded: ``why_not_decode`` says why) and
    ``grad`` (None without a loss: ``why_not_grad``)."""

    decode: Callable[[int], Decode] | None = None  # of a real model's layer (else 0)
    grad: Callable[[int], GradTrace] | None = None
    why_not_decode: str = "d decodes a model token by token"
    why_not_grad: str = "g shows the gradients of a loss: start explore with --from T --to T"


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
