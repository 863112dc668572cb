"""The tolerances every numeric test compares with: stated once, here, with why.

A float64 result's last bits depend on the machine: the BLAS kernel the CPU gets sums a
dot product in its own order, numpy's SIMD exp or erf may differ from the C library's by
an ulp, a newer numpy may take another loop. So no test compares two computed floats for
equality (small whole numbers aside: ``2×1 + 4×2`` is 10 in any order), no golden file
or README example pins a float's last digits, and every comparison of computed floats
names one of these.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TypedDict


class AllClose(TypedDict):
    """Keyword arguments of ``np.testing.assert_allclose``."""

    rtol: float
    atol: float


class Approx(TypedDict):
    """Keyword arguments of ``pytest.approx``."""

    rel: float
    abs: float


# Two float64 computations of the same numbers (another summation order, the loops of
# tests/naive.py, another library's exp): they differ by some 1e-16 of the values for
# the models the tests use, a bug by far more than 1e-12.
FLOAT64 = AllClose(rtol=1e-12, atol=1e-12)
FLOAT64_APPROX = Approx(rel=1e-12, abs=1e-12)

# The same after a large constant was added (a softmax row shifted by 1e3, a position
# offset of 1e4 turning by big angles): rounding the sum costs that many digits.
OFFSET = AllClose(rtol=1e-9, atol=1e-9)
OFFSET_APPROX = Approx(rel=1e-9, abs=1e-9)

# A line of hand arithmetic redone exactly (in fractions) from its printed digits differs
# from what float64 computed by float64's rounding, relative to the sizes in the line: a
# dot product of 6 terms rounds by at most 6 units of 2**-53, the operands' own rounding
# adds a few; 16 units (2**-49) covers both.
HAND_ROUNDING = Fraction(2) ** -49
# Below float64's normal range (1e-308) a result is rounded coarsely: an absolute slack.
HAND_UNDERFLOW = Fraction(10) ** -300

# decode's rounding bound (attntrace/decode/rounding.py) is a worst case; for numbers near 1 it
# must stay below this part of the values, or it could hide a mistake.
UNIT_SCALE_BOUND = 1e-10

# attntrace computes in float64 from float32 weights; transformers and torch compute in
# float32, so their attention probabilities agree to float32's ~1e-7, with room.
FLOAT32_REFERENCE = 1e-5
# Sums of a float32 tensor's entries, as the golden tools summarize a tensor.
FLOAT32_SUMS = Approx(rel=1e-6, abs=1e-12)


def printed(places: int) -> float:
    """Half a unit of the last decimal: a figure as the README or a sample's description
    writes it (0.65 for 0.6486) is that close to the number."""
    return 0.5 * 10.0**-places


def significant(digits: int) -> Approx:
    """A figure printed to ``digits`` significant digits (``4.4e-16``) is within half a
    unit of its last digit of the number, relatively."""
    return Approx(rel=0.5 * 10.0 ** (1 - digits), abs=0.0)


# `attntrace check`'s own rule (docs/check.md, "Tolerance"), by the dtype an array was
# saved in: a cell matches when |found − expected| ≤ atol · scale + rtol · |expected|,
# scale = max(1, the stage's largest |expected|). The check tests hold a student's correct
# arrays to it before they hand them over, so a failure there is the student's.
CHECK_TOLERANCE: dict[str, AllClose] = {
    "float64": AllClose(rtol=1e-6, atol=1e-8),
    "float32": AllClose(rtol=1e-4, atol=1e-5),
    "float16": AllClose(rtol=1e-2, atol=1e-3),
    "bfloat16": AllClose(rtol=3e-2, atol=1e-2),
}

# Central finite differences in float64 check the backward pass (tests/learning/
# test_backward.py): the five-point stencil of tests/finite_differences.py truncates at
# order h⁴ (1e-24 of L⁽⁵⁾) and rounds at order 1e-16·|L| / h (1e-10·|L|), both far below
# the 1e-6 of the largest gradient entry that a wrong formula misses by. atol is per unit
# of |L| (at least 1): the rounding, some tens of ulps of L over 2h, is all that is left
# where a gradient is 0 (dL/dbK without RoPE: q·bK adds the same to every key's score).
FINITE_DIFFERENCE_STEP = 1e-6
FINITE_DIFFERENCE = AllClose(rtol=1e-6, atol=1e-8)

# The backward pass against its loop twin (tests/naive_backward.py, test_backward_oracle):
# both are float64 sums of the same terms, in other orders. A sum of k terms rounds by at
# most k·2⁻⁵³ times the sum of their absolute values, and an error carried down the chain
# is multiplied by what multiplies it: bounded, to first order, by the same computation on
# absolute values (the oracle's magnitudes=True), times some tens of 2⁻⁵³ for the chain
# of at most a dozen sums of at most a dozen terms the test models have (1e-14). The
# forward pass's own rounding (a score off by 1e-15 moves a weight by 1e-15 of itself)
# is of the same order. So |code − oracle| ≤ BACKWARD_ORACLE × that magnitude, entry by
# entry; 1e-11 leaves three orders of room and is still ten orders below a wrong term.
# Where the magnitude is 0 (a masked cell, a gradient the loss does not reach) both must
# be exactly 0.
BACKWARD_ORACLE = 1e-11
# PyTorch's autograd (test_backward_torch) is one more order and its own kernels (exp,
# matmul) of the same float64 terms: held to the same bound, by the same magnitudes.

# FlashAttention's tiled pass (attntrace/kernels/flash.py) against a plain loop: the same
# exps, summed tile by tile and rescaled by exp(m_old − m_new) at each tile (each factor
# and product rounding by an ulp), and for variant 1 divided by ℓ at every tile. For the
# tests' sizes (a dozen keys, scores of order 10) that is some tens of ulps, ~1e-15; a
# wrong rescale or a lost tile is off by far more than 1e-12.
FLASH = AllClose(rtol=1e-12, atol=1e-12)

# A low-precision softmax (attntrace/kernel/precision.py) rounds a float64 exp to its dtype:
# numpy's exp may differ from math's by an ulp of float64, which on the rare value beside
# a tie of the dtype moves the rounded exp, and so a weight, by one spacing of the dtype.
# Two spacings of the dtype at the value cover it; a wrong rule (no rounding, float64
# throughout, the wrong dtype) is off by far more.
LOW_PRECISION_SPACINGS = 2

# PyTorch in float16 and bfloat16 on the CPU (tests/forward/test_dtype_torch.py), against the
# casting rule's default (softmax in float32, products accumulated in float32), in
# spacings of the dtype D. One stage at a time: torch.matmul of two D tensors sums in
# float32 in its own (blocked) order and rounds to D once, so it differs from matmul_in's
# left-to-right float32 sum by a few float32 spacings of Σ|aᵢₖ·bₖⱼ|, which move the
# result by at most one spacing of D at that magnitude (seen: 0.5); torch.softmax(x,
# dtype=float32) rounded to D differs from softmax_in by its own exp and sum order, a
# float32 ulp, which moves a weight only beside a tie of D (seen: 0). Two spacings of D
# at the magnitude cover both; a wrong rule (no rounding, the wrong dtype) is off by more.
TORCH_STAGE_SPACINGS = 2
# SDPA, end to end. Its CPU math path (and the CPU flash kernel, the same within a
# spacing) upcasts float16/bfloat16 to float32, multiplies q and k each by √(1/√d_k)
# before their product (not the scores by 1/√d_k after), keeps the scores and the weights
# in float32, and rounds only the output to D (an emulation in torch's float32 ops of
# exactly that agrees to half a spacing). The rule instead rounds the scores, the scaled
# scores and the weights to D: a score s off by half a spacing of D at s becomes, through
# exp, a weight off by |s|·2⁻ᵖ of itself, so the output differs by some spacings of D at
# Σₖ wᵢₖ·|vₖⱼ| times (1 + the row's largest |s|). Seen: at most 1.7 of those units over
# random heads; 4 leaves room, and a missing 1/√d_k or a softmax in D is off by far more.
TORCH_SDPA_SPACINGS = 4

# The vectorized erf (attntrace/real/erf.py, FDLIBM's s_erf.c in numpy) against math.erf,
# in units in the last place of math.erf's value. FDLIBM and the C libraries that descend
# from it each keep erf within an ulp of the true value, but a libm may evaluate the same
# rational approximations in another order (glibc splits the polynomials for speed) and
# numpy's exp may differ from libm's by an ulp where it enters, so the two can land on
# neighbouring doubles; measured here (glibc, numpy's AVX-512 exp) over millions of
# values, the hard regions' edges among them: at most 1 ulp, on some 2% of the values.
# Two units cover another libm's own ulp on the other side; a wrong coefficient, region
# bound or sign is off by thousands.
ERF_ULPS = 2
# The soft cap under --dtype against PyTorch's eager Gemma 2 (test_dtype_variants_torch):
# attntrace rounds C·tanh(x/C) once, torch rounds x/C, its tanh and the product each to
# the dtype; three roundings move the result by up to 2 spacings of the dtype (measured:
# 2.0 at most, in about a quarter of 4,096 cells, float16 and bfloat16 alike).
SOFTCAP_FRAMEWORK_SPACINGS = 2
# RMSNorm under --dtype against transformers' Gemma3RMSNorm (float32 inside, rounded to the
# dtype once): attntrace computes inside in float64, so a value beside a tie of the dtype
# may round the other way: 1 spacing, on 1 cell of 2,048 in float16 (seed 1), 0 in bfloat16.
RMS_NORM_FRAMEWORK_SPACINGS = 1
