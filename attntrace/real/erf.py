"""erf over a whole array at once, to float64's accuracy: BERT's exact GELU needs it.

``math.erf`` is the accurate one, but it takes one float: called per value through
``np.frompyfunc`` it was a fifth of a MiniLM run. This is the same algorithm vectorized:
Sun's FDLIBM ``s_erf.c`` (1993, function ``erf``), from which the C libraries' ``erf``
descend (glibc's ``sysdeps/ieee754/dbl-64/s_erf.c``, FreeBSD's and musl's), and so the
``math.erf`` CPython calls on them. Its coefficients are FDLIBM's, to the last bit, and
each region is computed as there, in the same order of operations, so the results
agree with the C library's to the rounding of ``exp`` (numpy's may differ from libm's by
an ulp where it enters): ``tests/real/test_erf_vectorized.py`` measures the distance
to ``math.erf`` and asserts ``tests/tolerances.ERF_ULPS``.

FDLIBM's notice, which its licence asks to keep with the coefficients:

    Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
    Developed at SunPro, a Sun Microsystems, Inc. business.
    Permission to use, copy, modify, and distribute this software is freely granted,
    provided that this notice is preserved.

The regions, by |x| (FDLIBM's "Method"):

1. below 0.84375: ``x + x·P(x²)/Q(x²)`` (below 2⁻²⁸ just ``x + efx·x``);
2. 0.84375 to 1.25: ``c + P1(s)/Q1(s)`` with ``s = |x| − 1``, c = erf(1) rounded to
   float32 (so ``c`` and the quotient add without error);
3. 1.25 to 1/0.35 and 4. 1/0.35 to 6: ``1 − exp(−z² − 0.5625)·exp((z − x)(z + x) + R/S)/x``
   where z is x with its low 32 bits cleared (``−z²`` is then exact), R/S in 1/x²;
5. 6 and above: 1 (FDLIBM's ``1 − tiny``, which rounds to 1);

odd in x; erf(±∞) = ±1, erf(NaN) = NaN.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]

# FDLIBM s_erf.c's constants (their bit patterns are in its comments).
_ERX = 8.45062911510467529297e-01  # erf(1) rounded to float32
_EFX = 1.28379167095512586316e-01  # 2/√π − 1
_EFX8 = 1.02703333676410069053e00  # 8·efx
_PP = (
    1.28379167095512558561e-01,
    -3.25042107247001499370e-01,
    -2.84817495755985104766e-02,
    -5.77027029648944159157e-03,
    -2.37630166566501626084e-05,
)
_QQ = (
    3.97917223959155352819e-01,
    6.50222499887672944485e-02,
    5.08130628187576562776e-03,
    1.32494738004321644526e-04,
    -3.96022827877536812320e-06,
)
_PA = (
    -2.36211856075265944077e-03,
    4.14856118683748331666e-01,
    -3.72207876035701323847e-01,
    3.18346619901161753674e-01,
    -1.10894694282396677476e-01,
    3.54783043256182359371e-02,
    -2.16637559486879084300e-03,
)
_QA = (
    1.06420880400844228286e-01,
    5.40397917702171048937e-01,
    7.18286544141962662868e-02,
    1.26171219808761642112e-01,
    1.36370839120290507362e-02,
    1.19844998467991074170e-02,
)
_RA = (
    -9.86494403484714822705e-03,
    -6.93858572707181764372e-01,
    -1.05586262253232909814e01,
    -6.23753324503260060396e01,
    -1.62396669462573470355e02,
    -1.84605092906711035994e02,
    -8.12874355063065934246e01,
    -9.81432934416914548592e00,
)
_SA = (
    1.96512716674392571292e01,
    1.37657754143519042600e02,
    4.34565877475229228821e02,
    6.45387271733267880336e02,
    4.29008140027567833386e02,
    1.08635005541779435134e02,
    6.57024977031928170135e00,
    -6.04244152148580987438e-02,
)
_RB = (
    -9.86494292470009928597e-03,
    -7.99283237680523006574e-01,
    -1.77579549177547519889e01,
    -1.60636384855821916062e02,
    -6.37566443368389627722e02,
    -1.02509513161107724954e03,
    -4.83519191608651397019e02,
)
_SB = (
    3.03380607434824582924e01,
    3.25792512996573918826e02,
    1.53672958608443695994e03,
    3.19985821950859553908e03,
    2.55305040643316442583e03,
    4.74528541206955367215e02,
    -2.24409524465858183362e01,
)

# The regions' bounds, as FDLIBM tests them: on the high 32 bits of |x| (its ``ix``).
_BOUNDS = (
    0x00800000,  # 2**-1015: below it, 0.125·(8x + 8·efx·x), as efx·x would lose bits
    0x3E300000,  # 2**-28: below it, x + efx·x
    0x3FEB0000,  # 0.84375: below it, region 1
    0x3FF40000,  # 1.25: below it, region 2
    0x4006DB6E,  # 1/0.35: below it, region 3
    0x40180000,  # 6: below it, region 4; above it, 1
    0x7FF00000,  # ±inf and NaN
)
_DEEP, _TINY, _LOW, _MIDDLE, _TAIL, _FAR, _ONE, _NOT_FINITE = range(8)
_SPLIT = _BOUNDS[_TAIL] >> 16  # the one bound with low 16 bits: 1/0.35's
# The region of every top 15 bits of ix, by one lookup (a search over the bounds for
# each value was most of erf's time); the values whose top bits are 1/0.35's are
# split by their full ix afterwards.
_REGION_OF_TOP = np.searchsorted(np.array(_BOUNDS) >> 16, np.arange(1 << 15), side="right").astype(
    np.uint8
)


def _horner(coefficients: tuple[float, ...], s: Floats, *, first: float | None = None) -> Floats:
    """``c0 + s·(c1 + s·(c2 + …))`` (``first`` before ``c0``, as FDLIBM's ``one + s·(…)``
    denominators), evaluated innermost first, as FDLIBM writes it."""
    result = s * coefficients[-1]  # in place from here: no array per step
    for c in reversed(coefficients[1:-1]):
        result += c
        result *= s
    result += coefficients[0]
    if first is not None:
        result *= s
        result += first
    return result


def erf(x: npt.ArrayLike) -> Floats:
    """erf of every value of ``x`` (any shape), in float64, within an ulp of ``math.erf``."""
    x = np.asarray(x, dtype=np.float64)
    flat = x.reshape(-1)
    high = (flat.view(np.int64) >> 32) & 0x7FFFFFFF  # |x|'s high word
    kind = _REGION_OF_TOP[high >> 16]  # its region
    split = np.flatnonzero((high >> 16) == _SPLIT)
    kind[split] = np.where(high[split] < _BOUNDS[_TAIL], _TAIL, _FAR)
    out = np.empty_like(flat)

    def region(which: int) -> tuple[npt.NDArray[np.intp], Floats]:
        """Where x is in region ``which``, and those values."""
        at = np.flatnonzero(kind == which)
        return at, flat[at]

    at, v = region(_DEEP)
    out[at] = 0.125 * (8.0 * v + _EFX8 * v)
    at, v = region(_TINY)
    out[at] = v + _EFX * v
    at, v = region(_LOW)
    z = v * v
    out[at] = v + v * (_horner(_PP, z) / _horner(_QQ, z, first=1.0))
    at, v = region(_MIDDLE)
    s = np.abs(v) - 1.0
    quotient = _horner(_PA, s) / _horner(_QA, s, first=1.0)
    out[at] = np.where(v >= 0, _ERX + quotient, -_ERX - quotient)
    for which, r, s_ in ((_TAIL, _RA, _SA), (_FAR, _RB, _SB)):
        at, v = region(which)
        a = np.abs(v)
        s = 1.0 / (a * a)
        clipped = (a.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(np.float64)
        e = np.exp(-clipped * clipped - 0.5625) * np.exp(
            (clipped - a) * (clipped + a) + _horner(r, s) / _horner(s_, s, first=1.0)
        )
        out[at] = np.where(v >= 0, 1.0 - e / a, e / a - 1.0)
    at, v = region(_ONE)
    out[at] = np.copysign(1.0, v)
    at, v = region(_NOT_FINITE)  # ±inf to ±1; NaN stays NaN
    out[at] = np.where(np.isnan(v), v, np.copysign(1.0, v))
    result: Floats = out.reshape(x.shape)
    return result
