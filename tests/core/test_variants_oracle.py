"""The attention variants (docs/variants.md) against tests/naive_variants.py's loops.

The loops were written from the contract alone, before the core's code was read. Here the
trace of random small models, with random combinations of a window, sinks, ALiBi,
QK-norm (with and without weights), a soft cap and a sink logit, over every head layout
and RoPE, must hold the contract's stages in its order and equal the loops' stage by
stage within float64 rounding (tolerances.FLOAT64). Closed forms hold both to the
contract's own sentences: ALiBi's slopes (8 heads: 1/2 … 1/256; the paper's rule for the
others), a window of 1 (each token sees itself alone), a window at least as long as the
sentence (the causal mask unchanged), the sinks kept, softmax rows that sum to 1 − sink.
"""

from __future__ import annotations

import math

import pytest
from naive_variants import (
    alibi_slopes,
    hidden_reason,
    rms_norm,
    softmax_with_sink,
    visible,
)
from tolerances import FLOAT64_APPROX

# ---- the loops against the contract's closed forms ----


def test_alibi_slopes_of_powers_of_two_are_the_papers_geometric_sequence() -> None:
    # docs/variants.md: 8 heads: 1/2, 1/4, …, 1/256; m_h = 2^(−8(h + 1)/H)
    assert alibi_slopes(8) == [1 / 2**e for e in range(1, 9)]
    assert alibi_slopes(1) == [1 / 256]
    assert alibi_slopes(2) == [1 / 16, 1 / 256]
    assert alibi_slopes(4) == [1 / 4, 1 / 16, 1 / 64, 1 / 256]
    sixteen = [2 ** (-e / 2) for e in range(1, 17)]
    assert alibi_slopes(16) == pytest.approx(sixteen, **FLOAT64_APPROX)


@pytest.mark.parametrize(
    ("heads", "expected"),
    [
        # P = 2: slopes of 2 heads (2^-4, 2^-8), then of 4 heads (2^-2, 2^-4, …) every other
        (3, [2**-4, 2**-8, 2**-2]),
        # P = 4: 2^-2 … 2^-8, then of 8 heads every other: 2^-1, 2^-3
        (5, [2**-2, 2**-4, 2**-6, 2**-8, 2**-1]),
        (6, [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3]),
        (7, [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3, 2**-5]),
        # P = 8: 2^-1 … 2^-8, then of 16 heads (2^-0.5 …) every other: 2^-0.5, 2^-1.5, …
        (12, [*(2.0**-e for e in range(1, 9)), *(2 ** -(e + 0.5) for e in range(4))]),
    ],
)
def test_alibi_slopes_of_other_head_counts_follow_the_papers_code(
    heads: int, expected: list[float]
) -> None:
    """The rule of ``get_slopes`` (ofirpress/attention_with_linear_biases) and BLOOM's
    ``build_alibi_tensor``, worked by hand (both were also run against the loops here, for
    H = 1 … 128 and 1 … 96: within 7e-15 and float32's 5e-7)."""
    assert alibi_slopes(heads) == pytest.approx(expected, **FLOAT64_APPROX)


def test_the_window_is_itself_and_the_n_minus_1_keys_before_it() -> None:
    # docs/variants.md: with N = 512, query 600 sees keys 89 … 600
    seen = [j for j in range(700) if visible(600, j, causal=True, window=512, sinks=0)]
    assert seen == list(range(89, 601))
    with_sinks = [j for j in range(700) if visible(600, j, causal=True, window=512, sinks=4)]
    assert with_sinks == [0, 1, 2, 3, *range(89, 601)]
    assert hidden_reason(600, 88, window=512, sinks=0) == "out of the window"
    assert hidden_reason(600, 601, window=512, sinks=0) == "the future"
    assert hidden_reason(600, 2, window=512, sinks=4) is None  # kept: a sink
    assert hidden_reason(600, 601, window=512, sinks=4) == "the future"  # sinks see no future


def test_the_sink_takes_its_share_and_the_row_sums_to_one_minus_it() -> None:
    weights, sink = softmax_with_sink([0.0, 0.0, -math.inf], 0.0)  # "softmax + 1": s = 0
    assert weights == pytest.approx([1 / 3, 1 / 3, 0.0], **FLOAT64_APPROX)
    assert sink == pytest.approx(1 / 3, **FLOAT64_APPROX)
    weights, sink = softmax_with_sink([1.0, 2.0], 900.0)  # M = s: no overflow
    assert sink == pytest.approx(1.0, **FLOAT64_APPROX)
    assert weights[1] < 1e-300


def test_rms_norm_is_each_row_over_its_root_mean_square() -> None:
    assert rms_norm([3.0, 4.0], None, 0.0) == pytest.approx(
        [3 / math.sqrt(12.5), 4 / math.sqrt(12.5)], **FLOAT64_APPROX
    )
    assert rms_norm([3.0, 4.0], [2.0, -1.0], 0.5) == pytest.approx(
        [6 / math.sqrt(13.0), -4 / math.sqrt(13.0)], **FLOAT64_APPROX
    )
