"""Attention as a student writes it, in numpy, with one mistake of docs/check.md switched in.

The oracle of `attntrace check`'s tests. :func:`student_attention` is written the way
homework and ported kernels are: a batch of one in PyTorch's layout (``[1, heads, n, d]``
after ``.transpose(1, 2)``), ``repeat_kv`` for grouped K/V heads, ``rotate_half`` RoPE,
a boolean ``np.triu`` mask filled with ``-inf`` (or ``-1e9``), and the softmax with its
row max subtracted. ``mistake`` swaps in ONE bug, written as a student writes it
(``np.tile`` where ``np.repeat`` was meant, ``axis=-2`` in the softmax, ``np.tril``),
never as "the right answer, then perturbed": the point is that the tool must recognise
the arrays a real bug produces. It reads the model *document* (the model file's plain
dict, docs/model-file.md) by itself and shares no code with attntrace, so the correct
version is checked against tests/naive.py's loops (tests/checking/test_students.py).

:func:`saved` then turns the native arrays into what a person hands to ``check``: the
names people use (``attn``, ``probs``, ``S``, ``out``, ``q``...) and the shapes
docs/check.md accepts (``[1, H, n, d]``, ``[H, n, d]``, ``[n, H, d]``, ``[n, H·d]``,
``[n, d]`` for one head).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]

#: The catalogue of docs/check.md, in its order (tests/cli/test_check_catalogue.py checks
#: the two agree).
MISTAKES = (
    "positions-not-added",
    "no-scaling",
    "scaled-by-d_k",
    "scaled-by-d_model",
    "scaled-by-length",
    "softmax-over-columns",
    "softmax-over-heads",
    "scores-transposed",
    "weights-transposed",
    "unstable-softmax",
    "mask-hides-diagonal",
    "mask-wrong-triangle",
    "mask-inverted",
    "no-mask",
    "mask-after-softmax",
    "mask-filled-with-zero",
    "mask-fill-too-small",
    "cross-attention-causal",
    "kv-heads-tiled",
    "heads-split-wrong",
    "concat-without-transpose",
    "rope-interleaved",
    "rope-half",
    "wrong-projection",
    "missing-bias",
    # the variants' (docs/variants.md), on the models of VARIANT_MODELS
    "window-off-by-one",
    "qk-norm-after-rope",
    "alibi-before-scaling",
    "softcap-after-mask",
    "softcap-unscaled",
    "sink-not-in-denominator",
)

#: The stages of docs/check.md, in computation order.
ORDER = (
    "embeddings",
    "positions",
    "X",
    "X_context",
    "Q",
    "K",
    "V",
    "Q_norm",
    "K_norm",
    "Q_rope",
    "K_rope",
    "scores",
    "scaled",
    "alibi",
    "biased",
    "capped",
    "masked",
    "softmax",
    "sink",
    "output",
    "concat",
    "projected",
)
PER_HEAD = (
    "Q",
    "K",
    "V",
    "Q_norm",
    "K_norm",
    "Q_rope",
    "K_rope",
    "scores",
    "scaled",
    "alibi",
    "biased",
    "capped",
    "masked",
    "softmax",
    "sink",
    "output",
)
#: The stages of n × m cells (and the sink's n × 1): heads first in every layout ([r, H,
#: c] is no form of them).
SQUARE = ("scores", "scaled", "alibi", "biased", "capped", "masked", "softmax", "sink")
SHARED = ("embeddings", "positions", "X", "X_context", "concat", "projected")

#: The earliest stage each mistake can change: it affects that stage and every later one.
FIRST_AFFECTED = {
    "positions-not-added": "X",
    "no-scaling": "scaled",
    "scaled-by-d_k": "scaled",
    "scaled-by-d_model": "scaled",
    "scaled-by-length": "scaled",
    "weights-transposed": "output",
    "mask-inverted": "masked",
    "mask-fill-too-small": "masked",  # an additive fill moves the hidden cells' values
    "cross-attention-causal": "softmax",  # an encoder's trace has no `masked` to save
    "softmax-over-columns": "softmax",
    "softmax-over-heads": "softmax",
    "scores-transposed": "scores",
    "unstable-softmax": "softmax",
    "mask-hides-diagonal": "masked",
    "mask-wrong-triangle": "masked",
    "no-mask": "softmax",  # the student has no `masked` to save
    "mask-after-softmax": "softmax",  # nor here: the mask comes after
    "mask-filled-with-zero": "masked",
    "kv-heads-tiled": "K",  # K and V after repeat_kv
    "heads-split-wrong": "Q",
    "concat-without-transpose": "concat",
    "rope-interleaved": "Q_rope",
    "rope-half": "Q_rope",
    "wrong-projection": "Q",
    "missing-bias": "Q",
    "window-off-by-one": "masked",
    "qk-norm-after-rope": "Q_norm",
    "alibi-before-scaling": "scaled",
    "softcap-after-mask": "capped",
    "softcap-unscaled": "capped",
    "sink-not-in-denominator": "softmax",
}


def affects(mistake: str, stage: str) -> bool:
    """Whether ``mistake`` can change ``stage`` (it comes at or after the first it changes)."""
    return ORDER.index(stage) >= ORDER.index(FIRST_AFFECTED[mistake])


@dataclass(frozen=True)
class Sizes:
    """The sizes of a model document, read the way docs/model-file.md defines them."""

    heads: int
    kv_heads: int
    d_model: int
    d_k: int
    d_v: int
    causal: bool
    rope: bool
    biases: tuple[str, ...]
    wo: bool
    weight_shapes: Mapping[str, tuple[int, int]]


def sizes(document: Mapping[str, Any]) -> Sizes:
    heads = int(document.get("heads", 1))
    kv_heads = int(document.get("kv_heads", heads))
    weights = document["weights"]
    shapes = {name: (len(m), len(m[0])) for name, m in weights.items()}
    d_model = len(next(iter(document["embeddings"].values())))
    return Sizes(
        heads=heads,
        kv_heads=kv_heads,
        d_model=d_model,
        d_k=shapes["WQ"][1] // heads,
        d_v=shapes["WV"][1] // kv_heads,
        causal=bool(document.get("causal", False)),
        rope=document.get("positions") == "rope",
        biases=tuple(sorted(document.get("biases") or {})),
        wo="WO" in weights,
        weight_shapes=shapes,
    )


def projection_swaps(document: Mapping[str, Any]) -> list[str]:
    """The copy-paste slips ``wrong-projection`` can make in this model: ``Q<-WK`` makes Q
    with WK, and so on, wherever the two matrices have the same shape."""
    shapes = sizes(document).weight_shapes
    swaps = []
    for stage, own in (("Q", "WQ"), ("K", "WK"), ("V", "WV")):
        for other in ("WQ", "WK", "WV"):
            if other != own and shapes[other] == shapes[own]:
                swaps.append(f"{stage}<-{other}")
    return swaps


def applies(mistake: str, document: Mapping[str, Any]) -> bool:
    """docs/check.md's "applies when" column, for this model (and one case more)."""
    s = sizes(document)
    pairing = document.get("rope_pairing", "half")
    rules = {
        "positions-not-added": document.get("positions") not in (None, "none", "rope"),
        "no-scaling": s.d_k > 1,
        "scaled-by-d_k": s.d_k > 1,
        "scaled-by-d_model": s.d_model != s.d_k,
        # m keys (the sentence's five, or the context's six); m = d_model is named
        # scaled-by-d_model, the same numbers (the one case more)
        "scaled-by-length": keys_of(document) not in (s.d_k, s.d_model),
        "weights-transposed": not document.get("context"),  # n == m
        "mask-inverted": s.causal,
        "mask-fill-too-small": s.causal and largest_score(document) >= 1e4,
        "cross-attention-causal": bool(document.get("context")) and not s.causal,
        # with a context of another length, K·Qᵀ is m × n and the student's code stops at
        # weights @ v: a crash, not a silent mistake to diagnose
        "scores-transposed": not document.get("context"),
        "mask-hides-diagonal": s.causal,
        "mask-wrong-triangle": s.causal,
        "no-mask": s.causal,
        "mask-after-softmax": s.causal,
        "mask-filled-with-zero": s.causal,
        "kv-heads-tiled": 1 < s.kv_heads < s.heads,
        "heads-split-wrong": s.heads > 1,
        "softmax-over-heads": s.heads > 1,
        "concat-without-transpose": s.heads > 1,
        "rope-interleaved": s.rope and s.d_k >= 4 and pairing == "half",
        "rope-half": s.rope and s.d_k >= 4 and pairing == "interleaved",
        "wrong-projection": bool(projection_swaps(document)),
        "missing-bias": bool(s.biases),
        "window-off-by-one": "window" in document,
        "qk-norm-after-rope": bool(document.get("qk_norm"))
        and s.rope
        and ("q_norm" in document or "k_norm" in document),
        "alibi-before-scaling": document.get("positions") == "alibi" and s.d_k > 1,
        "softcap-after-mask": "softcap" in document and s.causal,
        "softcap-unscaled": "softcap" in document and s.d_k > 1,
        "sink-not-in-denominator": "sink_logit" in document,
    }
    return rules.get(mistake, True)


def keys_of(document: Mapping[str, Any]) -> int:
    """m, the number of keys: the context's words, or the sentence's."""
    return len((document.get("context") or document["sentence"]).split())


def largest_score(document: Mapping[str, Any]) -> float:
    """The largest |scaled score| of the correct student: a mask filled with −1e4 (or
    less) changes a weight only where scores come near it."""
    return float(np.abs(student_attention(document, dtype="float64")["scaled"]).max())


# ------------------------------------------------------------------- the student's code


def words_of(document: Mapping[str, Any], sentence: str) -> list[Sequence[float]]:
    """Split on whitespace; each word looked up exactly, then in lower case."""
    table = document["embeddings"]
    return [table[w] if w in table else table[w.lower()] for w in sentence.split()]


def sinusoidal(n: int, d_model: int, dtype: np.dtype[Any]) -> Array:
    """Vaswani et al.'s PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(the same)."""
    pe = np.zeros((n, d_model))
    position = np.arange(n)[:, None]
    div = 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    pe[:, 0::2] = np.sin(position / div)
    pe[:, 1::2] = np.cos(position / div)[:, : d_model // 2]
    return pe.astype(dtype)


def alibi_slopes(heads: int) -> list[float]:
    """ALiBi's slopes as the paper's code writes them (``get_slopes`` in
    ofirpress/attention_with_linear_biases)."""

    def power_of_2(h: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(h) - 3)))
        return [start * start**i for i in range(h)]

    if math.log2(heads).is_integer():
        return power_of_2(heads)
    closest = 2 ** math.floor(math.log2(heads))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][: heads - closest]


def student_attention(
    document: Mapping[str, Any],
    sentence: str | None = None,
    *,
    dtype: str = "float32",
    mistake: str | None = None,
    fill: float = -math.inf,
    forgot: str | None = None,
    swap: str | None = None,
    added: bool = True,
) -> dict[str, Array]:
    """Every intermediate of one attention block, computed in ``dtype``, with ``mistake``.

    Returns the native arrays: ``X`` ``[n, d_model]`` (and ``embeddings``, ``positions``
    with sinusoidal or learned positions; ``X_context`` with a context); ``Q_proj``,
    ``K_proj``, ``V_proj`` ``[r, heads·d]`` before the heads are split; ``Q`` ``[1, H, n,
    d_k]``, ``K``/``V`` ``[1, kv_heads, m, d]`` as split and ``K_rep``/``V_rep`` ``[1, H,
    m, d]`` after ``repeat_kv`` (likewise ``Q_rope``, ``K_rope``, ``K_rope_rep``);
    ``scores``, ``scaled``, ``masked`` (when the student has one), ``softmax`` ``[1, H, n,
    m]``; ``output`` ``[1, H, n, d_v]``; ``concat`` ``[1, n, H·d_v]`` (several heads) and
    ``projected`` ``[1, n, d_model]`` (with WO).

    ``fill`` is what the mask writes (``-inf``, ``-1e9``, ``np.finfo(dtype).min``);
    ``forgot`` the bias ``missing-bias`` leaves out (default: the first the model has of
    bQ, bV, bK, bO); ``swap`` the slip ``wrong-projection`` makes (``Q<-WK``: see
    :func:`projection_swaps`); ``added`` makes ``mask-fill-too-small``'s mask an
    additive one (BERT's ``scores + (1 − mask) · −10000``); without it, ``masked_fill``
    with TransformerLens's old −1e5.
    """
    if mistake is not None and mistake not in MISTAKES:
        raise ValueError(f"no such mistake {mistake!r}")
    dt = np.dtype(dtype)
    s = sizes(document)
    H, KV, d_k, d_v = s.heads, s.kv_heads, s.d_k, s.d_v
    out: dict[str, Array] = {}
    sentence = document["sentence"] if sentence is None else sentence

    def inputs(text: str, suffix: str) -> Array:
        emb = np.array(words_of(document, text), dtype=dt)
        positions = document.get("positions", "none")
        if positions in ("none", "rope", "alibi", None):
            return emb
        if positions == "sinusoidal":
            pe = sinusoidal(len(emb), s.d_model, dt)
        else:  # learned: a row per position
            pe = np.array(positions, dtype=dt)[: len(emb)]
        if suffix == "":
            out["embeddings"], out["positions"] = emb, pe
        if mistake == "positions-not-added":
            return emb  # the PE computed, and then never added
        return emb + pe

    x = inputs(sentence, "")
    out["X"] = x
    xc = x
    if document.get("context"):
        xc = inputs(document["context"], "_context")
        out["X_context"] = xc
    n, m = len(x), len(xc)

    W = {name: np.array(w, dtype=dt) for name, w in document["weights"].items()}
    b = {name: np.array(v, dtype=dt) for name, v in (document.get("biases") or {}).items()}
    if mistake == "missing-bias" and forgot is None:
        forgot = next(name for name in ("bQ", "bV", "bK", "bO") if name in b)
    if mistake == "wrong-projection" and swap is None:
        swap = projection_swaps(document)[0]
    weight_of = {"Q": "WQ", "K": "WK", "V": "WV"}
    if mistake == "wrong-projection":
        assert swap is not None
        stage, other = swap.split("<-")
        weight_of[stage] = other  # the copy-paste slip: k = x @ WQ + bQ

    def linear(inp: Array, weight: str) -> Array:
        bias = "b" + weight[1]  # the line copied whole: its weight and its bias
        y = inp @ W[weight]
        if bias in b and not (mistake == "missing-bias" and bias == forgot):
            y = y + b[bias]
        return np.asarray(y)

    def split_heads(t: Array, heads: int, d: int) -> Array:
        # [r, heads·d] -> [1, heads, r, d], as q.view(1, r, heads, d).transpose(1, 2)
        r = t.shape[0]
        if mistake == "heads-split-wrong":
            return np.asarray(t.reshape(1, r, d, heads).transpose(0, 3, 1, 2))
        return np.asarray(t.reshape(1, r, heads, d).transpose(0, 2, 1, 3))

    def repeat_kv(t: Array) -> Array:
        # [1, kv_heads, m, d] -> [1, heads, m, d]: query head h reads K/V head h // group
        if mistake == "kv-heads-tiled":
            return np.tile(t, (1, H // KV, 1, 1))
        return np.repeat(t, H // KV, axis=1)

    q_proj = linear(x, weight_of["Q"])
    k_proj = linear(xc, weight_of["K"])
    v_proj = linear(xc, weight_of["V"])
    out["Q_proj"], out["K_proj"], out["V_proj"] = q_proj, k_proj, v_proj
    q = split_heads(q_proj, H, d_k)
    k = split_heads(k_proj, KV, d_k)
    v = split_heads(v_proj, KV, d_v)
    out["Q"], out["K"], out["V"] = q, k, v
    out["K_rep"], out["V_rep"] = repeat_kv(k), repeat_kv(v)

    def rms_norm(t: Array, weight: Any) -> Array:
        # Gemma3RMSNorm: x * rsqrt(mean(x²) + eps), then the weight as the file has it
        eps = float(document.get("qk_norm_eps", 1e-6))
        y: Array = t / np.sqrt((t * t).mean(axis=-1, keepdims=True) + eps)
        return y if weight is None else np.asarray(y * np.array(weight, dtype=dt))

    def qk_norm(q: Array, k: Array) -> tuple[Array, Array]:
        q = rms_norm(q, document.get("q_norm"))
        k = rms_norm(k, document.get("k_norm"))
        out["Q_norm"], out["K_norm"], out["K_norm_rep"] = q, k, repeat_kv(k)
        return q, k

    if document.get("qk_norm") and mistake != "qk-norm-after-rope":
        q, k = qk_norm(q, k)

    if s.rope:
        base = float(document.get("rope_base", 10000))
        inv_freq = 1.0 / base ** (np.arange(0, d_k, 2) / d_k)  # θ_i = base^(-2i/d)
        angles = np.arange(n)[:, None] * inv_freq[None, :]  # [n, d/2]
        interleaved = document.get("rope_pairing", "half") == "interleaved"
        if mistake in ("rope-interleaved", "rope-half"):  # the pairing the model doesn't use
            interleaved = not interleaved
        if interleaved:  # GPT-J's pairs (2i, 2i+1)
            cos = np.repeat(np.cos(angles), 2, axis=-1).astype(dt)
            sin = np.repeat(np.sin(angles), 2, axis=-1).astype(dt)

            def rotate(t: Array) -> Array:
                t1, t2 = t[..., 0::2], t[..., 1::2]
                turned: Array = np.stack((-t2, t1), axis=-1).reshape(t.shape)
                return turned
        else:  # LLaMA's rotate_half: dim i with i + d/2
            emb = np.concatenate((angles, angles), axis=-1)
            cos, sin = np.cos(emb).astype(dt), np.sin(emb).astype(dt)

            def rotate(t: Array) -> Array:
                half = t.shape[-1] // 2
                return np.concatenate((-t[..., half:], t[..., :half]), axis=-1)

        q = q * cos + rotate(q) * sin
        k = k * cos + rotate(k) * sin
        out["Q_rope"], out["K_rope"], out["K_rope_rep"] = q, k, repeat_kv(k)
    if document.get("qk_norm") and mistake == "qk-norm-after-rope":
        q, k = qk_norm(q, k)  # normed after the turn: the line pasted below the RoPE block

    k, v = repeat_kv(k), repeat_kv(v)
    scores: Array
    if mistake == "scores-transposed":
        scores = k @ q.transpose(0, 1, 3, 2)
    else:
        scores = q @ k.transpose(0, 1, 3, 2)
    out["scores"] = scores

    scaled: Array
    if mistake == "no-scaling":
        scaled = scores
    elif mistake == "scaled-by-d_k":
        scaled = scores / d_k
    elif mistake == "scaled-by-d_model":
        scaled = scores / math.sqrt(s.d_model)
    elif mistake == "scaled-by-length":
        scaled = scores / math.sqrt(k.shape[-2])  # k's rows, not its columns
    else:
        scaled = scores / math.sqrt(d_k)
    out["scaled"] = scaled
    logits = scaled
    if document.get("positions") == "alibi":
        slopes = np.array(document.get("alibi_slopes") or alibi_slopes(H), dtype=dt)
        distance = np.abs(np.arange(n)[:, None] - np.arange(m)[None, :])
        bias = (-slopes[None, :, None, None] * distance).astype(dt)  # [1, H, n, m]
        out["alibi"] = bias
        if mistake == "alibi-before-scaling":
            scaled = (scores + bias) / math.sqrt(d_k)
            out["scaled"] = scaled
            logits = scaled
        else:
            logits = scaled + bias
        out["biased"] = logits
    cap = document.get("softcap")
    if cap is not None and mistake != "softcap-after-mask":
        before = scores + out["alibi"] if "alibi" in out else scores
        logits = cap * np.tanh((before if mistake == "softcap-unscaled" else logits) / cap)
        out["capped"] = logits

    def plain_softmax(t: Array) -> Array:
        if mistake == "unstable-softmax":
            e = np.exp(t)
            return e / e.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]
        # [1, heads, n, m]: axis 1 is the heads (a student's softmax(dim=1))
        axis = {"softmax-over-columns": -2, "softmax-over-heads": 1}.get(mistake or "", -1)
        e = np.exp(t - t.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)  # type: ignore[no-any-return]

    def softmax(t: Array) -> Array:
        if "sink_logit" not in document or mistake == "sink-not-in-denominator":
            return plain_softmax(t)
        # gpt-oss: the sink as one more column, softmaxed with the row, then dropped
        sink = np.array(document["sink_logit"], dtype=dt).reshape(-1)
        column = np.broadcast_to(
            sink.reshape(1, -1, 1, 1) if sink.size > 1 else sink, (*t.shape[:-1], 1)
        )
        probs = plain_softmax(np.concatenate([t, column], axis=-1))
        out["sink"] = probs[..., -1:]
        return probs[..., :-1]

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if s.causal and mistake != "no-mask":
            ones = np.ones((n, m), dtype=bool)
            if mistake == "mask-hides-diagonal":
                future = np.triu(ones, k=0)
            elif mistake == "mask-inverted":  # the keep-mask where a hide-mask was meant
                future = ~np.triu(ones, k=1)
            elif mistake == "mask-wrong-triangle":
                future = np.tril(ones, k=-1)
            else:
                future = np.triu(ones, k=1)
            if "window" in document:  # i − j ≥ N is out of the window: tril(k=−N)
                window = int(document["window"]) + (mistake == "window-off-by-one")
                far = np.tril(ones, k=-window)
                far[:, : int(document.get("sinks", 0))] = False  # the sinks stay in view
                future = future | far
            if mistake == "mask-after-softmax":
                weights = softmax(logits)
                weights[:, :, future] = 0.0
            elif mistake == "mask-fill-too-small" and added:  # (1 − keep) · −10000, added
                masked = logits + np.where(future, -1e4, 0.0).astype(dt)
                out["masked"] = masked
                weights = softmax(masked)
            else:
                masked = logits.copy()
                value = {"mask-filled-with-zero": 0.0, "mask-fill-too-small": -1e5}
                # −1e5: TransformerLens's old IGNORE, which scores below it got past
                masked[:, :, future] = value.get(mistake or "", fill)
                out["masked"] = masked
                if mistake == "softcap-after-mask":  # the −∞ (or −1e9) capped to −C
                    assert cap is not None
                    masked = cap * np.tanh(masked / cap)
                    out["capped"] = masked
                weights = softmax(masked)
        elif mistake == "cross-attention-causal":  # tril(ones(n, m)): is_causal left on
            hidden = ~np.tril(np.ones((n, m), dtype=bool))
            weights = softmax(np.where(hidden, fill, logits))
        else:
            weights = softmax(logits)
    out["softmax"] = weights

    # attn.T @ v, the weights-transposed student's
    output = (weights.swapaxes(-1, -2) if mistake == "weights-transposed" else weights) @ v
    out["output"] = output
    if H > 1:
        if mistake == "concat-without-transpose":
            concat = output.reshape(1, n, H * d_v)
        else:
            concat = output.transpose(0, 2, 1, 3).reshape(1, n, H * d_v)
        out["concat"] = concat
    else:
        concat = output[0]
    if s.wo:
        projected = concat @ W["WO"]
        if "bO" in b and not (mistake == "missing-bias" and forgot == "bO"):
            projected = projected + b["bO"]
        out["projected"] = projected.reshape(1, n, s.d_model)
    return {name: np.asarray(a, dtype=dt) for name, a in out.items()}


# ------------------------------------------------------------ what a person hands over

#: The names people give their arrays: canonical stage -> saved name.
NAMINGS: dict[str, dict[str, str]] = {
    "stages": {},
    "torch": {
        "X": "x",
        "Q": "q",
        "K": "k",
        "V": "v",
        "Q_rope": "q_rope",
        "K_rope": "k_rope",
        "softmax": "attn_weights",
        "output": "out",
    },
    "paper": {"scores": "S", "softmax": "A", "output": "O"},
    "course": {"softmax": "weights"},
    "probs": {"softmax": "probs", "Q": "q", "K": "k", "V": "v"},
    "P": {"softmax": "P", "scores": "S"},
    "attn": {"softmax": "attn", "output": "out"},
}

#: How the per-head arrays are laid out (docs/check.md's "Shapes").
LAYOUTS = ("batched", "heads", "tokens", "flat", "single")
#: Which stages are handed over.
SUBSETS = ("all", "attention", "ends")


def layouts_for(document: Mapping[str, Any]) -> tuple[str, ...]:
    return LAYOUTS if sizes(document).heads == 1 else LAYOUTS[:-1]


def _merge(t: Array) -> Array:
    """[1, H, r, c] -> [r, H·c]: the heads side by side."""
    _, heads, r, c = t.shape
    return np.asarray(t.transpose(0, 2, 1, 3).reshape(r, heads * c))


def _shaped(native: Mapping[str, Array], stage: str, layout: str) -> Array:
    return np.asarray(_reshaped(native, stage, layout))


def _reshaped(native: Mapping[str, Array], stage: str, layout: str) -> Any:
    """The native array of ``stage`` in ``layout`` (see :data:`LAYOUTS`)."""
    kv_form = stage in ("K", "V", "K_norm", "K_rope") and layout != "batched"
    if stage in SHARED:
        a = native[stage]
        return a if layout == "batched" else a.reshape(a.shape[-2:])
    if layout == "flat" and stage in ("Q", "K", "V"):
        return native[f"{stage}_proj"]
    a = native[stage if kv_form or stage not in ("K", "V", "K_norm", "K_rope") else f"{stage}_rep"]
    if layout == "batched":
        return a  # [1, H, r, c]
    if layout == "heads":
        return a[0]  # [H, r, c]
    if layout == "tokens":  # [r, H, c] for Q, K, V, the turned ones and output
        return a[0] if stage in SQUARE else a[0].transpose(1, 0, 2)
    if layout == "flat":
        if stage in ("Q_norm", "K_norm", "Q_rope", "K_rope", "output"):
            return _merge(a)  # [r, H·c]
        return a[0]  # scores, scaled, masked, softmax: [H, n, m]
    if layout == "single":
        assert a.shape[1] == 1, "one head only"
        return a[0, 0]  # [r, c]
    raise ValueError(layout)


def given_stages(native: Mapping[str, Array], subset: str = "all") -> list[str]:
    """The stages of ``native`` handed over, in computation order."""
    present = [s for s in ORDER if s in native]
    keep: tuple[str, ...]
    if subset == "attention":
        keep = (
            "scores",
            "scaled",
            "alibi",
            "biased",
            "capped",
            "masked",
            "softmax",
            "sink",
            "output",
            "concat",
            "projected",
        )
    elif subset == "ends":
        keep = ("softmax", "output", "concat", "projected")
    else:
        keep = ORDER
    return [s for s in present if s in keep]


def saved(
    native: Mapping[str, Array],
    *,
    naming: str = "stages",
    layout: str = "batched",
    subset: str = "all",
) -> dict[str, Array]:
    """The arrays as a person saves them: named by ``naming``, shaped by ``layout``."""
    names = NAMINGS[naming]
    return {
        names.get(stage, stage): np.ascontiguousarray(_shaped(native, stage, layout))
        for stage in given_stages(native, subset)
    }


def stage_of(name: str, naming: str) -> str:
    """The stage a saved name holds (the inverse of ``NAMINGS[naming]``)."""
    back = {v: k for k, v in NAMINGS[naming].items()}
    return back.get(name, name)


# ------------------------------------------------------------------- the models tested

#: Five words, so a sentence's n = 5 is never a count of heads (no [H, n, d] reads as
#: [n, H, d]), and six for a context.
WORDS = ("the", "cat", "sat", "on", "a", "mat")
SENTENCE = "The cat sat on a"
CONTEXT = "a mat the cat on sat"


def _numbers(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> Any:
    """Random numbers with two decimals, as a person would write them in a model file."""
    return np.round(rng.normal(size=shape) * scale, 2).tolist()


def model_document(
    name: str,
    *,
    heads: int = 1,
    kv_heads: int | None = None,
    d_model: int = 4,
    d_k: int = 3,
    d_v: int = 2,
    causal: bool = False,
    positions: Any = None,
    rope_base: float | None = None,
    rope_pairing: str | None = None,
    biases: Sequence[str] = (),
    wo: bool = False,
    context: bool = False,
    scale: float = 1.0,
    seed: int = 0,
) -> dict[str, Any]:
    """A model file's document with random weights (two decimals) of the given sizes."""
    rng = np.random.default_rng(seed)
    kv = heads if kv_heads is None else kv_heads
    document: dict[str, Any] = {
        "name": name,
        "sentence": SENTENCE,
        "heads": heads,
        "kv_heads": kv,
        "causal": causal,
        "embeddings": {w: _numbers(rng, d_model, scale=scale) for w in WORDS},
        "weights": {
            "WQ": _numbers(rng, d_model, heads * d_k, scale=scale),
            "WK": _numbers(rng, d_model, kv * d_k, scale=scale),
            "WV": _numbers(rng, d_model, kv * d_v),
        },
    }
    if wo:
        document["weights"]["WO"] = _numbers(rng, heads * d_v, d_model)
    if positions == "learned":
        document["positions"] = _numbers(rng, len(WORDS), d_model, scale=0.5)
    elif positions is not None:
        document["positions"] = positions
    if rope_base is not None:
        document["rope_base"] = rope_base
    if rope_pairing is not None:
        document["rope_pairing"] = rope_pairing
    widths = {"bQ": heads * d_k, "bK": kv * d_k, "bV": kv * d_v, "bO": d_model}
    if biases:
        document["biases"] = {b: _numbers(rng, widths[b]) for b in biases}
    if context:
        document["context"] = CONTEXT
    return document


#: The configurations the catalogue is tested on: single head, several heads, grouped
#: and multi-query K/V heads, causal masks, sinusoidal / learned / rotary positions,
#: biases, WO and a context. No d_model is d_k² (so ÷ √d_model is never ÷ d_k).
MODELS: dict[str, dict[str, Any]] = {
    "single": model_document("single", d_model=5, d_k=3, d_v=4, seed=1),
    "single-causal": model_document(
        "single-causal",
        d_model=4,
        d_k=3,
        d_v=2,
        causal=True,
        positions="sinusoidal",
        wo=True,
        biases=("bV", "bO"),
        seed=2,
    ),
    "multi": model_document(
        "multi",
        heads=3,
        d_model=6,
        d_k=2,
        d_v=3,
        positions="learned",
        biases=("bQ", "bK", "bV"),
        wo=True,
        seed=3,
    ),
    "gqa-causal": model_document(
        "gqa-causal",
        heads=4,
        kv_heads=2,
        d_model=5,
        d_k=3,
        d_v=3,
        causal=True,
        biases=("bQ", "bK", "bV", "bO"),
        wo=True,
        seed=4,
    ),
    "mqa-rope": model_document(
        "mqa-rope",
        heads=2,
        kv_heads=1,
        d_model=6,
        d_k=4,
        d_v=4,
        causal=True,
        positions="rope",
        rope_base=100.0,
        biases=("bQ", "bK"),
        seed=5,
    ),
    "gqa-rope": model_document(
        "gqa-rope", heads=4, kv_heads=2, d_model=6, d_k=4, d_v=2, positions="rope", wo=True, seed=6
    ),
    "interleaved-rope": model_document(
        "interleaved-rope",
        heads=2,
        d_model=5,
        d_k=4,
        d_v=2,
        positions="rope",
        rope_pairing="interleaved",
        rope_base=50.0,
        wo=True,
        biases=("bK",),
        seed=10,
    ),
    "cross": model_document(
        "cross", heads=2, d_model=5, d_k=3, d_v=2, context=True, biases=("bQ",), seed=7
    ),
}

#: Models whose scaled scores overflow exp: past 88.7 (float32's limit) in "big", past
#: 709.8 (float64's) in "huge": the only place `unstable-softmax` shows; past ±10⁵ in
#: "deep", the only place `mask-fill-too-small` shows.
OVERFLOWING: dict[str, dict[str, Any]] = {
    "big": model_document("big", d_model=3, d_k=2, d_v=2, scale=2.5, seed=8),
    "huge": model_document(
        "huge", heads=2, d_model=3, d_k=2, d_v=2, scale=4.0, causal=True, seed=9
    ),
    # scores past ±10⁵ (pythia-70m's went below −10⁵): where a finite mask fill leaks
    "deep": model_document(
        "deep", heads=2, d_model=3, d_k=2, d_v=2, scale=15.0, causal=True, seed=15
    ),
}


def _with(document: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return {**document, **keys}


#: Models with the variants of docs/variants.md (their keys as the contract names them),
#: each with the variants its mistakes need: a window shorter than the sentence (and a
#: sink), QK-norm with weights under RoPE, ALiBi, a softcap under a causal mask, a sink
#: logit per head.
VARIANT_MODELS: dict[str, dict[str, Any]] = {
    "gemma-like": _with(
        model_document(
            "gemma-like",
            heads=2,
            kv_heads=1,
            d_model=6,
            d_k=4,
            d_v=3,
            causal=True,
            positions="rope",
            rope_base=100.0,
            wo=True,
            seed=11,
        ),
        window=2,
        sinks=1,
        qk_norm=True,
        qk_norm_eps=1e-6,
        q_norm=[1.5, 0.5, 1.0, 2.0],
        k_norm=[0.75, 1.25, 1.0, 0.5],
        softcap=2.0,
    ),
    "bloom-like": _with(
        model_document(
            "bloom-like",
            heads=4,
            d_model=5,
            d_k=3,
            d_v=2,
            causal=True,
            positions="alibi",
            biases=("bQ", "bV"),
            seed=12,
        ),
        softcap=3.0,
    ),
    "gpt-oss-like": _with(
        model_document(
            "gpt-oss-like",
            heads=4,
            kv_heads=2,
            d_model=5,
            d_k=2,
            d_v=2,
            causal=True,
            positions="rope",
            rope_base=100.0,
            wo=True,
            seed=13,
        ),
        window=3,
        sink_logit=[0.5, -1.0, 0.0, 1.5],
    ),
    "encoder-alibi": _with(
        model_document(
            "encoder-alibi", heads=3, d_model=4, d_k=2, d_v=2, positions="alibi", seed=14
        ),
        alibi_slopes=[0.5, 0.25, 0.125],
        sink_logit=0.0,
        softcap=1.5,
    ),
}

#: The variant keys of a model document (docs/variants.md, "The keys").
VARIANT_KEYS = (
    "window",
    "sinks",
    "alibi_slopes",
    "qk_norm",
    "qk_norm_eps",
    "q_norm",
    "k_norm",
    "softcap",
    "sink_logit",
)


# --------------------------------------------------------------- comparing as check does


def matches(found: Array, expected: Array, rtol: float, atol: float) -> bool:
    """docs/check.md's rule: |found − expected| ≤ atol · scale + rtol · |expected|, scale
    = max(1, the largest finite |expected|); a non-finite cell matches only itself, and
    −∞ also any value ≤ −10⁴ (what a mask filled with −1e9 holds)."""
    found = np.asarray(found, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if found.shape != expected.shape:
        return False
    finite = np.isfinite(expected)
    scale = max(1.0, float(np.abs(expected[finite]).max(initial=0.0)))
    with np.errstate(invalid="ignore"):
        close = np.abs(found - expected) <= atol * scale + rtol * np.abs(expected)
    same = (found == expected) | (np.isnan(found) & np.isnan(expected))
    masked_fill = (expected == -np.inf) & (found <= -1e4)
    return bool(np.all(np.where(finite, close & np.isfinite(found), same | masked_fill)))


def first_difference(
    wrong: Mapping[str, Array], right: Mapping[str, Array], stages: Sequence[str]
) -> str | None:
    """The first of ``stages`` (computation order) whose array differs between two runs
    of the student's code: the stage ``check`` must report first."""
    for stage in stages:
        a, b = wrong[stage], right[stage]
        if a.shape != b.shape or not np.array_equal(a, b, equal_nan=True):
            return stage
    return None


def lowest_head(wrong: Mapping[str, Array], right: Mapping[str, Array], stage: str) -> int:
    """The lowest query head whose array of ``stage`` differs (K, V, K_rope as each query
    head reads them, after repeat_kv)."""
    name = f"{stage}_rep" if stage in ("K", "V", "K_norm", "K_rope") else stage
    a, b = wrong[name], right[name]
    for h in range(a.shape[1]):
        if not np.array_equal(a[0, h], b[0, h], equal_nan=True):
            return h
    raise AssertionError(f"no head of {stage} differs")
