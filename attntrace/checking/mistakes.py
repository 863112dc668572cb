"""The catalogue of mistakes people make writing attention, each one recomputable.

`check`'s diagnosis is not a guess: it recomputes the model with each mistake that
applies to it and names the one whose arrays reproduce the person's (docs/check.md,
"The catalogue of mistakes"; the ids are part of the JSON contract). So each mistake is
a :class:`~attntrace.checking.recompute.Recipe`, the few choices a correct block makes
the other way, and :func:`~attntrace.checking.recompute.recompute` runs the block by a
recipe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from attntrace.checking.recompute import Recipe
from attntrace.kernel.spec import ModelSpec

#: Every id of the catalogue, in the order the diagnosis tries them (docs/check.md; the
#: JSON schema lists the same, with check's ``saved-transposed`` and
#: ``saved-as-another-stage``).
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
    "scaled-by-length",
    "no-mask",
    "mask-hides-diagonal",
    "mask-wrong-triangle",
    "mask-inverted",
    "mask-after-softmax",
    "mask-filled-with-zero",
    "mask-fill-too-small",
    "cross-attention-causal",
    "softmax-over-columns",
    "softmax-over-heads",
    "unstable-softmax",
    "weights-transposed",
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
class Mistake:
    """One entry of the catalogue: its id, what the person did, and how to recompute it."""

    cause: str
    message: str
    recipe: Recipe = field(default_factory=Recipe)


#: What a row with no key to see comes out as, by how it was hidden: NaN with a −∞ fill
#: (0/0), uniform with −1e9 (every cell the same), zeros from PyTorch's
#: ``scaled_dot_product_attention`` with a boolean ``attn_mask`` (docs/check.md).
EMPTY_ROWS = ((-np.inf, "as-filled"), (-1e9, "as-filled"), (-np.inf, "zero"))

#: The finite fills people hide cells with (``masked_fill(mask, -1e4)``, TransformerLens's
#: old ``IGNORE`` of −1e5, ``-1e9``, float16's ``finfo.min``), and those added to the
#: scores as an additive mask (BERT's ``(1 − mask) · −10000``, ``finfo(float16).min``).
FINITE_FILLS = ((-1e4, False), (-1e5, False), (-1e9, False), (-65504.0, False))
ADDED_FILLS = ((-1e4, True), (-65504.0, True))
_FILL_NAMES = {-1e4: "−1e4", -1e5: "−1e5", -1e9: "−1e9", -65504.0: "−65504 (float16's finfo.min)"}

#: A fill of −10⁴ or below changes a weight only where scores reach within float64's exp
#: range (−745) of it: below this largest |scaled score|, ``mask-fill-too-small`` is not
#: tried.
FILL_REACH = 1e3


def catalogue(
    model: ModelSpec,
    n: int,
    m: int,
    *,
    largest_logit: float = np.inf,
    cross: bool | None = None,
) -> list[Mistake]:
    """The mistakes that would change something for ``model`` over n queries and m keys
    (a mistake that computes the same numbers as the correct block cannot be told apart
    from it, so it is left out). ``largest_logit`` is the largest |scaled score| of the
    trace, where known: a finite mask fill changes nothing below :data:`FILL_REACH`.
    ``cross`` says the keys are a context's (default: the model has one)."""
    found: list[Mistake] = []

    def add(cause: str, message: str, **recipe: object) -> None:
        assert cause in CAUSES, cause
        found.append(Mistake(cause, message, replace(Recipe(), **recipe)))  # type: ignore[arg-type]

    # in the order of CAUSES: the diagnosis tries them in it
    _input_mistakes(model, add)
    _score_mistakes(model, n, m, add)
    cross = model.context is not None if cross is None else cross
    _mask_mistakes(model, (n, m, cross), largest_logit, add)
    _softmax_mistakes(model, n, m, add)
    _variant_mistakes(model, n, m, add)
    return found


def _input_mistakes(model: ModelSpec, add: Callable[..., None]) -> None:
    """The mistakes before the scores: X, the projections, the heads, RoPE."""
    d_k, heads, kv_heads = model.d_k, model.heads, model.n_kv_heads
    if model.positions is not None and model.position_kind not in ("rope", "alibi"):
        add(
            "positions-not-added",
            "X is the embeddings alone: the position vectors were not added",
            positions=False,
        )
    _projection_mistakes(model, add)
    for bias in ("bQ", "bK", "bV", "bO"):
        if model.bias(bias) is not None:
            add("missing-bias", f"the bias {bias} was left out", without_bias=bias)
    if heads > 1 and max(d_k, model.d_v) > 1:
        add(
            "heads-split-wrong",
            "the heads were split with a [n, d, heads] reshape where [n, heads, d] was meant",
            split="dims-then-heads",
        )
    if 1 < kv_heads < heads:
        add(
            "kv-heads-tiled",
            f"query head h read K/V head h mod {kv_heads} instead of h // "
            f"{heads // kv_heads} (repeat where repeat_interleave was meant)",
            kv_map="tiled",
        )
    if model.position_kind == "rope" and d_k >= 4:
        if model.rope_pairing == "half":
            add(
                "rope-interleaved",
                "RoPE paired neighbouring dimensions (2i, 2i+1) where "
                "the model pairs i with i + d/2",
                pairing="interleaved",
            )
        else:
            add(
                "rope-half",
                "RoPE paired i with i + d/2 where the model pairs neighbouring "
                "dimensions (2i, 2i+1)",
                pairing="half",
            )


def _projection_mistakes(model: ModelSpec, add: Callable[..., None]) -> None:
    """Q, K or V made with another of the three weights (of the same shape)."""
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
                add(
                    "wrong-projection",
                    f"{stage} was made with {other} instead of {names[slot]}",
                    weights=tuple(made),
                    biases=tuple(added),
                )


def _score_mistakes(model: ModelSpec, n: int, m: int, add: Callable[..., None]) -> None:
    """The scores taken the other way round, and their scaling."""
    d_k = model.d_k
    if n == m:
        add(
            "scores-transposed",
            "scores = K·Qᵀ: the product was taken the other way round",
            scores_transposed=True,
        )
    if d_k > 1:
        add("no-scaling", "the scores were not divided by √d_k", scale="none")
        add("scaled-by-d_k", "the scores were divided by d_k instead of √d_k", scale="d_k")
    if model.d_model != d_k:
        add(
            "scaled-by-d_model",
            "the scores were divided by √d_model instead of √d_k",
            scale="sqrt_d_model",
        )
    if m != d_k:
        add(
            "scaled-by-length",
            "the scores were divided by √(the number of keys) instead of √d_k",
            scale="sqrt_m",
        )


def _mask_mistakes(
    model: ModelSpec,
    sizes: tuple[int, int, bool],
    largest_logit: float,
    add: Callable[..., None],
) -> None:
    """The causal mask's mistakes (a causal model's), and a causal mask put on
    cross-attention (``sizes``: n, m, and whether the keys are a context's)."""
    n, m, cross = sizes
    if not model.causal:
        if cross:
            _cross_mistakes(n, m, add)
        return
    add(
        "no-mask",
        "the causal mask was not applied: each token saw the tokens after it",
        mask="none",
    )
    for fill, empty in EMPTY_ROWS:  # the first token sees nothing: NaN, uniform or zeros
        add(
            "mask-hides-diagonal",
            "the mask also hid the diagonal: a token could not see itself",
            mask="diagonal",
            fill=fill,
            empty_rows=empty,
        )
    add(
        "mask-wrong-triangle",
        "the mask hid the past instead of the future (the wrong triangle)",
        mask="upper",
    )
    for fill, empty in EMPTY_ROWS:  # the last token sees nothing
        add(
            "mask-inverted",
            "the mask was inverted: each token saw only the tokens after it (a boolean "
            "attn_mask is True where a token may look, in scaled_dot_product_attention)",
            mask="inverted",
            fill=fill,
            empty_rows=empty,
        )
    add(
        "mask-after-softmax",
        "the future cells were zeroed after softmax, so rows no longer sum to 1",
        mask="after",
    )
    add(
        "mask-filled-with-zero",
        "hidden cells were set to 0 instead of −∞ before softmax",
        mask="zero",
    )
    if largest_logit >= FILL_REACH:
        for fill, added in FINITE_FILLS + ADDED_FILLS:
            how = (
                "{} was added to the hidden cells"
                if added
                else "the hidden cells were filled with {}"
            )
            add(
                "mask-fill-too-small",
                f"{how.format(_FILL_NAMES[fill])} instead of −∞: "
                "too small to hide them from scores that large",
                fill=fill,
                fill_added=added,
            )


def _cross_mistakes(n: int, m: int, add: Callable[..., None]) -> None:
    """A causal mask on cross-attention: the keys are the context's, all of them visible
    to every query (transformers #48172: SDPA's ``is_causal`` left on)."""
    if m < 2:
        return
    message = (
        "a causal mask was put on cross-attention: query i saw only the context's "
        "first i + 1 tokens, though every query sees the whole context"
    )
    add("cross-attention-causal", message, mask="cross-causal")
    if n > 1 and n != m:  # aligned last (flash-attn's, attntrace's): the first rows see less
        message = message.replace("first i + 1 tokens", "tokens up to i + m − n")
        for fill, empty in EMPTY_ROWS if n > m else EMPTY_ROWS[:1]:
            add(
                "cross-attention-causal",
                message,
                mask="cross-causal-end",
                fill=fill,
                empty_rows=empty,
            )


def _softmax_mistakes(model: ModelSpec, n: int, m: int, add: Callable[..., None]) -> None:
    """The softmax's mistakes, and the heads put back together wrong."""
    heads = model.heads
    add(
        "softmax-over-columns",
        "softmax normalised each column instead of each row",
        softmax="columns",
    )
    if heads > 1:  # a hidden cell of every head: NaN with a −∞ fill, 1/heads with −1e9
        for fill in (-np.inf, -1e9) if model.causal else (-np.inf,):
            add(
                "softmax-over-heads",
                "softmax normalised across the heads (axis 0 of [heads, "
                "n, m]) instead of along each row",
                softmax="heads",
                fill=fill,
            )
    add(
        "unstable-softmax",
        "softmax took exp without subtracting the row max, and exp overflowed",
        softmax="unstable",
    )
    if n == m and n > 1:
        add(
            "weights-transposed",
            "output = softmaxᵀ · V: the weights were transposed before multiplying V",
            weights_transposed=True,
        )
    if heads > 1 and n > 1:
        add(
            "concat-without-transpose",
            "the heads' outputs [heads, n, d_v] were reshaped "
            "to [n, heads·d_v] without moving the heads axis",
            concat="reshaped",
        )


def _variant_mistakes(model: ModelSpec, n: int, m: int, add: Callable[..., None]) -> None:
    """The classic mistakes of the variants, each only where it changes a number."""
    v, d_k = model.variants, model.d_k
    # key j = i − N is let in wrongly only where it is no sink: some i ≥ N + S
    if model.causal and v.window is not None and max(n, m) > v.window + v.sinks:
        add(
            "window-off-by-one",
            "the window lets in one key too many: i − j ≤ N instead of < N",
            window_extra=1,
        )
    weighted = [w for w in (v.q_norm, v.k_norm) if w is not None and np.ptp(w) > 0]
    if v.qk_norm and model.position_kind == "rope" and weighted:
        # RoPE turns a row without changing its RMS: only a weight that is not one number
        # for every dimension tells norm-then-turn from turn-then-norm
        add(
            "qk-norm-after-rope",
            "QK-norm was applied after RoPE instead of before it (the rows turned, then normed)",
            qk_norm_after_rope=True,
        )
    if model.position_kind == "alibi" and d_k > 1 and max(n, m) > 1:
        add(
            "alibi-before-scaling",
            "ALiBi's bias was added to the scores before ÷ √d_k instead of after",
            alibi_unscaled=True,
        )
    if v.softcap is not None:
        if model.causal and max(n, m) > 1:
            add(
                "softcap-after-mask",
                "the cap was applied after the mask: the hidden cells "
                "became −C instead of −∞, and took weight",
                softcap="after-mask",
            )
        if d_k > 1:
            add(
                "softcap-unscaled",
                "the cap was applied to the unscaled scores: C · tanh(scores / C), before ÷ √d_k",
                softcap="unscaled",
            )
    if v.sink_logit is not None:
        add(
            "sink-not-in-denominator",
            "the sink logit was forgotten in the softmax's "
            "denominator: each row sums to 1, not 1 − sink",
            sink_in_denominator=False,
        )
