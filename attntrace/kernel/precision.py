"""Low-precision numbers held exactly in float64: rounding, and the frameworks' casting rule.

Real models run attention in float32, float16 or bfloat16. Each of these formats is a
binary floating-point format with ``p`` significant bits (the leading one included) and
normal exponents ``emin … emax``:

    float32   p = 24   emin = −126   emax = 127   largest ≈ 3.40e38
    float16   p = 11   emin = −14    emax = 15    largest = 65504
    bfloat16  p = 8    emin = −126   emax = 127   largest ≈ 3.39e38

Every value of these formats is a float64 (53 bits, a far wider exponent range), so a
low-precision computation can be carried in float64 arrays that hold exactly the values
the dtype would: a view or a JSON file shows them as the float64 numbers they equal.

**Rounding** (:func:`round_to`) is IEEE 754's default: to the nearest value of the format,
ties to the one with an even last bit, subnormals below ``2**emin`` with the format's
fixed quantum ``2**(emin − p + 1)``, and to ±inf past the largest finite value plus half
its spacing (float16: 65519 → 65504, 65520 → inf). NaN stays NaN, −0 stays −0. It is
one rounding of the float64 value, written once here in numpy for all three formats
(scale by a power of two, ``np.rint``, which rounds ties to even, scale back: every step
exact), so bfloat16 needs no dependency. ``ml_dtypes`` (the JAX project's NumPy dtype
extension) was the alternative: it rounds the same (the tests compare the two on float32
and float64 values where it is installed), but importing it costs some 0.8 s on top of
numpy's 0.14 s here (ml_dtypes 0.7.0, measured by benchmarks/precision.py), more than
a whole small run of attntrace, to gain nothing this rounding lacks.

**The casting rule** (:func:`matmul_in`, :func:`softmax_in`) is the frameworks': inputs
rounded to the dtype; a matrix product's terms multiplied and summed in float32 and the
result rounded to the dtype once (GPU tensor cores, and PyTorch's float16/bfloat16
matmul on CPU and CUDA, accumulate in float32), or — the worst case — every product and
partial sum rounded to the dtype (``accumulate="dtype"``); softmax computed in float32
from half inputs, or in the dtype itself. PyTorch's CUDA softmax (``host_softmax`` in
aten/src/ATen/native/cuda/SoftMax.cu, dispatched for Half and BFloat16) computes with
``accscalar_t = acc_type<scalar_t, true>``, which ATen/AccumulateType.h makes float for
both, and rounds only the weights it writes: ``softmax_dtype="float32"``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError

Array = npt.NDArray[np.float64]
DTypeName = Literal["float64", "float32", "float16", "bfloat16"]
Accumulate = Literal["float32", "dtype"]

# The names a user may give, float64 (no rounding) first.
DTYPES: tuple[DTypeName, ...] = ("float64", "float32", "float16", "bfloat16")
ACCUMULATE: tuple[Accumulate, ...] = ("float32", "dtype")


@dataclass(frozen=True)
class Format:
    """A binary floating-point format: ``bits`` significant bits, normal exponents
    ``emin … emax`` (a normal value is 1.f × 2**e)."""

    bits: int
    emin: int
    emax: int
    storage_bytes: int


FORMATS: dict[DTypeName, Format] = {
    "float64": Format(53, -1022, 1023, 8),
    "float32": Format(24, -126, 127, 4),
    "float16": Format(11, -14, 15, 2),
    "bfloat16": Format(8, -126, 127, 2),
}


# The formats numpy has as its own dtypes, whose conversion and arithmetic are IEEE's.
_NATIVE: dict[str, type[np.floating[Any]]] = {"float32": np.float32, "float16": np.float16}


def format_of(dtype: str) -> Format:
    """The format named ``dtype``, or an :class:`InputError` naming the choices."""
    for name, found in FORMATS.items():
        if name == dtype:
            return found
    raise InputError(field="dtype", expected=f"one of {', '.join(DTYPES)}", found=repr(dtype))


def largest(dtype: str) -> float:
    """The largest finite value: (2 − 2**(1−p)) × 2**emax (65504 for float16)."""
    f = format_of(dtype)
    return math.ldexp(2.0 - math.ldexp(1.0, 1 - f.bits), f.emax)


def epsilon(dtype: str) -> float:
    """Machine epsilon, the spacing of the values just above 1: 2**(1−p)
    (2**−10 for float16, 2**−7 for bfloat16, 2**−23 for float32)."""
    return math.ldexp(1.0, 1 - format_of(dtype).bits)


def smallest_subnormal(dtype: str) -> float:
    """The smallest positive value: 2**(emin − p + 1) (2**−24 for float16)."""
    f = format_of(dtype)
    return math.ldexp(1.0, f.emin - f.bits + 1)


def exp_overflow_threshold(dtype: str) -> float:
    """Where exp overflows in the dtype: exp(x) rounds to a finite value for every x below
    this and to inf from it on. It is ln of the rounding boundary largest + spacing/2
    (ln 65520 ≈ 11.0898 for float16, ≈ 88.72 for float32 and bfloat16), as float64
    computes the logarithm."""
    f = format_of(dtype)
    if dtype == "float64":  # the boundary itself is past float64: ln of largest, 709.78
        return math.log(largest(dtype))
    return math.log(math.ldexp(2.0 - math.ldexp(1.0, -f.bits), f.emax))


def spacing(values: npt.ArrayLike, dtype: str) -> Array:
    """The spacing of the dtype's values at each of ``values`` (its ulp): 2**(e − p + 1)
    for a value in [2**e, 2**(e+1)), the subnormal quantum 2**(emin − p + 1) below
    2**emin; NaN for inf and NaN. ``spacing(1.0, d)`` is :func:`epsilon`."""
    f = format_of(dtype)
    x = np.asarray(values, dtype=np.float64)
    _, exponent = np.frexp(x)  # x = m × 2**exponent, 0.5 ≤ |m| < 1
    lead = np.maximum(exponent.astype(np.int64) - 1, f.emin)
    out = np.ldexp(np.ones_like(x), (lead - (f.bits - 1)).astype(np.int32))
    return np.where(np.isfinite(x), out, np.nan)


def round_to(values: npt.ArrayLike, dtype: str) -> Array:
    """The dtype's value nearest each of ``values`` (IEEE round to nearest, ties to even;
    ±inf past the largest finite value plus half its spacing; subnormals; NaN kept),
    as float64 numbers equal to it. float64 returns a copy."""
    x = np.array(values, dtype=np.float64)
    if dtype == "float64":
        return x
    native = _NATIVE.get(dtype)
    if native is not None:
        # numpy's float64 -> float32 and float64 -> float16 conversions are this rounding
        # (IEEE's, ties to even, subnormals, inf past the boundary), and back is exact:
        # the same values as the scaling below, some 10 times faster on a big matrix.
        with np.errstate(over="ignore"):
            held: Array = x.astype(native).astype(np.float64)
        return held
    return by_rows(lambda rows: _scaled_round(rows, dtype), x)


def by_rows(cellwise: Callable[..., Array], *arrays: Array) -> Array:
    """``cellwise(*arrays)`` (a function of each cell alone, broadcasting) a block of
    rows at a time: its half-dozen temporaries are then a block's, not six more
    matrices of a 9,300-token trace's size."""
    full = np.broadcast_arrays(*arrays)
    if full[0].ndim < 2 or full[0].size <= _BLOCK_CELLS:
        return cellwise(*arrays)
    out = np.empty(full[0].shape)
    step = max(1, _BLOCK_CELLS // math.prod(full[0].shape[1:]))
    for start in range(0, len(out), step):
        out[start : start + step] = cellwise(*(a[start : start + step] for a in full))
    return out


_BLOCK_CELLS = 1 << 14  # cells by_rows computes at once (128 KiB a temporary)


def _scaled_round(x: Array, dtype: str) -> Array:
    """:func:`round_to` by scaling, for a dtype numpy does not hold (bfloat16)."""
    f = format_of(dtype)
    finite = np.isfinite(x)
    safe = np.where(finite, x, 0.0)
    _, exponent = np.frexp(safe)
    lead = np.maximum(exponent.astype(np.int64) - 1, f.emin)
    quantum = (lead - (f.bits - 1)).astype(np.int32)
    # x / 2**quantum and back are exact (powers of two, far inside float64's range); rint
    # rounds the scaled value to an integer with ties to even: the format's rounding.
    # (Near float64's own largest, rounding up passes it: inf, which is right here too.)
    with np.errstate(over="ignore"):
        rounded = np.ldexp(np.rint(np.ldexp(safe, -quantum)), quantum)
    rounded = np.where(np.abs(rounded) > largest(dtype), np.copysign(np.inf, rounded), rounded)
    return np.where(finite, rounded, x)


def add_in(a: npt.ArrayLike, b: npt.ArrayLike, dtype: str) -> Array:
    """a + b rounded once to the dtype: the float64 sum and its exact error (Knuth's
    TwoSum); where the float64 sum lands on a tie of the dtype and the error is not 0,
    the exact sum is off the tie, so it rounds toward the error.

    Exact for a and b the dtype's values, or exact float64 products of two of them
    (RoPE's terms): every tie between two finite values of the dtype is a float64
    number, so the float64 sum is on the exact sum's side of it or on it. The one tie
    it does not see is the overflow boundary (65,520 for float16, where round_to gives
    inf, not a tie): float64's sum lands on it with a nonzero error only beside a term
    of about the boundary itself, which neither a value of the dtype nor one times a
    cos or sin (at most its largest value) is."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    return by_rows(lambda p, q: _add_in(p, q, dtype), x, y)


def _add_in(x: Array, y: Array, dtype: str) -> Array:
    """:func:`add_in` of float64 arrays."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = x + y
        virtual = s - x
        err = (x - (s - virtual)) + (y - virtual)
    err = np.where(np.isfinite(s), err, 0.0)
    nearest = round_to(s, dtype)
    with np.errstate(invalid="ignore"):
        tie = 2.0 * np.abs(s - nearest) == spacing(s, dtype)
    # one float64 step off the tie, toward the error: no other boundary lies that close
    off = np.nextafter(s, np.where(err > 0.0, np.inf, -np.inf))
    return np.where(tie & (err != 0.0), round_to(off, dtype), nearest)


def _matmul_shapes(a: Array, b: Array) -> None:
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise InputError(
            field="matmul",
            expected="an m × k and a k × n matrix",
            found=f"{' × '.join(map(str, a.shape))} and {' × '.join(map(str, b.shape))}",
        )


def matmul_in(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    dtype: str,
    accumulate: str = "float32",
    *,
    in_dtype: bool = False,
) -> Array:
    """a · b as a framework computes it in ``dtype``, as float64 numbers equal to the result.

    The rule: a and b are rounded to the dtype; each product a_ik · b_kj is formed and
    added to a running sum over k = 0, 1, … in turn, and the sum is rounded to the dtype
    once at the end.
    - ``accumulate="float32"`` (tensor cores, PyTorch's half matmul): each product and
      each partial sum is rounded to float32 (a product of two float16 or bfloat16 values
      is exact in float32; one of two float32 values is rounded, no fused multiply-add).
    - ``accumulate="dtype"``: each product and each partial sum is rounded to the dtype,
      as a loop written in the dtype computes it: the worst case.
    float64 is numpy's product. A real kernel sums in its own order (blocks, trees), so it
    may differ from this left-to-right order by a few float32 spacings of the sums.
    ``in_dtype``: a and b are already the dtype's values (a caller's own results), so
    they are not rounded again: the same result, without two conversions of each.
    """
    format_of(dtype)
    if accumulate not in ACCUMULATE:
        raise InputError(
            field="accumulate", expected=f"one of {', '.join(ACCUMULATE)}", found=repr(accumulate)
        )
    x = np.asarray(a, dtype=np.float64) if in_dtype else round_to(a, dtype)
    y = np.asarray(b, dtype=np.float64) if in_dtype else round_to(b, dtype)
    _matmul_shapes(x, y)
    if dtype == "float64":
        product: Array = x @ y
        return product
    into = "float32" if accumulate == "float32" else dtype
    with np.errstate(over="ignore", invalid="ignore"):
        if into == "float32":
            # numpy's float32 multiply and add are IEEE's, each rounded once: the rule.
            x32, y32 = x.astype(np.float32), y.astype(np.float32)
            acc = _running_sum(x32, y32).astype(np.float64)
        else:
            acc = _accumulate_in_dtype(x, y, dtype)
    return round_to(acc, dtype)


def _running_sum(x: npt.NDArray[Any], y: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Σ_k x_ik · y_kj over k = 0, 1, … in turn in x's own dtype (float32 or float16),
    each product and partial sum rounded there by numpy's IEEE arithmetic; the two
    buffers are reused (out=), so the loop makes no new arrays."""
    # The sum is built transposed, [m, n], from x's columns made rows: each step reads
    # contiguous memory (some 30% faster at 512 tokens); every cell's sum is the same.
    acc = np.zeros((y.shape[1], x.shape[0]), dtype=x.dtype)
    term = np.empty_like(acc)
    columns = np.ascontiguousarray(x.T)  # [k, n]
    for k in range(x.shape[1]):
        np.multiply(y[k][:, None], columns[k], out=term)
        np.add(acc, term, out=acc)
    return np.ascontiguousarray(acc.T)


def _bfloat16_of_float32(values: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """float32 values rounded to bfloat16 on their bits: add 0x7FFF plus the last kept bit,
    clear the low 16 (round to nearest even; a carry into the exponent reaches inf); NaN
    kept. One rounding of a float32 value: what round_to computes, some 10 times faster."""
    bits = values.view(np.uint32)
    one = np.uint32(1)
    kept = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & one)) & np.uint32(0xFFFF0000)
    return np.where(np.isnan(values), values, kept.view(np.float32))


def _accumulate_in_dtype(x: Array, y: Array, dtype: str) -> Array:
    """Σ_k x_ik · y_kj with every product and partial sum rounded to float16 or bfloat16.

    Each operation is done in float32 and rounded to the dtype: a product of two values of
    p ≤ 11 bits is exact in float32, and a sum of two p-bit values rounded first to 24 bits
    and then to p is rounded as if once, since 24 ≥ 2p + 2 (Figueroa, "When is double
    rounding innocuous?", 1995). numpy's float16 arithmetic is computed just so."""
    if dtype == "float16":
        return _running_sum(x.astype(np.float16), y.astype(np.float16)).astype(np.float64)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    acc32 = np.zeros((x.shape[0], y.shape[1]), dtype=np.float32)
    for k in range(x.shape[1]):
        term = _bfloat16_of_float32(x32[:, k : k + 1] * y32[k : k + 1, :])
        acc32 = _bfloat16_of_float32(acc32 + term)
    return acc32.astype(np.float64)


def softmax_in(
    scores: npt.ArrayLike,
    dtype: str,
    softmax_dtype: str = "float32",
    stable: bool = True,
    *,
    in_dtype: bool = False,
) -> Array:
    """The softmax of each row of ``scores`` (last axis) as a framework computes it.

    The rule: the scores are rounded to ``dtype`` and taken into ``softmax_dtype`` (float32
    as PyTorch's kernels do for half inputs, or the dtype itself); there each step is
    rounded once: m = max of the row (stable) or 0 (naive), z = x − m, e = exp(z) (a
    correctly rounded exp: float64's, rounded), the sum of e left to right, and e / sum;
    the weights are then rounded to ``dtype``. Naive, exp overflows past
    :func:`exp_overflow_threshold` of ``softmax_dtype`` (11.09 in float16): inf, and the
    row's weights inf / inf = NaN or 0. ``in_dtype``: the scores are already the
    dtype's values, so they are not rounded again.
    """
    format_of(dtype)
    format_of(softmax_dtype)
    x = np.asarray(scores, dtype=np.float64) if in_dtype else round_to(scores, dtype)
    if x.ndim == 0 or x.shape[-1] == 0:
        raise InputError(field="scores", expected="at least one score a row", found="none")
    native = _NATIVE.get(softmax_dtype)
    if native is not None:  # float32 or float16 holds dtype's values exactly, or is dtype
        return round_to(_native_softmax(x.astype(native), stable), dtype)
    x = round_to(x, softmax_dtype)  # exact when softmax_dtype is as wide as dtype
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        top = np.max(x, axis=-1, keepdims=True) if stable else np.zeros_like(x[..., :1])
        z = add_in(x, -top, softmax_dtype)
        e = round_to(np.exp(z), softmax_dtype)
        total = np.zeros_like(e[..., 0])
        for j in range(e.shape[-1]):
            total = add_in(total, e[..., j], softmax_dtype)
        weights = round_to(e / total[..., None], softmax_dtype)
    return round_to(weights, dtype)


def _native_softmax(x: npt.NDArray[Any], stable: bool) -> Array:
    """:func:`softmax_in`'s steps in numpy's float32 or float16, each rounded once there:
    numpy's subtraction, addition and division in these dtypes are IEEE's (float16's are
    done in float32 and rounded, which rounds as if once, Figueroa 1995), so this is
    add_in and round_to step by step, without their float64 detour. exp is float64's,
    rounded."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        top = np.max(x, axis=-1, keepdims=True) if stable else np.zeros_like(x[..., :1])
        z = x - top
        e = np.exp(z.astype(np.float64)).astype(x.dtype)
        total = np.zeros_like(e[..., 0])
        for j in range(e.shape[-1]):
            np.add(total, e[..., j], out=total)
        weights: Array = np.divide(e, total[..., None]).astype(np.float64)
    return weights
