"""Attention and the small numeric operations it is built from, numpy only.

Each function carries the shapes it maps, picoGPT-style: ``[n, m] -> [n, m]``.
:func:`attention` is the one scaled dot-product attention of the package: the traced
block, the KV-cache decode and the real models' forward pass all call it, and so do the
low-precision rule (:mod:`attntrace.kernel.casting`) and check's catalogue of mistakes,
each with its own :class:`Steps`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from attntrace.kernel import progress

Matrix = npt.NDArray[np.float64]
Vector = npt.NDArray[np.float64]  # one number per column, pair or row
Mask = npt.NDArray[np.bool_]


def linear(x: Matrix, w: Matrix, b: Matrix | None = None) -> Matrix:
    """``x · w + b`` (no ``+ b`` without a bias): ``[.., d_in] -> [.., d_out]``."""
    product: Matrix = x @ w
    return product if b is None else product + b


class Attention(NamedTuple):
    """Every intermediate of :func:`attention`, in the order it is computed, named as
    the stages of a trace are (docs/variants.md: the stages a variant adds are None
    where it is off)."""

    scores: Matrix  # [.., n, m]
    scaled: Matrix  # [.., n, m]
    masked: Matrix | None  # [.., n, m], −∞ where hidden; None without a mask
    softmax: Matrix  # [.., n, m]: the attention weights, each row summing to 1 (− sink)
    output: Matrix  # [.., n, d_v]
    biased: Matrix | None = None  # [.., n, m]: scaled + an additive bias (ALiBi)
    capped: Matrix | None = None  # [.., n, m]: C · tanh(x / C), soft-capped logits
    sink: Matrix | None = None  # [.., n, 1]: the weight a sink logit took from each row


#: The steps between the scaling and the softmax, in the order the block takes them
#: (docs/variants.md): an additive bias (ALiBi), the soft cap, the mask.
LOGIT_STEPS = ("biased", "capped", "masked")


class Steps:
    """How each step of :func:`attention` is computed: here in float64, numpy's arithmetic.

    The pipeline (which steps, in which order, and what each reads) is
    :func:`attention`'s and :func:`logit_steps`'s alone; a subclass changes how a step
    computes, never the pipeline: :mod:`attntrace.kernel.casting` rounds each step to a
    low-precision dtype, and check's catalogue of mistakes
    (:mod:`attntrace.checking.recompute`) takes one step the wrong way (its ``order`` caps
    after the mask).
    """

    @property
    def order(self) -> tuple[str, ...]:
        """:data:`LOGIT_STEPS` in the order they are taken."""
        return LOGIT_STEPS

    def scores(self, Q: Matrix, K: Matrix) -> Matrix:
        """``Q · Kᵀ``: ``[.., n, d_k] · [.., d_k, m] -> [.., n, m]``."""
        product: Matrix = Q @ K.swapaxes(-1, -2)
        return product

    def scale(self, scores: Matrix, d_k: int) -> Matrix:
        """``scores / √d_k``."""
        scaled: Matrix = scores / np.sqrt(d_k)
        return scaled

    def bias(self, logits: Matrix, bias: Matrix) -> Matrix:
        """``logits + bias`` (ALiBi's ``−m · |i − j|``)."""
        biased: Matrix = logits + bias
        return biased

    def cap(self, logits: Matrix, softcap: float, scores: Matrix) -> Matrix:
        """``C · tanh(x / C)`` of the logits (``scores``, before the scaling, are for a
        step that caps something else: a mistake's)."""
        capped: Matrix = softcap * np.tanh(logits / softcap)
        return capped

    def mask(self, logits: Matrix, mask: Mask) -> Matrix:
        """−∞ where ``mask`` is True."""
        return apply_mask(logits, mask)

    def softmax(
        self, logits: Matrix, sink_logit: npt.ArrayLike | None
    ) -> tuple[Matrix, Matrix | None]:
        """Each row's weights, and the sink's share (None without a sink logit)."""
        if sink_logit is None:
            return softmax(logits), None  # row-wise: [n, m] -> [n, m]
        return softmax_with_sink(logits, sink_logit)

    def output(self, weights: Matrix, V: Matrix) -> Matrix:
        """``weights · V``: ``[.., n, m] · [.., m, d_v] -> [.., n, d_v]``."""
        product: Matrix = weights @ V
        return product


EXACT = Steps()


def attention(
    Q: Matrix,
    K: Matrix,
    V: Matrix,
    *,
    causal: bool = False,
    mask: Mask | None = None,
    bias: Matrix | None = None,
    softcap: float | None = None,
    sink_logit: npt.ArrayLike | None = None,
    steps: Steps = EXACT,
) -> Attention:
    """``softmax(Q · Kᵀ / √d_k) · V`` (Vaswani et al. 2017, eq. 1), keeping each step.

    picoGPT writes it in one line, ``softmax(q @ k.T / np.sqrt(q.shape[-1]) + mask) @ v``;
    here each intermediate is named, because a trace shows each one. ``Q`` is
    ``[.., n, d_k]``, ``K`` ``[.., m, d_k]`` and ``V`` ``[.., m, d_v]``: one head, or
    heads stacked along the leading axes. ``causal`` hides from query i the keys after it
    (the last query aligned with the last key); ``mask`` (True where hidden, from
    :mod:`attntrace.kernel.masks`) replaces it. The variants of docs/variants.md, in their
    order: ``bias`` is added to the scaled scores (ALiBi), ``softcap`` C caps them to
    ``C · tanh(x / C)``, the mask hides cells, and ``sink_logit`` (broadcast to
    ``[.., n, 1]``) joins each row's softmax, taking weight but passing no value.
    ``steps`` computes each step (:class:`Steps`: float64; a low-precision dtype's, or a
    mistake's).
    """
    scores = steps.scores(Q, K)  # [n, d_k] · [d_k, m] -> [n, m]
    progress.beat()  # a long sentence's steps take seconds each: still at work
    scaled = steps.scale(scores, Q.shape[-1])  # [n, m] -> [n, m]
    if mask is None and causal:
        mask = causal_mask(*scaled.shape[-2:])
    biased, capped, masked, logits = logit_steps(
        scaled, scores, bias=bias, softcap=softcap, mask=mask, steps=steps
    )
    progress.beat()
    weights, sink = steps.softmax(logits, sink_logit)
    progress.beat()
    output = steps.output(weights, V)
    return Attention(scores, scaled, masked, weights, output, biased, capped, sink)


def logit_steps(
    scaled: Matrix,
    scores: Matrix,
    *,
    bias: Matrix | None = None,
    softcap: float | None = None,
    mask: Mask | None = None,
    steps: Steps = EXACT,
) -> tuple[Matrix | None, Matrix | None, Matrix | None, Matrix]:
    """The steps from the scaled scores to what the softmax reads, each where it is on:
    ``(biased, capped, masked, logits)``, the first three None where off. One place for
    their order (:data:`LOGIT_STEPS`, or ``steps.order``): :func:`attention` takes them
    on the whole score matrix, FlashAttention's tiles (:mod:`attntrace.kernels.flash`)
    on each tile."""
    made: dict[str, Matrix] = {}
    logits = scaled
    for stage in steps.order:
        if stage == "biased" and bias is not None:
            logits = made[stage] = steps.bias(logits, bias)
        elif stage == "capped" and softcap is not None:
            logits = made[stage] = steps.cap(logits, softcap, scores)
        elif stage == "masked" and mask is not None:
            logits = made[stage] = steps.mask(logits, mask)
    return made.get("biased"), made.get("capped"), made.get("masked"), logits


def softmax_with_sink(logits: Matrix, sink_logit: npt.ArrayLike) -> tuple[Matrix, Matrix]:
    """Softmax of each row with one more logit s in its denominator, whose weight is kept
    apart: ``exp(x_j − M) / (Σ exp(x_k − M) + exp(s − M))``, ``M = max(max x, s)``.

    Returns the keys' weights ``[.., n, m]`` (each row summing to 1 − sink) and the
    sink's ``[.., n, 1]`` (gpt-oss's learned sinks: the sink is concatenated as one more
    column, the softmax taken, and the column dropped).
    """
    logits = np.asarray(logits, dtype=np.float64)
    sink = np.broadcast_to(np.asarray(sink_logit, dtype=np.float64), (*logits.shape[:-1], 1))
    top = np.maximum(logits.max(axis=-1, keepdims=True), sink)
    weights: Matrix = np.exp(logits - top)
    taken: Matrix = np.exp(sink - top)
    total = weights.sum(axis=-1, keepdims=True) + taken
    return weights / total, taken / total


def rms_norm(x: Matrix, weight: npt.ArrayLike | None, eps: float) -> Matrix:
    """Each row divided by its root mean square (no shift, no bias), then ``· weight``
    (RMSNorm, Zhang and Sennrich 2019): ``[.., d] -> [.., d]``. QK-norm applies it to
    each query and key row; a real model's layer norms are it too."""
    normed: Matrix = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
    if weight is not None:
        normed = normed * np.asarray(weight, dtype=np.float64)
    return normed


def softmax(scores: Matrix) -> Matrix:
    """Row-wise softmax, computed stably: ``exp(s − max(s)) / Σ exp(s − max(s))``.

    Subtracting the row max changes nothing mathematically (it cancels between numerator
    and denominator) but keeps every ``exp`` at most 1, so scores of 800 or 1e5 do not
    overflow float64 the way ``exp(800)`` does. Masked cells (−∞) get weight exactly 0;
    a row must keep at least one unmasked cell (a causal mask always keeps the diagonal).
    """
    # [n, m] -> [n, m], in one new array: every new array costs a page fault per 4 KB
    # written, and for a 512 × 512 score matrix that is most of softmax's time.
    scores = np.asarray(scores, dtype=np.float64)  # integer scores too; no copy of floats
    weights: Matrix = scores - scores.max(axis=-1, keepdims=True)
    np.exp(weights, out=weights)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights


def causal_mask(n: int, m: int | None = None) -> Mask:
    """True where query i may not see key j because j comes after i: ``j > i``.

    ``[n, m]``; with ``m`` keys for ``n`` queries the last query is aligned with the last
    key (what a KV cache needs); for self-attention ``m == n``.
    """
    m = n if m is None else m
    # [n, 1] < [1, m] -> [n, m]
    return np.arange(m)[None, :] > (np.arange(n)[:, None] + (m - n))


def apply_mask(scaled: Matrix, mask: Mask) -> Matrix:
    """``scaled`` with −∞ where ``mask`` is True: ``[n, m], [n, m] -> [n, m]``."""
    masked: Matrix = np.where(mask, -np.inf, scaled)
    return masked


def head_columns(matrix: Matrix, head: int, width: int) -> Matrix:
    """Columns ``[head·width, (head+1)·width)``: one head's slice of WQ, WK or WV (or of
    a bias vector, bQ, bK, bV)."""
    # [d_model, heads·width] -> [d_model, width]; [heads·width] -> [width]
    return matrix[..., head * width : (head + 1) * width]


def kv_head_of(head: int, heads: int, kv_heads: int) -> int:
    """The K/V head query head ``head`` reads: ``head // (heads / kv_heads)``.

    The repeat-interleave convention of LLaMA and of PyTorch's
    ``scaled_dot_product_attention(enable_gqa=True)``: query heads 0, 1 share K/V head 0
    when heads = 4 and kv_heads = 2.
    """
    return head // (heads // kv_heads)


def sinusoidal_positions(n: int, d_model: int) -> Matrix:
    """Vaswani et al. 2017: ``PE[p, 2i] = sin(p / 10000^(2i/d_model))``, cos for ``2i+1``.

    ``[n, d_model]``; for an odd ``d_model`` the last column is a sine.
    """
    positions = np.arange(n, dtype=np.float64)[:, None]  # [n, 1]
    even = np.arange(0, d_model, 2, dtype=np.float64)  # the 2i of each pair
    angles = positions / np.power(10000.0, even / d_model)  # [n, ceil(d_model/2)]
    table = np.empty((n, d_model), dtype=np.float64)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles[:, : d_model // 2])
    return table


def rope_frequencies(
    width: int, base: float, given: npt.NDArray[np.float64] | None = None
) -> Vector:
    """The frequency of each turned pair: ``given`` where a model says them one by one
    (Llama 3.1's scaled RoPE, Phi-3's partial rotary width: fewer than width/2 pairs turn
    only the first dimensions), else ``base^(−2i/width)`` for i < width/2 (RoFormer).

    Every path that turns Q or K (the trace, a low-precision trace, decode's cache, the
    backward, check's recompute, a real model's layers, the cell stories) asks here, so
    none can turn by other angles than the trace shows.
    """
    if given is not None:
        return np.asarray(given, dtype=np.float64)
    frequencies: Vector = np.power(float(base), -np.arange(0, width, 2, dtype=np.float64) / width)
    return frequencies


def rope_angles(positions: npt.NDArray[np.int64], frequencies: Vector) -> Matrix:
    """The rotary angles ``θ[p, i] = p · frequencies[i]``: ``[n, pairs]``
    (:func:`rope_frequencies` gives the frequencies)."""
    angles: Matrix = positions.astype(np.float64)[:, None] * frequencies[None, :]
    return angles


def rope(
    rows: Matrix, positions: npt.NDArray[np.int64], frequencies: Vector, pairing: str = "half"
) -> Matrix:
    """Rotate each row's pairs by the angle of its position: ``[n, d] -> [n, d]``.

    Pair i turns by ``position · frequencies[i]`` (:func:`rope_frequencies`). With r =
    2 · len(frequencies) turned dimensions, ``pairing="half"`` (LLaMA in Hugging Face
    transformers, ``rotate_half``) pairs dimension i with i + r/2:
    ``x'_i = x_i·cos θ_i − x_{i+r/2}·sin θ_i`` and ``x'_{i+r/2} = x_{i+r/2}·cos θ_i +
    x_i·sin θ_i``. ``pairing="interleaved"`` (RoFormer, GPT-J, Meta's LLaMA) pairs
    neighbours 2i and 2i+1 with the same angles θ_i. Dimensions from r on (a partial
    rotary width, Phi-3's ``partial_rotary_factor``) pass through unturned, as in
    transformers' ``apply_rotary_pos_emb``. Rotating q at position m and k at position n
    by their own angles makes q'·k' depend on m − n only: the position enters the score
    as an offset.
    """
    half = len(frequencies)
    angles = rope_angles(positions, frequencies)  # [n, r/2]
    cos, sin = np.cos(angles), np.sin(angles)
    if pairing == "interleaved":
        first, second = rows[:, 0 : 2 * half : 2], rows[:, 1 : 2 * half : 2]
        turned: Matrix = np.array(rows, dtype=np.float64)
        turned[:, 0 : 2 * half : 2] = first * cos - second * sin
        turned[:, 1 : 2 * half : 2] = second * cos + first * sin
        return turned
    first, second, rest = rows[:, :half], rows[:, half : 2 * half], rows[:, 2 * half :]
    rotated: Matrix = np.concatenate(
        [first * cos - second * sin, second * cos + first * sin, rest], 1
    )
    return rotated
