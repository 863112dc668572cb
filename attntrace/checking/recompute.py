"""The attention block recomputed by a recipe: the few choices a correct block makes,
each of which a mistake of check's catalogue (:mod:`attntrace.checking.mistakes`) makes
the other way.

:func:`recompute` runs the block by a :class:`Recipe`: the projections, QK-norm and RoPE
here, and each head's attention through the one pipeline,
:func:`attntrace.kernel.ops.attention`, given steps (:class:`_Mistaken`) each correct
unless the recipe says otherwise. With the default recipe it computes what
:func:`attntrace.forward.attention.trace_block` does (tests hold it to that).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from attntrace.kernel import masks
from attntrace.kernel.ops import (
    LOGIT_STEPS,
    Attention,
    Mask,
    Matrix,
    Steps,
    attention,
    causal_mask,
    linear,
    rms_norm,
    rope,
    softmax,
    softmax_with_sink,
)
from attntrace.kernel.spec import ModelSpec


@dataclass(frozen=True)
class Recipe:
    """How the block is computed; every default is the correct choice."""

    weights: tuple[str, str, str] = ("WQ", "WK", "WV")  # what Q, K and V are made with
    biases: tuple[str, str, str] = ("bQ", "bK", "bV")  # and the biases they add
    without_bias: str | None = None  # bQ, bK, bV or bO left out
    split: str = "heads-then-dims"  # or dims-then-heads: reshape [n, d, heads]
    kv_map: str = "group"  # or tiled: query head h reads K/V head h mod kv_heads
    pairing: str | None = None  # RoPE's pairing; None: the model's own
    scores_transposed: bool = False
    scale: str = "sqrt_d_k"  # none, d_k, sqrt_d_model, sqrt_m (the number of keys)
    # none, diagonal, upper, after, zero, inverted (causal models only); cross-causal,
    # cross-causal-end (a causal mask on cross-attention, aligned first or last)
    mask: str = "causal"
    fill: float = -np.inf  # what hidden cells hold before softmax
    fill_added: bool = False  # the fill added to the hidden cells' scores, not put there
    empty_rows: str = "as-filled"  # zero: a row with no key to see weighs nothing (SDPA's)
    weights_transposed: bool = False  # output = softmaxᵀ · V
    softmax: str = "stable"  # columns, heads (across the heads axis), unstable
    concat: str = "transposed"  # or reshaped: [heads, n, d_v] -> [n, heads·d_v] as is
    positions: bool = True  # False: X without the position vectors
    # the variants' (docs/variants.md), each default the correct choice:
    window_extra: int = 0  # 1: a window of N + 1 (i − j ≤ N instead of < N)
    qk_norm_after_rope: bool = False  # RMSNorm of the turned rows, not of Q and K
    alibi_unscaled: bool = False  # ALiBi's bias added to the scores before ÷ √d_k
    softcap: str = "scaled"  # after-mask: of the masked logits; unscaled: of the scores
    sink_in_denominator: bool = True  # False: the sink logit left out of the softmax


@dataclass(frozen=True)
class Computed:
    """A block's stages by head: ``heads[name][h]`` for query head h (K and V as that head
    reads them), ``kv[name][g]`` for K/V head g (K, V, K_rope), ``shared[name]``."""

    shared: dict[str, Matrix]
    heads: dict[str, list[Matrix]]
    kv: dict[str, list[Matrix]]

    def matrix(self, name: str, per: str, index: int) -> Matrix:
        """Stage ``name`` of query head ``index`` (``per`` "head"), of K/V head ``index``
        ("kv_head"), or the shared one ("shared", ``index`` unread)."""
        if per == "kv_head":
            return self.kv[name][index]
        if per == "head":
            return self.heads[name][index]
        return self.shared[name]

    def matrix_list(self, name: str, per: str) -> list[Matrix]:
        """Every head's stage ``name``: query heads (``per`` "head") or K/V heads."""
        return self.kv[name] if per == "kv_head" else self.heads[name]


def recompute(
    model: ModelSpec,
    inputs: dict[str, Matrix],
    recipe: Recipe,
    *,
    dtype: str = "float64",
) -> Computed:
    """The block over ``inputs`` (X, X_keys, and embeddings and embeddings_context where
    there are positions),
    computed by ``recipe``. ``dtype`` is the one an unstable softmax overflows in."""
    X, X_keys = _rows(inputs, recipe)
    Q = _project(model, recipe, X, "Q", model.heads, model.d_k)
    K = _project(model, recipe, X_keys, "K", model.n_kv_heads, model.d_k)
    V = _project(model, recipe, X_keys, "V", model.n_kv_heads, model.d_v)
    group = model.heads // model.n_kv_heads
    # the K/V head each query head reads
    reads = [
        h % model.n_kv_heads if recipe.kv_map == "tiled" else h // group for h in range(model.heads)
    ]
    out = Computed(shared={"X": X}, heads={}, kv={"K": K, "V": V})
    if "X_keys" in inputs:
        out.shared["X_context"] = X_keys
    out.heads["Q"] = Q
    out.heads["K"] = [K[g] for g in reads]
    out.heads["V"] = [V[g] for g in reads]
    Q_in, K_in = _positioned(model, recipe, Q, K, out, reads)
    with np.errstate(all="ignore"):
        _attend(model, recipe, dtype, (Q_in, K_in, V), reads, out)
        _projected(model, recipe, out)
    return out


def _rows(inputs: dict[str, Matrix], recipe: Recipe) -> tuple[Matrix, Matrix]:
    """X and the rows K and V are made from (X itself without a context)."""
    X = inputs["X"] if recipe.positions else inputs["embeddings"]
    X_keys = inputs.get(
        "X_keys" if recipe.positions else "embeddings_context", inputs.get("X_keys", X)
    )  # the context loses its positions too
    return X, X_keys


def _project(
    model: ModelSpec, recipe: Recipe, rows: Matrix, stage: str, count: int, width: int
) -> list[Matrix]:
    """Q, K or V of each of ``count`` heads, made with the recipe's weight and bias and
    split by its layout."""
    slot = "QKV".index(stage)
    bias_name = recipe.biases[slot]
    bias = None if recipe.without_bias == bias_name else model.bias(bias_name)
    full = linear(rows, getattr(model, recipe.weights[slot]), bias)  # [r, count·width]
    if recipe.split == "dims-then-heads":
        return [full.reshape(len(rows), width, count)[:, :, h] for h in range(count)]
    return [full[:, h * width : (h + 1) * width] for h in range(count)]


def _record(
    out: Computed,
    names: tuple[str, str],
    rows: tuple[list[Matrix], list[Matrix]],
    reads: list[int],
) -> None:
    """A query stage by head and a key stage by K/V head, and as each query head reads it."""
    out.heads[names[0]] = rows[0]
    out.kv[names[1]] = rows[1]
    out.heads[names[1]] = [rows[1][g] for g in reads]


def _positioned(
    model: ModelSpec,
    recipe: Recipe,
    Q: list[Matrix],
    K: list[Matrix],
    out: Computed,
    reads: list[int],
) -> tuple[list[Matrix], list[Matrix]]:
    """The rows the scores read: Q and K QK-normed and turned by RoPE, in the recipe's
    order (Gemma 3's: norm, then turn)."""
    v = model.variants

    def normed(q_rows: list[Matrix], k_rows: list[Matrix]) -> tuple[list[Matrix], list[Matrix]]:
        q_rows = [rms_norm(r, v.q_norm, v.qk_norm_eps) for r in q_rows]
        k_rows = [rms_norm(r, v.k_norm, v.qk_norm_eps) for r in k_rows]
        _record(out, ("Q_norm", "K_norm"), (q_rows, k_rows), reads)
        return q_rows, k_rows

    Q_in, K_in = Q, K
    if v.qk_norm and not recipe.qk_norm_after_rope:
        Q_in, K_in = normed(Q_in, K_in)
    if model.position_kind == "rope":
        turn = recipe.pairing or model.rope_pairing
        frequencies = model.turn_frequencies
        Q_in = [rope(q, np.arange(len(q)), frequencies, turn) for q in Q_in]
        K_in = [rope(k, np.arange(len(k)), frequencies, turn) for k in K_in]
        _record(out, ("Q_rope", "K_rope"), (Q_in, K_in), reads)
    if v.qk_norm and recipe.qk_norm_after_rope:  # the mistake: the turned rows normed
        Q_in, K_in = normed(Q_in, K_in)
    return Q_in, K_in


def _attend(
    model: ModelSpec,
    recipe: Recipe,
    dtype: str,
    rows: tuple[list[Matrix], ...],
    reads: list[int],
    out: Computed,
) -> None:
    """Each head's attention, by :func:`attntrace.kernel.ops.attention` with the recipe's
    :class:`_Mistaken` steps, its stages recorded by head."""
    Q_in, K_in, V = rows
    v = model.variants
    n, m = len(Q_in[0]), len(K_in[0])
    mask, shut = _masks(model, recipe, n, m)
    zeroed = shut if mask is not None and recipe.mask == "after" else None
    empty: npt.NDArray[np.bool_] | None = None  # rows with no key to see, weighed nothing
    if mask is not None and recipe.empty_rows == "zero":
        empty = np.asarray(mask.all(axis=-1), dtype=bool)
    divisor = {
        "sqrt_d_k": np.sqrt(model.d_k),
        "none": 1.0,
        "d_k": float(model.d_k),
        "sqrt_d_model": np.sqrt(model.d_model),
        "sqrt_m": np.sqrt(m),
    }[recipe.scale]
    slopes = v.slopes(model.heads) if model.position_kind == "alibi" else None
    sinks = v.sink_logits(model.heads) if recipe.sink_in_denominator else None
    read: list[Matrix] = []  # what each head's softmax read (softmax-over-heads reads it)
    for h, g in enumerate(reads):
        alibi = None if slopes is None else masks.alibi_bias(np.arange(n), np.arange(m), slopes[h])
        steps = _Mistaken(recipe, float(divisor), dtype, alibi, zeroed, empty)
        sink = None if sinks is None else sinks[h]
        head = attention(
            Q_in[h],
            K_in[g],
            V[g],
            mask=mask,
            bias=alibi,
            softcap=v.softcap,
            sink_logit=sink,
            steps=steps,
        )
        stages, logits = _stages(head, alibi, steps.order)
        read.append(logits)
        for name, value in stages.items():
            out.heads.setdefault(name, []).append(value)
    if recipe.softmax == "heads":  # normalised across the heads axis of [heads, n, m]
        across = np.moveaxis(softmax(np.moveaxis(np.stack(read), 0, -1)), -1, 0)
        out.heads["softmax"] = list(across)
        out.heads["output"] = [w @ V[g] for w, g in zip(across, reads, strict=True)]


def _masks(model: ModelSpec, recipe: Recipe, n: int, m: int) -> tuple[Mask | None, Mask]:
    """The mask the recipe applies (None without a causal mask) and the correct one
    (causal, and the window's, as :func:`attntrace.kernel.masks.hidden` draws it, with the
    recipe's window)."""
    v = model.variants
    window = None if v.window is None else v.window + recipe.window_extra
    shut = masks.hidden(
        np.arange(n) + (m - n), np.arange(m), causal=True, window=window, sinks=v.sinks
    )
    if recipe.mask in ("cross-causal", "cross-causal-end"):  # an encoder's keys, hidden
        first = np.triu(np.ones((n, m), dtype=bool), k=1)  # torch's is_causal: j > i
        return (first if recipe.mask == "cross-causal" else causal_mask(n, m)), shut
    if not model.causal:
        return None, shut
    future = causal_mask(n, m)  # j > i (the last query aligned with the last key)
    diagonal = np.eye(n, m, m - n, dtype=bool)
    hidden = {
        "causal": shut,
        "zero": shut,
        "after": shut,
        "diagonal": shut | diagonal,
        "upper": ~future & ~diagonal,
        "inverted": ~future,  # SDPA's True = attend, given the mask of what to hide
        "none": np.zeros((n, m), dtype=bool),
    }[recipe.mask]
    return hidden, shut


def _stages(
    head: Attention, alibi: Matrix | None, order: tuple[str, ...]
) -> tuple[dict[str, Matrix], Matrix]:
    """A head's stages by name, in the order the block makes them, and what its softmax
    read (the last logit step taken)."""
    stages: dict[str, Matrix] = {"scores": head.scores}
    read = head.scaled
    if alibi is not None and head.biased is not None:
        stages.update(alibi=alibi, biased=head.biased)
        read = head.biased
    stages["scaled"] = head.scaled
    taken = {"capped": head.capped, "masked": head.masked}
    for name in order:  # the cap and the mask, in the order taken
        value = taken.get(name)
        if value is not None:
            stages[name] = read = value
    if head.sink is not None:
        stages["sink"] = head.sink
    stages.update(softmax=head.softmax, output=head.output)
    return stages, read


def _projected(model: ModelSpec, recipe: Recipe, out: Computed) -> None:
    """The heads' outputs concatenated (by the recipe's layout) and projected by WO."""
    outputs = out.heads["output"]
    block = outputs[0]
    if model.heads > 1:
        if recipe.concat == "reshaped":
            block = np.stack(outputs).reshape(len(outputs[0]), model.heads * model.d_v)
        else:
            block = np.concatenate(outputs, axis=1)
        out.shared["concat"] = block
    if model.WO is not None:
        bO = None if recipe.without_bias == "bO" else model.bias("bO")
        out.shared["projected"] = linear(block, model.WO, bO)


@dataclass(frozen=True)
class _Mistaken(Steps):
    """Attention's steps by a recipe: each the correct one where the recipe says so."""

    recipe: Recipe
    divisor: float  # what the scores are divided by
    dtype: str  # the one an unstable softmax overflows in
    alibi: Matrix | None = None  # the head's ALiBi bias (a cap of the unscaled scores reads it)
    zeroed: Mask | None = None  # the cells a mask after the softmax zeroes
    empty: npt.NDArray[np.bool_] | None = None  # rows weighed nothing (no key to see)

    @property
    def order(self) -> tuple[str, ...]:
        if self.recipe.softcap == "after-mask":  # −∞ (or −1e9) → −C
            return ("biased", "masked", "capped")
        return LOGIT_STEPS

    def scores(self, Q: Matrix, K: Matrix) -> Matrix:
        if self.recipe.scores_transposed:
            transposed: Matrix = K @ Q.T
            return transposed
        return super().scores(Q, K)

    def scale(self, scores: Matrix, d_k: int) -> Matrix:
        if self.recipe.alibi_unscaled and self.alibi is not None:  # the bias, then ÷ √d_k
            scores = scores + self.alibi
        scaled: Matrix = scores / self.divisor
        return scaled

    def bias(self, logits: Matrix, bias: Matrix) -> Matrix:
        return logits if self.recipe.alibi_unscaled else super().bias(logits, bias)

    def cap(self, logits: Matrix, softcap: float, scores: Matrix) -> Matrix:
        if self.recipe.softcap == "unscaled":  # the scores (with ALiBi's bias), not ÷ √d_k
            logits = scores if self.alibi is None else scores + self.alibi
        return super().cap(logits, softcap, scores)

    def mask(self, logits: Matrix, mask: Mask) -> Matrix:
        if self.recipe.mask == "after":  # the mask comes after the softmax: zeroed
            return logits
        fill = 0.0 if self.recipe.mask == "zero" else self.recipe.fill
        if self.recipe.fill_added:  # an additive mask: the score plus a finite fill
            added: Matrix = np.where(mask, logits + fill, logits)
            return added
        masked: Matrix = np.where(mask, fill, logits)
        return masked

    def softmax(
        self, logits: Matrix, sink_logit: npt.ArrayLike | None
    ) -> tuple[Matrix, Matrix | None]:
        weights, taken = _weights(logits, self.recipe.softmax, self.dtype, sink_logit)
        if self.zeroed is not None:
            weights = np.where(self.zeroed, 0.0, weights)
        if self.empty is not None:  # SDPA's outcome for a row it cannot attend from
            weights = np.where(self.empty[:, None], 0.0, weights)
        return weights, taken

    def output(self, weights: Matrix, V: Matrix) -> Matrix:
        if self.recipe.weights_transposed:  # attn.T @ v: the columns weigh V's rows
            transposed: Matrix = weights.T @ V
            return transposed
        return super().output(weights, V)


def _softmax(scores: Matrix, how: str, dtype: str) -> Matrix:
    return _weights(scores, how, dtype)[0]


def _weights(
    scores: Matrix, how: str, dtype: str, sink: npt.ArrayLike | None = None
) -> tuple[Matrix, Matrix | None]:
    """The weights, and the sink's column where there is a sink logit (the stable and
    the unstable softmax; the softmax over columns is the paper's, without one)."""
    if how == "columns":
        by_column: Matrix = softmax(scores.T).T
        return by_column, None
    if how == "unstable":
        # bfloat16 has float32's exponent range: it overflows where float32 does
        narrow: npt.DTypeLike = np.float32 if dtype == "bfloat16" else dtype
        with np.errstate(all="ignore"):  # the overflow is the mistake being reproduced
            if sink is not None:  # the sink's column joins the row, as in the stable one
                scores = np.concatenate([scores, np.full((*scores.shape[:-1], 1), sink)], -1)
            exps = np.exp(scores.astype(narrow))
            weights: Matrix = (exps / exps.sum(axis=-1, keepdims=True)).astype(np.float64)
        if sink is not None:
            return weights[..., :-1], weights[..., -1:]
        return weights, None
    if sink is not None:
        kept, taken = softmax_with_sink(scores, sink)
        return kept, taken
    return softmax(scores), None
