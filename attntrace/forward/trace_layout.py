"""A saved trace's stages, checked to fit together as one computation.

:mod:`attntrace.forward.replay` reads each field of a trace file; a file edited by hand
can still hold stages that no run could have written: a head's softmax missing, a
``masked`` stage in a trace that is not causal, a K/V head no query head reads, rows
that do not match the tokens, attention weights that do not sum to 1. The views would
misread such a trace, so each is one :class:`InputError` here, before anything is shown.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError, describe
from attntrace.kernel import masks
from attntrace.kernel.stage_names import KEY_COLUMNS, KEY_ROWS
from attntrace.kernel.trace import ModelInfo, Trace

# The stages every head of a trace has (masked only under a causal mask).
PER_HEAD_STAGES = ("Q", "K", "V", "scores", "scaled", "masked", "softmax", "output")


def check_layout(trace: Trace, heads: list[int]) -> None:
    """Refuse a trace whose stages do not fit together; ``heads`` are the heads it holds."""
    _check_stages_present(trace, heads)
    _check_consistent(trace)


def _check_stages_present(trace: Trace, heads: list[int]) -> None:
    """Each stage once; X (and X_context for cross-attention); every head's stages from Q
    to output, with masked exactly when the model is causal; concat with several heads."""
    model = trace.model
    if model.kv_heads > model.heads or model.heads % model.kv_heads:
        raise InputError(
            field="model.kv_heads",
            expected=f"a divisor of heads ({model.heads})",
            found=describe(model.kv_heads),
        )
    seen = _seen_stages(trace)
    per_head = _per_head_stages(model, {name for name, _ in seen})
    cut = len(heads) < model.heads
    shared = (
        ["X"]
        + (["X_context"] if trace.context_tokens is not None else [])
        + (["concat"] if model.heads > 1 and not cut else [])
    )
    for name in shared:
        if (name, None) not in seen:
            raise InputError(field="stages", expected=f"the stage {name}", found="none")
    _check_heads_traced(trace, heads, seen)
    for head in heads:
        missing = [name for name in per_head if (name, head) not in seen]
        if missing:
            where = f" of head {head}" if trace.model.heads > 1 else ""
            raise InputError(
                field="stages",
                expected=f"the stages {', '.join(per_head)}{where}",
                found=f"no {', '.join(missing)}",
            )


def _seen_stages(trace: Trace) -> set[tuple[str, int | None]]:
    """Each stage's (name, head), refusing a stage twice or a head's stage that names
    another K/V head than the one the head reads."""
    model = trace.model
    seen: set[tuple[str, int | None]] = set()
    for index, stage in enumerate(trace.stages):
        key = (stage.name, stage.head)
        if key in seen:
            raise InputError(
                field=f"stages[{index}]",
                expected="each stage once per head",
                found=f"a second {stage.name!r}"
                + (f" for head {stage.head}" if stage.head is not None else ""),
            )
        seen.add(key)
        if stage.head is not None and stage.kv_head != model.kv_head_of(stage.head):
            raise InputError(
                field=f"stages[{index}].kv_head",
                expected=f"{model.kv_head_of(stage.head)} (head {stage.head} reads "
                f"K/V head head // {model.group})",
                found=describe(stage.kv_head),
            )
    return seen


def _per_head_stages(model: ModelInfo, names: set[str]) -> list[str]:
    """The stages each head must have, in the order computed, as the model's options
    make them; a stage of an option the model has off (RoPE, a mask) is refused."""
    per_head = [n for n in PER_HEAD_STAGES if n != "masked" or model.causal]
    rotary = ["Q_rope", "K_rope"]
    if model.positions == "rope":
        per_head[3:3] = rotary  # after Q, K, V, as computed
    elif any(name in rotary for name in names):
        raise InputError(
            field="model.positions",
            expected="rope (the trace has Q_rope and K_rope stages)",
            found=describe(model.positions),
        )
    per_head = _with_variant_stages(per_head, model, names)
    if not model.causal and "masked" in names:
        raise InputError(
            field="model.causal", expected="true (the trace has masked stages)", found="false"
        )
    return per_head


def _check_heads_traced(trace: Trace, heads: list[int], seen: set[tuple[str, int | None]]) -> None:
    """Stages and weights only of the heads traced: a WQ slice of a head left out, or a
    WK of a K/V head no traced head reads, would be drawn as if it were traced."""
    model = trace.model
    kv_read = {model.kv_head_of(h) for h in heads}
    named = {h for _, h in seen if h is not None} | {
        w.head for w in trace.weights if w.head is not None
    }
    unread = {
        w.kv_head
        for w in trace.weights
        if w.head is None and w.kv_head is not None and w.kv_head not in kv_read
    }
    if unread:
        raise InputError(
            field="weights",
            expected=f"K/V heads the traced heads read ({sorted(kv_read)})",
            found=f"K/V head {min(unread)}",
        )
    stray = sorted(named - set(heads))
    if stray:
        raise InputError(
            field="stages",
            expected=f"stages of the heads traced ({heads})",
            found=f"stages of head {stray[0]}",
        )


# The stages the variants add (docs/variants.md), each with the model key that turns
# it on, in the order a head computes them.
_VARIANT_STAGES = (
    ("Q_norm", "qk_norm"),
    ("K_norm", "qk_norm"),
    ("alibi", "alibi_slopes"),
    ("biased", "alibi_slopes"),
    ("capped", "softcap"),
    ("sink", "sink_logits"),
)


def _variant_on(model: ModelInfo, key: str) -> bool:
    v = model.variants
    on = {
        "qk_norm": v.qk_norm,
        "alibi_slopes": model.positions == "alibi",
        "softcap": v.softcap is not None,
        "sink_logits": v.sink_logit is not None,
    }
    return on[key]


def _with_variant_stages(per_head: list[str], model: ModelInfo, names: set[str]) -> list[str]:
    """The per-head stages with those of the variants that are on; a variant's stage in
    a trace whose model has it off is refused (the views would show what was not run)."""
    stages = list(per_head)
    for name, key in _VARIANT_STAGES:
        if _variant_on(model, key):
            after = {
                "Q_norm": "V",
                "K_norm": "Q_norm",
                "alibi": "scaled",
                "biased": "alibi",
                "capped": "biased" if "biased" in stages else "scaled",
                "sink": "softmax",
            }[name]
            stages.insert(stages.index(after) + 1, name)
        elif name in names:
            field = "positions" if key == "alibi_slopes" else key
            raise InputError(
                field=f"model.{field}",
                expected=f"{field} on (the trace has {name} stages)",
                found="none",
            )
    return stages


# Which labels each stage's rows and columns must carry: the query tokens, the key
# tokens (the context's, for cross-attention), or a width of the model.
_QUERY_ROWS = (
    "embeddings",
    "positions",
    "X",
    "Q",
    "Q_rope",
    "scores",
    "scaled",
    "masked",
    "softmax",
    "output",
    "concat",
    "projected",
    "Q_norm",
    "alibi",
    "biased",
    "capped",
    "sink",
)
# The variants' stages of a key per row, or a key per column (docs/variants.md).
_KEY_ROWS = KEY_ROWS | {"K_norm"}
_KEY_COLUMNS = KEY_COLUMNS | {"alibi", "biased", "capped"}


def _check_consistent(trace: Trace) -> None:
    """Stages must fit together as one computation, or the views would misread them."""
    keys = trace.context_tokens or trace.tokens
    model = trace.model
    widths = {
        "embeddings": model.d_model,
        "positions": model.d_model,
        "X": model.d_model,
        "X_context": model.d_model,
        "Q": model.d_k,
        "K": model.d_k,
        "V": model.d_v,
        "Q_rope": model.d_k,
        "K_rope": model.d_k,
        "Q_norm": model.d_k,
        "K_norm": model.d_k,
        "sink": 1,
        "output": model.d_v,
        "concat": model.heads * model.d_v,
        "projected": model.d_model,
    }
    for index, stage in enumerate(trace.stages):
        field = f"stages[{index}] ({stage.name})"
        rows = (
            trace.tokens if stage.name in _QUERY_ROWS else keys if stage.name in _KEY_ROWS else None
        )
        # labels compared with the labels expected are shown as a list, as those are
        if rows is not None and stage.rows != rows:
            raise InputError(
                field=f"{field}.rows",
                expected=f"the tokens {list(rows)}",
                found=repr(list(stage.rows)),
            )
        if stage.name == "sink" and stage.cols != ("sink",):
            raise InputError(
                field=f"{field}.cols",
                expected="['sink'] (one column)",
                found=repr(list(stage.cols)),
            )
        if stage.name in _KEY_COLUMNS and stage.cols != keys:
            raise InputError(
                field=f"{field}.cols",
                expected=f"the key tokens {list(keys)}",
                found=repr(list(stage.cols)),
            )
        if stage.name in widths and stage.shape[1] != widths[stage.name]:
            raise InputError(
                field=f"{field}.cols",
                expected=f"{widths[stage.name]} columns (from model)",
                found=describe(stage.shape[1]),
            )
        masked = np.isneginf(stage.data)
        # a --dtype trace may hold −∞ anywhere: an overflow (its error line counts it)
        if stage.name != "masked" and masked.any() and trace.precision is None:
            raise InputError(
                field=f"{field}.data",
                expected="numbers (null marks a masked cell, only in the masked stage)",
                found="null",
            )
        if masked.all(axis=1).any():
            raise InputError(
                field=f"{field}.data",
                expected="at least one unmasked cell a row",
                found="a row of nulls",
            )
        if stage.name == "softmax":
            sink = _sink_of(trace, stage.head)
            _check_weights(stage.data, field, _weights_tolerance(trace), sink)
        if stage.name == "masked":
            _check_mask(trace, stage.data, field)
        if stage.name == "alibi" and trace.precision is None:
            _check_alibi(trace, stage.data, stage.head, field)


def _check_mask(trace: Trace, data: npt.NDArray[Any], field: str) -> None:
    """The masked stage hides exactly the cells the saved mask (causal, window, sinks)
    hides: a file whose window was edited would else be drawn with the wrong reasons.
    Under --dtype a visible cell may be −∞ too (an overflow, counted by its error line)."""
    v = trace.model.variants
    n, m = data.shape
    hidden = masks.hidden(
        np.arange(n), np.arange(m), causal=trace.model.causal, window=v.window, sinks=v.sinks
    )
    shown = np.isneginf(data)
    wrong = (hidden & ~shown) if trace.precision is not None else (hidden != shown)
    if wrong.any():
        i, j = (int(x[0]) for x in np.nonzero(wrong))
        rule = masks.mask_words(trace.model.causal, v.window, v.sinks)
        raise InputError(
            field=f"{field}.data[{i}][{j}]",
            expected=f"the model's mask ({rule}): {'null' if hidden[i, j] else 'a number'} here",
            found="a number" if hidden[i, j] else "null",
        )


def _check_alibi(trace: Trace, data: npt.NDArray[Any], head: int | None, field: str) -> None:
    """ALiBi's bias is −m_h·|i − j| with the saved slope of its head."""
    n, m = data.shape
    slope = trace.model.variants.slopes(trace.model.heads)[head or 0]
    expected = masks.alibi_bias(np.arange(n), np.arange(m), slope)
    if not np.allclose(data, expected, rtol=1e-12, atol=1e-12):
        raise InputError(
            field=f"{field}.data",
            expected=f"−m·|i − j| with the head's slope "
            f"m = {masks.slope_text(slope)} (model.alibi_slopes)",
            found="other numbers",
        )


def _sink_of(trace: Trace, head: int | None) -> npt.NDArray[Any] | None:
    """The ``sink`` column of ``head`` ([n, 1]), the weight its softmax rows leave out."""
    n = len(trace.tokens)
    for stage in trace.stages:
        if stage.name == "sink" and stage.head == head and stage.shape == (n, 1):
            return stage.data
    return None  # none, or one of the wrong shape (its own check says so)


def _weights_tolerance(trace: Trace) -> float:
    """How far a row of weights may sum from 1: 1e-9 in float64; under a --dtype, each
    weight rounded to it (half its epsilon a weight, the row's sum rounded too)."""
    if trace.precision is None:
        return 1e-9
    from attntrace.kernel.precision import epsilon

    return (len(trace.context_tokens or trace.tokens) + 1) * epsilon(trace.precision.dtype)


def _check_weights(
    weights: npt.NDArray[Any],
    field: str,
    tolerance: float = 1e-9,
    sink: npt.NDArray[Any] | None = None,
) -> None:
    """Attention weights are probabilities: each row in [0, 1] and summing to 1 (with a
    sink logit, the row and its ``sink`` cell sum to 1). A row of NaN (a --dtype's
    overflow: inf − inf) is what that trace computed."""
    nan_rows = np.isnan(weights).all(axis=1)
    with np.errstate(invalid="ignore"):
        sums = weights.sum(axis=1) + (0.0 if sink is None else sink[:, 0])
        bad = np.nonzero(
            ~nan_rows
            & (
                (np.abs(sums - 1) > tolerance)
                | (weights < 0).any(axis=1)
                | (weights > 1).any(axis=1)
            )
        )[0]
    if bad.size:
        row = int(bad[0])
        raise InputError(
            field=f"{field}.data[{row}]",
            expected="weights in [0, 1] that sum to 1",
            found=f"a row summing to {float(sums[row])!r}",
        )
