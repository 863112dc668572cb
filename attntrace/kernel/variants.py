"""The attention variants of today's models, as a model holds them (docs/variants.md).

A :class:`Variants` is the options of one block beyond the paper's: a sliding window and
its sinks, ALiBi's slopes, QK-norm, soft-capped logits and a learned sink logit. It is a
field of :class:`attntrace.kernel.spec.ModelSpec` (``variants=``), checked there against the
rest of the model by :func:`check_variants`; :mod:`attntrace.forward.attention` computes the
stages they add, and :mod:`attntrace.kernel.masks` holds the rules they share with decode
and flash. The default, ``Variants()``, is none of them: the paper's attention.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from attntrace import arguments
from attntrace.errors import InputError, describe
from attntrace.kernel.frozen import read_only
from attntrace.kernel.masks import alibi_slopes

Vector = npt.NDArray[np.float64]

DEFAULT_QK_NORM_EPS = 1e-6  # Gemma 3's rms_norm_eps
# The longest window and the most sinks: past any sentence (a window longer than the
# sentence changes nothing), and an integer every JSON reader takes as it is.
MOST_POSITIONS = 2**31 - 1


@dataclass(frozen=True, eq=False)
class Variants:
    """What a block computes beyond softmax(Q·Kᵀ/√d_k)·V, each None (or 0, False) when off.

    ``window`` N: query i sees itself and the N − 1 keys before it (with a causal mask);
    ``sinks`` S: the first S keys stay visible past the window; ``alibi_slopes``: one
    slope per head, replacing the paper's (used with positions ``alibi``); ``qk_norm``:
    RMSNorm of each query and key row, by ``qk_norm_eps`` and the optional weights
    ``q_norm``, ``k_norm`` (d_k numbers, shared by every head); ``softcap`` C: logits
    capped to C·tanh(x/C); ``sink_logit``: one logit per head (a single number is every
    head's) that joins each row's softmax and passes no value.
    """

    window: int | None = None
    sinks: int = 0
    alibi_slopes: Sequence[float] | None = None
    qk_norm: bool = False
    q_norm: Vector | None = field(default=None, repr=False)
    k_norm: Vector | None = field(default=None, repr=False)
    qk_norm_eps: float = DEFAULT_QK_NORM_EPS
    softcap: float | None = None
    sink_logit: float | Sequence[float] | None = None

    def __post_init__(self) -> None:
        set_field = object.__setattr__  # frozen: the checked values replace the given ones
        set_field(self, "window", arguments.optional_whole(self.window, "Variants.window"))
        set_field(self, "sinks", arguments.whole(self.sinks, "Variants.sinks"))
        set_field(self, "qk_norm", arguments.flag(self.qk_norm, "Variants.qk_norm"))
        set_field(self, "qk_norm_eps", arguments.real(self.qk_norm_eps, "Variants.qk_norm_eps"))
        set_field(self, "softcap", arguments.optional_real(self.softcap, "Variants.softcap"))
        for name in ("q_norm", "k_norm"):
            value = getattr(self, name)
            if value is not None:
                set_field(self, name, _vector(value, f"Variants.{name}", name))
        for name in ("alibi_slopes", "sink_logit"):
            value = getattr(self, name)
            if value is None or (name == "sink_logit" and _is_number(value)):
                continue
            set_field(self, name, tuple(_numbers(value, f"Variants.{name}", name)))
        if self.sink_logit is not None and _is_number(self.sink_logit):
            set_field(self, "sink_logit", arguments.real(self.sink_logit, "Variants.sink_logit"))
        _check_alone(self)

    def __eq__(self, other: object) -> bool:
        """The same options, weights compared by value (two traces of one model agree)."""
        if not isinstance(other, Variants):
            return NotImplemented
        for name in (
            "window",
            "sinks",
            "alibi_slopes",
            "qk_norm",
            "qk_norm_eps",
            "softcap",
            "sink_logit",
        ):
            if getattr(self, name) != getattr(other, name):
                return False
        return all(
            _same_vector(getattr(self, name), getattr(other, name)) for name in ("q_norm", "k_norm")
        )

    __hash__ = None  # type: ignore[assignment]  # holds arrays

    @property
    def any(self) -> bool:
        """Whether any option is on."""
        return (
            self.window is not None
            or self.sinks > 0
            or self.alibi_slopes is not None
            or self.qk_norm
            or self.softcap is not None
            or self.sink_logit is not None
        )

    def slopes(self, heads: int) -> list[float]:
        """ALiBi's slope of each head: the given ones, else the paper's rule."""
        return list(self.alibi_slopes) if self.alibi_slopes is not None else alibi_slopes(heads)

    def sink_logits(self, heads: int) -> list[float] | None:
        """The sink logit of each head, or None without one."""
        if self.sink_logit is None:
            return None
        if isinstance(self.sink_logit, float):
            return [self.sink_logit] * heads
        return list(self.sink_logit)


def _same_vector(a: Vector | None, b: Vector | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and bool(np.array_equal(a, b))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def _numbers(value: object, name: str, field_path: str) -> list[float]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise arguments.wrong_type(value, name, "a number per head (a list)")
    numbers = [arguments.real(v, f"{name}[{i}]") for i, v in enumerate(value)]
    for index, number in enumerate(numbers):
        if not math.isfinite(number):
            raise InputError(
                field=f"{field_path}[{index}]", expected="a finite number", found=describe(number)
            )
    return numbers


def _vector(value: object, name: str, field_path: str) -> Vector:
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fiu":
        raise arguments.wrong_type(value, name, "a numpy vector of real numbers")
    if value.ndim != 1:
        raise InputError(
            field=field_path, expected="a vector of d_k numbers", found=f"a {value.ndim}-D array"
        )
    vector = read_only(value)
    if not np.isfinite(vector).all():
        index = int(np.nonzero(~np.isfinite(vector))[0][0])
        raise InputError(
            field=f"{field_path}[{index}]",
            expected="a finite number",
            found=describe(float(vector[index])),
        )
    return vector


def _check_alone(variants: Variants) -> None:
    """The rules each option has on its own."""
    _check_window(variants)
    _check_scores(variants)


def _check_window(variants: Variants) -> None:
    """A sliding window and its sinks: counts of keys, within reach of a sentence, and
    sinks only with a window to keep them past."""
    if variants.window is not None and variants.window < 1:
        raise InputError(
            field="window",
            expected="a whole number of keys ≥ 1 (a query "
            "sees itself and window − 1 keys before it)",
            found=str(variants.window),
        )
    if variants.sinks < 0:
        raise InputError(field="sinks", expected="a whole number ≥ 0", found=str(variants.sinks))
    for name in ("window", "sinks"):
        count = getattr(variants, name)
        if count is not None and count > MOST_POSITIONS:
            raise InputError(
                field=name,
                expected=f"at most {MOST_POSITIONS:,} (longer than any sentence)",
                found=f"{count:,}",
            )
    if variants.sinks and variants.window is None:
        raise InputError(
            "sinks keep the first tokens visible past a sliding window; without one every "
            "earlier token is visible already",
            field="sinks",
            expected="a window with sinks",
            found=f"sinks {variants.sinks} and no window",
        )


def _check_scores(variants: Variants) -> None:
    """The options' numbers on the way to the scores and weights: QK-norm's epsilon and
    weights, the soft-cap, the sink logit, ALiBi's slopes."""
    eps = variants.qk_norm_eps
    if not (math.isfinite(eps) and eps > 0):
        raise InputError(field="qk_norm_eps", expected="a number > 0", found=describe(eps))
    if not variants.qk_norm:
        for name in ("q_norm", "k_norm"):
            if getattr(variants, name) is not None:
                raise InputError(
                    f"{name} weighs QK-norm's rows",
                    field=name,
                    expected="qk_norm: true with it",
                    found="qk_norm off",
                )
    cap = variants.softcap
    if cap is not None and not (math.isfinite(cap) and cap > 0):
        raise InputError(
            field="softcap",
            expected="a number > 0 (logits are capped to ±softcap)",
            found=describe(cap),
        )
    sink = variants.sink_logit
    if isinstance(sink, float) and not math.isfinite(sink):
        raise InputError(field="sink_logit", expected="a finite number", found=describe(sink))
    for index, slope in enumerate(variants.alibi_slopes or ()):
        if not slope > 0:
            raise InputError(
                field=f"alibi_slopes[{index}]", expected="a number > 0", found=describe(slope)
            )


def check_variants(
    variants: Variants,
    *,
    heads: int,
    d_k: int,
    causal: bool,
    alibi: bool,
    context: bool,
) -> None:
    """The rules that tie the options to the rest of the model (docs/variants.md)."""
    if variants.window is not None and not causal:
        raise InputError(
            "a sliding window is a causal mask made narrower: a query sees itself and the "
            "window − 1 keys before it",
            field="window",
            expected="causal: true with a window",
            found="causal: false",
        )
    if alibi and context:
        raise InputError(
            "ALiBi's bias is the distance between a query and a key of one sequence; a "
            "context is another sequence",
            field="positions",
            expected="none, sinusoidal or learned with a context",
            found="alibi",
        )
    if variants.alibi_slopes is not None:
        if not alibi:
            raise InputError(
                field="alibi_slopes", expected="positions: alibi with them", found="no ALiBi"
            )
        if len(variants.alibi_slopes) != heads:
            raise InputError(
                field="alibi_slopes",
                expected=f"{heads} slopes (one per head)",
                found=str(len(variants.alibi_slopes)),
            )
    for name in ("q_norm", "k_norm"):
        weight = getattr(variants, name)
        if weight is not None and weight.shape[0] != d_k:
            raise InputError(
                field=name,
                expected=f"{d_k} numbers (d_k, shared by every head)",
                found=str(weight.shape[0]),
            )
    sink = variants.sink_logit
    if sink is not None and not isinstance(sink, float) and len(sink) != heads:
        raise InputError(
            field="sink_logit",
            expected=f"a number, or {heads} (one per head)",
            found=f"{len(sink)} number{'' if len(sink) == 1 else 's'}",
        )
