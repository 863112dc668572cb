"""FlashAttention's tiled forward pass with the online softmax, recorded tile by tile.

FlashAttention (Dao et al. 2022, arXiv 2205.14135, Algorithm 1) and FlashAttention-2
(Dao 2023, arXiv 2307.08691, Algorithm 1) never hold the n × m score matrix: they cut Q
into blocks of ``block_q`` rows and K, V into blocks of ``block_k`` rows, and for each
tile (query block i, key block j) compute ``S_ij = Q_i·K_jᵀ / √d_k``, then update, per
query row, a running max ``m``, a running sum ``ℓ`` of ``exp(s − m)`` and an output
accumulator ``O``. When a tile raises a row's max from ``m_old`` to ``m_new``, what was
summed so far was summed against the old max, so it is multiplied by the rescale factor
``exp(m_old − m_new)`` (Milakov & Gimelshein's online softmax). The result equals
softmax(Q·Kᵀ/√d_k)·V exactly in arithmetic; in float64 to rounding.

Two variants, both recorded:

- ``variant=2`` (FlashAttention-2): outer loop over query blocks, inner over key
  blocks. ``P̃ = exp(S_ij − m_new)``, ``ℓ_new = exp(m_old − m_new)·ℓ_old + rowsum(P̃)``,
  ``O ← exp(m_old − m_new)·O + P̃·V_j``: O is kept unnormalised and divided by ℓ once,
  after the row block's last tile.
- ``variant=1`` (FlashAttention v1): outer loop over key blocks, inner over query blocks
  (its Algorithm 1, lines 5 and 7). ``P̃ = exp(S_ij − m̃)`` with m̃ the tile's row max,
  ``ℓ_new = exp(m_old − m_new)·ℓ_old + exp(m̃ − m_new)·rowsum(P̃)``, and O is kept
  normalised: ``O ← (ℓ_old·exp(m_old − m_new)·O + exp(m̃ − m_new)·P̃·V_j) / ℓ_new``.

Each row's state only depends on the key blocks it has seen, in increasing j, so the
two loop orders give every row the same sequence of updates.

Causal (the mask of :func:`attntrace.kernel.ops.causal_mask`: key j is hidden from query
i when ``j > i + (m − n)``): a tile whose every cell is hidden is skipped, as the kernels
end their inner loop early, and recorded as skipped with nothing computed; a tile
crossing the diagonal is masked cell by cell. A row that has seen no visible key yet
has ``m = −∞``; ``exp(−∞ − (−∞))`` would be NaN, so, as FlashAttention-2's kernel does
(``max == -INF ? 0 : max`` in softmax.h), a max of −∞ is replaced by 0 where it is
subtracted: its exps are exp(−∞) = 0 and its rescale factor 0 (nothing was summed), and a
row that never sees a key (only when m < n) ends with output 0, m = −∞ and ℓ = 0 (the
kernels' guard ``sum == 0 ? 1 : 1/sum``) where the standard softmax would give NaN.

**The variants** (docs/variants.md, "The commands"). Which cells are hidden is
:func:`attntrace.kernel.masks.hidden` over the tile's positions, so a sliding window hides
what the trace's ``masked`` stage hides; a tile every cell of which is hidden, by the
causal mask or by the window, is skipped and says why (``Tile.why``), as the kernels skip
the key blocks outside ``[q − window + 1, q]`` (FlashAttention-2's ``window_size``,
gpt-oss's ``BANDWIDTH`` loop bounds). ALiBi's bias ``−m_h · |i − j|`` is added to each
tile's scaled scores and the cap ``C · tanh(x / C)`` applied after it, before the mask,
by the full softmax's own steps (:func:`attntrace.kernel.ops.logit_steps`). A sink logit
s enters as gpt-oss's Triton kernel takes it (``_attn_fwd`` in
``gpt_oss/triton/attention.py``): the running max starts at s instead of −∞ (``m_i =
zeros + sink``), the running sum at 0, and after the last tile the sink's own ``exp(s −
m)`` joins the sum the output is divided by (``z = l_i + exp(sink − m_i)``);
``FlashRecord.sink`` is its share, the trace's ``sink`` column. Since m starts finite, no
row ever meets the ``−∞ − (−∞)`` guard.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from attntrace import arguments
from attntrace.errors import InputError
from attntrace.kernel import masks
from attntrace.kernel.frozen import Matrix, computed
from attntrace.kernel.ops import logit_steps
from attntrace.kernel.trace import Trace

FLOAT64_BYTES = 8
# Every tile is recorded (its scores, P̃, m, ℓ and O), some 4 KB of Python objects apart
# from its arrays: 65,536 tiles (512 tokens in blocks of 2) took 10 s and 240 MB. A trace
# a reader follows tile by tile has far fewer; past this, larger blocks are asked for.
MAX_TILES = 4096
# The default block: 2 (several tiles even for a short sentence), or more so that a long
# input is cut into at most this many blocks each way.
DEFAULT_BLOCKS = 8


def default_block(length: int) -> int:
    """The default block size for ``length`` rows: max(2, ⌈length / 8⌉)."""
    return max(2, -(-length // DEFAULT_BLOCKS))


@dataclass(frozen=True, eq=False)
class Tile:
    """One tile (query block ``i``, key block ``j``) and the running state after it.

    ``rows`` and ``cols`` are the query and key index ranges ``(start, stop)``. A skipped
    tile (every cell masked) has ``scores``, ``weights``, ``block_max`` and ``rescale``
    ``None`` and its state unchanged (``m_old`` is ``m_new``). ``weights`` is P̃ as the
    variant computes it (against m_new for 2, against the tile's max for 1). ``output``
    is O_i after the tile: unnormalised for variant 2, normalised for variant 1.
    """

    i: int
    j: int
    rows: tuple[int, int]
    cols: tuple[int, int]
    skipped: bool
    scores: Matrix | None  # S_ij, −∞ where masked: [rows, cols]
    weights: Matrix | None  # P̃: [rows, cols]
    block_max: Matrix | None  # the tile's row max: [rows]
    rescale: Matrix | None  # exp(m_old − m_new): [rows]
    m_old: Matrix  # [rows]
    m_new: Matrix
    l_old: Matrix
    l_new: Matrix
    output: Matrix  # O_i after the tile: [rows, d_v]
    why: str | None = None  # a skipped tile's reason: the future, out of the window


@dataclass(frozen=True, eq=False)
class FlashRecord:
    """The tiles in the order the variant runs them, and what they end with."""

    variant: int
    causal: bool
    block_q: int
    block_k: int
    keys: int  # m
    tiles: tuple[Tile, ...]
    output: Matrix  # [n, d_v], softmax(Q·Kᵀ/√d_k)·V
    m: Matrix  # [n]: each row's max over its visible scores (and the sink logit)
    ell: Matrix  # [n]: each row's ℓ, Σ exp(s − m) over them (the sink's term apart)
    sink: Matrix | None = None  # [n]: the weight the sink logit took from each row
    window: int | None = None
    sinks: int = 0

    @property
    def skipped(self) -> int:
        return sum(tile.skipped for tile in self.tiles)

    def skipped_for(self, why: str) -> int:
        """How many tiles were skipped for ``why`` (:data:`FUTURE`, :data:`OUT_OF_WINDOW`
        or :data:`BOTH`)."""
        return sum(tile.why == why for tile in self.tiles)

    def tile(self, i: int, j: int) -> Tile:
        """The tile of query block ``i`` and key block ``j``."""
        for tile in self.tiles:
            if (tile.i, tile.j) == (i, j):
                return tile
        raise InputError(
            field="tile",
            expected="a query block and a key block of this record",
            found=f"({i}, {j})",
        )

    @property
    def standard_bytes(self) -> int:
        """The float64 bytes the standard algorithm stores for the scores and weights."""
        return matrix_bytes(len(self.m), self.keys)


def matrix_bytes(n: int, m: int, itemsize: int = FLOAT64_BYTES) -> int:
    """Bytes of the n × m scores and the n × m weights the standard algorithm writes:
    ``2 · n · m · itemsize`` (the tiled one holds neither)."""
    return 2 * n * m * itemsize


def _positive(value: object, name: str) -> int:
    """A whole number ≥ 1 (a block size, a count, a byte size), value first as every check."""
    size = arguments.whole(value, name)
    if size < 1:
        raise InputError(field=name, expected="a whole number ≥ 1", found=str(size))
    return size


FUTURE = "the future"
OUT_OF_WINDOW = "out of the window"
BOTH = "the future and out of the window"


def _why_skipped(query: npt.NDArray[np.int64], key: npt.NDArray[np.int64], causal: bool) -> str:
    """Why every cell of a tile is hidden: all later keys, all out of the window, or
    some of each."""
    later = key[None, :] > query[:, None] if causal else np.zeros((len(query), len(key)), bool)
    if later.all():
        return FUTURE
    return OUT_OF_WINDOW if not later.any() else BOTH


def _subtrahend(m: Matrix) -> Matrix:
    """The max a row's exps are taken against: 0 where it is −∞ (no visible key yet)."""
    safe: Matrix = np.where(np.isneginf(m), 0.0, m)
    return safe


def _variant(variant: object) -> int:
    """The variant asked for: 1 (FlashAttention) or 2 (FlashAttention-2)."""
    chosen = arguments.whole(variant, "variant")
    if chosen not in (1, 2):
        raise InputError(
            field="variant",
            expected="1 (FlashAttention) or 2 (FlashAttention-2)",
            found=str(chosen),
        )
    return chosen


def _check_tiles(n: int, m: int, block_q: int, block_k: int) -> None:
    """Refuses more than :data:`MAX_TILES` tiles."""
    tiles_needed = -(-n // block_q) * -(-m // block_k)
    if tiles_needed > MAX_TILES:
        raise InputError(
            field="--block-q/--block-k",
            expected=f"at most {MAX_TILES:,} tiles "
            "(⌈queries / block_q⌉ · ⌈keys / block_k⌉); larger blocks make fewer",
            found=f"{tiles_needed:,} ({n} × {m} in blocks of {block_q} × {block_k})",
        )


def _epilogue(
    acc: Matrix, run_m: Matrix, run_l: Matrix, variant: int, sink_logit: float | None
) -> Matrix | None:
    """After the last tile: O divided by its row sums, in place, where the variant has not
    kept it divided; with a sink logit, its ``exp(s − m)`` joins each sum first. Returns
    the sink's share of each row (None without one)."""
    if sink_logit is not None:  # the sink's exp(s − m) joins the sum
        sink_term = np.exp(float(sink_logit) - run_m)
        total = run_l + sink_term
        if variant == 2:
            acc /= total[:, None]
        else:  # O was kept divided by ℓ: by ℓ + the sink's term instead
            acc *= (run_l / total)[:, None]
        return computed(sink_term / total)
    if variant == 2:  # divided by ℓ once, at the end of each row block
        acc /= np.where(run_l == 0.0, 1.0, run_l)[:, None]
    return None


def flash(
    Q: Matrix,
    K: Matrix,
    V: Matrix,
    *,
    block_q: int,
    block_k: int,
    causal: bool = False,
    variant: int = 2,
    window: int | None = None,
    sinks: int = 0,
    slope: float | None = None,
    softcap: float | None = None,
    sink_logit: float | None = None,
) -> FlashRecord:
    """softmax(Q·Kᵀ/√d_k)·V for one head, tile by tile: Q ``[n, d_k]``, K ``[m, d_k]``,
    V ``[m, d_v]``; with a ``window`` (and ``sinks``), ALiBi's ``slope``, a ``softcap``
    and a ``sink_logit`` as the module says. Refuses block sizes below 1 and a variant
    other than 1 or 2."""
    block_q, block_k = _positive(block_q, "block_q"), _positive(block_k, "block_k")
    variant = _variant(variant)
    causal = arguments.flag(causal, "causal")
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    n, m = len(Q), len(K)
    _check_tiles(n, m, block_q, block_k)
    scale = 1.0 / math.sqrt(Q.shape[1])
    offset = m - n  # the causal mask's: the last query is aligned with the last key
    q_blocks = [(s, min(s + block_q, n)) for s in range(0, n, block_q)]
    k_blocks = [(s, min(s + block_k, m)) for s in range(0, m, block_k)]
    query_at, key_at = np.arange(n) + offset, np.arange(m)  # positions, as the mask reads them
    # a sink logit starts every row's max (gpt-oss's m_i = sink); its term joins at the end
    run_m = np.full(n, -np.inf if sink_logit is None else float(sink_logit))
    run_l = np.zeros(n)
    acc = np.zeros((n, V.shape[1]))
    order = (
        [(i, j) for i in range(len(q_blocks)) for j in range(len(k_blocks))]
        if variant == 2
        else [(i, j) for j in range(len(k_blocks)) for i in range(len(q_blocks))]
    )
    tiles: list[Tile] = []
    for i, j in order:
        (r0, r1), (c0, c1) = q_blocks[i], k_blocks[j]
        m_old, l_old = run_m[r0:r1].copy(), run_l[r0:r1].copy()
        rows_at, cols_at = query_at[r0:r1], key_at[c0:c1]
        hidden = (
            masks.hidden(rows_at, cols_at, causal=True, window=window, sinks=sinks)
            if causal
            else None
        )
        if hidden is not None and hidden.all():  # no cell of the tile is visible: skipped
            tiles.append(
                Tile(
                    i=i,
                    j=j,
                    rows=(r0, r1),
                    cols=(c0, c1),
                    skipped=True,
                    scores=None,
                    weights=None,
                    block_max=None,
                    rescale=None,
                    m_old=computed(m_old),  # the state passes through unchanged
                    m_new=computed(m_old.copy()),
                    l_old=computed(l_old),
                    l_new=computed(l_old.copy()),
                    output=computed(acc[r0:r1].copy()),
                    why=_why_skipped(rows_at, cols_at, causal),
                )
            )
            continue
        raw = Q[r0:r1] @ K[c0:c1].T  # [bq, d_k]·[d_k, bk] -> [bq, bk]
        # ALiBi's −m · |i − j|, the cap, the mask: the full softmax's steps, in its order
        bias = None if slope is None else masks.alibi_bias(rows_at, cols_at, slope)
        *_, S = logit_steps(raw * scale, raw, bias=bias, softcap=softcap, mask=hidden)
        block_max = S.max(axis=1)
        m_new = np.maximum(m_old, block_max)
        rescale = np.exp(m_old - _subtrahend(m_new))  # 0 where m_old is −∞
        if variant == 2:
            P = np.exp(S - _subtrahend(m_new)[:, None])
            l_new = rescale * l_old + P.sum(axis=1)
            acc[r0:r1] = rescale[:, None] * acc[r0:r1] + P @ V[c0:c1]
        else:
            P = np.exp(S - _subtrahend(block_max)[:, None])
            to_new = np.exp(block_max - _subtrahend(m_new))
            l_new = rescale * l_old + to_new * P.sum(axis=1)
            divisor = np.where(l_new == 0.0, 1.0, l_new)[:, None]
            acc[r0:r1] = (
                (l_old * rescale)[:, None] * acc[r0:r1] + to_new[:, None] * (P @ V[c0:c1])
            ) / divisor
        run_m[r0:r1], run_l[r0:r1] = m_new, l_new
        tiles.append(
            Tile(
                i=i,
                j=j,
                rows=(r0, r1),
                cols=(c0, c1),
                skipped=False,
                scores=computed(S),
                weights=computed(P),
                block_max=computed(block_max),
                rescale=computed(rescale),
                m_old=computed(m_old),
                m_new=computed(m_new),
                l_old=computed(l_old),
                l_new=computed(l_new.copy()),
                output=computed(acc[r0:r1].copy()),
            )
        )
    sink = _epilogue(acc, run_m, run_l, variant, sink_logit)
    return FlashRecord(
        variant=variant,
        causal=causal,
        block_q=block_q,
        block_k=block_k,
        keys=m,
        tiles=tuple(tiles),
        output=computed(acc),
        m=computed(run_m),
        ell=computed(run_l),
        sink=sink,
        window=window,
        sinks=sinks,
    )


def flash_head(
    trace: Trace, head: int, block_q: int, block_k: int, variant: int = 2
) -> FlashRecord:
    """:func:`flash` on head ``head`` of ``trace``: its score inputs (Q and K, or
    Q_rope and K_rope under RoPE), its V, and the model's causal mask."""
    if not isinstance(trace, Trace):
        raise arguments.wrong_type(trace, "trace", "a Trace")
    head = arguments.whole(head, "head")
    if head not in trace.traced_heads:
        held = ", ".join(map(str, trace.traced_heads))
        raise InputError(field="head", expected=f"a head the trace holds ({held})", found=str(head))
    model = trace.model
    q, k = model.score_inputs
    Q, K, V = (trace.stage(name, head=head).data for name in (q, k, "V"))
    variants = model.variants
    sink_logits = variants.sink_logits(model.heads)
    return flash(
        Q,
        K,
        V,
        block_q=block_q,
        block_k=block_k,
        causal=model.causal,
        variant=variant,
        window=variants.window,
        sinks=variants.sinks,
        slope=variants.slopes(model.heads)[head] if model.positions == "alibi" else None,
        softcap=variants.softcap,
        sink_logit=None if sink_logits is None else sink_logits[head],
    )


@dataclass(frozen=True)
class Traffic:
    """HBM accesses, in elements, of standard attention and of FlashAttention."""

    standard: int
    tiled: int
    block_q: int  # B_r
    block_k: int  # B_c
    sram_elements: int


def hbm_traffic(n: int, d: int, sram_bytes: int, itemsize: int = 2) -> Traffic:
    """HBM reads and writes, in elements, by Theorem 2 of arXiv 2205.14135 (proof in its
    Appendix C), for sequence length N = ``n``, head dimension d and an SRAM of
    M = ``sram_bytes // itemsize`` elements (itemsize 2: the kernels run in fp16/bf16).

    Standard attention (its Algorithm 0), Θ(N·d + N²):
        read Q, K (2Nd), write S (N²); read S (N²), write P (N²);
        read P, V (N² + Nd), write O (Nd)          — total 4·N·d + 4·N².
    FlashAttention (its Algorithm 1), Θ(N²·d²/M): blocks B_c = ⌈M / 4d⌉,
    B_r = min(⌈M / 4d⌉, d), T_c = ⌈N / B_c⌉ outer passes; K and V are read once (2Nd),
    and each pass reads Q and O and writes O (3Nd) and reads and writes ℓ and m (4N):
        total 2·N·d + T_c · (3·N·d + 4·N),
    which with T_c ≈ 4Nd/M is Θ(N²d²/M).
    """
    n, d = _positive(n, "n"), _positive(d, "d")
    sram_bytes, itemsize = _positive(sram_bytes, "sram_bytes"), _positive(itemsize, "itemsize")
    M = sram_bytes // itemsize
    if M < 1:
        raise InputError(
            field="sram_bytes",
            expected=f"at least one element ({itemsize} bytes)",
            found=str(sram_bytes),
        )
    B_c = -(-M // (4 * d))
    B_r = min(B_c, d)
    T_c = -(-n // B_c)
    return Traffic(
        standard=4 * n * d + 4 * n * n,
        tiled=2 * n * d + T_c * (3 * n * d + 4 * n),
        block_q=B_r,
        block_k=B_c,
        sram_elements=M,
    )
