"""How one packed array's numbers are laid out in the stream (docs/page.md, "What the
file holds"), chosen for what deflate makes smallest, every one given back bit for bit.

- ``raw``: each value little-endian, one after another (float32 or float64).
- ``planes``: the same bytes regrouped, the first byte of every value, then the second,
  and so on: an array of full float32 weights (MiniLM's) keeps its few distinct exponent
  bytes together, where deflate finds them.
- ``affine``: a quantized model's weights. ggml stores them in blocks of 32 (a row of
  the file, a column of attntrace's matrices), each value worked out in float32 as
  ``fl(fl(a·q) − b)``: a small integer ``q``, the block's scale ``a`` and offset ``b``
  (Q4_0, Q4_1, Q5_0, Q8_0, Q4_K; Q6_K per 16). Each block's ``a`` and ``b`` are found from
  its values (``b`` is minus the smallest value, or 0 with ``q`` signed; ``a`` the step
  between levels, tried to a few float32 ulps), and the block is kept so only where
  computing ``fl(fl(a·q) − b)`` for every value (in float64, each step rounded to
  float32: what the page's ``Math.fround`` does) gives its float32 bits back; another
  block keeps its values as float32. Deflated, 0.7 to 0.8 bytes a weight where their
  float32 bytes take 1.7 to 2.

Layout of ``affine`` for ``n`` values in blocks of ``block``, ``m = n // block`` blocks:
``a`` float32[m], ``b`` float32[m], ``q`` int8[m·block], then float32 values, those of
every block whose ``a`` is NaN (in order) and then the last ``n − m·block``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Block sizes tried for ``affine``: ggml's 32, and Q6_K's 16.
BLOCKS = (32, 16)
#: The steps ``a`` tried: its sign (ggml's Q5_0 and Q4_0 scales are negative, so that a
#: zero is −0.0), the estimate over 1 to 4 (two values a level apart may be missing, the
#: smallest gap then 2a or more) and float32 ulps around it.
_TRIES = tuple(
    (part, sign, ulps)
    for part in (1, 2, 3, 4)
    for sign in (1, -1)
    for ulps in (0, -1, 1, -2, 2, -3, 3)
)
#: The tries on a sample of an array's first blocks, which most of a quantized model's fit.
_FIRST = tuple(t for t in _TRIES if t[0] == 1 and abs(t[2]) <= 1)
#: A block size is used where at least this share of its blocks is fitted (and of the
#: first _SAMPLE, tried first).
_ENOUGH = 0.5
_SAMPLE = 64

__all__ = ["BLOCKS", "affine", "affine_values", "planes", "planes_values"]


def planes(data: bytes, size: int) -> bytes:
    """``data`` (values of ``size`` bytes each) as byte planes."""
    return bytes(np.frombuffer(data, np.uint8).reshape(-1, size).T.tobytes())


def planes_values(data: bytes, size: int) -> bytes:
    """The values' bytes back from their planes."""
    return bytes(np.frombuffer(data, np.uint8).reshape(size, -1).T.tobytes())


def affine(values: npt.NDArray[np.float32]) -> tuple[int, bytes] | None:
    """(block, bytes) of a flat float32 array as ``affine``, or None where too few blocks
    fit it (or there are none)."""
    best: tuple[int, bytes] | None = None
    for block in BLOCKS:
        count = len(values) // block
        if count == 0:
            continue
        blocks = values[: count * block].reshape(count, block)
        if _share(_fit(blocks[:_SAMPLE], _FIRST)[0]) < _ENOUGH / 2:  # full float32's: none
            continue
        fitted = _fit(blocks)
        if _share(fitted[0]) >= _ENOUGH:
            data = _laid_out(values, block, *fitted)
            if best is None or len(data) < len(best[1]):
                best = (block, data)
    return best


def _share(a: npt.NDArray[np.float32]) -> float:
    """The share of blocks fitted (their ``a`` not NaN)."""
    return float((~np.isnan(a)).mean())


def affine_values(data: bytes, count: int, block: int) -> npt.NDArray[np.float64]:
    """The ``count`` values of an ``affine`` layout, as float64 (what the page computes)."""
    m = count // block
    a = np.frombuffer(data, "<f4", m, 0).astype(np.float64)
    b = np.frombuffer(data, "<f4", m, 4 * m).astype(np.float64)
    q = np.frombuffer(data, np.int8, m * block, 8 * m).astype(np.float64).reshape(m, block)
    fitted = ~np.isnan(a)
    kept = int((~fitted).sum()) * block
    rest = np.frombuffer(data, "<f4", kept + count - m * block, 8 * m + m * block)
    out = np.empty((m, block))
    out[fitted] = _computed(a[fitted, None], b[fitted, None], q[fitted])
    out[~fitted] = rest[:kept].reshape(-1, block)
    return np.concatenate([out.reshape(-1), rest[kept:].astype(np.float64)])


def _computed(
    a: npt.NDArray[np.float64], b: npt.NDArray[np.float64], q: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """``fl(fl(a·q) − b)``, the products and differences in float64 each rounded to
    float32, as the page's script computes it (a float32 times an integer below 2**7 is
    exact in float64; a float32 difference rounded twice is rounded once)."""

    product = (a * q).astype(np.float32).astype(np.float64)
    return (product - b).astype(np.float32).astype(np.float64)


def _fit(
    blocks: npt.NDArray[np.float32], tries: tuple[tuple[int, int, int], ...] = _TRIES
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.int8]]:
    """Each block's (a, b, q): ``b`` = −min with q ≥ 0 (Q4_1, Q4_K), else ``b`` = 0 with
    q signed (Q4_0, Q5_0, Q8_0, Q6_K); ``a`` NaN where neither gives the bits back."""

    v = blocks.astype(np.float64)
    a = np.full(len(v), np.nan, dtype=np.float32)
    b = np.zeros(len(v), dtype=np.float32)
    q = np.zeros(v.shape, dtype=np.int8)
    for offset in (-v.min(axis=1), np.zeros(len(v))):
        todo = np.isnan(a)
        found = _fit_scales(v[todo], offset[todo], blocks[todo], tries)
        a[todo], b[todo], q[todo] = (
            found[0],
            np.where(np.isnan(found[0]), 0, offset[todo]),
            found[1],
        )
    return a, b, q


def _fit_scales(
    v: npt.NDArray[np.float64],
    offset: npt.NDArray[np.float64],
    bits: npt.NDArray[np.float32],
    tries: tuple[tuple[int, int, int], ...],
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int8]]:
    """With ``b`` = ``offset``: each block's ``a`` (NaN where none is found) and ``q``."""

    shifted = v + offset[:, None]
    levels = np.sort(shifted, axis=1)
    gaps = np.diff(levels, axis=1)
    gaps[gaps <= 0] = np.inf
    step = gaps.min(axis=1, initial=np.inf)
    a = np.full(len(v), np.nan, dtype=np.float32)
    q = np.zeros(v.shape, dtype=np.int8)
    want = bits.view(np.uint32)
    for part, sign, ulps in tries:
        todo = np.flatnonzero(np.isnan(a))
        if len(todo) == 0:
            break
        scale = _estimate(shifted[todo], step[todo] / part)
        scale = (scale.view(np.int32) + np.int32(ulps)).view(np.float32) * np.float32(sign)
        scale[~np.isfinite(step[todo])] = 0  # one level: a = 0, q = 0
        with np.errstate(divide="ignore", invalid="ignore"):
            level = np.rint(shifted[todo] / scale.astype(np.float64)[:, None])
        level = np.clip(level, -128, 127) + 0.0  # q is an integer: no −0.0 (a·−0.0 is 0.0)
        flat = scale == 0  # one level: a = 0, and q's sign that of each zero (0·−1 is −0.0)
        level[flat] = np.where(np.signbit(v[todo][flat]), -1.0, 1.0)
        got = _computed(scale.astype(np.float64)[:, None], offset[todo, None], level)
        ok = (got.astype(np.float32).view(np.uint32) == want[todo]).all(axis=1)
        a[todo[ok]] = scale[ok]
        q[todo[ok]] = level[ok].astype(np.int8)
    return a, q


def _estimate(
    shifted: npt.NDArray[np.float64], step: npt.NDArray[np.float64]
) -> npt.NDArray[np.float32]:
    """Each block's ``a`` where ``step`` is about one level: the largest value over its
    level (the rounding of one level's step averaged out over many)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        top = np.abs(np.rint(shifted / step[:, None])).max(axis=1)
        estimate = (np.abs(shifted).max(axis=1) / top).astype(np.float32)
    estimate[~np.isfinite(estimate)] = 0
    return np.asarray(estimate, dtype=np.float32)


def _laid_out(
    values: npt.NDArray[np.float32],
    block: int,
    a: npt.NDArray[np.float32],
    b: npt.NDArray[np.float32],
    q: npt.NDArray[np.int8],
) -> bytes:
    m = len(a)
    kept = values[: m * block].reshape(m, block)[np.isnan(a)].reshape(-1)
    rest = np.concatenate([kept, values[m * block :]]).astype("<f4")
    # each part as bytes by name: numpy 1.24's stubs type concatenate's result as Any
    scales: bytes = a.astype("<f4").tobytes() + b.astype("<f4").tobytes()
    tail: bytes = rest.tobytes()
    return scales + q.tobytes() + tail
