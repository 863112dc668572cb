"""What a low-precision trace carries beside its numbers: the dtype, the rule, each
stage's error against float64 and the first overflow, explained.

A :class:`~attntrace.kernel.trace.Trace` computed by ``run --dtype`` (or read back from
its JSON) holds one :class:`LowPrecision`: the views and the JSON only read it, so a
saved trace shows the same lines without the float64 trace it was measured against.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from attntrace.kernel.casting import Cast, StageError


@dataclass(frozen=True)
class Overflow:
    """The first stage (in trace order) holding a new ±inf or NaN, and why, in numbers."""

    stage: str
    head: int | None
    sentence: str


@dataclass(frozen=True)
class LowPrecision:
    """The cast a trace was computed by, and how far each stage is from float64.

    ``errors`` is keyed by a stage's (name, head): that pair names one stage of a trace.
    The dtypes and the rule's sentence are the cast's (a saved trace's are rebuilt from
    its dtype, softmax dtype and accumulation, never shown from the file).
    """

    cast: Cast
    errors: Mapping[tuple[str, int | None], StageError] = field(default_factory=dict)
    overflow: Overflow | None = None

    @property
    def dtype(self) -> str:
        return self.cast.dtype

    @property
    def softmax_dtype(self) -> str:
        return self.cast.softmax_dtype

    @property
    def accumulate(self) -> str:
        return self.cast.accumulate

    @property
    def rule(self) -> str:
        return self.cast.rule

    def error_of(self, name: str, head: int | None) -> StageError | None:
        return self.errors.get((name, head))
