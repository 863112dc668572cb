"""ModelSpec + tokens -> Trace: an attention block, one stage at a time.

    Attention(Q, K, V) = softmax(Q · Kᵀ / √d_k) · V          (Vaswani et al. 2017, eq. 1)
    MultiHead(X) = Concat(head_0, ..., head_h-1) · WO           (eq. 4, section 3.2.2)

Order of a trace (docs/model-file.md, "What the options compute"): the shared stages
(embeddings, positions, X, and X_context for cross-attention), then head 0's stages,
head 1's, ..., then concat and projected. A head is computed as the paper writes it,
its projections and then :func:`attntrace.kernel.ops.attention`, and then recorded: each
stage's formula is written once, here, beside the array it names; the tables, step mode
and JSON all show this same string.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError
from attntrace.forward.weight_stages import weight_stages
from attntrace.kernel import masks, ops, progress
from attntrace.kernel.budget import check_trace_size
from attntrace.kernel.frozen import computed
from attntrace.kernel.labels import dims
from attntrace.kernel.ops import Attention, Mask, Matrix, sinusoidal_positions
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import ModelInfo, Stage, Trace
from attntrace.visible import quoted


class Arithmetic(Protocol):
    """How each kind of stage is computed: float64 (:data:`FLOAT64`), or a low-precision
    dtype by the casting rule (:class:`attntrace.kernel.casting.Cast`). The stages, their
    order, formulas and labels are written once, below, for both."""

    def round(self, values: npt.ArrayLike) -> Matrix: ...  # a stored matrix, as held
    def add(self, a: npt.ArrayLike, b: npt.ArrayLike) -> Matrix: ...
    def linear(self, x: Matrix, w: Matrix, b: Matrix | None = None) -> Matrix: ...
    def rope(
        self,
        rows: Matrix,
        positions: npt.NDArray[np.int64],
        frequencies: Matrix,
        pairing: str = "half",
    ) -> Matrix: ...
    def rms_norm(self, rows: Matrix, weight: Matrix | None, eps: float) -> Matrix: ...
    def attention(
        self,
        Q: Matrix,
        K: Matrix,
        V: Matrix,
        *,
        causal: bool = False,
        mask: Mask | None = None,
        bias: Matrix | None = None,
        softcap: float | None = None,
        sink_logit: float | None = None,
    ) -> Attention: ...


class _Exact:
    """float64: numpy's arithmetic, nothing rounded (:mod:`attntrace.kernel.ops`)."""

    def round(self, values: npt.ArrayLike) -> Matrix:
        return values  # type: ignore[return-value]  # the model's own float64 arrays

    def add(self, a: npt.ArrayLike, b: npt.ArrayLike) -> Matrix:
        total: Matrix = np.add(a, b)
        return total

    def linear(self, x: Matrix, w: Matrix, b: Matrix | None = None) -> Matrix:
        return ops.linear(x, w, b)

    def rope(
        self,
        rows: Matrix,
        positions: npt.NDArray[np.int64],
        frequencies: Matrix,
        pairing: str = "half",
    ) -> Matrix:
        return ops.rope(rows, positions, frequencies, pairing)

    def rms_norm(self, rows: Matrix, weight: Matrix | None, eps: float) -> Matrix:
        return ops.rms_norm(rows, weight, eps)

    def attention(
        self,
        Q: Matrix,
        K: Matrix,
        V: Matrix,
        *,
        causal: bool = False,
        mask: Mask | None = None,
        bias: Matrix | None = None,
        softcap: float | None = None,
        sink_logit: float | None = None,
    ) -> Attention:
        return ops.attention(
            Q, K, V, causal=causal, mask=mask, bias=bias, softcap=softcap, sink_logit=sink_logit
        )


FLOAT64: Arithmetic = _Exact()


class _Recorder:
    """Collects stages in order, refusing any whose float64 arithmetic overflowed
    (``refuse``; a low-precision trace keeps them: where it overflows is the point)."""

    def __init__(self, heads: int, refuse: bool = True) -> None:
        self.stages: list[Stage] = []
        self.heads = heads  # errors name the head only where there are several
        self.refuse = refuse

    def add(
        self,
        name: str,
        formula: str,
        data: Matrix,
        rows: tuple[str, ...],
        cols: tuple[str, ...],
        head: int | None = None,
        kv_head: int | None = None,
    ) -> Matrix:
        where = name if head is None or self.heads == 1 else f"{name} (head {head})"
        if self.refuse:
            _require_finite(where, data, rows, cols, masked_allowed=name == "masked")
        data = computed(data)  # read-only from here on: a trace is a record
        self.stages.append(Stage(name, formula, rows, cols, data, head=head, kv_head=kv_head))
        progress.beat()  # a long sentence's head takes seconds: its stages say it is at work
        return data


def trace_block(
    model: ModelSpec, tokens: Sequence[str], context: Sequence[str] | None = None
) -> Trace:
    """Trace the attention block of ``model`` over ``tokens``.

    With ``context`` (or the model's own), K and V come from the context tokens
    (cross-attention). Raises :class:`InputError` for unknown tokens, an empty sentence,
    too few learned positions, or arithmetic that overflows float64.
    """
    return computed_block(model, tokens, context)


def computed_block(
    model: ModelSpec,
    tokens: Sequence[str],
    context: Sequence[str] | None = None,
    *,
    arithmetic: Arithmetic = FLOAT64,
    refuse: bool = True,
) -> Trace:
    """:func:`trace_block` by ``arithmetic`` (the stored matrices it reads rounded by it),
    refusing an overflow only where ``refuse``: the one place the stages are made."""
    query_tokens = tuple(tokens)
    context_tokens = tuple(context) if context is not None else None
    key_tokens = query_tokens if context_tokens is None else context_tokens
    check_trace_size(model, len(query_tokens), len(key_tokens))
    info = _model_info(model)
    record = _Recorder(model.heads, refuse)
    calc = arithmetic

    with np.errstate(over="ignore", invalid="ignore"):
        X = _inputs(model, query_tokens, record, calc, context=False)
        X_keys = (
            X if context_tokens is None else _inputs(model, key_tokens, record, calc, context=True)
        )
        n, m = len(query_tokens), len(key_tokens)
        variants = model.variants
        mask = (
            masks.hidden(
                np.arange(n),
                np.arange(m),
                causal=True,
                window=variants.window,
                sinks=variants.sinks,
            )
            if model.causal
            else None
        )
        rows = _Rows(
            X,
            X_keys,
            "X" if context_tokens is None else "X_context",
            query_tokens,
            key_tokens,
            mask,
        )
        outputs = []
        with progress.task(f"tracing {model.name}", model.heads, "heads") as tracing:
            for h in range(model.heads):
                outputs.append(_head(model, info, h, rows, record, calc))
                tracing.advance()
        block = outputs[0]
        if model.heads > 1:
            # [n, d_v] x heads -> [n, heads·d_v]
            block = record.add(
                "concat",
                f"concat = outputs of heads 0 … {model.heads - 1} side by side",
                np.concatenate(outputs, axis=1),
                query_tokens,
                dims(model.heads * model.d_v),
            )
        if model.WO is not None:
            block_name = "concat" if model.heads > 1 else "output"
            bO = model.bias("bO")
            # [n, heads·d_v] · [heads·d_v, d_model] + [d_model] -> [n, d_model]
            record.add(
                "projected",
                f"projected = {block_name} · WO{_plus(bO, 'bO')}",
                calc.linear(block, model.WO, bO),
                query_tokens,
                dims(model.d_model),
            )

    return Trace(
        model=info,
        tokens=query_tokens,
        stages=tuple(record.stages),
        context_tokens=context_tokens,
        weights=weight_stages(model),
    )


def _model_info(model: ModelSpec) -> ModelInfo:
    """The sizes of ``model`` a trace carries (what a reader needs to follow it)."""
    return ModelInfo(
        name=model.name,
        d_model=model.d_model,
        d_k=model.d_k,
        d_v=model.d_v,
        heads=model.heads,
        kv_heads=model.n_kv_heads,
        causal=model.causal,
        description=model.description,
        positions=model.position_kind,
        rope_base=model.rope_base if model.position_kind == "rope" else None,
        rope_pairing=model.rope_pairing if model.position_kind == "rope" else None,
        variants=model.variants,
        rope_frequencies=(
            tuple(float(f) for f in model.rope_frequencies)
            if model.position_kind == "rope" and model.rope_frequencies is not None
            else None
        ),
    )


def _inputs(
    model: ModelSpec,
    tokens: tuple[str, ...],
    record: _Recorder,
    calc: Arithmetic,
    *,
    context: bool,
) -> Matrix:
    """The rows attention reads: embeddings, plus positions where the model has them."""
    suffix = "_context" if context else ""
    field = "context" if context else "embeddings"
    labels = dims(model.d_model)
    if model.given is not None and not context:
        if model.given.X.shape[0] != len(tokens):
            raise InputError(
                field="X",
                expected=f"{len(tokens)} rows (one per token)",
                found=str(model.given.X.shape[0]),
            )
        return record.add("X", model.given.formula, calc.round(model.given.X), tokens, labels)
    embedded = calc.round(model.embed(tokens, field))  # [n, d_model]
    if model.positions is None or model.position_kind in ("rope", "alibi"):  # on Q, K, scores
        return record.add(f"X{suffix}", f"X{suffix} = embeddings", embedded, tokens, labels)
    positions = calc.round(_positions_for(model, len(tokens), context))
    record.add(
        f"embeddings{suffix}",
        f"embeddings{suffix} = rows of the embedding table",
        embedded,
        tokens,
        labels,
    )
    kind = "sinusoidal" if model.position_kind == "sinusoidal" else "learned"
    record.add(
        f"positions{suffix}",
        f"positions{suffix} = {kind} PE, a row per position",
        positions,
        tokens,
        labels,
    )
    # [n, d_model] + [n, d_model] -> [n, d_model]
    return record.add(
        f"X{suffix}",
        f"X{suffix} = embeddings + positions",
        calc.add(embedded, positions),
        tokens,
        labels,
    )


def _positions_for(model: ModelSpec, n: int, context: bool) -> Matrix:
    if isinstance(model.positions, np.ndarray):
        if model.positions.shape[0] < n:
            whose = "the context" if context else "the sentence"
            raise InputError(
                source=model.source,
                field="positions",
                expected=f"at least {n} position vectors (one per token of {whose})",
                found=str(model.positions.shape[0]),
            )
        return model.positions[:n]
    return sinusoidal_positions(n, model.d_model)


@dataclass(frozen=True)
class _Rows:
    """What every head reads: X (the queries' rows) and the keys' rows, with the tokens
    that label them. The keys' rows are X itself, or X_context under cross-attention."""

    X: Matrix  # [n, d_model]
    X_keys: Matrix  # [m, d_model]
    keys_name: str  # X or X_context: how the formulas of K and V name X_keys
    query_tokens: tuple[str, ...]  # n
    key_tokens: tuple[str, ...]  # m
    mask: Mask | None  # [n, m], True where hidden (causal, window, sinks): every head's


def _head(
    model: ModelSpec, info: ModelInfo, h: int, rows: _Rows, record: _Recorder, calc: Arithmetic
) -> Matrix:
    """Head ``h``: its Q, K and V, then softmax(Q·Kᵀ / √d_k) · V, recorded stage by
    stage (from the scores on by :func:`_add_attention`). Returns its output ``[n, d_v]``."""
    g = info.kv_head_of(h)  # the K/V head it reads: K/V head g serves the heads of its group
    WQ, bQ = model.head_weight("WQ", h), model.head_bias("bQ", h)
    WK, bK = model.head_weight("WK", g), model.head_bias("bK", g)
    WV, bV = model.head_weight("WV", g), model.head_bias("bV", g)

    Q = calc.linear(rows.X, WQ, bQ)  # [n, d_model] · [d_model, d_k] + [d_k] -> [n, d_k]
    K = calc.linear(rows.X_keys, WK, bK)  # [m, d_model] · [d_model, d_k] + [d_k] -> [m, d_k]
    V = calc.linear(rows.X_keys, WV, bV)  # [m, d_model] · [d_model, d_v] + [d_v] -> [m, d_v]
    variants = model.variants
    normed = None
    if variants.qk_norm:  # each row RMS-normed, before RoPE (Gemma 3's order)
        eps = variants.qk_norm_eps
        normed = (
            calc.rms_norm(Q, variants.q_norm, eps),  # [n, d_k] -> [n, d_k]
            calc.rms_norm(K, variants.k_norm, eps),
        )
    q_in, k_in = normed or (Q, K)
    turned = None
    if model.position_kind == "rope":  # each row turned by its position's angles
        frequencies, pairing = model.turn_frequencies, model.rope_pairing
        turned = (
            calc.rope(q_in, np.arange(len(Q)), frequencies, pairing),  # [n, d_k] -> [n, d_k]
            calc.rope(k_in, np.arange(len(K)), frequencies, pairing),
        )
    n, m = len(Q), len(K)
    alibi = None
    if model.position_kind == "alibi":  # [n, m]: −m_h · |i − j|
        slope = variants.slopes(model.heads)[h]
        alibi = calc.round(masks.alibi_bias(np.arange(n), np.arange(m), slope))
    sinks = variants.sink_logits(model.heads)
    head = calc.attention(
        *(turned or (q_in, k_in)),
        V,
        mask=rows.mask,
        bias=alibi,
        softcap=variants.softcap,
        sink_logit=None if sinks is None else sinks[h],
    )

    # The stages in trace order, each with its formula. Columns over dimensions are
    # labelled by where they sit in the model's matrices: d2, d3 for head 1's Q of d_k 2.
    queries, keys, d_k, d_v = rows.query_tokens, rows.key_tokens, model.d_k, model.d_v
    q_dims, k_dims, v_dims = dims(d_k, h * d_k), dims(d_k, g * d_k), dims(d_v, g * d_v)

    def add(
        name: str, formula: str, data: Matrix, on: tuple[str, ...], cols: tuple[str, ...]
    ) -> None:
        record.add(name, formula, data, on, cols, head=h, kv_head=g)

    add("Q", f"Q = X · WQ{_plus(bQ, 'bQ')}", Q, queries, q_dims)
    add("K", f"K = {rows.keys_name} · WK{_plus(bK, 'bK')}", K, keys, k_dims)
    add("V", f"V = {rows.keys_name} · WV{_plus(bV, 'bV')}", V, keys, v_dims)
    if normed:
        for name, data, weight, on, cols in (
            ("Q", normed[0], variants.q_norm, queries, q_dims),
            ("K", normed[1], variants.k_norm, keys, k_dims),
        ):
            times = f" · {name.lower()}_norm" if weight is not None else ""
            add(
                f"{name}_norm",
                f"{name}_norm = RMSNorm({name}){times}: each row / "
                f"√(mean(row²) + {variants.qk_norm_eps:g})",
                data,
                on,
                cols,
            )
    if turned:
        # the default pairing goes unsaid (the formulas read as they always have)
        neighbours = ", neighbours paired" if model.rope_pairing == "interleaved" else ""
        how = f"turned by position (RoPE, {_rope_angles(model)}{neighbours})"
        source = ("Q_norm", "K_norm") if normed else ("Q", "K")
        add("Q_rope", f"Q_rope = {source[0]} {how}", turned[0], queries, q_dims)
        add("K_rope", f"K_rope = {source[1]} {how}", turned[1], keys, k_dims)
    sink_logit = None if sinks is None else sinks[h]
    _add_attention(add, model, info, h, head, alibi, sink_logit, (queries, keys))
    return head.output


def _rope_angles(model: ModelSpec) -> str:
    """How the Q_rope and K_rope formulas name the angles: ``base 10000``, or where the
    frequencies are given one by one, how many pairs turn by them."""
    given = model.rope_frequencies
    if given is None:
        return f"base {model.rope_base:g}"
    pairs = model.d_k // 2
    if len(given) == pairs:
        return "each pair by its own frequency"
    return f"{len(given)} of {pairs} pairs by their own frequencies, the rest unturned"


# How a head's recording helpers add a stage: name, formula, data, its rows' and its
# columns' labels (the head and K/V head are the recorder's).
_Add = Callable[[str, str, Matrix, tuple[str, ...], tuple[str, ...]], None]


def _add_attention(
    add: _Add,
    model: ModelSpec,
    info: ModelInfo,
    h: int,
    head: Attention,
    alibi: Matrix | None,
    sink_logit: float | None,
    tokens: tuple[tuple[str, ...], tuple[str, ...]],
) -> None:
    """Head ``h``'s stages from the scores to its output, each with its formula: the
    part of the head :func:`attntrace.kernel.ops.attention` computed."""
    queries, keys = tokens
    variants = model.variants
    q, k = info.score_inputs
    add("scores", f"scores = {q} · {k}ᵀ", head.scores, queries, keys)
    add("scaled", "scaled = scores / √d_k", head.scaled, queries, keys)
    if alibi is not None and head.biased is not None:
        m_h = masks.slope_text(variants.slopes(model.heads)[h])
        add("alibi", f"alibi = −m · |i − j|, m = {m_h} (ALiBi)", alibi, queries, keys)
        add("biased", "biased = scaled + alibi", head.biased, queries, keys)
    if head.capped is not None:
        before = "biased" if alibi is not None else "scaled"
        cap = f"{variants.softcap:g}"
        add("capped", f"capped = {cap} · tanh({before} / {cap})", head.capped, queries, keys)
    if head.masked is not None:
        words = masks.mask_words(model.causal, variants.window, variants.sinks)
        add("masked", f"masked = {info.mask_source}, {words}", head.masked, queries, keys)
    # with a sink logit s, M = max(row max, s) (the captions say so): short enough that
    # the title and its shape fit one line of 80 columns
    x = info.softmax_source
    add(
        "softmax",
        f"softmax = exp({x} − M) / (Σ exp({x} − M) + exp(s − M))"
        if head.sink is not None
        else f"softmax = exp({x} − row max) / row sum",
        head.softmax,
        queries,
        keys,
    )
    if head.sink is not None and sink_logit is not None:
        add(
            "sink",
            f"sink = exp(s − M) / the same sum, s = {sink_logit:g}: weight that passes no value",
            head.sink,
            queries,
            ("sink",),
        )
    # labelled by where the head's columns go in concat: d0..d_v-1 for head 0, ...
    d_v = model.d_v
    add("output", "output = softmax · V", head.output, queries, dims(d_v, h * d_v))


def _plus(bias: Matrix | None, name: str) -> str:
    """`` + bQ`` in a formula where the bias is there, else nothing."""
    return "" if bias is None else f" + {name}"


def _require_finite(
    name: str,
    data: Matrix,
    rows: tuple[str, ...],
    cols: tuple[str, ...],
    *,
    masked_allowed: bool = False,
) -> None:
    """Refuse a stage whose float64 arithmetic overflowed (inf, or NaN from inf − inf).

    The masked stage alone may hold −∞: those cells are the mask itself.
    """
    if not masked_allowed:
        with np.errstate(over="ignore", invalid="ignore"):  # huge finite cells may sum to inf
            if np.isfinite(data.sum()):
                return  # a sum is finite only where every cell is: no n × m mask to build
    bad = ~np.isfinite(data)
    if masked_allowed:
        bad &= ~np.isneginf(data)
    if bad.any():
        bad_rows, bad_cols = np.nonzero(bad)
        i, j = int(bad_rows[0]), int(bad_cols[0])
        raise InputError(
            f"float64 overflowed to {data[i, j]} at row {quoted(rows[i])}, "
            f"column {quoted(cols[j])}; scale the embeddings or weights down",
            field=f"stage {name}",
        )
