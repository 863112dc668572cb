"""Which keys a query may look at, and ALiBi's bias: the rules of docs/variants.md.

Every mask of the package is one rule over positions, so the full trace, one decode step
(a query at position p against the positions its cache holds) and a FlashAttention tile
all hide the same cells:

* ``causal``: key j is hidden from query i when j > i (a later token);
* ``window`` N (with causal): also when i − j ≥ N, so query i sees itself and the N − 1
  keys before it (transformers' ``sliding_window_overlay``: ``kv_idx > q_idx − window``);
* ``sinks`` S (with a window): keys j < S stay visible however far back (StreamingLLM).

ALiBi (Press et al. 2022) adds ``−m_h · |i − j|`` to head h's scaled scores, with the
paper's slopes (:func:`alibi_slopes`).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]
Positions = npt.ArrayLike  # whole numbers: a token's place in the sequence, from 0


def _grid(query_positions: Positions, key_positions: Positions) -> tuple[Matrix, Matrix]:
    q = np.asarray(query_positions, dtype=np.int64).reshape(-1, 1)  # [n, 1]
    k = np.asarray(key_positions, dtype=np.int64).reshape(1, -1)  # [1, m]
    return q, k  # type: ignore[return-value]  # int64 grids broadcast to [n, m]


def hidden(
    query_positions: Positions,
    key_positions: Positions,
    *,
    causal: bool,
    window: int | None = None,
    sinks: int = 0,
) -> Mask:
    """True where the query at ``query_positions[i]`` may not see the key at
    ``key_positions[j]``: ``[n], [m] -> [n, m]``."""
    q, k = _grid(query_positions, key_positions)
    shut: Mask = np.zeros((q.shape[0], k.shape[1]), dtype=bool)
    if causal:
        shut |= k > q
    if window is not None:
        far = (q - k) >= window
        if sinks:
            far &= k >= sinks
        shut |= far
    return shut


def why_hidden(
    query: int, key: int, *, causal: bool, window: int | None = None, sinks: int = 0
) -> str | None:
    """Why the key at position ``key`` is hidden from the query at ``query``, in words
    (None: it is visible). A sink far back is visible, and :func:`kept_as_sink` says so."""
    if causal and key > query:
        return "the future: a later token"
    if window is not None and query - key >= window and not key < sinks:
        return (
            f"out of the window: {query - key} tokens back, and a query sees itself "
            f"and the {window - 1} before it"
        )
    return None


def hidden_counts(
    query: int, keys: int, *, causal: bool, window: int | None = None, sinks: int = 0
) -> tuple[str, ...]:
    """How many of the keys at positions ``0 … keys − 1`` are hidden from the query at
    ``query``, by reason, in words, and how many only a sink keeps visible: a long row's
    summary, where its hidden keys are not each written out."""
    shut = hidden([query], np.arange(keys), causal=causal, window=window, sinks=sinks)[0]
    later = max(0, keys - query - 1) if causal else 0
    far = int(shut.sum()) - later
    kept = sum(kept_as_sink(query, j, window=window, sinks=sinks) for j in range(min(sinks, keys)))
    lines = []
    if far and window is not None:
        sees = (
            "a query sees only itself"
            if window == 1
            else f"a query sees itself and the {window - 1} before it"
        )
        lines.append(f"{_keys(far)} hidden: out of the window ({sees})")
    if later:
        lines.append(f"{_keys(later, 'later ')} hidden: the future")
    if kept:
        lines.append(f"{_keys(kept)} kept: a sink, visible however far back")
    return tuple(lines)


def _keys(count: int, kind: str = "") -> str:
    return f"{count:,} {kind}key{'' if count == 1 else 's'}"


def kept_as_sink(query: int, key: int, *, window: int | None, sinks: int) -> bool:
    """Whether the key is visible only because it is one of the first ``sinks`` tokens."""
    return window is not None and key < sinks and query - key >= window


def alibi_slopes(heads: int) -> list[float]:
    """ALiBi's slope of each head, 0-based: ``m_h = 2^(−8(h + 1)/H)`` for H a power of two.

    Otherwise, with P the largest power of two below H, the first P slopes are those of P
    heads and the other H − P are every other slope of 2P heads, ``2^(−4(2k + 1)/P)``:
    the paper's rule (Press et al. 2022, section 3), as its ``get_slopes`` computes it.
    """
    if heads & (heads - 1) == 0:
        return [2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)]
    power = 1 << (heads.bit_length() - 1)  # the largest power of two below heads
    extra = [2.0 ** (-4.0 * (2 * k + 1) / power) for k in range(heads - power)]
    return alibi_slopes(power) + extra


def alibi_bias(query_positions: Positions, key_positions: Positions, slope: float) -> Matrix:
    """``−slope · |i − j|`` for each query position i and key position j: ``[n, m]``."""
    q, k = _grid(query_positions, key_positions)
    bias: Matrix = -float(slope) * np.abs(q - k).astype(np.float64)
    return bias + 0.0  # −0.0 on the diagonal reads as 0


def mask_words(causal: bool, window: int | None, sinks: int) -> str:
    """How a ``masked`` stage's formula names its mask."""
    words = "−∞ after the diagonal"
    if window is not None:
        words += f" and {window:,} or more keys back"
        if sinks:
            words += (
                " (the first key kept: a sink)"
                if sinks == 1
                else (f" (the first {sinks:,} keys kept: sinks)")
            )
    return words


def slope_text(slope: float) -> str:
    """A slope as a power of two where it is one (``1/4``), else its digits."""
    exponent = math.log2(slope) if slope > 0 else 0.0
    if slope > 0 and exponent == round(exponent) and exponent <= 0:
        return "1" if exponent == 0 else f"1/{2 ** int(-exponent)}"
    return f"{slope:.6g}"
