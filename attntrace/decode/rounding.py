"""How far two correct float64 computations of the same attention may differ.

Decoding through a KV cache computes the numbers of the full causal trace in another
order: a new token's ``q = x · WQ`` is one row times a matrix where the trace multiplies
every row at once, and a BLAS kernel sums the products in whatever order suits the CPU
(numpy's own exp and cos may differ from the C library's by an ulp, too). Each order
rounds every operation correctly, so the two results differ by rounding alone, and how
far rounding can move a result is known (Higham, *Accuracy and Stability of Numerical
Algorithms*, section 3.1): a sum of n products, in any order, is within

    γ_n · Σ |terms|,   γ_n = n·u / (1 − n·u),   u = 2⁻⁵³

of the exact value. Carrying that through every stage, with the magnitudes of the terms
in place of the values, bounds each output cell's rounding error (the variants' stages
of docs/variants.md too: QK-norm, ALiBi's sum, the cap and a sink's term); two correct
computations (attntrace's and the loops of a test, the full trace and a decode) differ by
at most twice that. ``decode`` is judged against it, and shows it.

The bound is a figure of the numbers, not of the machine's rounding: it is computed from
their magnitudes (by sums of non-negative terms, which every order rounds alike to far
more than the two digits shown), so every machine shows the same bound where the
measured difference is 0 on one and 4e-16 on another. It is a worst case: each rounding
in the same direction, every error carried at full size. For numbers near 1 it is 1e-13
to 1e-11 of the values; at a real model's sizes (576 terms a dot product, scores in the
tens) some 1e-6, where the difference measured is some 1e-14.
"""

from __future__ import annotations

import numpy as np

from attntrace.kernel.ops import Matrix
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Trace

UNIT_ROUNDOFF = 2.0**-53  # u: the largest relative error of one rounded float64 operation
# numpy's SIMD exp, sin and cos are within a few ulps, not half of one like a rounded
# operation: counted as 4 ulps (8u) each, with room to spare.
ELEMENTARY = 8 * UNIT_ROUNDOFF
# The bound keeps first-order terms (errors times values, not errors times errors, and
# exp(δ) − 1 taken as δ): a quarter more covers what was left out while every relative
# error is below 1e-3, far beyond any rounding.
SAFETY = 1.25


def gamma(n: int) -> float:
    """γ_n: the relative error bound of a sum of n rounded products, in any order."""
    return n * UNIT_ROUNDOFF / (1 - n * UNIT_ROUNDOFF)


def decode_bounds(model: ModelSpec, full: Trace) -> tuple[Matrix, Matrix | None]:
    """For each output cell of ``full`` (a causal self-attention trace of ``model``),
    how far a correct decode may differ from it: ``[heads, n, d_v]`` for the heads'
    outputs, ``[n, d_model]`` for projected (None without WO).

    Each stage is carried as (magnitude, error): magnitude bounds |value|, error bounds
    one computation's distance from the exact value; the difference of two computations
    is at most twice the error.
    """
    X = np.abs(full["X"].data)  # the same rows in both: decode reads the trace's X
    rope = model.position_kind == "rope"
    outputs = []
    for h in range(model.heads):
        g = full.stage("output", head=h).kv_head
        assert g is not None
        q = _projection(X, model.head_weight("WQ", h), model.head_bias("bQ", h))
        k = _projection(X, model.head_weight("WK", g), model.head_bias("bK", g))
        v = _projection(X, model.head_weight("WV", g), model.head_bias("bV", g))
        if model.variants.qk_norm:  # RMSNorm of each row, before RoPE
            variants = model.variants
            q = _normed(*q, full.stage("Q", head=h).data, variants.q_norm, variants.qk_norm_eps)
            k = _normed(*k, full.stage("K", head=h).data, variants.k_norm, variants.qk_norm_eps)
        if rope:
            q, k = _turned(*q, model.rope_pairing), _turned(*k, model.rope_pairing)
        weights = np.abs(full.stage("softmax", head=h).data)
        scaled = full.softmax_input(h).data  # what the exps were taken of (−∞: masked)
        outputs.append(
            _attention_error(
                q,
                k,
                v,
                weights,
                scaled,
                model.d_k,
                _logit_rounding(model, full, h),
                _sink(model, full, h),
            )
        )
    heads = np.stack(outputs)  # [heads, n, d_v]: one computation's error
    projected = None
    if model.WO is not None:
        concat = np.abs(
            np.concatenate([full.stage("output", head=h).data for h in range(model.heads)], axis=1)
        )
        errors = np.concatenate(list(heads), axis=1)  # [n, heads·d_v]
        WO = np.abs(model.WO)
        terms = concat @ WO
        bO = model.bias("bO")
        if bO is not None:
            terms = terms + np.abs(bO)
        projected = SAFETY * 2 * (gamma(WO.shape[0] + 1) * terms + errors @ WO)
    return SAFETY * 2 * heads, projected


def _projection(X: Matrix, W: Matrix, b: Matrix | None) -> tuple[Matrix, Matrix]:
    """|X|·|W| (+ |b|): the magnitude of one head's Q, K or V (``X`` is |X|, ``W`` and
    ``b`` the head's columns), and its rounding error."""
    terms: Matrix = X @ np.abs(W)
    if b is not None:
        terms = terms + np.abs(b)
    return terms, gamma(W.shape[0] + 1) * terms


def _normed(
    magnitude: Matrix, error: Matrix, rows: Matrix, weight: Matrix | None, eps: float
) -> tuple[Matrix, Matrix]:
    """QK-norm's ``row / √(mean(row²) + ε) · weight`` of rows of that ``magnitude`` and
    ``error`` (``rows``: the values, whose root mean square divides them).

    With r = 1/√(mean(row²) + ε): each cell errs by its own error times r, and by the
    relative error of r, which is at most Σ|row|·error / (Σ row² + d·ε) (the sum of
    squares' error, halved by the root) plus the sum's rounding (γ_d), the root's and
    the division's; the product by r and by the weight rounds twice more."""
    d = rows.shape[1]
    w = np.ones(d) if weight is None else np.abs(weight)
    squares = (rows * rows).sum(axis=1, keepdims=True) + d * eps
    r = 1 / np.sqrt(squares / d)  # [n, 1]
    spread = (np.abs(rows) * error).sum(axis=1, keepdims=True) / squares
    relative = spread + gamma(d + 1) + ELEMENTARY + 4 * UNIT_ROUNDOFF
    size = magnitude * r * w
    return size, error * r * w + relative * size


def _logit_rounding(model: ModelSpec, full: Trace, h: int) -> Matrix | None:
    """What the stages between scaled and the mask add to each logit's error, beside
    what they carry: ALiBi's sum rounds once (its bias is the same number in both: one
    product of the same slope and distance), and the cap's x/C, tanh and · C round
    (tanh to a few ulps) while passing the input's error at most unchanged (its
    derivative is at most 1). None with neither."""
    variants = model.variants
    added = None
    if model.position_kind == "alibi":
        added = UNIT_ROUNDOFF * np.abs(full.stage("biased", head=h).data)
    if variants.softcap is not None:
        before = "biased" if added is not None else "scaled"
        capped = np.abs(full.stage("capped", head=h).data)
        cap = (
            UNIT_ROUNDOFF * np.abs(full.stage(before, head=h).data)
            + (ELEMENTARY + 2 * UNIT_ROUNDOFF) * capped
        )
        added = cap if added is None else added + cap
    return added


def _sink(model: ModelSpec, full: Trace, h: int) -> tuple[float, Matrix] | None:
    """The head's sink logit and the weight it took from each row ``[n, 1]``, or None."""
    logits = model.variants.sink_logits(model.heads)
    if logits is None:
        return None
    return logits[h], np.abs(full.stage("sink", head=h).data)


def _turned(magnitude: Matrix, error: Matrix, pairing: str) -> tuple[Matrix, Matrix]:
    """RoPE mixes each column with its partner (i and i + d/2, or 2i and 2i+1 when
    ``pairing`` is interleaved) through cos and sin (each at most 1 in size) of the angle
    p·base^(−2i/d), at most p radians at position p (row p)."""
    half = magnitude.shape[1] // 2

    def paired(a: Matrix) -> Matrix:
        if pairing == "interleaved":  # neighbours: columns 0 1 2 3 ... read 1 0 3 2 ...
            partner = a.reshape(len(a), half, 2)[:, :, ::-1].reshape(a.shape)
        else:
            partner = np.concatenate([a[:, half:], a[:, :half]], axis=1)
        swapped: Matrix = a + partner
        return swapped

    turned = paired(magnitude)
    # cos and sin to a few ulps, two products and a sum rounded; an angle computed
    # another way (a power and a product, 4u of p) moves cos and sin by as much
    positions = np.arange(magnitude.shape[0], dtype=np.float64)[:, None]
    relative = ELEMENTARY + 3 * UNIT_ROUNDOFF + 4 * UNIT_ROUNDOFF * positions
    return turned, paired(error) + relative * turned


def _attention_error(
    q: tuple[Matrix, Matrix],
    k: tuple[Matrix, Matrix],
    v: tuple[Matrix, Matrix],
    weights: Matrix,
    scaled: Matrix,
    d_k: int,
    logit_rounding: Matrix | None = None,
    sink: tuple[float, Matrix] | None = None,
) -> Matrix:
    """One computation's error in softmax(q·kᵀ/√d_k)·v, per output cell ``[n, d_v]``.

    ``weights`` are the (absolute) attention weights and ``scaled`` softmax's input;
    masked cells (weight 0, −∞) are exactly 0 in every computation and carry no error.
    """
    (q_size, q_error), (k_size, k_error), (v_size, v_error) = q, k, v
    # scores = q·kᵀ: the sum's rounding, and what the inputs' errors carry in
    score_terms = q_size @ k_size.T  # [n, m]
    score_error = gamma(d_k) * score_terms + q_error @ k_size.T + q_size @ k_error.T
    # scaled: divided by the same √d_k in both, and rounded once more
    scaled_error = (score_error + UNIT_ROUNDOFF * score_terms) / np.sqrt(d_k)
    if logit_rounding is not None:  # ALiBi's sum, the cap: each rounds the logit again
        scaled_error = scaled_error + logit_rounding
    visible = weights > 0
    # exp(scaled − row max): the row max cancels between each exp and their sum, whichever
    # cell it came from; what stays is the error of each input, the rounding of the
    # subtraction (relative to its result), and the exp's own
    finite = np.where(visible, scaled, 0.0)
    top = finite.max(axis=1, keepdims=True, initial=-np.inf, where=visible)
    if sink is not None:  # the sink logit joins the row max (docs/variants.md)
        top = np.maximum(top, sink[0])
    shifted = np.abs(finite - top)
    exp_relative = np.where(visible, scaled_error + UNIT_ROUNDOFF * shifted + ELEMENTARY, 0.0)
    # weight = exp / Σ exp: the sum errs, relatively, by its terms' errors averaged by
    # weight, then by its own rounding (γ_m), and the division once more; a sink's exp
    # is one more term, exact but for its subtraction and exp
    summed = (weights * exp_relative).sum(axis=1, keepdims=True)
    terms = weights.shape[1]
    if sink is not None:
        logit, share = sink
        summed = summed + share * (UNIT_ROUNDOFF * np.abs(logit - top) + ELEMENTARY)
        terms += 1
    weight_error = weights * (exp_relative + summed + gamma(terms) + UNIT_ROUNDOFF)
    # output = weights · v
    output_error: Matrix = (
        gamma(weights.shape[1]) * (weights @ v_size) + weight_error @ v_size + weights @ v_error
    )
    return output_error
