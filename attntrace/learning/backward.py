"""The backward pass of the attention block: every gradient, stage by stage, in numpy.

Given dL/d(block output), and/or a gradient entering at a head's softmax (the attend
loss of :mod:`attntrace.learning.losses` enters there), the chain rule is walked back
through the same stages :func:`attntrace.forward.attention.trace_block` records, in
reverse, each step the formula a learner writes by hand:

    dV = Aᵀ · dO              dA = dO · Vᵀ
    dS = A ∘ (dA − rowsum(dA ∘ A))      (the softmax backward; masked cells: A = 0, so 0)
    d scores = dS / √d_k      dQ = d scores · K      dK = d scoresᵀ · Q
    dWQ = Xᵀ · dQ             dbQ = column sums of dQ        (likewise K, V)
    dX = dQ · WQᵀ + dK · WKᵀ + dV · WVᵀ                       (every head, all three paths)

Under RoPE, Q and K are turned before the scores: the gradient reaches Q_rope and K_rope
first and is turned back (a rotation is orthogonal: its backward is its transpose, the
turn by −θ). With GQA a K/V head serves several query heads, so its gradient is the sum
of theirs; each query head's own contribution is kept, so a view can show that sum.

The variants of docs/variants.md add their own steps, each the derivative of its stage:

    sink logit s:  d_softmax's keys as above (rows of A sum to 1 − sink, the same Jacobian
                   diag(a) − a·aᵀ over the keys), and d s = −Σᵢ sinkᵢ · rowsum(dA ∘ A)ᵢ
    mask, window:  hidden cells have A = 0, so no gradient passes through them
    softcap C:     d_biased (or d_scaled) = d_capped ∘ (1 − (capped / C)²), 1 − tanh²(x/C)
    ALiBi:         a constant bias, so d_scaled = d_biased, unchanged
    QK-norm:       y = x · r · w, r = 1/√(mean(x²) + ε), with u = dy ∘ w:
                   dx = r · u − r³ · x · Σ(u ∘ x) / d,   dw = Σ over rows of dy ∘ x · r

(the cap: Gemma 2's ``eager_attention_forward``; the sink: gpt-oss's
``eager_attention_forward``, its concatenated column; RMSNorm: Zhang and Sennrich 2019,
and ``Gemma3RMSNorm`` in transformers, with the weight multiplied as written).

The forward numbers are the trace's own (the block is traced once, here), so every
gradient belongs to exactly the stages a reader sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from attntrace.errors import InputError
from attntrace.forward.attention import trace_block
from attntrace.kernel.fields import shape_text
from attntrace.kernel.frozen import computed
from attntrace.kernel.ops import Matrix, rope
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Trace


@dataclass(frozen=True, eq=False)
class HeadGradients:
    """The gradients of query head ``head`` (which reads K/V head ``kv_head``).

    ``d_K``, ``d_V``, ``d_WK``, ``d_WV``, ``d_bK`` and ``d_bV`` are this head's
    contributions to its K/V head's gradients (:class:`KVHeadGradients` holds their sum);
    ``d_WQ`` and ``d_bQ`` are the head's block of columns of the full ``d_WQ``, ``d_bQ``.
    """

    head: int
    kv_head: int
    d_output: Matrix  # [n, d_v]
    d_V: Matrix  # [m, d_v] = softmaxᵀ · d_output
    d_softmax: Matrix  # [n, m] = d_output · Vᵀ (+ a gradient entering at softmax)
    d_scaled: Matrix  # [n, m] = A ∘ (dA − rowsum(dA ∘ A)); exactly 0 where masked
    d_scores: Matrix  # [n, m] = d_scaled / √d_k
    d_Q_rope: Matrix | None  # [n, d_k] = d_scores · K_rope, under RoPE
    d_K_rope: Matrix | None  # [m, d_k] = d_scoresᵀ · Q_rope, under RoPE
    d_Q: Matrix  # [n, d_k]
    d_K: Matrix  # [m, d_k]
    d_WQ: Matrix  # [d_model, d_k] = Xᵀ · d_Q
    d_WK: Matrix  # [d_model, d_k] = X_keysᵀ · d_K
    d_WV: Matrix  # [d_model, d_v] = X_keysᵀ · d_V
    d_bQ: Matrix | None  # [d_k]
    d_bK: Matrix | None  # [d_k]
    d_bV: Matrix | None  # [d_v]
    # The variants' stages (docs/variants.md), None where the model has not the option:
    d_sink_logit: Matrix | None = None  # [1, 1] = −Σᵢ sinkᵢ · rowsum(d_softmax ∘ softmax)ᵢ
    d_capped: Matrix | None = None  # [n, m]: the softmax backward, under a softcap
    d_biased: Matrix | None = None  # [n, m]: the softmax (or cap) backward, under ALiBi
    d_Q_norm: Matrix | None = None  # [n, d_k]: the gradient of the RMS-normed queries
    d_K_norm: Matrix | None = None  # [m, d_k]: this head's share of its normed keys'
    d_q_norm: Matrix | None = None  # [d_k]: this head's share of q_norm's gradient
    d_k_norm: Matrix | None = None  # [d_k]: this head's share of k_norm's gradient


@dataclass(frozen=True, eq=False)
class KVHeadGradients:
    """K/V head ``kv_head``'s gradients: the sums over ``query_heads``, the heads it serves."""

    kv_head: int
    query_heads: tuple[int, ...]
    d_K: Matrix  # [m, d_k]
    d_V: Matrix  # [m, d_v]
    d_WK: Matrix  # [d_model, d_k]
    d_WV: Matrix  # [d_model, d_v]
    d_bK: Matrix | None
    d_bV: Matrix | None


@dataclass(frozen=True, eq=False)
class Gradients:
    """Every gradient of the block, named as the stages of ``attntrace/grad/v1`` will be.

    ``d_block`` is the gradient at the block's output (``projected`` with WO, else
    ``concat`` with several heads, else ``output``). The full ``d_WQ``, ``d_WK``,
    ``d_WV`` (and biases) are the model's shapes, each head's columns where its weights'
    are. ``d_X`` is the gradient of X; under cross-attention it is the Q path alone and
    ``d_X_context`` holds the K and V paths. All arrays are read-only.
    """

    trace: Trace
    d_block: Matrix
    heads: tuple[HeadGradients, ...]
    kv_heads: tuple[KVHeadGradients, ...]
    d_WQ: Matrix
    d_WK: Matrix
    d_WV: Matrix
    d_bQ: Matrix | None
    d_bK: Matrix | None
    d_bV: Matrix | None
    d_X: Matrix
    d_X_context: Matrix | None
    d_concat: Matrix | None  # [n, heads·d_v], with several heads
    d_projected: Matrix | None  # [n, d_model], with WO
    d_WO: Matrix | None
    d_bO: Matrix | None
    d_q_norm: Matrix | None = None  # [d_k]: Σ over heads, with a q_norm weight
    d_k_norm: Matrix | None = None  # [d_k]: Σ over heads, with a k_norm weight


def softmax_backward(weights: Matrix, d_weights: Matrix) -> Matrix:
    """``A ∘ (dA − rowsum(dA ∘ A))``: each row's Jacobian ``diag(a) − a·aᵀ`` times its dA,
    without building the Jacobian. Where a weight is 0 (a masked cell) the result is 0.
    ``[n, m], [n, m] -> [n, m]``."""
    inner = (d_weights * weights).sum(axis=-1, keepdims=True)  # [n, 1]
    result: Matrix = weights * (d_weights - inner)
    return result


def rope_backward(d_turned: Matrix, frequencies: Matrix, pairing: str) -> Matrix:
    """The gradient of :func:`attntrace.kernel.ops.rope`'s input: the gradient of its output
    turned back. Each row's rotation R(θ) is orthogonal, so the backward is R(θ)ᵀ = R(−θ):
    the same turn at the negated positions. ``[n, d] -> [n, d]``."""
    return rope(d_turned, -np.arange(len(d_turned)), frequencies, pairing)


def sink_backward(weights: Matrix, sink: Matrix, d_weights: Matrix) -> float:
    """dL/d s of a sink logit s, from the keys' weights A, the sink's column and dA.

    The sink's own weight is read by no loss (it passes no value), so with
    ∂Aⱼ/∂s = −Aⱼ · sink: ``d s = −Σᵢ sinkᵢ · Σⱼ dAᵢⱼ · Aᵢⱼ``. ``[n, m], [n, 1], [n, m]``."""
    inner = (d_weights * weights).sum(axis=-1, keepdims=True)  # [n, 1]
    return float(-(sink * inner).sum())


def softcap_backward(capped: Matrix, d_capped: Matrix, cap: float) -> Matrix:
    """The gradient of ``C · tanh(x / C)``'s input: ``d_capped ∘ (1 − tanh²(x / C))``,
    tanh read back from the capped stage (``capped / C``). ``[n, m] -> [n, m]``; a
    hidden cell's d_capped is 0, so is its result."""
    slope = 1.0 - (capped / cap) ** 2
    result: Matrix = d_capped * slope
    return result


def rms_norm_backward(
    rows: Matrix, weight: Matrix | None, eps: float, d_normed: Matrix
) -> tuple[Matrix, Matrix]:
    """The gradients of :func:`attntrace.kernel.ops.rms_norm`'s input and weight.

    With ``y = x · r · w`` and ``r = 1/√(mean(x²) + ε)`` per row, ``u = dy ∘ w``:
    ``dx = r · u − r³ · x · Σ(u ∘ x) / d`` and ``dw = Σ over rows of dy ∘ x · r``
    (a weight of 1 where there is none). ``[n, d] -> [n, d], [d]``."""
    r = 1.0 / np.sqrt((rows * rows).mean(axis=-1, keepdims=True) + eps)  # [n, 1]
    u = d_normed if weight is None else d_normed * weight
    d_rows: Matrix = r * u - r**3 * rows * (u * rows).sum(axis=-1, keepdims=True) / rows.shape[-1]
    d_weight: Matrix = (d_normed * rows * r).sum(axis=0)
    return d_rows, d_weight


def grad_block(
    model: ModelSpec,
    tokens: Sequence[str],
    context: Sequence[str] | None = None,
    *,
    d_output: Matrix | None = None,
    d_softmax: Sequence[Matrix | None] | None = None,
    forward: Trace | None = None,
) -> Gradients:
    """Every gradient of the block of ``model`` over ``tokens`` (and ``context``).

    ``d_output`` is dL/d(block output), shaped as the block's output; ``d_softmax`` holds,
    per query head, a gradient entering at that head's softmax (None for a head without
    one). Either may be left out; they add where both are given. ``forward`` is the
    block's trace over the same tokens, where the caller has it already (a loss was
    read from it): it is then not traced again. Raises :class:`InputError` for a
    gradient of the wrong shape or with a non-finite number, and for arithmetic that
    overflows float64.
    """
    trace = forward if forward is not None else trace_block(model, tokens, context)
    with np.errstate(over="ignore", invalid="ignore"):
        gradients = _backward(model, trace, d_output, d_softmax)
    _require_finite(gradients)
    return gradients


def block_output_name(model: ModelSpec) -> str:
    """The stage the block ends at: ``projected`` with WO, ``concat`` with several heads,
    else ``output``."""
    if model.WO is not None:
        return "projected"
    return "concat" if model.heads > 1 else "output"


def _backward(
    model: ModelSpec,
    trace: Trace,
    d_output: Matrix | None,
    d_softmax: Sequence[Matrix | None] | None,
) -> Gradients:
    n = len(trace.tokens)
    m = n if trace.context_tokens is None else len(trace.context_tokens)
    block = trace.stage(block_output_name(model))
    d_block = _upstream("d_output", d_output, block.shape)
    entering = _entering(d_softmax, model.heads, (n, m))

    d_projected = d_WO = d_bO = None
    d_before_wo = d_block  # the gradient of concat (or of output, with one head)
    if model.WO is not None:
        before = trace.stage("concat" if model.heads > 1 else "output").data
        d_projected = d_block
        d_WO = before.T @ d_block  # [heads·d_v, n] · [n, d_model]
        d_bO = d_block.sum(axis=0) if model.bias("bO") is not None else None
        d_before_wo = d_block @ model.WO.T  # [n, d_model] · [d_model, heads·d_v]
    d_concat = d_before_wo if model.heads > 1 else None

    heads = tuple(
        _head(model, trace, h, d_before_wo[:, h * model.d_v : (h + 1) * model.d_v], entering[h])
        for h in range(model.heads)
    )
    kv_heads = tuple(_kv_sum(model, g, heads) for g in range(model.n_kv_heads))

    X = trace["X"].data
    d_X = sum((hg.d_Q @ model.head_weight("WQ", hg.head).T for hg in heads), np.zeros_like(X))
    d_keys = sum(
        (
            kv.d_K @ model.head_weight("WK", kv.kv_head).T
            + kv.d_V @ model.head_weight("WV", kv.kv_head).T
            for kv in kv_heads
        ),
        np.zeros((m, model.d_model)),
    )
    d_X_context = None
    if trace.context_tokens is None:
        d_X = d_X + d_keys
    else:
        d_X_context = d_keys

    def whole(parts: Sequence[Matrix | None]) -> Matrix | None:
        present = [p for p in parts if p is not None]
        return np.concatenate(present, axis=-1) if len(present) == len(parts) else None

    return Gradients(
        trace=trace,
        d_block=computed(np.array(d_block)),
        heads=heads,
        kv_heads=kv_heads,
        d_WQ=_frozen(whole([hg.d_WQ for hg in heads])),
        d_WK=_frozen(whole([kv.d_WK for kv in kv_heads])),
        d_WV=_frozen(whole([kv.d_WV for kv in kv_heads])),
        d_bQ=_maybe(whole([hg.d_bQ for hg in heads])),
        d_bK=_maybe(whole([kv.d_bK for kv in kv_heads])),
        d_bV=_maybe(whole([kv.d_bV for kv in kv_heads])),
        d_X=_frozen(d_X),
        d_X_context=_maybe(d_X_context),
        d_concat=_maybe(d_concat),
        d_projected=_maybe(d_projected),
        d_WO=_maybe(d_WO),
        d_bO=_maybe(d_bO),
        d_q_norm=_summed([hg.d_q_norm for hg in heads]),
        d_k_norm=_summed([hg.d_k_norm for hg in heads]),
    )


def _summed(parts: Sequence[Matrix | None]) -> Matrix | None:
    """A weight every head shares (q_norm, k_norm): the sum of the heads' shares."""
    present = [p for p in parts if p is not None]
    return _frozen(np.sum(present, axis=0)) if present else None


def _head(
    model: ModelSpec, trace: Trace, h: int, d_out: Matrix, d_entering: Matrix | None
) -> HeadGradients:
    """Head ``h``'s backward pass, from the gradient of its output (and any at softmax)."""
    g = trace.model.kv_head_of(h)
    X = trace["X"].data
    X_keys = X if trace.context_tokens is None else trace["X_context"].data
    weights = trace.stage("softmax", head=h).data  # A: [n, m]
    V = trace.stage("V", head=h).data  # [m, d_v]
    q_name, k_name = trace.model.score_inputs
    Q_in, K_in = trace.stage(q_name, head=h).data, trace.stage(k_name, head=h).data

    d_V = weights.T @ d_out  # [m, n] · [n, d_v] -> [m, d_v]
    d_A = d_out @ V.T  # [n, d_v] · [d_v, m] -> [n, m]
    if d_entering is not None:
        d_A = d_A + d_entering
    variants = model.variants
    d_sink_logit = None
    if variants.sink_logit is not None:
        sink = trace.stage("sink", head=h).data  # [n, 1]
        d_sink_logit = np.array([[sink_backward(weights, sink, d_A)]])
    d_logits = softmax_backward(weights, d_A)  # the gradient of what the softmax read
    d_capped = None
    if variants.softcap is not None:
        d_capped = d_logits
        capped = trace.stage("capped", head=h).data
        d_logits = softcap_backward(capped, d_capped, variants.softcap)
    d_biased = d_logits if model.position_kind == "alibi" else None
    d_scaled = d_logits  # ALiBi's bias is a constant: its gradient passes unchanged
    d_scores = d_scaled / np.sqrt(model.d_k)
    d_Q_in = d_scores @ K_in  # [n, m] · [m, d_k] -> [n, d_k]
    d_K_in = d_scores.T @ Q_in  # [m, n] · [n, d_k] -> [m, d_k]
    d_Q_rope = d_K_rope = None
    if model.position_kind == "rope":
        d_Q_rope, d_K_rope = d_Q_in, d_K_in
        d_Q = rope_backward(d_Q_in, model.turn_frequencies, model.rope_pairing)
        d_K = rope_backward(d_K_in, model.turn_frequencies, model.rope_pairing)
    else:
        d_Q, d_K = d_Q_in, d_K_in
    d_Q_norm = d_K_norm = d_q_norm = d_k_norm = None
    if variants.qk_norm:  # normed before RoPE: the turned-back gradient is the normed rows'
        d_Q_norm, d_K_norm = d_Q, d_K
        eps = variants.qk_norm_eps
        Q, K = trace.stage("Q", head=h).data, trace.stage("K", head=h).data
        d_Q, d_q = rms_norm_backward(Q, variants.q_norm, eps, d_Q_norm)
        d_K, d_k = rms_norm_backward(K, variants.k_norm, eps, d_K_norm)
        d_q_norm = d_q if variants.q_norm is not None else None
        d_k_norm = d_k if variants.k_norm is not None else None

    def column_sums(d: Matrix, bias: str) -> Matrix | None:
        return computed(d.sum(axis=0)) if model.bias(bias) is not None else None

    return HeadGradients(
        head=h,
        kv_head=g,
        d_output=_frozen(d_out),
        d_V=_frozen(d_V),
        d_softmax=_frozen(d_A),
        d_scaled=_frozen(d_scaled),
        d_scores=_frozen(d_scores),
        d_Q_rope=_maybe(d_Q_rope),
        d_K_rope=_maybe(d_K_rope),
        d_Q=_frozen(d_Q),
        d_K=_frozen(d_K),
        d_WQ=_frozen(X.T @ d_Q),  # [d_model, n] · [n, d_k]
        d_WK=_frozen(X_keys.T @ d_K),  # [d_model, m] · [m, d_k]
        d_WV=_frozen(X_keys.T @ d_V),  # [d_model, m] · [m, d_v]
        d_bQ=column_sums(d_Q, "bQ"),
        d_bK=column_sums(d_K, "bK"),
        d_bV=column_sums(d_V, "bV"),
        d_sink_logit=_maybe(d_sink_logit),
        d_capped=_maybe(d_capped),
        d_biased=_maybe(d_biased),
        d_Q_norm=_maybe(d_Q_norm),
        d_K_norm=_maybe(d_K_norm),
        d_q_norm=_maybe(d_q_norm),
        d_k_norm=_maybe(d_k_norm),
    )


def _kv_sum(model: ModelSpec, g: int, heads: tuple[HeadGradients, ...]) -> KVHeadGradients:
    """K/V head ``g``: the sum of the contributions of the query heads of its group."""
    group = tuple(hg for hg in heads if hg.kv_head == g)

    def total(name: str) -> Matrix | None:
        parts = [getattr(hg, name) for hg in group]
        if parts[0] is None:
            return None
        summed: Matrix = np.sum(parts, axis=0)
        return computed(summed)

    return KVHeadGradients(
        kv_head=g,
        query_heads=tuple(hg.head for hg in group),
        d_K=_frozen(total("d_K")),
        d_V=_frozen(total("d_V")),
        d_WK=_frozen(total("d_WK")),
        d_WV=_frozen(total("d_WV")),
        d_bK=total("d_bK"),
        d_bV=total("d_bV"),
    )


def _upstream(name: str, given: Matrix | None, shape: tuple[int, int]) -> Matrix:
    """A caller's gradient, checked to be ``shape`` and finite; zeros where not given."""
    if given is None:
        return np.zeros(shape)
    array = np.asarray(given)
    if array.dtype.kind not in "fiu" or array.shape != shape:
        raise InputError(
            field=name,
            expected=f"a {shape[0]} × {shape[1]} matrix of numbers",
            found=shape_text(array.shape) or "a scalar",
        )
    array = array.astype(np.float64, copy=False)  # only read: the loss's own is kept once
    if not np.isfinite(array).all():
        raise InputError(field=name, expected="finite numbers", found="inf or NaN")
    return array


def _entering(
    given: Sequence[Matrix | None] | None, heads: int, shape: tuple[int, int]
) -> list[Matrix | None]:
    """The gradients entering at each head's softmax, checked; None where there is none."""
    if given is None:
        return [None] * heads
    if len(given) != heads:
        raise InputError(
            field="d_softmax", expected=f"{heads} gradients (one per head)", found=str(len(given))
        )
    return [
        None if d is None else _upstream(f"d_softmax[{h}]", d, shape) for h, d in enumerate(given)
    ]


def _frozen(array: Matrix | None) -> Matrix:
    assert array is not None  # the callers pass the arrays every model has
    return computed(np.array(array, dtype=np.float64))


def _maybe(array: Matrix | None) -> Matrix | None:
    return None if array is None else _frozen(array)


def _require_finite(gradients: Gradients) -> None:
    """Refuse gradients whose float64 arithmetic overflowed, naming the first (every
    gradient is checked: the view, the JSON and train read them all)."""
    named: list[tuple[str, Matrix | None]] = []
    for hg in gradients.heads:
        named += [
            (f"{f.name} (head {hg.head})", getattr(hg, f.name))
            for f in fields(hg)
            if f.name.startswith("d_")
        ]
    for kv in gradients.kv_heads:
        named += [
            (f"{f.name} (K/V head {kv.kv_head})", getattr(kv, f.name))
            for f in fields(kv)
            if f.name.startswith("d_")
        ]
    named += [
        (f.name, getattr(gradients, f.name)) for f in fields(gradients) if f.name.startswith("d_")
    ]
    for name, array in named:
        if array is not None and not np.isfinite(array).all():
            raise InputError(
                "float64 overflowed in the backward pass; scale the gradient, embeddings "
                "or weights down",
                field=f"stage {name}",
            )
