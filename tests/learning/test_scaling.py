"""`scaling`'s numbers: Var(q·k) ≈ d_k, the collapse without ÷√d_k, the worked example.

The Monte Carlo figures are held to their expected values with stated statistical
tolerances, never to their bits; the row figures and the worked example to closed forms
and naive loops.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from tolerances import FLOAT64, FLOAT64_APPROX

from attntrace.errors import InputError
from attntrace.learning import scaling
from attntrace.learning.scaling import (
    ARTICLE_SCORES,
    Scaling,
    dimensions,
    measure,
    row_figures,
    worked_example,
)

SAMPLES, KEYS = 2000, 8
# How many standard errors a Monte Carlo figure may be from its expected value: a test
# that fails at 5 SE is wrong about 1 time in 1.7 million.
STANDARD_ERRORS = 5


@pytest.fixture(scope="module")
def default() -> Scaling:
    return measure()


def variance_standard_error(d_k: int, keys: int, samples: int) -> float:
    """The standard error of the variance measured over ``samples`` rows of ``keys``
    scores s = q·k (one q a row): Var(s²) = E[s⁴] − d² = 3(d² + 2d) − d² = 2d² + 6d
    (s given q is normal of variance |q|², and E|q|⁴ = d² + 2d), two scores of one row
    share q, Cov(s₁², s₂²) = E|q|⁴ − d² = 2d; so the mean of the K·N squares has variance
    (2d² + 6d + (N − 1)·2d) / (K·N)."""
    d = float(d_k)
    return math.sqrt((2 * d * d + (2 * keys + 4) * d) / (keys * samples))


def test_the_dimensions_are_the_powers_of_two(default: Scaling) -> None:
    assert default.dimensions == (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
    assert dimensions(2) == (2,)
    assert dimensions(16384)[-1] == 16384
    assert (default.seed, default.keys, default.samples, default.max_dk) == (0, 8, 2000, 1024)


def test_the_variance_of_q_dot_k_is_d_k_and_one_once_scaled(default: Scaling) -> None:
    for level in default.levels:
        error = variance_standard_error(level.d_k, KEYS, SAMPLES)
        assert abs(level.variance - level.d_k) <= STANDARD_ERRORS * error, level.d_k
        assert abs(level.variance_scaled - 1) <= STANDARD_ERRORS * error / level.d_k
        assert level.variance_scaled == pytest.approx(level.variance / level.d_k, **FLOAT64_APPROX)


def test_unscaled_the_softmax_collapses_and_its_gradient_vanishes(default: Scaling) -> None:
    small, large = default.levels[0].unscaled, default.levels[-1].unscaled
    # the margins are many standard errors of these means (each some 0.005 or less)
    assert large.largest > small.largest + 0.4
    assert large.largest > 0.9
    assert large.entropy < small.entropy - 1.0
    assert large.entropy < 0.2
    assert large.jacobian < small.jacobian / 4
    assert large.jacobian_median < 1e-3 < small.jacobian_median
    assert large.one_hot > 0.6 > 0.05 > small.one_hot
    # monotone up to noise: each d_k's figure at most 0.02 the wrong way from the last
    figures = [level.unscaled for level in default.levels]
    for before, after in itertools.pairwise(figures):
        assert after.largest > before.largest - 0.02
        assert after.entropy < before.entropy + 0.05
        assert after.jacobian < before.jacobian + 0.02


def test_scaled_the_softmax_stays_put(default: Scaling) -> None:
    """Divided by √d_k a row is |q|/√d_k times N standard normals, and |q|/√d_k → 1:
    the figures barely move with d_k (d_k 2's differ by some 0.03, its |q| being spread)."""
    figures = [level.scaled for level in default.levels]
    for name, band in (("largest", 0.06), ("entropy", 0.1), ("jacobian", 0.03)):
        values = [getattr(f, name) for f in figures]
        assert max(values) - min(values) < band, name
    assert all(f.one_hot < 0.01 for f in figures)
    assert all(f.largest < 0.45 and f.entropy > 1.5 and f.jacobian > 0.3 for f in figures)


def test_the_uniform_reference_is_exact(default: Scaling) -> None:
    n = KEYS
    jacobian = np.eye(n) / n - np.full((n, n), 1 / n**2)
    assert default.uniform.largest == pytest.approx(1 / n, **FLOAT64_APPROX)
    assert default.uniform.entropy == pytest.approx(math.log(n), **FLOAT64_APPROX)
    assert default.uniform.jacobian == pytest.approx(np.linalg.norm(jacobian), **FLOAT64_APPROX)


def naive(row: list[float]) -> tuple[float, float, float]:
    """Largest weight, entropy and ‖diag(a) − a·aᵀ‖_F by loops, for a row that is not
    one-hot to float64's precision (where 1 − a would lose its digits)."""
    top = max(row)
    exps = [math.exp(x - top) for x in row]
    total = math.fsum(exps)
    a = [e / total for e in exps]
    entropy = -math.fsum(w * math.log(w) for w in a if w > 0)
    squares = 0.0
    for i in range(len(a)):
        for j in range(len(a)):
            cell = (a[i] if i == j else 0.0) - a[i] * a[j]
            squares += cell * cell
    return max(a), entropy, math.sqrt(squares)


@pytest.mark.parametrize("d_k", [2, 16, 64])
def test_row_figures_match_loops_on_drawn_rows_both_ways(d_k: int) -> None:
    rng = np.random.default_rng(d_k)
    q = rng.standard_normal((5, d_k))
    k = rng.standard_normal((5, KEYS, d_k))
    scores = np.einsum("rd,rkd->rk", q, k)
    for rows in (scores, scores / math.sqrt(d_k)):
        figures = row_figures(rows)
        for index, row in enumerate(rows.tolist()):
            largest, entropy, norm = naive(row)
            assert figures.largest[index] == pytest.approx(largest, **FLOAT64_APPROX)
            assert figures.entropy[index] == pytest.approx(entropy, rel=1e-9, abs=1e-12)
            assert figures.jacobian[index] == pytest.approx(norm, rel=1e-9, abs=1e-12)
            assert figures.rest[index] == pytest.approx(1 - largest, rel=1e-9, abs=1e-12)
        np.testing.assert_allclose(figures.weights.sum(axis=1), 1.0, **FLOAT64)


@pytest.mark.parametrize("gap", [0.5, 30.0, 100.0, 500.0, 700.0])
def test_a_one_hot_row_keeps_its_digits(gap: float) -> None:
    """Two scores ``gap`` apart, r = exp(−gap): a = (1/(1 + r), r/(1 + r)), so
    ‖J‖ = 2·a₁a₂ = 2r/(1 + r)² and H = log(1 + r) + gap·r/(1 + r), to float64's
    relative precision even where 1 − a₁ is 1e-300 (a naive 1 − a₁ would be 0)."""
    r = math.exp(-gap)
    figures = row_figures(np.array([[gap, 0.0], [0.0, gap]]))
    for index in (0, 1):
        assert figures.rest[index] == pytest.approx(r / (1 + r), rel=1e-12, abs=0)
        assert figures.jacobian[index] == pytest.approx(2 * r / (1 + r) ** 2, rel=1e-12, abs=0)
        entropy = math.log1p(r) + gap * r / (1 + r)
        assert figures.entropy[index] == pytest.approx(entropy, rel=1e-12, abs=0)
        assert figures.largest[index] == pytest.approx(1 / (1 + r), **FLOAT64_APPROX)


def test_the_articles_example_against_its_closed_form() -> None:
    """softmax(x)ᵢ = 1 / Σⱼ exp(xⱼ − xᵢ), each by math.exp of differences."""
    worked = worked_example()
    assert worked.d_k == 512
    assert worked.scale == pytest.approx(math.sqrt(512), **FLOAT64_APPROX)
    for row, scores in (
        (worked.unscaled, ARTICLE_SCORES),
        (worked.scaled, [s / math.sqrt(512) for s in ARTICLE_SCORES]),
    ):
        weights = [1 / math.fsum(math.exp(y - x) for y in scores) for x in scores]
        # log wᵢ = −log(1 + Σ_{j≠i} exp(xⱼ − xᵢ)): log1p, or the top's 1 + 1e-13 loses digits
        logs = [-math.log1p(math.fsum(math.exp(y - x) for y in scores if y != x)) for x in scores]
        top = weights.index(max(weights))
        rest = math.fsum(w for i, w in enumerate(weights) if i != top)
        one_minus = [rest if i == top else 1 - w for i, w in enumerate(weights)]
        squares = math.fsum(
            [(w * m) ** 2 for w, m in zip(weights, one_minus, strict=True)]
            + [(weights[i] * weights[j]) ** 2 for i in range(3) for j in range(3) if i != j]
        )
        assert list(row.scores) == pytest.approx(scores, **FLOAT64_APPROX)
        assert list(row.weights) == pytest.approx(weights, rel=1e-12, abs=0)
        assert row.largest == pytest.approx(max(weights), rel=1e-12, abs=0)
        assert row.rest == pytest.approx(rest, rel=1e-12, abs=0)
        entropy = -math.fsum(w * log for w, log in zip(weights, logs, strict=True))
        assert row.entropy == pytest.approx(entropy, rel=1e-12, abs=0)
        assert row.jacobian_norm == pytest.approx(math.sqrt(squares), rel=1e-12, abs=0)
        matrix = np.array(row.jacobian)
        assert np.linalg.norm(matrix) == pytest.approx(row.jacobian_norm, rel=1e-12, abs=0)
        for i in range(3):
            for j in range(3):
                cell = weights[i] * one_minus[i] if i == j else -weights[i] * weights[j]
                assert matrix[i, j] == pytest.approx(cell, rel=1e-12, abs=0)
    # the article's point, in numbers: one-hot to 1e-13, the others underflowing toward 0
    raw = worked.unscaled
    assert raw.weights[0] == pytest.approx(math.exp(-30), rel=1e-12, abs=0)  # 9.4e-14
    assert raw.weights[2] == pytest.approx(math.exp(-115), rel=1e-12, abs=0)  # 1.1e-50
    assert raw.jacobian_norm < 1e-12 < 0.3 < worked.scaled.jacobian_norm


def test_the_same_seed_gives_the_same_figures_and_another_seed_others() -> None:
    small: dict[str, Any] = {"keys": 4, "samples": 50, "max_dk": 64}
    assert measure(seed=7, **small) == measure(seed=7, **small)
    assert measure(seed=7, **small).levels != measure(seed=8, **small).levels


def test_no_draw_is_larger_than_a_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The normals are drawn CHUNK at a time at most, a row's keys split when one row
    is more than that, and every row and key is still drawn once."""
    monkeypatch.setattr(scaling, "CHUNK", 64)
    monkeypatch.setattr(scaling, "SCORES_CHUNK", 16)
    sizes: list[int] = []
    original = np.random.Generator.standard_normal

    class Counting:
        def __init__(self) -> None:
            self.rng = np.random.default_rng(0)

        def standard_normal(self, shape: tuple[int, ...]) -> Any:
            sizes.append(math.prod(shape))
            return original(self.rng, shape)

    for d_k, keys in ((2, 4), (16, 8), (32, 5)):
        sizes.clear()
        blocks = list(scaling._scores(Counting(), d_k, keys, 13))  # type: ignore[arg-type]
        assert max(sizes) <= 64
        assert sum(block.shape[0] for block in blocks) == 13
        assert all(block.shape[1] == keys for block in blocks)
        assert sum(sizes) == 13 * (keys + 1) * d_k  # each row's q and its keys' k


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"keys": 1}, "keys: expected a whole number ≥ 2, got 1"),
        ({"keys": 4097}, "keys: expected at most 4,096, got 4,097"),
        ({"samples": 9}, "samples: expected a whole number ≥ 10, got 9"),
        ({"samples": 100_001}, "samples: expected at most 100,000, got 100,001"),
        ({"max_dk": 1}, "max_dk: expected a whole number ≥ 2, got 1"),
        ({"max_dk": 48}, "max_dk: expected a power of two (2, 4, …, 16,384), got 48"),
        ({"max_dk": 2**15}, "max_dk: expected at most 16,384, got 32,768"),
        ({"seed": -1}, "seed: expected a whole number ≥ 0, got -1"),
        ({"seed": 2**64}, "seed: expected at most 18,446,744,073,709,551,615, got "),
        ({"keys": 2.0}, "keys: expected a whole number ≥ 2, got 2.0"),
        ({"samples": True}, "samples: expected a whole number ≥ 10, got a boolean (true)"),
        (
            {"samples": 100_000, "keys": 8, "max_dk": 1024},
            "samples × keys × max_dk: expected at most 134,217,728",
        ),
    ],
)
def test_settings_out_of_range_are_one_input_error(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as caught:
        measure(**settings)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_a_larger_max_dk_leaves_the_smaller_ones_as_they_were() -> None:
    small: dict[str, Any] = {"keys": 4, "samples": 20}
    assert measure(max_dk=128, **small).levels[:-1] == measure(max_dk=64, **small).levels
