"""The catalogue of mistakes people make writing attention, each one recomputable.

`check`'s diagnosis is not a guess: it recomputes the model with each mistake that
applies to it and names the one whose arrays reproduce the person's (docs/check.md,
"The catalogue of mistakes"; the ids are part of the JSON contract). So each mistake is
a :class:`Recipe`, the few choices a correct block makes the other way, and
:func:`recompute` runs the block by a recipe. With the default recipe it computes what
:func:`attntrace.forward.attention.trace_block` does (tests hold it to that).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from attntrace.kernel import masks
from attntrace.kernel.ops import (
    Mask,
    Matrix,
    causal_mask,
    linear,
    rms_norm,
    rope,
    softmax,
    softmax_with_sink,
)
from attntrace.kernel.spec import ModelSpec

#: Every id of the catalogue, in the order the diagnosis tries them (docs/check.md; the
#: JSON schema lists the same, with check's ``saved-transposed``).
CAUSES = (
    "positions-not-added",
    "wrong-projection",
    "missing-bias",
    "heads-split-wrong",
    "kv-heads-tiled",
    "rope-interleaved",
    "rope-half",
    "scores-transposed",
    "no-scaling",
    "scaled-by-d_k",
    "scaled-by-d_model",
    "no-mask",
    "mask-hides-diagonal",
    "mask-wrong-triangle",
    "mask-after-softmax",
    "mask-filled-with-zero",
    "softmax-over-columns",
    "softmax-over-heads",
    "unstable-softmax",
    "concat-without-transpose",
    # the variants' own (docs/variants.md)
    "window-off-by-one",
    "qk-norm-after-rope",
    "alibi-before-scaling",
    "softcap-after-mask",
    "softcap-unscaled",
    "sink-not-in-denominator",
)


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
    scale: str = "sqrt_d_k"  # none, d_k, sqrt_d_model
    mask: str = "causal"  # none, diagonal, upper, after, zero (causal models only)
    fill: float = -np.inf  # what hidden cells hold before softmax
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
class Mistake:
    """One entry of the catalogue: its id, what the person did, and how to recompute it."""

    cause: str
    message: str
    recipe: Recipe = field(default_factory=Recipe)


@dataclass(frozen=True)
class Computed:
    """A block's stages by head: ``heads[name][h]`` for query head h (K and V as that head
    reads them), ``kv[name][g]`` for K/V head g (K, V, K_rope), ``shared[name]``."""

    shared: dict[str, Matrix]
    heads: dict[str, list[Matrix]]
    kv: dict[str, list[Matrix]]


def catalogue(model: ModelSpec, n: int, m: int) -> list[Mistake]:  # noqa: C901  split in the one-pipeline refactor
    """The mistakes that would change something for ``model`` over n queries and m keys
    (a mistake that computes the same numbers as the correct block cannot be told apart
    from it, so it is left out)."""
    d_k, d_model, heads, kv_heads = model.d_k, model.d_model, model.heads, model.n_kv_heads
    found: list[Mistake] = []

    def add(cause: str, message: str, **recipe: object) -> None:
        assert cause in CAUSES, cause
        found.append(Mistake(cause, message, replace(Recipe(), **recipe)))  # type: ignore[arg-type]

    if model.positions is not None and model.position_kind not in ("rope", "alibi"):
        add("positions-not-added", "X is the embeddings alone: the position vectors were "
            "not added", positions=False)  # fmt: skip
    names, bias_names = ("WQ", "WK", "WV"), ("bQ", "bK", "bV")
    for slot, stage in enumerate("QKV"):
        for other, other_bias in zip(names, bias_names, strict=True):
            if (
                other == names[slot]
                or getattr(model, other).shape != getattr(model, names[slot]).shape
            ):
                continue
            made, added = list(names), list(bias_names)
            made[slot] = other
            # the other's whole layer (its bias too), or its matrix with the right bias
            for bias in dict.fromkeys((other_bias, bias_names[slot])):
                if (
                    bias != bias_names[slot]
                    and model.bias(bias) is None
                    and model.bias(bias_names[slot]) is None
                ):
                    continue  # no bias either way: the one variant is enough
                added[slot] = bias
                add("wrong-projection", f"{stage} was made with {other} instead of "
                    f"{names[slot]}", weights=tuple(made), biases=tuple(added))  # fmt: skip
    for bias in ("bQ", "bK", "bV", "bO"):
        if model.bias(bias) is not None:
            add("missing-bias", f"the bias {bias} was left out", without_bias=bias)
    if heads > 1 and max(d_k, model.d_v) > 1:
        add("heads-split-wrong", "the heads were split with a [n, d, heads] reshape where "
            "[n, heads, d] was meant", split="dims-then-heads")  # fmt: skip
    if 1 < kv_heads < heads:
        add("kv-heads-tiled", f"query head h read K/V head h mod {kv_heads} instead of h // "
            f"{heads // kv_heads} (repeat where repeat_interleave was meant)",
            kv_map="tiled")  # fmt: skip
    if model.position_kind == "rope" and d_k >= 4:
        if model.rope_pairing == "half":
            add("rope-interleaved", "RoPE paired neighbouring dimensions (2i, 2i+1) where "
                "the model pairs i with i + d/2", pairing="interleaved")  # fmt: skip
        else:
            add("rope-half", "RoPE paired i with i + d/2 where the model pairs neighbouring "
                "dimensions (2i, 2i+1)", pairing="half")  # fmt: skip
    if n == m:
        add("scores-transposed", "scores = K·Qᵀ: the product was taken the other way round",
            scores_transposed=True)  # fmt: skip
    if d_k > 1:
        add("no-scaling", "the scores were not divided by √d_k", scale="none")
        add("scaled-by-d_k", "the scores were divided by d_k instead of √d_k", scale="d_k")
    if d_model != d_k:
        add("scaled-by-d_model", "the scores were divided by √d_model instead of √d_k",
            scale="sqrt_d_model")  # fmt: skip
    if model.causal:
        add("no-mask", "the causal mask was not applied: each token saw the tokens after it",
            mask="none")  # fmt: skip
        for fill in (-np.inf, -1e9):  # a fully hidden row is NaN with −∞, uniform with −1e9
            add("mask-hides-diagonal", "the mask also hid the diagonal: a token could not "
                "see itself", mask="diagonal", fill=fill)  # fmt: skip
        add("mask-wrong-triangle", "the mask hid the past instead of the future (the wrong "
            "triangle)", mask="upper")  # fmt: skip
        add("mask-after-softmax", "the future cells were zeroed after softmax, so rows no "
            "longer sum to 1", mask="after")  # fmt: skip
        add("mask-filled-with-zero", "hidden cells were set to 0 instead of −∞ before "
            "softmax", mask="zero")  # fmt: skip
    add("softmax-over-columns", "softmax normalised each column instead of each row",
        softmax="columns")  # fmt: skip
    if heads > 1:  # a hidden cell of every head: NaN with a −∞ fill, 1/heads with −1e9
        for fill in (-np.inf, -1e9) if model.causal else (-np.inf,):
            add("softmax-over-heads", "softmax normalised across the heads (axis 0 of [heads, "
                "n, m]) instead of along each row", softmax="heads", fill=fill)  # fmt: skip
    add("unstable-softmax", "softmax took exp without subtracting the row max, and exp "
        "overflowed", softmax="unstable")  # fmt: skip
    if heads > 1 and n > 1:
        add("concat-without-transpose", "the heads' outputs [heads, n, d_v] were reshaped "
            "to [n, heads·d_v] without moving the heads axis", concat="reshaped")  # fmt: skip
    _variant_mistakes(model, n, m, add)
    return found


def _variant_mistakes(model: ModelSpec, n: int, m: int, add: Callable[..., None]) -> None:
    """The classic mistakes of the variants, each only where it changes a number."""
    v, d_k = model.variants, model.d_k
    # key j = i − N is let in wrongly only where it is no sink: some i ≥ N + S
    if model.causal and v.window is not None and max(n, m) > v.window + v.sinks:
        add("window-off-by-one", "the window lets in one key too many: i − j ≤ N instead "
            "of < N", window_extra=1)  # fmt: skip
    weighted = [w for w in (v.q_norm, v.k_norm) if w is not None and np.ptp(w) > 0]
    if v.qk_norm and model.position_kind == "rope" and weighted:
        # RoPE turns a row without changing its RMS: only a weight that is not one number
        # for every dimension tells norm-then-turn from turn-then-norm
        add("qk-norm-after-rope", "QK-norm was applied after RoPE instead of before it (the "
            "rows turned, then normed)", qk_norm_after_rope=True)  # fmt: skip
    if model.position_kind == "alibi" and d_k > 1 and max(n, m) > 1:
        add("alibi-before-scaling", "ALiBi's bias was added to the scores before ÷ √d_k "
            "instead of after", alibi_unscaled=True)  # fmt: skip
    if v.softcap is not None:
        if model.causal and max(n, m) > 1:
            add("softcap-after-mask", "the cap was applied after the mask: the hidden cells "
                "became −C instead of −∞, and took weight", softcap="after-mask")  # fmt: skip
        if d_k > 1:
            add("softcap-unscaled", "the cap was applied to the unscaled scores: C · "
                "tanh(scores / C), before ÷ √d_k", softcap="unscaled")  # fmt: skip
    if v.sink_logit is not None:
        add("sink-not-in-denominator", "the sink logit was forgotten in the softmax's "
            "denominator: each row sums to 1, not 1 − sink",
            sink_in_denominator=False)  # fmt: skip


def recompute(  # noqa: C901, PLR0915  split in the one-pipeline refactor
    model: ModelSpec,
    inputs: dict[str, Matrix],
    recipe: Recipe,
    *,
    dtype: str = "float64",
) -> Computed:
    """The block over ``inputs`` (X, X_keys, and embeddings and embeddings_context where
    there are positions),
    computed by ``recipe``. ``dtype`` is the one an unstable softmax overflows in."""
    heads, kv_heads, d_k, d_v = model.heads, model.n_kv_heads, model.d_k, model.d_v
    X = inputs["X"] if recipe.positions else inputs["embeddings"]
    X_keys = inputs.get(
        "X_keys" if recipe.positions else "embeddings_context", inputs.get("X_keys", X)
    )  # the context loses its positions too
    made = dict(zip("QKV", recipe.weights, strict=True))

    def project(rows: Matrix, stage: str, count: int, width: int) -> list[Matrix]:
        weight = made[stage]
        bias_name = recipe.biases["QKV".index(stage)]
        bias = None if recipe.without_bias == bias_name else model.bias(bias_name)
        full = linear(rows, getattr(model, weight), bias)  # [r, count·width]
        if recipe.split == "dims-then-heads":
            return [full.reshape(len(rows), width, count)[:, :, h] for h in range(count)]
        return [full[:, h * width : (h + 1) * width] for h in range(count)]

    Q = project(X, "Q", heads, d_k)
    K = project(X_keys, "K", kv_heads, d_k)
    V = project(X_keys, "V", kv_heads, d_v)
    group = heads // kv_heads

    def reads(h: int) -> int:
        return h % kv_heads if recipe.kv_map == "tiled" else h // group

    out = Computed(shared={"X": X}, heads={}, kv={"K": K, "V": V})
    if "X_keys" in inputs:
        out.shared["X_context"] = X_keys
    out.heads["Q"] = Q
    out.heads["K"] = [K[reads(h)] for h in range(heads)]
    out.heads["V"] = [V[reads(h)] for h in range(heads)]
    v = model.variants

    def normed(rows: list[Matrix], weight: Matrix | None) -> list[Matrix]:
        return [rms_norm(r, weight, v.qk_norm_eps) for r in rows]

    def record_norm(q_rows: list[Matrix], k_rows: list[Matrix]) -> None:
        out.heads["Q_norm"] = q_rows
        out.kv["K_norm"] = k_rows
        out.heads["K_norm"] = [k_rows[reads(h)] for h in range(heads)]

    Q_in, K_in = Q, K
    if v.qk_norm and not recipe.qk_norm_after_rope:  # Gemma 3's order: norm, then turn
        Q_in, K_in = normed(Q, v.q_norm), normed(K, v.k_norm)
        record_norm(Q_in, K_in)
    if model.position_kind == "rope":
        turn = recipe.pairing or model.rope_pairing
        Q_in = [rope(q, np.arange(len(q)), model.rope_base, turn) for q in Q_in]
        K_in = [rope(k, np.arange(len(k)), model.rope_base, turn) for k in K_in]
        out.heads["Q_rope"] = Q_in
        out.kv["K_rope"] = K_in
        out.heads["K_rope"] = [K_in[reads(h)] for h in range(heads)]
    if v.qk_norm and recipe.qk_norm_after_rope:  # the mistake: the turned rows normed
        Q_in, K_in = normed(Q_in, v.q_norm), normed(K_in, v.k_norm)
        record_norm(Q_in, K_in)
    divisor = {"sqrt_d_k": np.sqrt(d_k), "none": 1.0, "d_k": float(d_k),
               "sqrt_d_model": np.sqrt(model.d_model)}[recipe.scale]  # fmt: skip
    n, m = len(Q[0]), len(K[0])
    window = None if v.window is None else v.window + recipe.window_extra
    hidden = masks.hidden(np.arange(n) + (m - n), np.arange(m), causal=True, window=window,
                          sinks=v.sinks)  # fmt: skip
    slopes = v.slopes(heads) if model.position_kind == "alibi" else None
    sinks = v.sink_logits(heads) if recipe.sink_in_denominator else None
    outputs: list[Matrix] = []
    read: list[Matrix] = []  # what each head's softmax read (softmax-over-heads reads it)
    with np.errstate(all="ignore"):
        for h in range(heads):
            q, k, val = Q_in[h], K_in[reads(h)], V[reads(h)]
            scores = k @ q.T if recipe.scores_transposed else q @ k.T
            stages: dict[str, Matrix] = {"scores": scores}
            unscaled = scores  # what a cap of the unscaled scores reads (with ALiBi's bias)
            if slopes is None:
                scaled = logits = scores / divisor
            else:
                alibi = masks.alibi_bias(np.arange(n), np.arange(m), slopes[h])
                if recipe.alibi_unscaled:  # the bias added, then ÷ √d_k
                    scaled = logits = (scores + alibi) / divisor
                else:
                    scaled = scores / divisor
                    logits = scaled + alibi
                stages.update(alibi=alibi, biased=logits)
                unscaled = scores + alibi
            stages["scaled"] = scaled
            cap = v.softcap
            if cap is not None and recipe.softcap != "after-mask":
                before = unscaled if recipe.softcap == "unscaled" else logits
                logits = stages["capped"] = cap * np.tanh(before / cap)
            sink = None if sinks is None else sinks[h]
            weights, masked, taken = _masked_softmax(logits, model.causal, recipe, dtype,
                                                     hidden, sink)  # fmt: skip
            if masked is not None:
                stages["masked"] = masked
                logits = masked
                if cap is not None and recipe.softcap == "after-mask":  # −∞ (or −1e9) → −C
                    logits = stages["capped"] = cap * np.tanh(masked / cap)
                    weights, _, taken = _masked_softmax(logits, False, recipe, dtype, hidden,
                                                        sink)  # fmt: skip
            if taken is not None:
                stages["sink"] = taken
            stages.update(softmax=weights, output=weights @ val)
            read.append(logits)
            for name, value in stages.items():
                out.heads.setdefault(name, []).append(value)
            outputs.append(stages["output"])
        if recipe.softmax == "heads":  # normalised across the heads axis of [heads, n, m]
            across = np.moveaxis(softmax(np.moveaxis(np.stack(read), 0, -1)), -1, 0)
            out.heads["softmax"] = list(across)
            outputs = [w @ V[reads(h)] for h, w in enumerate(across)]
            out.heads["output"] = outputs
        block = outputs[0]
        if heads > 1:
            if recipe.concat == "reshaped":
                block = np.stack(outputs).reshape(len(outputs[0]), heads * d_v)
            else:
                block = np.concatenate(outputs, axis=1)
            out.shared["concat"] = block
        if model.WO is not None:
            bO = None if recipe.without_bias == "bO" else model.bias("bO")
            out.shared["projected"] = linear(block, model.WO, bO)
    return out


def _masked_softmax(
    logits: Matrix,
    causal: bool,
    recipe: Recipe,
    dtype: str,
    shut: Mask,
    sink: float | None = None,
) -> tuple[Matrix, Matrix | None, Matrix | None]:
    """softmax's weights, the masked stage (None without a causal mask) and the sink's
    column (None without a sink logit). ``shut`` is the correct mask (causal, and the
    window's, as :func:`attntrace.kernel.masks.hidden` draws it, with the recipe's window)."""
    if not causal:
        weights, taken = _weights(logits, recipe.softmax, dtype, sink)
        return weights, None, taken
    n, m = logits.shape
    future = causal_mask(n, m)  # j > i (the last query aligned with the last key)
    diagonal = np.eye(n, m, m - n, dtype=bool)
    hidden = {"causal": shut, "zero": shut, "after": shut, "diagonal": shut | diagonal,
              "upper": ~future & ~diagonal,
              "none": np.zeros((n, m), dtype=bool)}[recipe.mask]  # fmt: skip
    if recipe.mask == "after":
        weights, taken = _weights(logits, recipe.softmax, dtype, sink)
        return np.where(shut, 0.0, weights), logits, taken
    fill = 0.0 if recipe.mask == "zero" else recipe.fill
    masked: Matrix = np.where(hidden, fill, logits)
    weights, taken = _weights(masked, recipe.softmax, dtype, sink)
    return weights, masked, taken


def _softmax(scores: Matrix, how: str, dtype: str) -> Matrix:
    return _weights(scores, how, dtype)[0]


def _weights(
    scores: Matrix, how: str, dtype: str, sink: float | None = None
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
