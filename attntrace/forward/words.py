"""What each stage means, in words: the renderers' captions, apart from their layout.

One line under each table (:func:`one_line`, drawn by
:mod:`attntrace.forward.views.stage_block`); for step mode's panel a paragraph
(:func:`paragraph`) and the stage as an equation of shapes (:func:`shape_equation`).
Plain strings, which the renderers style and wrap. Numbers in these texts (√d_k,
shapes, a head's slice of a weight) are filled in from the trace, never typed.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from attntrace.kernel.trace import ModelInfo, Stage, Trace

_ONE_LINE = {
    "embeddings": "One row per token: its vector from the embedding table.",
    "positions": "One row per position: the vector that tells attention where a token is.",
    "X": "One row per token: its embedding vector, the input to attention.",
    "embeddings_context": "One row per context token: its vector from the embedding table.",
    "positions_context": "One row per context position.",
    "X_context": "One row per context token: what the keys and values are computed from.",
    "masked": "The scaled scores with −∞ where query i would see a later key j.",
    "concat": "The heads' outputs side by side: head 0's columns first.",
    "projected": "The block's output: the concatenated heads mixed back to d_model by WO.",
    "Q": "Queries: what each token is looking for.",
    "K": "Keys: what each token offers to be found by.",
    "V": "Values: what each token passes on when it is attended to.",
    "Q_rope": "The queries turned by their positions (RoPE): row p by angles p·θ_i.",
    "K_rope": "The keys turned by their positions: a query·key product now sees their distance.",
    "scores": "Row i, column j: how well query i matches key j (their dot product).",
    "scaled": "The scores divided by √d_k = {sqrt_dk}, so their size does not grow with d_k.",
    "softmax": "Attention weights: each row sums to 1; row i says where token i looks.",
    "output": "Row i: the value rows averaged with row i's weights; token i's new vector.",
    # the stages of docs/variants.md
    "Q_norm": "Each query row divided by its root mean square: length √d_k, then times q_norm.",
    "K_norm": "Each key row divided by its root mean square: length √d_k, then times k_norm.",
    "alibi": "ALiBi's bias: −m · |i − j|, more negative the further key j is from query i.",
    "biased": "The scaled scores plus ALiBi's bias: far keys pushed down by distance.",
    "capped": "The logits soft-capped: {softcap} · tanh(x / {softcap}), never beyond ±{softcap}.",
    "sink": "The weight each row gave to the sink logit: attention that passes no value.",
}

_PARAGRAPH = {
    "embeddings": (
        "Each of the {n} tokens is looked up in the embedding table and becomes a row of "
        "{d_model} numbers. On their own these say what a token is, not where it stands."
    ),
    "positions": (
        "Attention compares every pair of tokens the same way wherever they stand, so word "
        "order must be added to the input. Row p is the position vector of position p "
        "({positions}); it is added to the embedding of the token at p."
    ),
    "X_context": (
        "The context sentence ({m} tokens) becomes rows of {d_model} numbers the same way: "
        "in cross-attention the keys and values are computed from it, the queries from X."
    ),
    "embeddings_context": ("The context's tokens, looked up in the same embedding table."),
    "positions_context": ("The context's position vectors, counted from 0 in the context."),
    "masked": (
        "A decoder must not look ahead: when it predicts token i, tokens after i do not "
        "exist yet. So every key j after query i gets −∞, and since exp(−∞) = 0 softmax "
        "gives it weight exactly 0. Row i keeps keys 0 to i: the first token sees only "
        "itself."
    ),
    "concat": (
        "Each of the {heads} heads wrote its own output of {d_v} numbers per token; "
        "concat lays them side by side into [{n} × {heads_d_v}]: columns of head 0, then "
        "head 1, and so on."
    ),
    "projected": (
        "WO [{heads_d_v} × {d_model}] mixes the heads' outputs back into a vector of "
        "d_model numbers per token, the size the next layer expects. This is the block's "
        "output."
    ),
    "X": (
        "Each of the {n} tokens is looked up in the embedding table and becomes a row of "
        "{d_model} numbers. Everything that follows is computed from these rows."
    ),
    "Q": (
        "Multiplying X [{n} × {d_model}] by the learned matrix WQ [{d_model} × {d_k}] turns "
        "every token into a query of {d_k} numbers. Row i of Q is the question token i asks "
        "of the others."
    ),
    "K": (
        "The same tokens, multiplied by a different matrix WK [{d_model} × {d_k}], become "
        "keys. A query and a key are compared by their dot product, so both have {d_k} numbers."
    ),
    "V": (
        "A third matrix WV [{d_model} × {d_v}] turns each token into a value of {d_v} numbers: "
        "the content that is copied, in proportion to the attention weights, into the output."
    ),
    "scores": (
        "scores[i, j] = {q}[i] · {k}[j], the sum of the element-wise products of query i and "
        "key j. A large score means token i's question matches what token j offers. "
        "{q} [{n} × {d_k}] times {k}ᵀ [{d_k} × {m}] gives one score for every pair of tokens."
    ),
    "scaled": (
        "Dot products of d_k numbers grow with d_k, and large scores push softmax towards a "
        "one-hot row whose gradients vanish. Dividing by √d_k = √{d_k} = {sqrt_dk} keeps them "
        "in a range where softmax still spreads its weight."
    ),
    "softmax": (
        "Each row of scaled scores becomes a probability distribution: exp of each score, "
        "divided by the row's sum of exps. The row max is subtracted first: it cancels out "
        "of the ratio and keeps exp from overflowing. Every row sums to 1."
    ),
    "output": (
        "Row i of the output is Σ_j softmax[i, j] · V[j]: the value rows mixed in the "
        "proportions token i chose. softmax [{n} × {m}] times V [{m} × {d_v}] gives "
        "[{n} × {d_v}]."
    ),
    "Q_rope": (
        "Rotary positions (RoPE): nothing was added to X, so position enters here. Each "
        "query row p is cut into pairs of numbers {rope_pair} and each pair is turned "
        "like a clock hand by the angle {rope_angle}: large turns in the "
        "first pairs, small ones in the last."
    ),
    "Q_norm": (
        "QK-norm (Gemma 3, OLMo 2): each query row is divided by √(mean(row²) + ε), its "
        "root mean square, which gives it length about √{d_k} however large the "
        "projection made it; then it is multiplied by the weight q_norm, which sets each "
        "dimension's scale. The scores compare directions, and cannot grow without bound."
    ),
    "K_norm": (
        "The keys are normed the same way, with their own weight k_norm. With both normed, "
        "a score is at most about d_k times the weights: the softmax cannot saturate "
        "because one row grew large."
    ),
    "alibi": (
        "ALiBi (Press et al. 2022): no position vectors; instead a bias of −m · |i − j| on "
        "the scaled score of query i and key j, with this head's slope m. The nearer a "
        "key, the smaller the penalty; each head has its own slope, so some heads look "
        "near and some far."
    ),
    "biased": (
        "The scaled scores plus ALiBi's bias, cell by cell. Softmax reads these: a key "
        "far back needs a better match to win the same weight as a near one."
    ),
    "capped": (
        "Soft-capping (Gemma 2): each logit x becomes {softcap} · tanh(x / {softcap}). Small "
        "logits pass almost unchanged; large ones are squeezed towards ±{softcap}, so no "
        "single score can take all of a row's weight."
    ),
    "sink": (
        "A learned sink logit joins every row of the softmax: its exp is added to the "
        "row's sum, so it takes a share of the weight, but it has no value row. The "
        "column is that share; each softmax row sums to 1 − sink, and a row with nothing "
        "worth attending to can give its weight to the sink instead."
    ),
    "K_rope": (
        "The keys are turned the same way, by their own positions. Turning q by angle a and "
        "k by angle b changes their dot product as turning q by a − b alone would: the "
        "scores now depend on how far apart two tokens are, not on where they stand."
    ),
}

# X when a real model's earlier layers computed it (a GivenInputs), not a lookup.
_HIDDEN_LINE = "One row per token: the hidden state this layer's attention reads."
_HIDDEN_PARAGRAPH = (
    "These {n} rows were not looked up in a table: the model's embeddings and every layer "
    "before this one made them, so the same word has different rows in different places. "
    "They are what this layer's attention multiplies by WQ, WK and WV."
)


def _is_given(stage: Stage) -> bool:
    """X of a real model's layer: its formula names the hidden state, not embeddings."""
    return stage.name == "X" and not stage.formula.startswith("X = embeddings")


def _numbers(trace: Trace) -> dict[str, object]:
    model = trace.model
    return {
        "heads": model.heads,
        "heads_d_v": model.heads * model.d_v,
        "positions": model.positions,
        "n": len(trace.tokens),
        "m": len(trace.context_tokens or trace.tokens),
        "d_model": model.d_model,
        "d_k": model.d_k,
        "d_v": model.d_v,
        "sqrt_dk": f"{math.sqrt(model.d_k):.4f}",
        "q": model.score_inputs[0],
        "k": model.score_inputs[1],
        "rope_angle": _rope_angle(model),
        # pair i: columns i and i + d_k/2 (rotate_half), or neighbours 2i and 2i + 1
        "rope_pair": "(2i, 2i + 1)"
        if model.rope_pairing == "interleaved"
        else f"(i, i + {len(model.turn_frequencies)})",
        "softcap": f"{model.variants.softcap:g}" if model.variants.softcap is not None else "",
    }


def _variant_line(stage: Stage, trace: Trace) -> str | None:
    """The masked and softmax captions where a window or a sink changes what they say."""
    v = trace.model.variants
    if stage.name == "masked" and v.window is not None:
        kept = f"; the first {v.sinks} kept" if v.sinks else ""
        return (
            f"−∞ where key j is later than query i, or {v.window} or more keys back "
            f"(the window){kept}."
        )
    if stage.name == "masked" and trace.model.mask_source != "scaled":
        return (
            f"The {trace.model.mask_source} logits with −∞ where query i would see a later key j."
        )
    if stage.name == "softmax" and v.sink_logit is not None:
        return (
            "Attention weights (s the sink logit, M = max(row max, s)): row i says where "
            "token i looks, and sums to 1 − sink (the sink column)."
        )
    return None


def one_line(stage: Stage, trace: Trace) -> str:
    """A sentence on what ``stage`` means, for the caption under its table."""
    if _is_given(stage):
        return _HIDDEN_LINE
    if stage.name == "X" and trace.model.positions not in ("none", "rope", "alibi"):
        return "One row per token: its embedding plus its position's vector."
    said = _variant_line(stage, trace)
    if said is None:
        said = _ONE_LINE.get(stage.name, "").format(**_numbers(trace))
    return held(said, stage, trace)


_CROSS = {
    "K": (
        "The context's tokens (X_context), multiplied by WK [{d_model} × {d_k}], become the "
        "keys: in cross-attention the queries ask about the other sentence. A query and a "
        "key are compared by their dot product, so both have {d_k} numbers."
    ),
    "V": (
        "The context's tokens, multiplied by WV [{d_model} × {d_v}], become the values: what "
        "each context token passes on to the queries that attend to it."
    ),
}


def paragraph(stage: Stage, trace: Trace) -> str:
    """The step-mode explanation of ``stage`` (numbers made singular where they are 1)."""
    texts = _CROSS if trace.context_tokens is not None and stage.name in _CROSS else _PARAGRAPH
    template = _HIDDEN_PARAGRAPH if _is_given(stage) else texts.get(stage.name, "")
    text = template.format(**_numbers(trace)) + _variant_paragraph(stage, trace)
    text = text.replace(" 1 numbers", " 1 number").replace(" 1 tokens", " 1 token")
    return held(text, stage, trace)


# What a caption promises of softmax's rows, in exact arithmetic.
_SUMS_TO_ONE = ("each row sums to 1", "Every row sums to 1")


def held(text: str, stage: Stage, trace: Trace) -> str:
    """``text`` made true of the softmax a --dtype holds: its rows, rounded, need not
    sum to 1 (bfloat16's to 0.9980–1.0018), and an overflow before it makes rows NaN.
    "each row sums to 1" becomes "each row sums to 1 in exact arithmetic; in bfloat16
    these rows sum to 0.9980–1.0018", and NaN rows are counted. Other texts, and a
    float64 trace's, are returned as they are."""
    if trace.precision is None or stage.name != "softmax" or stage.data.size == 0:
        return text
    # a row's sum, NaN where the row holds one: no copy of the stage (9,300 tokens' is
    # 690 MB), a vector of its rows
    every = np.asarray(stage.data, dtype=np.float64).sum(axis=1)
    nan_rows = np.isnan(every)
    sums = every[~nan_rows]
    dtype, count = trace.precision.dtype, int(nan_rows.sum())
    exact = sums.size == 0 or bool(np.all(sums == 1.0))
    nan = f"{count} row{'' if count == 1 else 's'} of NaN: {dtype} overflowed before softmax"
    promise = next((p for p in _SUMS_TO_ONE if p in text), None)
    if promise is None:  # a sink's 1 − sink: the NaN rows alone to tell
        return f"{text.rstrip()} In {dtype}, {nan} (above)." if count else text
    if exact and not count:
        return text
    told = promise
    if not exact:
        rows = "the other rows" if count else "these rows"
        told += f" in exact arithmetic; in {dtype} {rows} sum to {_spread(sums)}"
    if count:
        told += f"{',' if exact else ''} but for {nan} (above)"
    return text.replace(promise, told)


def _spread(sums: npt.NDArray[np.float64]) -> str:
    """``0.9980–1.0018``: the lowest and highest sum with the digits that show how far
    each is from 1 (at least four after the point, as the tables), both alike."""
    low, high = float(sums.min()), float(sums.max())
    off = max(abs(low - 1), abs(high - 1))
    places = max(4, 1 - math.floor(math.log10(off))) if off > 0 else 4
    places = min(places, 17)
    if f"{low:.{places}f}" == f"{high:.{places}f}":
        return f"{low:.{places}f}"
    return f"{low:.{places}f}–{high:.{places}f}"


def _variant_paragraph(stage: Stage, trace: Trace) -> str:
    """What a window or a sink adds to the masked and softmax paragraphs."""
    v = trace.model.variants
    if stage.name == "masked" and v.window is not None:
        first = f"first {v.sinks} tokens stay" if v.sinks > 1 else "first token stays"
        sinks = f" The {first} visible however far back: a sink (StreamingLLM)." if v.sinks else ""
        return (
            f" A sliding window of {v.window} hides more: query i sees only itself and "
            f"the {v.window - 1} keys before it, so a key {v.window} or more back is −∞ "
            f"too.{sinks}"
        )
    if stage.name == "softmax" and v.sink_logit is not None:
        return " With a sink logit its exp joins each row's sum: the row sums to 1 − sink."
    return ""


def shape_equation(stage: Stage, trace: Trace) -> str:
    """The stage as an equation of shapes: ``X [3 × 2] · WQ [2 × 2] = Q [3 × 2]``.

    For one head of several, the weight is that head's slice (``WQ[:, 2:4]``).
    """
    model = trace.model
    n, m = len(trace.tokens), len(trace.context_tokens or trace.tokens)
    d_model, d_k, d_v = model.d_model, model.d_k, model.d_v
    heads, h, g = model.heads, stage.head or 0, stage.kv_head or 0
    source = "X_context" if trace.context_tokens is not None else "X"
    softmax_input = trace.model.softmax_source
    q, k = trace.model.score_inputs

    def piece(name: str, index: int, width: int, split: bool) -> str:
        return f"{name}[:, {index * width}:{(index + 1) * width}]" if split else name

    wq = piece("WQ", h, d_k, heads > 1)
    wk = piece("WK", g, d_k, trace.model.kv_heads > 1)
    wv = piece("WV", g, d_v, trace.model.kv_heads > 1)
    wo_rows = heads * d_v
    # a bias is one number per column, added to every row: "+ bQ [d_k]", "+ bO [d_model]"
    learned = trace.bias_for(stage)
    bias = "" if learned is None else f" + {learned.name} [{stage.shape[1]}]"
    equations = {
        "embeddings": f"embeddings [{n} × {d_model}]: {n} tokens, {d_model} numbers each",
        "positions": f"positions [{n} × {d_model}]: one row per position 0 to {n - 1}",
        "X": (
            f"embeddings [{n} × {d_model}] + positions [{n} × {d_model}] = X [{n} × {d_model}]"
            if trace.model.positions not in ("none", "rope") and not _is_given(stage)
            else f"X [{n} × {d_model}]: {n} tokens, {d_model} numbers each"
        ),
        "X_context": f"X_context [{m} × {d_model}]: {m} context tokens",
        "Q": f"X [{n} × {d_model}] · {wq} [{d_model} × {d_k}]{bias} = Q [{n} × {d_k}]",
        "K": f"{source} [{m} × {d_model}] · {wk} [{d_model} × {d_k}]{bias} = K [{m} × {d_k}]",
        "V": f"{source} [{m} × {d_model}] · {wv} [{d_model} × {d_v}]{bias} = V [{m} × {d_v}]",
        "Q_rope": f"RoPE(Q [{n} × {d_k}], positions 0 to {n - 1}) = Q_rope [{n} × {d_k}]",
        "K_rope": f"RoPE(K [{m} × {d_k}], positions 0 to {m - 1}) = K_rope [{m} × {d_k}]",
        "scores": f"{q} [{n} × {d_k}] · {k}ᵀ [{d_k} × {m}] = scores [{n} × {m}]",
        "scaled": f"scores [{n} × {m}] / √{d_k} (= {math.sqrt(d_k):.4f}) = scaled [{n} × {m}]",
        "masked": f"{trace.model.mask_source} [{n} × {m}] with −∞ above the diagonal"
        + (f" and {model.variants.window} or more back" if model.variants.window else "")
        + f" = masked [{n} × {m}]",
        "Q_norm": f"RMSNorm(Q [{n} × {d_k}]) · q_norm [{d_k}] = Q_norm [{n} × {d_k}]",
        "K_norm": f"RMSNorm(K [{m} × {d_k}]) · k_norm [{d_k}] = K_norm [{m} × {d_k}]",
        "alibi": f"−m · |i − j| for i < {n}, j < {m} = alibi [{n} × {m}]",
        "biased": f"scaled [{n} × {m}] + alibi [{n} × {m}] = biased [{n} × {m}]",
        "capped": f"C · tanh(x / C) of each cell [{n} × {m}] = capped [{n} × {m}]",
        "sink": f"exp(s − M) / (Σ exp(x − M) + exp(s − M)), per row = sink [{n} × 1]",
        "softmax": (f"softmax of each row of {softmax_input} [{n} × {m}] = softmax [{n} × {m}]"),
        "output": f"softmax [{n} × {m}] · V [{m} × {d_v}] = output [{n} × {d_v}]",
        "concat": f"{heads} × output [{n} × {d_v}] side by side = concat [{n} × {wo_rows}]",
        "projected": (
            f"{'concat' if heads > 1 else 'output'} [{n} × {wo_rows}] · WO [{wo_rows} × "
            f"{d_model}]{bias} = projected [{n} × {d_model}]"
        ),
    }
    return equations.get(stage.name, f"{stage.name} [{stage.shape[0]} × {stage.shape[1]}]")


def _rope_angle(model: ModelInfo) -> str:
    """The angle of pair i at position p: by the base, or by a real model's own
    frequencies (scaled RoPE; a partial rotary width leaves the last dimensions)."""
    if model.rope_frequencies is None:
        base = model.rope_base if model.rope_base is not None else 10000.0
        return f"p · {base:g}^(−2i/{model.d_k})"
    pairs = len(model.rope_frequencies)
    unturned = model.d_k - 2 * pairs
    rest = f"; the last {unturned} dimensions are not turned" if unturned else ""
    return f"p · f_i, f_i the model's own frequency of pair i (scaled RoPE, {pairs} pairs{rest})"
