"""The backward pass as a record: every gradient a stage, in the order it is computed.

:func:`attntrace.learning.backward.grad_block` computes the gradients; this module names
them as ``attntrace/grad/v1`` does (docs/learning.md#the-stages), gives each its formula
and labels, and keeps the forward trace beside them, so a view can put each gradient
next to the stage it mirrors and the JSON writer carries both without computing
anything. A gradient stage is a :class:`attntrace.kernel.trace.Stage`, so the tables
that draw a forward stage draw it too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from attntrace.forward.attention import trace_block
from attntrace.kernel import progress
from attntrace.kernel.budget import also_counted, rows_bytes, square_bytes, trace_bytes
from attntrace.kernel.labels import dims
from attntrace.kernel.ops import Matrix
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Stage, Trace
from attntrace.learning.backward import (
    Gradients,
    HeadGradients,
    block_output_name,
    grad_block,
)
from attntrace.learning.objective import Objective, Resolved, resolve

# The forward stage (or learned matrix) each gradient is the gradient of.
MIRRORS: Mapping[str, str] = {
    "d_projected": "projected",
    "d_WO": "WO",
    "d_bO": "bO",
    "d_concat": "concat",
    "d_output": "output",
    "d_V": "V",
    "d_softmax": "softmax",
    "d_sink_logit": "sink",
    "d_capped": "capped",
    "d_biased": "biased",
    "d_scaled": "scaled",
    "d_scores": "scores",
    "d_Q_rope": "Q_rope",
    "d_K_rope": "K_rope",
    "d_Q_norm": "Q_norm",
    "d_K_norm": "K_norm",
    "d_Q": "Q",
    "d_K": "K",
    "d_WQ": "WQ",
    "d_bQ": "bQ",
    "d_WK": "WK",
    "d_bK": "bK",
    "d_WV": "WV",
    "d_bV": "bV",
    "d_q_norm": "q_norm",
    "d_k_norm": "k_norm",
    "d_X": "X",
    "d_X_context": "X_context",
}
# Every name a grad/v1 document may hold, in the order its stages come.
GRAD_ORDER = tuple(MIRRORS)


@dataclass(frozen=True, eq=False)
class GradTrace:
    """A backward pass: the ``forward`` trace, the ``loss`` it starts from, and the
    gradient ``stages`` in backward order (block output first, X last).

    A stage of one query head has ``head`` set (and ``kv_head``, the K/V head it reads);
    a K/V head's sum over its query heads (GQA, MQA) has ``head`` None and ``kv_head``
    set, and ``summed[kv_head]`` lists the heads summed; a whole-model gradient
    (d_WQ, d_X, d_WO, ...) has neither. ``objective`` is the loss as the user named it.
    """

    forward: Trace
    objective: Objective
    loss: Resolved
    stages: tuple[Stage, ...]
    summed: Mapping[int, tuple[int, ...]]

    @property
    def names(self) -> list[str]:
        return [stage.name for stage in self.stages]

    def stage(self, name: str, head: int | None = None, kv_head: int | None = None) -> Stage:
        """The gradient ``name`` of ``head`` (or of K/V head ``kv_head``; neither: the
        whole-model one). A KeyError names the gradients held, where there is none."""
        for stage in self.stages:
            if (
                stage.name == name
                and stage.head == head
                and (kv_head is None or stage.kv_head == kv_head)
            ):
                return stage
        known = ", ".join(dict.fromkeys(self.names))
        raise KeyError(
            f"no gradient {name!r} for head {head}, K/V head {kv_head} (gradients: {known})"
        )

    def mirror(self, stage: Stage) -> Stage | None:
        """The forward stage (or learned matrix, as the trace carries it) ``stage`` is
        the gradient of; None where the trace holds no such one (a whole d_WQ of
        several heads: the trace keeps WQ by head)."""
        name = MIRRORS[stage.name]
        trace = self.forward
        for candidate in trace.stages:
            if candidate.name != name:
                continue
            if stage.head is not None and candidate.head == stage.head:
                return candidate
            if stage.head is None and stage.kv_head is not None:
                if candidate.kv_head == stage.kv_head:
                    return candidate  # a K/V head's sum: its K or V (any head's: shared)
            elif stage.head is None and candidate.head is None:
                return candidate
        slices = [weight for weight in trace.weights if weight.name == name]
        return slices[0] if len(slices) == 1 else None  # by head: no one table is the whole


def grad_trace(
    model: ModelSpec,
    tokens: Sequence[str],
    context: Sequence[str] | None,
    objective: Objective,
) -> GradTrace:
    """The backward pass of ``model`` over ``tokens`` (and ``context``) from the loss
    ``objective`` names. Raises :class:`attntrace.errors.InputError` for a loss that
    does not fit the trace (see :func:`attntrace.learning.objective.resolve`)."""
    with also_counted(gradient_parts):  # counted with the forward trace, before it
        forward = trace_block(model, tokens, context)
    resolved = resolve(objective, model, forward)
    loss = resolved.loss
    with progress.task(f"the backward pass of {model.name}"):
        gradients = grad_block(
            model,
            tokens,
            context,
            d_output=loss.d_output,
            d_softmax=loss.d_softmax,
            forward=forward,
        )
    return GradTrace(
        forward=gradients.trace,
        objective=objective,
        loss=resolved,
        stages=_stages(model, gradients, resolved),
        summed={kv.kv_head: kv.query_heads for kv in gradients.kv_heads if len(kv.query_heads) > 1},
    )


def gradient_parts(model: ModelSpec, n: int, m: int) -> dict[str, int]:
    """What the backward pass holds besides the forward trace: a gradient for every
    stage (a trace's worth), the loss's d softmax, and a head's gradients as computed
    beside their kept (read-only) copies; and the rows' gradients, computed and kept
    (measured on models 200,000 and 800,000 dimensions wide: ten copies of the rows)."""
    return {
        "the gradients": trace_bytes(model, n, m) + 3 * square_bytes(model, n, m),
        "the rows' gradients": ROW_GRADIENTS * rows_bytes(model, n, m),
    }


ROW_GRADIENTS = 10  # copies of the trace's rows the backward pass holds (gradient_parts)


def _stages(model: ModelSpec, g: Gradients, resolved: Resolved) -> tuple[Stage, ...]:
    """Every gradient ``g`` holds as a named stage, in backward order: the block's output
    (and WO's), each query head's, each shared K/V head's sum, then the learned matrices
    and X. One helper a part, so that each reads as the part of the chain rule it is."""
    trace = g.trace
    tokens = trace.stage("X").rows
    keys = tokens if trace.context_tokens is None else trace.stage("X_context").rows
    block = block_output_name(model)
    entering = (
        f"dL/d {block}" if resolved.loss.d_output is not None else f"0 (L does not read {block})"
    )
    found = [
        *_output_stages(model, g, tokens, entering),
        *(
            stage
            for hg in g.heads
            for stage in _head_stages(model, trace, hg, resolved, entering, tokens, keys)
        ),
        *_kv_sums(model, g, keys),
        *_model_stages(model, g, tokens, keys),
    ]
    return tuple(stage for stage in found if stage is not None)


def _stage(
    name: str,
    formula: str,
    data: Matrix | None,
    rows: Sequence[str],
    cols: Sequence[str],
    head: int | None = None,
    kv_head: int | None = None,
) -> Stage | None:
    """A gradient as a stage (a vector as its one row); None where the model has no such
    gradient (no WO, no bias, no RoPE...), so that each part lists every gradient there
    may be and the model's own are kept."""
    if data is None:
        return None
    matrix = data if data.ndim == 2 else data[None, :]
    return Stage(name, formula, tuple(rows), tuple(cols), matrix, head, kv_head)


def _output_stages(
    model: ModelSpec, g: Gradients, tokens: Sequence[str], entering: str
) -> list[Stage | None]:
    """The gradients between the loss and the heads: back through WO (and bO), then the
    concatenation the heads' columns are cut from."""
    d_model, heads, d_v = model.d_model, model.heads, model.d_v
    before = "concat" if heads > 1 else "output"
    found: list[Stage | None] = []
    if model.WO is not None:
        found += [
            _stage(
                "d_projected", f"d_projected = {entering}", g.d_projected, tokens, dims(d_model)
            ),
            _stage(
                "d_WO", f"d_WO = {before}ᵀ · d_projected", g.d_WO, dims(heads * d_v), dims(d_model)
            ),
            _stage("d_bO", "d_bO = column sums of d_projected", g.d_bO, ("d_bO",), dims(d_model)),
        ]
    if heads > 1:
        source = "d_projected · WOᵀ" if model.WO is not None else entering
        found.append(
            _stage("d_concat", f"d_concat = {source}", g.d_concat, tokens, dims(heads * d_v))
        )
    return found


def _head_stages(
    model: ModelSpec,
    trace: Trace,
    hg: HeadGradients,
    resolved: Resolved,
    entering: str,
    tokens: Sequence[str],
    keys: Sequence[str],
) -> list[Stage | None]:
    """One query head's gradients, from its output back to its Q and K, each formula as
    the model's variants (soft-cap, ALiBi, RoPE, QK-norm) make it."""
    heads, d_k, d_v = model.heads, model.d_k, model.d_v
    h, kv = hg.head, hg.kv_head
    if heads > 1:
        d_out = f"d_output = columns {h * d_v}…{(h + 1) * d_v - 1} of d_concat"
    elif model.WO is not None:
        d_out = "d_output = d_projected · WOᵀ"
    else:
        d_out = f"d_output = {entering}"
    read = resolved.loss.d_softmax is not None and resolved.loss.d_softmax[h] is not None
    q_in, k_in = ("Q_rope", "K_rope") if hg.d_Q_rope is not None else trace.model.score_inputs
    landed = (("d_capped", hg.d_capped), ("d_biased", hg.d_biased), ("d_scaled", hg.d_scaled))
    softmax_out = next(name for name, d in landed if d is not None)
    backward = f"{softmax_out} = softmax ∘ (d_softmax − rowsum(d_softmax ∘ softmax))"
    cap = model.variants.softcap
    normed = hg.d_Q_norm is not None
    turned_q = "d_Q_rope turned back (RoPE by −θ)"
    turned_k = "d_K_rope turned back (RoPE by −θ)"
    norm_back = "back through RMSNorm: r·u − r³·{x}·Σ(u∘{x})/d_k, u = {d}{w}, r = 1/rms({x})"
    per_head = [
        ("d_output", d_out, hg.d_output, tokens, dims(d_v, h * d_v)),
        ("d_V", "d_V = softmaxᵀ · d_output", hg.d_V, keys, dims(d_v, kv * d_v)),
        (
            "d_softmax",
            "d_softmax = d_output · Vᵀ" + (" + dL/d softmax" if read else ""),
            hg.d_softmax,
            tokens,
            keys,
        ),
        (
            "d_sink_logit",
            "d_sink_logit = −Σᵢ sinkᵢ · rowsum(d_softmax ∘ softmax)ᵢ",
            hg.d_sink_logit,
            ("d_sink_logit",),
            ("sink",),
        ),
        ("d_capped", backward, hg.d_capped, tokens, keys),
        (
            "d_biased",
            f"d_biased = d_capped ∘ (1 − (capped / {cap:g})²)"
            if cap is not None and hg.d_biased is not None
            else backward,
            hg.d_biased,
            tokens,
            keys,
        ),
        (
            "d_scaled",
            "d_scaled = d_biased (ALiBi's bias is a constant)"
            if hg.d_biased is not None
            else f"d_scaled = d_capped ∘ (1 − (capped / {cap:g})²)"
            if cap is not None
            else backward,
            hg.d_scaled,
            tokens,
            keys,
        ),
        ("d_scores", "d_scores = d_scaled / √d_k", hg.d_scores, tokens, keys),
        ("d_Q_rope", f"d_Q_rope = d_scores · {k_in}", hg.d_Q_rope, tokens, dims(d_k, h * d_k)),
        ("d_K_rope", f"d_K_rope = d_scoresᵀ · {q_in}", hg.d_K_rope, keys, dims(d_k, kv * d_k)),
        (
            "d_Q_norm",
            f"d_Q_norm = {turned_q}" if hg.d_Q_rope is not None else "d_Q_norm = d_scores · K_norm",
            hg.d_Q_norm,
            tokens,
            dims(d_k, h * d_k),
        ),
        (
            "d_K_norm",
            f"d_K_norm = {turned_k}"
            if hg.d_K_rope is not None
            else "d_K_norm = d_scoresᵀ · Q_norm",
            hg.d_K_norm,
            keys,
            dims(d_k, kv * d_k),
        ),
        (
            "d_Q",
            "d_Q = d_Q_norm "
            + norm_back.format(
                x="Q", d="d_Q_norm", w=" ∘ q_norm" if model.variants.q_norm is not None else ""
            )
            if normed
            else f"d_Q = {turned_q}"
            if hg.d_Q_rope is not None
            else "d_Q = d_scores · K",
            hg.d_Q,
            tokens,
            dims(d_k, h * d_k),
        ),
        (
            "d_K",
            "d_K = d_K_norm "
            + norm_back.format(
                x="K", d="d_K_norm", w=" ∘ k_norm" if model.variants.k_norm is not None else ""
            )
            if normed
            else f"d_K = {turned_k}"
            if hg.d_K_rope is not None
            else "d_K = d_scoresᵀ · Q",
            hg.d_K,
            keys,
            dims(d_k, kv * d_k),
        ),
    ]
    return [
        _stage(name, formula, data, rows, cols, h, kv)
        for name, formula, data, rows, cols in per_head
    ]


def _kv_sums(model: ModelSpec, g: Gradients, keys: Sequence[str]) -> list[Stage | None]:
    """Each K/V head's d_K and d_V summed over the query heads that share it (GQA, MQA):
    the gradient its weights receive; a head of its own needs no sum."""
    d_k, d_v = model.d_k, model.d_v
    found: list[Stage | None] = []
    for kvg in g.kv_heads:
        if len(kvg.query_heads) > 1:
            which = ", ".join(map(str, kvg.query_heads))
            for name, data, width in (("d_K", kvg.d_K, d_k), ("d_V", kvg.d_V, d_v)):
                formula = f"{name} = Σ over heads {which} of their {name}"
                cols = dims(width, kvg.kv_head * width)
                found.append(_stage(name, formula, data, keys, cols, None, kvg.kv_head))
    return found


def _model_stages(
    model: ModelSpec, g: Gradients, tokens: Sequence[str], keys: Sequence[str]
) -> list[Stage | None]:
    """The whole model's gradients, summed over the heads: the learned matrices and
    biases, the QK-norm weights, then X (and the context's X, which feeds K and V)."""
    trace = g.trace
    d_model, heads, d_k, d_v = model.d_model, model.heads, model.d_k, model.d_v
    kv_width_k, kv_width_v = model.n_kv_heads * d_k, model.n_kv_heads * d_v
    x_keys = "X" if trace.context_tokens is None else "X_context"
    rows = dims(d_model)
    found = [
        _stage("d_WQ", "d_WQ = Xᵀ · d_Q", g.d_WQ, rows, dims(heads * d_k)),
        _stage("d_bQ", "d_bQ = column sums of d_Q", g.d_bQ, ("d_bQ",), dims(heads * d_k)),
        _stage("d_WK", f"d_WK = {x_keys}ᵀ · d_K", g.d_WK, rows, dims(kv_width_k)),
        _stage("d_bK", "d_bK = column sums of d_K", g.d_bK, ("d_bK",), dims(kv_width_k)),
        _stage("d_WV", f"d_WV = {x_keys}ᵀ · d_V", g.d_WV, rows, dims(kv_width_v)),
        _stage("d_bV", "d_bV = column sums of d_V", g.d_bV, ("d_bV",), dims(kv_width_v)),
        _stage(
            "d_q_norm",
            "d_q_norm = Σ over rows (and heads) of d_Q_norm ∘ Q / rms(Q)",
            g.d_q_norm,
            ("d_q_norm",),
            dims(d_k),
        ),
        _stage(
            "d_k_norm",
            "d_k_norm = Σ over rows (and heads) of d_K_norm ∘ K / rms(K)",
            g.d_k_norm,
            ("d_k_norm",),
            dims(d_k),
        ),
    ]
    every = " (summed over heads)" if heads > 1 else ""
    x_cols = trace.stage("X").cols
    if trace.context_tokens is None:
        found.append(
            _stage("d_X", f"d_X = d_Q · WQᵀ + d_K · WKᵀ + d_V · WVᵀ{every}", g.d_X, tokens, x_cols)
        )
    else:
        found.append(_stage("d_X", f"d_X = d_Q · WQᵀ{every}", g.d_X, tokens, x_cols))
        found.append(
            _stage(
                "d_X_context",
                f"d_X_context = d_K · WKᵀ + d_V · WVᵀ{every}",
                g.d_X_context,
                keys,
                trace.stage("X_context").cols,
            )
        )
    return found
