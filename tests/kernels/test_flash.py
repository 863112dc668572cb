"""FlashAttention's tiled forward pass (issue 16, section 2) against plain loops.

The expected numbers are softmax(Q·Kᵀ/√d_k)·V written here as loops over Python floats
with math.exp, the causal rule written out (key j hidden from query i when j > i + m − n),
and the HBM counts of arXiv 2205.14135 counted access by access over its Algorithm 0 and
Algorithm 1 — never attntrace's own output.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from randoms import random_block
from tolerances import FLASH

from attntrace import InputError
from attntrace.forward.attention import trace_block
from attntrace.kernels.flash import FlashRecord, flash, flash_head, hbm_traffic, matrix_bytes

Matrix = npt.NDArray[np.float64]


def hidden(i: int, j: int, n: int, m: int, causal: bool) -> bool:
    return causal and j > i + (m - n)


def loop_scores(Q: Matrix, K: Matrix) -> list[list[float]]:
    d = len(Q[0])
    return [[sum(float(q[t]) * float(k[t]) for t in range(d)) / math.sqrt(d) for k in K] for q in Q]


def loop_state(
    Q: Matrix, K: Matrix, V: Matrix, causal: bool, upto: int | None = None
) -> tuple[list[float], list[float], list[list[float]]]:
    """Per row, over the visible keys below ``upto``: the max, Σ exp(s − max), and
    Σ exp(s − max)·v (unnormalised)."""
    n, m = len(Q), len(K)
    upto = m if upto is None else upto
    S = loop_scores(Q, K)
    maxes, sums, outs = [], [], []
    for i in range(n):
        seen = [j for j in range(upto) if not hidden(i, j, n, m, causal)]
        top = max((S[i][j] for j in seen), default=-math.inf)
        maxes.append(top)
        sums.append(sum(math.exp(S[i][j] - top) for j in seen))
        outs.append(
            [sum(math.exp(S[i][j] - top) * float(V[j][c]) for j in seen) for c in range(len(V[0]))]
        )
    return maxes, sums, outs


def loop_attention(Q: Matrix, K: Matrix, V: Matrix, causal: bool) -> list[list[float]]:
    """softmax(Q·Kᵀ/√d_k)·V; a row with no visible key is 0 (the kernels' guard)."""
    _, sums, outs = loop_state(Q, K, V, causal)
    return [
        [x / total if total else 0.0 for x in row] for row, total in zip(outs, sums, strict=True)
    ]


shapes = st.tuples(
    st.integers(1, 12),
    st.integers(1, 12),
    st.integers(1, 5),
    st.integers(1, 4),
    st.integers(1, 14),
    st.integers(1, 14),
    st.booleans(),
    st.sampled_from([1, 2]),
    st.integers(0, 2**32 - 1),
)


def draw(n: int, m: int, d_k: int, d_v: int, seed: int) -> tuple[Matrix, Matrix, Matrix]:
    rng = np.random.default_rng(seed)
    scale = rng.choice([0.1, 1.0, 4.0])  # scores from flat rows to near one-hot ones
    return (
        rng.normal(size=(n, d_k)) * scale,
        rng.normal(size=(m, d_k)) * scale,
        rng.normal(size=(m, d_v)),
    )


# ------------------------------------------------------------------ the output


@given(shapes)
def test_tiled_output_m_and_l_equal_the_plain_loops(shape: tuple[int, ...]) -> None:
    n, m, d_k, d_v, bq, bk, causal, variant, seed = shape
    Q, K, V = draw(n, m, d_k, d_v, seed)
    record = flash(Q, K, V, block_q=bq, block_k=bk, causal=bool(causal), variant=variant)
    np.testing.assert_allclose(record.output, loop_attention(Q, K, V, bool(causal)), **FLASH)
    maxes, sums, _ = loop_state(Q, K, V, bool(causal))
    np.testing.assert_allclose(record.m, maxes, **FLASH)  # −∞ equals −∞ for unseen rows
    np.testing.assert_allclose(record.ell, sums, **FLASH)
    assert record.output.shape == (n, d_v)


@given(shapes)
def test_each_tile_leaves_the_state_of_the_keys_seen_so_far(shape: tuple[int, ...]) -> None:
    """After tile (i, j) a row holds the max and sum over the keys of blocks 0 … j, and O
    is their unnormalised sum (variant 2) or their softmax-weighted mean (variant 1)."""
    n, m, d_k, d_v, bq, bk, causal, variant, seed = shape
    Q, K, V = draw(n, m, d_k, d_v, seed)
    record = flash(Q, K, V, block_q=bq, block_k=bk, causal=bool(causal), variant=variant)
    for tile in record.tiles:
        (r0, r1), (_, c1) = tile.rows, tile.cols
        maxes, sums, outs = loop_state(Q, K, V, bool(causal), upto=c1)
        np.testing.assert_allclose(tile.m_new, maxes[r0:r1], **FLASH)
        np.testing.assert_allclose(tile.l_new, sums[r0:r1], **FLASH)
        if variant == 2:
            expected = outs[r0:r1]
        else:
            expected = [
                [x / t if t else 0.0 for x in row]
                for row, t in zip(outs[r0:r1], sums[r0:r1], strict=True)
            ]
        np.testing.assert_allclose(tile.output, expected, **FLASH)
        for array in (
            tile.scores,
            tile.weights,
            tile.block_max,
            tile.rescale,
            tile.l_new,
            tile.output,
        ):
            assert array is None or not np.isnan(array).any()
        if not tile.skipped:
            assert tile.rescale is not None
            expected_rescale = [
                0.0 if math.isinf(a) else math.exp(a - b)
                for a, b in zip(tile.m_old, tile.m_new, strict=True)
            ]
            np.testing.assert_allclose(tile.rescale, expected_rescale, **FLASH)


@given(st.integers(0, 2**32 - 1), st.integers(1, 7), st.integers(1, 7), st.sampled_from([1, 2]))
def test_every_head_of_a_random_block_matches_its_trace(
    seed: int, bq: int, bk: int, variant: int
) -> None:
    model, tokens, context = random_block(seed)
    trace = trace_block(model, tokens, context)
    for h in range(model.heads):
        record = flash_head(trace, h, bq, bk, variant)
        np.testing.assert_allclose(record.output, trace.stage("output", head=h).data, **FLASH)
        q, k = trace.model.score_inputs
        Q, K, V = (trace.stage(name, head=h).data for name in (q, k, "V"))
        np.testing.assert_allclose(record.output, loop_attention(Q, K, V, model.causal), **FLASH)


@pytest.mark.parametrize(("heads", "kv_heads"), [(1, 1), (4, 2), (4, 1), (3, 3)])
@pytest.mark.parametrize("causal", [False, True])
def test_single_head_gqa_and_mqa_models(heads: int, kv_heads: int, causal: bool) -> None:
    for seed in range(5):
        model, tokens, _ = random_block(
            seed, heads=heads, kv_heads=kv_heads, causal=causal, cross=False
        )
        trace = trace_block(model, tokens)
        for h in range(heads):
            for variant in (1, 2):
                record = flash_head(trace, h, 2, 3, variant)
                np.testing.assert_allclose(
                    record.output, trace.stage("output", head=h).data, **FLASH
                )


# ------------------------------------------------------------------ the tiles


def blocks(size: int, block: int) -> list[tuple[int, int]]:
    return [(s, min(s + block, size)) for s in range(0, size, block)]


@given(shapes)
def test_skipped_tiles_are_exactly_those_wholly_above_the_diagonal(
    shape: tuple[int, ...],
) -> None:
    n, m, d_k, d_v, bq, bk, causal, variant, seed = shape
    Q, K, V = draw(n, m, d_k, d_v, seed)
    record = flash(Q, K, V, block_q=bq, block_k=bk, causal=bool(causal), variant=variant)
    rows, cols = blocks(n, bq), blocks(m, bk)
    grid = [(i, j) for i in range(len(rows)) for j in range(len(cols))]
    order = grid if variant == 2 else sorted(grid, key=lambda ij: (ij[1], ij[0]))
    assert [(t.i, t.j) for t in record.tiles] == order
    for tile in record.tiles:
        assert (tile.rows, tile.cols) == (rows[tile.i], cols[tile.j])
        cells = [
            hidden(i, j, n, m, bool(causal)) for i in range(*tile.rows) for j in range(*tile.cols)
        ]
        assert tile.skipped == all(cells)
        if tile.skipped:
            assert tile.scores is None
            assert tile.weights is None
            assert tile.rescale is None
            np.testing.assert_array_equal(tile.m_new, tile.m_old)
        else:
            assert tile.scores is not None
            masked = np.isneginf(tile.scores)
            assert masked.ravel().tolist() == cells
    assert record.skipped == sum(t.skipped for t in record.tiles)


def test_a_causal_square_grid_skips_the_upper_triangle() -> None:
    Q, K, V = draw(8, 8, 3, 2, 0)
    record = flash(Q, K, V, block_q=2, block_k=2, causal=True)
    assert record.skipped == 6  # 4 × 4 tiles, 6 strictly above the diagonal
    assert [(t.i, t.j) for t in record.tiles if t.skipped] == [
        (0, 1),
        (0, 2),
        (0, 3),
        (1, 2),
        (1, 3),
        (2, 3),
    ]


def test_one_query_and_blocks_larger_than_the_input() -> None:
    Q, K, V = draw(1, 5, 4, 3, 1)
    for causal in (False, True):
        record = flash(Q, K, V, block_q=16, block_k=16, causal=causal)
        assert len(record.tiles) == 1
        assert record.tiles[0].rows == (0, 1)
        assert record.tiles[0].cols == (0, 5)
        np.testing.assert_allclose(record.output, loop_attention(Q, K, V, causal), **FLASH)


def test_rows_with_no_visible_key_end_at_zero_without_nan() -> None:
    """Causal with fewer keys than queries (m < n): the first n − m queries see no key."""
    Q, K, V = draw(6, 3, 2, 2, 2)
    for variant in (1, 2):
        record = flash(Q, K, V, block_q=4, block_k=1, causal=True, variant=variant)
        assert record.m[:3].tolist() == [-math.inf] * 3
        assert record.ell[:3].tolist() == [0.0] * 3
        assert record.output[:3].tolist() == [[0.0, 0.0]] * 3
        assert not np.isnan(record.output).any()


def test_the_record_is_read_only_and_prices_the_matrices_it_never_stored() -> None:
    Q, K, V = draw(5, 7, 2, 2, 3)
    record = flash(Q, K, V, block_q=2, block_k=2)
    assert isinstance(record, FlashRecord)
    assert not record.output.flags.writeable
    assert record.standard_bytes == 2 * 5 * 7 * 8
    assert matrix_bytes(1024, 1024, itemsize=2) == 4 * 2**20
    assert record.tile(1, 2).cols == (4, 6)
    with pytest.raises(InputError):
        record.tile(9, 0)


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    ("field", "block_q", "block_k", "variant"),
    [
        ("block_q", 0, 1, 2),
        ("block_q", -3, 1, 2),
        ("block_k", 1, 0, 1),
        ("variant", 1, 1, 3),
        ("variant", 1, 1, 0),
    ],
)
def test_bad_block_sizes_and_variants_are_refused(
    field: str, block_q: int, block_k: int, variant: int
) -> None:
    Q, K, V = draw(2, 2, 2, 2, 4)
    with pytest.raises(InputError) as caught:
        flash(Q, K, V, block_q=block_q, block_k=block_k, variant=variant)
    assert caught.value.field == field


def test_a_head_the_trace_does_not_hold_is_refused() -> None:
    model, tokens, context = random_block(0, heads=2, kv_heads=1)
    with pytest.raises(InputError) as caught:
        flash_head(trace_block(model, tokens, context), 2, 1, 1)
    assert caught.value.field == "head"


# ------------------------------------------------------------------ HBM traffic


def counted(n: int, d: int, M: int) -> tuple[int, int]:
    """Algorithm 0 and Algorithm 1 of arXiv 2205.14135, every HBM read and write counted."""
    standard = 0
    standard += 2 * n * d + n * n  # 1. load Q, K; write S = QKᵀ
    standard += n * n + n * n  # 2. read S; write P = softmax(S)
    standard += n * n + n * d + n * d  # 3. load P and V; write O = PV
    b_c = math.ceil(M / (4 * d))
    b_r = min(b_c, d)
    tiled = 0
    for c0 in range(0, n, b_c):  # line 5: for each K_j, V_j
        cols = min(b_c, n - c0)
        tiled += 2 * cols * d  # line 6: load K_j, V_j
        for r0 in range(0, n, b_r):  # line 7: for each Q_i
            rows = min(b_r, n - r0)
            tiled += rows * d + rows * d + 2 * rows  # line 8: load Q_i, O_i, ℓ_i, m_i
            tiled += rows * d + 2 * rows  # lines 12-13: write O_i, ℓ_i, m_i
    return standard, tiled


@pytest.mark.parametrize(
    ("n", "d", "sram"),
    [
        (1024, 64, 100 * 1024),
        (1024, 64, 192 * 1024),
        (7, 3, 40),
        (1, 1, 2),
        (300, 128, 8192),
    ],
)
def test_hbm_traffic_counts_the_papers_algorithms(n: int, d: int, sram: int) -> None:
    traffic = hbm_traffic(n, d, sram)  # fp16: M = sram / 2 elements
    assert (traffic.standard, traffic.tiled) == counted(n, d, sram // 2)


def test_the_tiled_traffic_falls_as_the_sram_grows() -> None:
    figures = [hbm_traffic(1024, 64, 1024 * kib).tiled for kib in (16, 64, 256)]
    assert figures[0] > figures[1] > figures[2]
    assert hbm_traffic(1024, 64, 192 * 1024).tiled < hbm_traffic(1024, 64, 192 * 1024).standard


@pytest.mark.parametrize("field", ["n", "d", "sram_bytes"])
def test_hbm_traffic_refuses_sizes_below_one(field: str) -> None:
    sizes = {"n": 8, "d": 8, "sram_bytes": 1024, field: 0}
    with pytest.raises(InputError) as caught:
        hbm_traffic(**sizes)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("length", "block"), [(1, 2), (3, 2), (16, 2), (17, 3), (512, 64), (513, 65)]
)
def test_the_default_block_cuts_a_long_input_into_at_most_8_blocks(length: int, block: int) -> None:
    from attntrace.kernels.flash import default_block

    assert default_block(length) == block
    assert math.ceil(length / block) <= max(8, math.ceil(length / 2))


def test_more_tiles_than_can_be_recorded_are_refused_before_any_is_computed() -> None:
    # 65 × 65 rows in blocks of 1: 4,225 tiles > 4,096; blocks of 2 make 33 · 33 = 1,089
    Q = np.zeros((65, 2))
    with pytest.raises(InputError) as caught:
        flash(Q, Q, Q, block_q=1, block_k=1)
    assert "4,225" in str(caught.value)
    assert "--block-q" in str(caught.value)
    assert len(flash(Q, Q, Q, block_q=2, block_k=2).tiles) == 33 * 33
