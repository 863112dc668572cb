"""What each gradient of `attntrace grad` means, in words: a one-line caption under its
table, and step mode's paragraph on what it is and how it was computed.

Kept apart from the drawing (:mod:`attntrace.learning.views.grad`) so the words can be read and
changed as prose; each is keyed by the gradient's name (``d_softmax``, ...) as
:data:`attntrace.learning.grad_trace.GRAD_ORDER` lists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attntrace.kernel.trace import Stage
    from attntrace.learning.grad_trace import GradTrace

CAPTIONS: Mapping[str, str] = {
    "d_projected": "How L changes as each number of the block's output (after WO) moves: "
    "where the gradient enters.",
    "d_WO": "How L changes with each weight of WO: the heads' outputs times the gradient "
    "arriving at the block's output.",
    "d_bO": "How L changes with the output bias: added to every row, so it gets every "
    "row's gradient.",
    "d_concat": "The gradient reaching the heads' joined outputs, before each head takes "
    "its own columns.",
    "d_output": "How L changes as this head's output moves: the gradient arriving at the "
    "weighted sum of values.",
    "d_V": "How L changes with each value: every query's gradient, weighted by how much it "
    "attended to that key.",
    "d_softmax": "How L changes with each attention weight: which weights should grow "
    "(negative) or shrink (positive).",
    "d_sink_logit": (
        "How L changes with the head's sink logit: positive, and a larger sink (taking weight"
        " from every key) would raise L."
    ),
    "d_capped": (
        "The softmax backward, at the soft-capped logits: each row sums to 0 (to minus the "
        "sink's share with a sink logit); a hidden cell gets 0."
    ),
    "d_biased": (
        "Back through the cap, 1 − tanh²: where a logit is near ±C the cap is flat and its "
        "gradient fades; without a cap, the softmax backward itself."
    ),
    "d_scaled": "The softmax backward: a weight can only grow if others shrink, so each row "
    "of the gradient sums to 0.",
    "d_scores": "The scaling by 1/√d_k, passed back: the same pattern, smaller by √d_k.",
    "d_Q_rope": "The gradient of the rotated queries: each score's gradient times the key "
    "it compared against.",
    "d_K_rope": "The gradient of the rotated keys: each score's gradient times the query "
    "that compared against it.",
    "d_Q_norm": "The gradient of the RMS-normed queries: what reaches them from the scores.",
    "d_K_norm": "The gradient of the RMS-normed keys: what reaches them from the scores.",
    "d_Q": "How L changes with each query: the keys it should point toward, weighted by "
    "each score's gradient.",
    "d_K": "How L changes with each key: the queries it should point toward, weighted by "
    "each score's gradient.",
    "d_WQ": "How L changes with each weight of WQ: a step of −lr · d_WQ is one step of "
    "gradient descent (attntrace train).",
    "d_bQ": "How L changes with the query bias: the column sums of d_Q (added to every row).",
    "d_WK": "How L changes with each weight of WK: the tokens' inputs times their keys' gradients.",
    "d_bK": "How L changes with the key bias: the column sums of d_K.",
    "d_WV": "How L changes with each weight of WV: the tokens' inputs times their values' "
    "gradients.",
    "d_bV": "How L changes with the value bias: the column sums of d_V.",
    "d_q_norm": "How L changes with each number of the q_norm weight, shared by every head.",
    "d_k_norm": "How L changes with each number of the k_norm weight, shared by every head.",
    "d_X": "How L changes with each input number: the three paths (Q, K, V) summed, what a "
    "layer below would receive.",
    "d_X_context": "How L changes with the context's inputs: through its keys and values only.",
}

# Why the value path is silent under the attend loss (the contract's "the view says why").
ATTEND_ZERO = (
    "0 under the attend loss: L reads the attention weights alone, never the output, so "
    "no gradient reaches output, V or WV."
)
# The stages the attend loss leaves at exactly 0.
ATTEND_ZEROS = frozenset(
    {"d_projected", "d_WO", "d_bO", "d_concat", "d_output", "d_V", "d_WV", "d_bV"}
)

PARAGRAPHS: Mapping[str, str] = {
    "d_projected": (
        "The backward pass starts where the loss reads the block: at its output. Each "
        "number here is ∂L/∂projected[i, j], how much L grows per unit that output number "
        "grows. Under mse it is 2·(projected − target)/N: the error, scaled."
    ),
    "d_WO": (
        "projected = concat · WO, so each weight WO[i, j] is multiplied by column i of "
        "concat on its way to column j of the output. Its gradient is concatᵀ · "
        "d_projected: the sum over tokens of concat[t, i] · d_projected[t, j]."
    ),
    "d_bO": (
        "The bias bO is added to every row of the output, so its gradient is the sum of "
        "every row of d_projected: one column sum per output dimension."
    ),
    "d_concat": (
        "With WO, projected = concat · WO, so the gradient flows back through WO: "
        "d_concat = d_projected · WOᵀ. Without WO, concat is the block's output, and the "
        "loss's gradient enters here. Each head owns a block of concat's columns, and "
        "takes that block as its own d_output next."
    ),
    "d_output": (
        "The gradient arriving at this head's output, softmax · V. Under the attend loss "
        "it is 0: the loss reads the weights, not what they mix, so nothing flows through "
        "the values at all."
    ),
    "d_V": (
        "output = softmax · V, so each value V[k] reaches query row i with weight "
        "softmax[i, k]. Its gradient gathers every row's d_output by those same weights: "
        "d_V = softmaxᵀ · d_output. A key nobody attends to gets no gradient."
    ),
    "d_softmax": (
        "The gradient of each attention weight. Through output = softmax · V it is "
        "d_output · Vᵀ; the attend loss −log a adds −1/a at its one cell (the from row, "
        "the to column). Negative: L falls as that weight grows."
    ),
    "d_sink_logit": (
        "The sink logit s joins each row's softmax and passes no value: raising it takes "
        "weight from every key alike, ∂Aⱼ/∂s = −Aⱼ · sink. So dL/ds = −Σᵢ sinkᵢ · Σⱼ "
        "d_softmax[i, j] · softmax[i, j], one number per head: the rows' shares summed."
    ),
    "d_capped": (
        "The softmax backward at what the softmax read, the capped logits: a ∘ (dA − Σₖ "
        "aₖ·dAₖ), the Jacobian diag(a) − a·aᵀ times each row's d_softmax. A cell the mask or "
        "the window hides has weight 0, so it gets exactly 0: no gradient passes through it."
    ),
    "d_biased": (
        "With a cap, capped = C · tanh(biased / C), whose slope is 1 − tanh²(biased / C) = 1 "
        "− (capped / C)²: near 1 for small logits, near 0 where the cap flattens them. "
        "Without one, this is the softmax backward itself (a ∘ (dA − Σₖ aₖ·dAₖ))."
    ),
    "d_scaled": (
        "The softmax backward. The weights of a row share one sum (1), so raising one "
        "lowers the rest: each row's Jacobian is diag(a) − a·aᵀ, and its product with the "
        "row's d_softmax is a ∘ (dA − Σₖ aₖ·dAₖ). Each row sums to 0 (with a sink logit, "
        "to minus the sink's share: the sink takes part in the sum); a masked key "
        "(weight 0) gets exactly 0. --focus TOKEN shows one row term by term."
    ),
    "d_scores": (
        "scaled = scores / √d_k, so each gradient is divided by √d_k too. Without the "
        "scaling the softmax saturates as d_k grows and this gradient vanishes "
        "(attntrace scaling measures it)."
    ),
    "d_Q_rope": (
        "The scores compared the rotated queries and keys: scores = Q_rope · K_ropeᵀ, so "
        "each rotated query's gradient is d_scores · K_rope."
    ),
    "d_K_rope": (
        "Each rotated key's gradient is d_scoresᵀ · Q_rope: the queries that compared "
        "against it, weighted by their scores' gradients."
    ),
    "d_Q_norm": (
        "Under QK-norm the scores compare the RMS-normed queries: d_Q_norm = d_scores · "
        "K_norm (under RoPE, which turns the normed rows, d_Q_rope turned back by −θ)."
    ),
    "d_K_norm": (
        "Each normed key's gradient: d_scoresᵀ · Q_norm (under RoPE, d_K_rope turned back). "
        "With GQA it is this head's share; the K/V head's d_K sums them."
    ),
    "d_Q": (
        "scores = Q · Kᵀ, so query i's gradient is Σₖ d_scores[i, k] · K[k]: a mix of "
        "the keys, toward those whose score should rise. (Under RoPE, d_Q_rope turned "
        "back by −θ, the rotation undone.)"
    ),
    "d_K": (
        "Key k's gradient is Σᵢ d_scores[i, k] · Q[i]: the queries that should look at it "
        "more (or less). With GQA or MQA, a K/V head shared by several query heads gets "
        "the sum of their contributions, shown as its own stage."
    ),
    "d_WQ": (
        "Q = X · WQ, so d_WQ = Xᵀ · d_Q: weight WQ[i, j] gets Σₜ X[t, i] · d_Q[t, j]. "
        "This is what gradient descent follows: WQ ← WQ − lr · d_WQ makes L smaller."
    ),
    "d_bQ": "The query bias is added to every row of Q: its gradient is d_Q's column sums.",
    "d_WK": (
        "K = X · WK (X_context under cross-attention), so d_WK = Xᵀ · d_K, every K/V head's "
        "block side by side."
    ),
    "d_bK": "The key bias is added to every row of K: its gradient is d_K's column sums.",
    "d_WV": (
        "V = X · WV, so d_WV = Xᵀ · d_V. Under the attend loss d_V is 0, and so is this: "
        "the loss cannot be changed through the values."
    ),
    "d_bV": "The value bias is added to every row of V: its gradient is d_V's column sums.",
    "d_q_norm": (
        "Q_norm = Q / rms(Q) ∘ q_norm, so weight c gets Σ over rows and heads of d_Q_norm[t, "
        "c] · Q[t, c] / rms(Q[t]): every head shares the one vector."
    ),
    "d_k_norm": (
        "K_norm = K / rms(K) ∘ k_norm: weight c gets Σ over rows and query heads of "
        "d_K_norm[t, c] · K[t, c] / rms(K[t])."
    ),
    "d_X": (
        "X reaches the loss three ways, through Q, K and V: its gradient is the sum "
        "d_Q · WQᵀ + d_K · WKᵀ + d_V · WVᵀ over every head. In a full model this is the "
        "gradient passed down to the layer below."
    ),
    "d_X_context": (
        "Under cross-attention the context feeds the keys and values only: d_X_context = "
        "d_K · WKᵀ + d_V · WVᵀ, and d_X is the query path alone."
    ),
}


# Under cross-attention X feeds the queries alone: its K and V paths are d_X_context's.
CROSS_CAPTIONS: Mapping[str, str] = {
    "d_X": "How L changes with each input number: the query path alone (the keys and values "
    "come from the context: d_X_context).",
}
CROSS_PARAGRAPHS: Mapping[str, str] = {
    "d_X": (
        "Under cross-attention X feeds only the queries: its gradient is d_Q · WQᵀ, summed "
        "over the heads. The keys' and values' paths lead to the context's inputs instead "
        "(d_X_context)."
    ),
}


# d_scaled where a variant's stage stands between it and the softmax (its formula then
# reads from d_biased or d_capped, not the softmax): the softmax backward is not its own.
PASSED_ON_CAPTION = (
    "The gradient of the scaled scores, passed on from the stage after "
    "them (the cap's backward, or ALiBi's bias, a constant: unchanged)."
)
PASSED_ON_PARAGRAPH = (
    "Under ALiBi, biased = scaled + alibi, and alibi is a constant: d_scaled is d_biased, "
    "number for number. Under a cap alone, capped = C · tanh(scaled / C), so d_scaled is "
    "d_capped ∘ (1 − (capped / C)²). The softmax backward itself is the stage above."
)


def _passed_on(name: str, formula: str) -> bool:
    return name == "d_scaled" and bool(formula) and "softmax ∘" not in formula


def caption(name: str, *, attend: bool, cross: bool = False, formula: str = "") -> str:
    """The line under gradient ``name``'s table; why it is 0, under the attend loss;
    what d_X sums, under cross-attention (``cross``); ``formula``, the stage's, says
    whether d_scaled is the softmax backward or passed on by a variant's stage."""
    if attend and name in ATTEND_ZEROS:
        return ATTEND_ZERO
    if cross and name in CROSS_CAPTIONS:
        return CROSS_CAPTIONS[name]
    if _passed_on(name, formula):
        return PASSED_ON_CAPTION
    return CAPTIONS.get(name, "")


def stage_caption(stage: Stage, grad: GradTrace) -> str:
    """:func:`caption` of one of ``grad``'s stages, under its loss and its trace (the
    table view, step mode and the explorer page all say it so)."""
    attend, cross = grad.objective.kind == "attend", grad.forward.context_tokens is not None
    return caption(stage.name, attend=attend, cross=cross, formula=stage.formula)


def stage_paragraph(stage: Stage, grad: GradTrace) -> str:
    """:func:`paragraph` of one of ``grad``'s stages, under its trace."""
    return paragraph(
        stage.name, cross=grad.forward.context_tokens is not None, formula=stage.formula
    )


def paragraph(name: str, *, cross: bool = False, formula: str = "") -> str:
    """Step mode's paragraph on gradient ``name`` (``cross``: under cross-attention;
    ``formula`` as for :func:`caption`)."""
    if cross and name in CROSS_PARAGRAPHS:
        return CROSS_PARAGRAPHS[name]
    if _passed_on(name, formula):
        return PASSED_ON_PARAGRAPH
    return PARAGRAPHS.get(name, "")
