"""Why the scores are divided by √d_k, measured: the softmax of q·k with and without it.

For q and k of d_k independent standard-normal components, q·k is a sum of d_k products
of unit variance, so Var(q·k) = d_k: the scores spread as √d_k. A softmax of scores that
far apart is all but one-hot, and the gradient that flows back through it,

    J = diag(a) − a·aᵀ   (the softmax's Jacobian, a the row's weights)

is all but 0. Dividing by √d_k brings the variance back to 1 at every d_k. This module
draws the scores (a Monte Carlo estimate, ``numpy.random.default_rng(seed)``) and
measures, for each d_k = 2, 4, …, ``max_dk``, the variance, and for a row of ``keys``
scores both ways, the mean largest weight, entropy and Frobenius norm of J; and it works
the article's own example (d_k 512, scores [180, 210, 95]) exactly.

Every figure of a row is computed so it stays accurate where the softmax is one-hot to
float64's precision (a weight of 1 − 1e-13): the top weight's 1 − a is the sum of the
others' (not 1 minus a number next to 1), the entropy goes through log1p, and ‖J‖² is a
sum of non-negative terms (the shorter Σa² − 2Σa³ + (Σa²)² would cancel to noise).

Memory stays small whatever the settings: the normals are drawn in chunks of at most
:data:`CHUNK` numbers (8 MB), and the work is bounded (:data:`MAX_WORK`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError
from attntrace.kernel.fields import whole

Rows = npt.NDArray[np.float64]

DEFAULT_SEED = 0
DEFAULT_KEYS = 8
DEFAULT_SAMPLES = 2000
DEFAULT_MAX_DK = 1024
MAX_KEYS = 4096
MIN_SAMPLES = 10  # fewer, and a mean says little
MAX_SAMPLES = 100_000
MAX_DK = 2**14
MAX_SEED = 2**64 - 1  # numpy's seeds are any whole number ≥ 0; one of 64 bits is plenty
# samples × keys × max_dk: the normals drawn for the largest d_k's keys (all d_k together
# draw about twice that). 2**27 is 8 times the default run: under a minute on a slow core.
MAX_WORK = 2**27
# At most this many normals are drawn at once (8 MB of float64), and at most
# SCORES_CHUNK scores are softmaxed at once: the memory a run takes does not grow with it.
CHUNK = 2**20
SCORES_CHUNK = 2**16
# A row is called one-hot when its largest weight is above this: the rest share < 1%.
ONE_HOT = 0.99
LOWER = "lower samples, keys or max_dk"  # what the work's refusal advises

# The article's example: with d_k = 512 the scores of one query "can be 180, 210, 95".
# Named in full wherever it is cited, so that a reader can find it.
ARTICLE = 'Swaroop, "How Transformers Actually Compute Attention — A Step-by-Step Breakdown"'
ARTICLE_DK = 512
ARTICLE_SCORES = (180.0, 210.0, 95.0)


@dataclass(frozen=True)
class Softmaxed:
    """What a softmax of rows of scores looks like, each the mean over the rows."""

    largest: float  # the largest weight: 1 is one-hot, 1/N uniform
    one_hot: float  # the share of rows whose largest weight is above ONE_HOT
    entropy: float  # −Σ a log a in nats: log N uniform, 0 one-hot
    jacobian: float  # ‖diag(a) − a·aᵀ‖_F: what a gradient is multiplied by on the way back
    jacobian_median: float  # the same, the median row's: the mean is the few rows' that tie


@dataclass(frozen=True)
class Level:
    """One d_k's figures."""

    d_k: int
    variance: float  # the sample variance of q·k over every score drawn (≈ d_k)
    variance_scaled: float  # of q·k / √d_k (≈ 1)
    unscaled: Softmaxed
    scaled: Softmaxed


@dataclass(frozen=True)
class WorkedRow:
    """One row of scores through the softmax, every figure exact float64."""

    scores: tuple[float, ...]
    weights: tuple[float, ...]
    largest: float
    rest: float  # 1 − largest, computed as the other weights' sum (exact where largest ≈ 1)
    entropy: float
    jacobian: tuple[tuple[float, ...], ...]  # diag(a) − a·aᵀ
    jacobian_norm: float


@dataclass(frozen=True)
class Worked:
    """The article's example: its scores, and the same divided by √d_k."""

    d_k: int
    scale: float  # √d_k
    unscaled: WorkedRow
    scaled: WorkedRow


@dataclass(frozen=True)
class Scaling:
    """The whole measurement: the settings, one :class:`Level` per d_k, the references."""

    seed: int
    keys: int
    samples: int
    max_dk: int
    levels: tuple[Level, ...]
    uniform: Softmaxed  # a row of N equal weights: the most spread a softmax can be
    worked: Worked

    @property
    def dimensions(self) -> tuple[int, ...]:
        return tuple(level.d_k for level in self.levels)


def dimensions(max_dk: int) -> tuple[int, ...]:
    """2, 4, 8, …, max_dk."""
    return tuple(2**power for power in range(1, max_dk.bit_length()))


def settings(seed: Any, keys: Any, samples: Any, max_dk: Any) -> tuple[int, int, int, int]:
    """The settings checked: each in its range, max_dk a power of two, the work bounded."""
    seed = whole(seed, "seed", least=0, most=MAX_SEED)
    keys = whole(keys, "keys", least=2, most=MAX_KEYS)
    samples = whole(samples, "samples", least=MIN_SAMPLES, most=MAX_SAMPLES)
    max_dk = whole(max_dk, "max_dk", least=2, most=MAX_DK)
    if max_dk & (max_dk - 1):
        raise InputError(
            field="max_dk", expected=f"a power of two (2, 4, …, {MAX_DK:,})", found=f"{max_dk:,}"
        )
    work = samples * keys * max_dk
    if work > MAX_WORK:
        raise InputError(
            field="samples × keys × max_dk",
            expected=f"at most {MAX_WORK:,} (the normals drawn for the largest d_k; {LOWER})",
            found=f"{samples:,} × {keys:,} × {max_dk:,} = {work:,}",
        )
    return seed, keys, samples, max_dk


def measure(
    seed: Any = DEFAULT_SEED,
    keys: Any = DEFAULT_KEYS,
    samples: Any = DEFAULT_SAMPLES,
    max_dk: Any = DEFAULT_MAX_DK,
) -> Scaling:
    """Draw and measure every d_k up to ``max_dk`` (one stream from ``seed``: the same
    settings give the same figures), and work the article's example."""
    seed, keys, samples, max_dk = settings(seed, keys, samples, max_dk)
    rng = np.random.default_rng(seed)
    levels = tuple(_level(rng, d_k, keys, samples) for d_k in dimensions(max_dk))
    return Scaling(
        seed=seed,
        keys=keys,
        samples=samples,
        max_dk=max_dk,
        levels=levels,
        uniform=Softmaxed(
            largest=1.0 / keys,
            one_hot=0.0,
            entropy=math.log(keys),
            jacobian=math.sqrt(keys - 1) / keys,  # ‖I/N − 11ᵀ/N²‖_F
            jacobian_median=math.sqrt(keys - 1) / keys,
        ),
        worked=worked_example(),
    )


def _scores(rng: np.random.Generator, d_k: int, keys: int, samples: int) -> Iterator[Rows]:
    """``samples`` rows of ``keys`` scores q·k, in blocks of rows: for each row one q,
    then its keys' k, each of d_k standard normals; never more than CHUNK drawn at once."""
    per_row = keys * d_k
    rows = max(1, min(CHUNK // per_row, SCORES_CHUNK // keys))
    block = max(1, min(keys, CHUNK // d_k))  # keys drawn at once, when a row is too big
    done = 0
    while done < samples:
        count = min(rows, samples - done)
        q = rng.standard_normal((count, d_k))
        parts = []
        for start in range(0, keys, block):
            k = rng.standard_normal((count, min(block, keys - start), d_k))
            parts.append(np.matmul(k, q[:, :, None])[:, :, 0])
        yield parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
        done += count


class _Sums:
    """Running sums of one way's figures over the rows (and each row's ‖J‖, for the
    median: one number a row, at most MAX_SAMPLES of them)."""

    def __init__(self) -> None:
        self.largest = self.entropy = self.jacobian = 0.0
        self.one_hot = 0
        self.norms: list[Rows] = []

    def add(self, scores: Rows) -> None:
        figures = row_figures(scores)
        self.largest += math.fsum(figures.largest)
        self.one_hot += int(np.count_nonzero(figures.largest > ONE_HOT))
        self.entropy += math.fsum(figures.entropy)
        self.jacobian += math.fsum(figures.jacobian)
        self.norms.append(figures.jacobian)

    def means(self, count: int) -> Softmaxed:
        return Softmaxed(
            largest=self.largest / count,
            one_hot=self.one_hot / count,
            entropy=self.entropy / count,
            jacobian=self.jacobian / count,
            jacobian_median=float(np.median(np.concatenate(self.norms))),
        )


def _level(rng: np.random.Generator, d_k: int, keys: int, samples: int) -> Level:
    scale = math.sqrt(d_k)
    unscaled, scaled = _Sums(), _Sums()
    total = squares = 0.0
    for scores in _scores(rng, d_k, keys, samples):
        total += math.fsum(scores.ravel())
        squares += math.fsum((scores * scores).ravel())
        unscaled.add(scores)
        scaled.add(scores / scale)
    count = samples * keys
    mean = total / count
    variance = (squares - count * mean * mean) / (count - 1)
    return Level(
        d_k=d_k,
        variance=variance,
        variance_scaled=variance / d_k,
        unscaled=unscaled.means(samples),
        scaled=scaled.means(samples),
    )


@dataclass(frozen=True)
class RowFigures:
    """Each row's figures (arrays of one number per row) and its weights."""

    weights: Rows
    largest: Rows
    rest: Rows  # 1 − largest, as the sum of the other weights
    entropy: Rows
    jacobian: Rows  # ‖diag(a) − a·aᵀ‖_F


def row_figures(scores: Rows) -> RowFigures:
    """The softmax of each row of ``scores`` (finite, at least 2 columns), stably (the row
    max subtracted), and its largest weight, entropy and Jacobian norm, accurate where
    the row is one-hot to float64's precision."""
    count = scores.shape[0]
    top = np.argmax(scores, axis=1)
    every = np.arange(count)
    shifted = scores - scores[every, top][:, None]  # ≤ 0, exactly 0 at the top
    exps = np.exp(shifted)  # the top's is exactly 1
    exps[every, top] = 0.0
    others = exps.sum(axis=1)  # summed without the 1, so a tiny sum keeps its digits
    exps[every, top] = 1.0
    total = 1.0 + others
    weights = exps / total[:, None]
    largest = 1.0 / total
    rest = others / total
    # H = −Σ a (x − max − log Z) = log Z − Σ a (x − max), log Z = log1p(others)
    entropy = np.log1p(others) - (weights * shifted).sum(axis=1)
    return RowFigures(weights, largest, rest, entropy, _jacobian_norms(weights, top, rest))


def _jacobian_norms(weights: Rows, top: npt.NDArray[np.intp], rest: Rows) -> Rows:
    """‖diag(a) − a·aᵀ‖_F of each row, accurate where the row is one-hot to float64's
    precision (a = 1 − 1e-200, 1e-200): every entry of J is then near the second-largest
    weight m, whose square underflows, so the norm is m·√(Σ (J/m)²), each entry divided
    by m before it is squared; ‖J‖² = Σᵢ aᵢ²(1 − aᵢ)² + Σᵢ aᵢ² Σ_{j≠i} aⱼ², with the top's
    1 − a its ``rest`` and every term ≥ 0 (the shorter Σa² − 2Σa³ + (Σa²)² would cancel
    to noise). A row whose other weights are all 0 has J = 0."""
    every = np.arange(weights.shape[0])
    big = weights[every, top]
    others = weights.copy()
    others[every, top] = 0.0
    second = others.max(axis=1)  # m
    scale = np.where(second > 0, second, 1.0)
    b = others / scale[:, None]  # the other weights over m: the largest is 1
    squares = b * b
    total = squares.sum(axis=1)
    diagonal = (big * rest / scale) ** 2 + (squares * (1.0 - others) ** 2).sum(axis=1)
    # row top against the others, then each other against the top and the rest
    off = big * big * total
    off += (squares * (big[:, None] ** 2 + scale[:, None] ** 2 * (total[:, None] - squares))).sum(
        axis=1
    )
    norms: Rows = np.where(second > 0, second * np.sqrt(diagonal + off), 0.0)
    return norms


def worked_row(scores: Sequence[float]) -> WorkedRow:
    """One row's softmax and figures, with its Jacobian written out."""
    row = np.array([scores], dtype=np.float64)
    figures = row_figures(row)
    a = figures.weights[0]
    jacobian = np.diag(a) - np.outer(a, a)
    top = int(np.argmax(a))
    jacobian[top, top] = a[top] * figures.rest[0]  # a(1 − a), with 1 − a exact
    return WorkedRow(
        scores=tuple(float(s) for s in row[0]),
        weights=tuple(float(w) for w in a),
        largest=float(figures.largest[0]),
        rest=float(figures.rest[0]),
        entropy=float(figures.entropy[0]),
        jacobian=tuple(tuple(float(v) for v in line) for line in jacobian),
        jacobian_norm=float(figures.jacobian[0]),
    )


def worked_example(d_k: int = ARTICLE_DK, scores: Sequence[float] = ARTICLE_SCORES) -> Worked:
    """The article's scores through the softmax as they are, and divided by √d_k."""
    scale = math.sqrt(d_k)
    return Worked(
        d_k=d_k,
        scale=scale,
        unscaled=worked_row(scores),
        scaled=worked_row([s / scale for s in scores]),
    )
