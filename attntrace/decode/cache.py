"""What one decode step holds and computes: the KV cache, and the new row's arithmetic.

:class:`KVCache` keeps the keys and values seen so far, per K/V head, with the position
of each row (a sliding window drops rows, so a row's index is not its place). The
functions compute one step as the full trace computes the row (docs/variants.md, "The
commands"): the new q and k normed and turned (:func:`prepared`), the window's eviction
(:func:`make_room`) and attention of each head's row against its K/V head's cache with
every variant (:func:`attend_cache`). :mod:`attntrace.decode.decoder` (float64) and
:mod:`attntrace.decode.dtype` (a dtype) both run their steps through these, each with
its own arithmetic (``norm``, ``turn``, ``attend``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.kernel import masks
from attntrace.kernel.frozen import freeze
from attntrace.kernel.ops import Attention, Matrix
from attntrace.kernel.spec import ModelSpec

BYTES_PER_NUMBER = 8  # float64


@dataclass
class KVCache:
    """The keys and values seen so far, a growing ``[t, d]`` matrix per K/V head.

    Starts empty and grows by :meth:`append`, one row per decoded token (as in
    TransformerLens' cache entry). Rows live in buffers that double when full, so an
    append copies nothing already cached, and :attr:`keys` and :attr:`values` are views
    of the first ``length`` rows: a view taken at step t still reads that step's cache
    after later appends (rows are never written twice; a grown buffer leaves the old
    one to the views that hold it), so a decode can keep every step's cache for the
    price of one.
    """

    kv_heads: int
    d_k: int
    d_v: int
    length: int = field(init=False, default=0)
    _positions: list[int] = field(init=False, repr=False, default_factory=list)
    _keys: Matrix = field(init=False, repr=False)  # [kv_heads, capacity, d_k]
    _values: Matrix = field(init=False, repr=False)  # [kv_heads, capacity, d_v]

    bytes_per_number: int = BYTES_PER_NUMBER  # the dtype's storage size: 8 for float64

    def __post_init__(self) -> None:
        self._keys = np.empty((self.kv_heads, 0, self.d_k))
        self._values = np.empty((self.kv_heads, 0, self.d_v))

    def append(self, new_keys: Matrix, new_values: Matrix, position: int | None = None) -> None:
        """Add one token: ``new_keys`` [kv_heads, d_k] and ``new_values`` [kv_heads, d_v],
        at ``position`` in the sentence (default: the one after the last row's)."""
        if self.length == self._keys.shape[1]:
            self._keys = _grown(self._keys, self.length)
            self._values = _grown(self._values, self.length)
        self._keys[:, self.length] = new_keys
        self._values[:, self.length] = new_values
        if position is None:
            position = self._positions[-1] + 1 if self._positions else 0
        self._positions.append(position)
        self.length += 1

    def drop(self, row: int) -> int:
        """Remove cached row ``row`` (a sliding window's oldest): returns its position.

        The rows after it move up into buffers of their own, so a view an earlier step
        took still reads that step's cache (no row of a buffer is written twice)."""
        keep = [i for i in range(self.length) if i != row]
        position = self._positions.pop(row)
        capacity = self._keys.shape[1]
        keys = np.empty((self.kv_heads, capacity, self.d_k))
        values = np.empty((self.kv_heads, capacity, self.d_v))
        keys[:, : self.length - 1] = self._keys[:, keep]
        values[:, : self.length - 1] = self._values[:, keep]
        self._keys, self._values = keys, values
        self.length -= 1
        return position

    @property
    def positions(self) -> tuple[int, ...]:
        """The sentence position of each cached row, oldest first."""
        return tuple(self._positions)

    @classmethod
    def holding(
        cls, keys: Sequence[Matrix], values: Sequence[Matrix], bytes_per_number: int = 8
    ) -> KVCache:
        """A cache of ``keys[g]`` [t, d_k] and ``values[g]`` [t, d_v] for each K/V head,
        in buffers of its own (the rows are copied)."""
        cache = cls(len(keys), keys[0].shape[1], values[0].shape[1], bytes_per_number)
        cache.length = int(keys[0].shape[0])
        cache._positions = list(range(cache.length))
        # with room to grow, so the next append copies nothing
        cache._keys = _grown(np.asarray(np.stack(keys), dtype=np.float64), cache.length)
        cache._values = _grown(np.asarray(np.stack(values), dtype=np.float64), cache.length)
        return cache

    def copy(self) -> KVCache:
        """A cache to go on from separately: the rows so far, in buffers of its own."""
        cache = KVCache.holding(self.keys, self.values, self.bytes_per_number)
        cache._positions = list(self._positions)
        return cache

    @property
    def keys(self) -> list[Matrix]:
        """One read-only ``[t, d_k]`` view per K/V head."""
        return _read_only(self._keys[:, : self.length])

    @property
    def values(self) -> list[Matrix]:
        """One read-only ``[t, d_v]`` view per K/V head."""
        return _read_only(self._values[:, : self.length])

    @property
    def numbers(self) -> int:
        return self.length * self.kv_heads * (self.d_k + self.d_v)

    @property
    def bytes(self) -> int:
        return self.numbers * self.bytes_per_number


def _grown(buffer: Matrix, length: int) -> Matrix:
    """A buffer of twice the rows (at least 16), holding the ``length`` rows so far."""
    heads, capacity, width = buffer.shape
    bigger = np.empty((heads, max(16, 2 * capacity), width))
    bigger[:, :length] = buffer[:, :length]
    return bigger


def _read_only(rows: Matrix) -> list[Matrix]:
    """Each head's view, unwritable: every step's cache shares the buffer's rows. Frozen
    as the package's own (its rows are never written again), so a Stage of it shares
    it rather than copying it."""
    return [freeze(view) for view in rows]


Norm = Callable[[Matrix, "Matrix | None", float], Matrix]
Turn = Callable[[Matrix, "npt.NDArray[np.int64]", Matrix, str], Matrix]
Attend = Callable[..., Attention]


def prepared(
    model: ModelSpec, q: Matrix, k: Matrix, t: int, norm: Norm, turn: Turn
) -> tuple[Matrix, Matrix]:
    """The new token's q [heads, d_k] and k [kv_heads, d_k] as the scores read them: each
    row RMS-normed first (QK-norm), then turned by RoPE at position t, the full trace's
    order (docs/variants.md; transformers' ``Gemma3Attention.forward``)."""
    variants = model.variants
    if variants.qk_norm:
        q = norm(q, variants.q_norm, variants.qk_norm_eps)
        k = norm(k, variants.k_norm, variants.qk_norm_eps)
    if model.position_kind == "rope":
        frequencies = model.turn_frequencies
        q = turn(q, np.full(len(q), t), frequencies, model.rope_pairing)
        k = turn(k, np.full(len(k), t), frequencies, model.rope_pairing)
    return q, k


def make_room(model: ModelSpec, cache: KVCache, t: int) -> int | None:
    """Before the token at position t is cached: with a sliding window, drop the oldest
    row no query from t on may see (N or more back, not a sink), and return its position.

    One row at most: each step moves the window on by one, so the cache stops growing
    at N + S rows (S sinks kept)."""
    window, sinks = model.variants.window, model.variants.sinks
    if window is None:
        return None
    positions = cache.positions
    for row, position in enumerate(positions):
        if position >= sinks and t - position >= window:
            return cache.drop(row)
    return None


def attend_cache(
    model: ModelSpec,
    attend: Attend,
    q: Matrix,
    keys: Sequence[Matrix],
    values: Sequence[Matrix],
    positions: Sequence[int],
    t: int,
    kv_head_of: Callable[[int], int],
    round_bias: Callable[[Matrix], Matrix],
) -> list[Attention]:
    """Each head's one query row (position t) against its K/V head's cache, with every
    variant as the full trace applies it: ALiBi's bias by the positions' offsets (rounded
    by ``round_bias`` as the trace rounds it), the cap, the mask over the cached
    positions (nothing hidden: the cache holds no later token and, with a window, no row
    past it) and the sink logit."""
    variants = model.variants
    here = np.array([t])
    mask = masks.hidden(here, positions, causal=True, window=variants.window, sinks=variants.sinks)
    slopes = variants.slopes(model.heads) if model.position_kind == "alibi" else None
    sinks = variants.sink_logits(model.heads)
    return [
        attend(
            q[h : h + 1],
            keys[kv_head_of(h)],
            values[kv_head_of(h)],
            mask=mask if mask.any() else None,
            bias=None
            if slopes is None
            else round_bias(masks.alibi_bias(here, positions, slopes[h])),
            softcap=variants.softcap,
            sink_logit=None if sinks is None else sinks[h],
        )
        for h in range(model.heads)
    ]


def stacked(attended: Sequence[Attention]) -> dict[str, Any]:
    """The heads' rows of each stage, ``[heads, rows]`` (``sink`` ``[heads, 1]``), as
    :class:`DecodeStep` names them."""

    def rows(name: str) -> Matrix | None:
        parts = [getattr(a, name) for a in attended]
        return None if parts[0] is None else np.concatenate(parts)

    return {
        "scores": rows("scores"),
        "scaled": rows("scaled"),
        "weights": rows("softmax"),
        "biased": rows("biased"),
        "capped": rows("capped"),
        "sink": rows("sink"),
    }
