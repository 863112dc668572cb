"""A saved ``run --json`` trace -> :class:`Trace`, checked, never recomputed.

``attntrace render`` shows what a trace file holds, so a trace saved on one machine (or
edited by hand) reads the same elsewhere. Every problem is an :class:`InputError` with
the field path (``stages[4].data[1][2]``); a schema string this version does not know
is refused rather than guessed at.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.core.frozen import freeze
from attntrace.core.spec import POSITION_KINDS, is_rope_base
from attntrace.core.trace import ModelInfo, Stage, Trace, weight_title
from attntrace.errors import InputError, describe
from attntrace.files.parse import parse_document
from attntrace.files.serialize import SCHEMA_ID

SAVED_TRACE = "a saved trace (from attntrace run --json)"  # what render reads, in messages

# The stages every head of a trace has (masked only under a causal mask).
PER_HEAD_STAGES = ("Q", "K", "V", "scores", "scaled", "masked", "softmax", "output")


def load_trace(text: str, source: str) -> Trace:
    """Parse and check the JSON text of a saved trace."""
    if not text.strip():  # stdin with nothing on it (a file is checked as it is read)
        raise InputError("the input is empty", source=source, expected=SAVED_TRACE)
    document = parse_document(text, source, is_json=True)
    try:
        return _trace(document)
    except InputError as error:
        raise error.with_source(source) from None


def _trace(document: Any) -> Trace:
    document = _mapping(document, "the trace", "a JSON object from `attntrace run --json`")
    schema = document.get("schema")
    if schema != SCHEMA_ID:
        raise InputError(
            "not a trace this version can read",
            field="schema",
            expected=repr(SCHEMA_ID),
            found=repr(schema) if schema is not None else "no schema field",
        )
    model = _mapping(document.get("model"), "model", "an object with the model's sizes")
    info = ModelInfo(
        name=_text(model.get("name"), "model.name"),
        d_model=_count(model.get("d_model"), "model.d_model"),
        d_k=_count(model.get("d_k"), "model.d_k"),
        d_v=_count(model.get("d_v"), "model.d_v"),
        heads=_count(model.get("heads", 1), "model.heads", MAX_HEADS),
        kv_heads=_count(model.get("kv_heads", 1), "model.kv_heads", MAX_HEADS),
        causal=_flag(model.get("causal", False), "model.causal"),
        positions=_position_kind(model.get("positions", "none")),
        rope_base=_rope_base(model),
    )
    tokens = _texts(document.get("tokens"), "tokens")
    context = document.get("context_tokens")
    stages = _list(document.get("stages"), "stages")
    trace = Trace(
        model=info,
        tokens=tokens,
        stages=tuple(_stage(s, f"stages[{i}]") for i, s in enumerate(stages)),
        context_tokens=None if context is None else _texts(context, "context_tokens"),
        weights=tuple(
            _stage(w, f"weights[{i}]", weight=True)
            for i, w in enumerate(_list(document.get("weights", []), "weights", empty=True))
        ),
    )
    _check_stages_present(trace, _heads_traced(document.get("heads_traced"), info))
    _check_consistent(trace)
    return trace


def _position_kind(value: Any) -> str:
    if value not in POSITION_KINDS:
        raise InputError(field="model.positions", expected=", ".join(POSITION_KINDS),
                         found=describe(value))  # fmt: skip
    return str(value)


def _rope_base(model: Mapping[str, Any]) -> float | None:
    """RoPE's base, which the step screens quote; only a rope trace carries one."""
    if model.get("positions") != "rope":
        return None
    value = model.get("rope_base")
    if not is_rope_base(value):
        raise InputError(field="model.rope_base", expected="a number > 1", found=describe(value))
    return float(value)


def _heads_traced(value: Any, model: ModelInfo) -> list[int]:
    """``heads_traced``: the heads a cut trace holds (absent: all of them)."""
    if value is None:
        return list(range(model.heads))
    last = model.heads - 1
    if (not isinstance(value, list) or not value or len(set(value)) != len(value)
            or not all(isinstance(h, int) and not isinstance(h, bool) and 0 <= h <= last
                       for h in value)):  # fmt: skip
        raise InputError(field="heads_traced", expected=f"distinct head numbers from 0 to "
                         f"{last}", found=describe(value))  # fmt: skip
    return sorted(value)


def _check_stages_present(trace: Trace, heads: list[int]) -> None:
    """Each stage once; X (and X_context for cross-attention); every head's stages from Q
    to output, with masked exactly when the model is causal; concat with several heads."""
    model = trace.model
    if model.kv_heads > model.heads or model.heads % model.kv_heads:
        raise InputError(field="model.kv_heads", expected=f"a divisor of heads ({model.heads})",
                         found=str(model.kv_heads))  # fmt: skip
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
                found=str(stage.kv_head),
            )
    per_head = [n for n in PER_HEAD_STAGES if n != "masked" or trace.model.causal]
    rotary = ["Q_rope", "K_rope"]
    if model.positions == "rope":
        per_head[3:3] = rotary  # after Q, K, V, as computed
    elif any(name in rotary for name, _ in seen):
        raise InputError(field="model.positions", expected="rope (the trace has Q_rope and "
                         "K_rope stages)", found=repr(model.positions))  # fmt: skip
    if not model.causal and any(name == "masked" for name, _ in seen):
        raise InputError(field="model.causal", expected="true (the trace has masked stages)",
                         found="false")  # fmt: skip
    cut = len(heads) < model.heads
    shared = (
        ["X"]
        + (["X_context"] if trace.context_tokens is not None else [])
        + (["concat"] if model.heads > 1 and not cut else [])
    )
    for name in shared:
        if (name, None) not in seen:
            raise InputError(field="stages", expected=f"the stage {name}", found="none")
    # weights too: a WQ slice of a head left out, or a WK of a K/V head no traced head reads
    kv_read = {model.kv_head_of(h) for h in heads}
    named = {h for _, h in seen if h is not None} | {
        w.head for w in trace.weights if w.head is not None
    }
    unread = {w.kv_head for w in trace.weights if w.head is None and w.kv_head is not None
              and w.kv_head not in kv_read}  # fmt: skip
    if unread:
        raise InputError(field="weights", expected=f"K/V heads the traced heads read "
                         f"({sorted(kv_read)})", found=f"K/V head {min(unread)}")  # fmt: skip
    stray = sorted(named - set(heads))
    if stray:
        raise InputError(field="stages", expected=f"stages of the heads traced ({heads})",
                         found=f"stages of head {stray[0]}")  # fmt: skip
    for head in heads:
        missing = [name for name in per_head if (name, head) not in seen]
        if missing:
            where = f" of head {head}" if trace.model.heads > 1 else ""
            raise InputError(field="stages", expected=f"the stages {', '.join(per_head)}{where}",
                             found=f"no {', '.join(missing)}")  # fmt: skip


# Which labels each stage's rows and columns must carry: the query tokens, the key
# tokens (the context's, for cross-attention), or a width of the model.
_QUERY_ROWS = ("embeddings", "positions", "X", "Q", "Q_rope", "scores", "scaled", "masked",
               "softmax", "output", "concat", "projected")  # fmt: skip
_KEY_ROWS = ("embeddings_context", "positions_context", "X_context", "K", "K_rope", "V")
_KEY_COLS = ("scores", "scaled", "masked", "softmax")


def _check_consistent(trace: Trace) -> None:
    """Stages must fit together as one computation, or the views would misread them."""
    keys = trace.context_tokens or trace.tokens
    model = trace.model
    widths = {"embeddings": model.d_model, "positions": model.d_model, "X": model.d_model,
              "X_context": model.d_model, "Q": model.d_k, "K": model.d_k, "V": model.d_v,
              "Q_rope": model.d_k, "K_rope": model.d_k,
              "output": model.d_v, "concat": model.heads * model.d_v,
              "projected": model.d_model}  # fmt: skip
    for index, stage in enumerate(trace.stages):
        field = f"stages[{index}] ({stage.name})"
        rows = (
            trace.tokens if stage.name in _QUERY_ROWS else keys if stage.name in _KEY_ROWS else None
        )
        if rows is not None and stage.rows != rows:
            raise InputError(field=f"{field}.rows", expected=f"the tokens {list(rows)}",
                             found=repr(list(stage.rows)))  # fmt: skip
        if stage.name in _KEY_COLS and stage.cols != keys:
            raise InputError(field=f"{field}.cols", expected=f"the key tokens {list(keys)}",
                             found=repr(list(stage.cols)))  # fmt: skip
        if stage.name in widths and stage.shape[1] != widths[stage.name]:
            raise InputError(field=f"{field}.cols", expected=f"{widths[stage.name]} columns "
                             "(from model)", found=str(stage.shape[1]))  # fmt: skip
        masked = np.isneginf(stage.data)
        if stage.name != "masked" and masked.any():
            raise InputError(field=f"{field}.data", expected="numbers (null marks a masked "
                             "cell, only in the masked stage)", found="null")  # fmt: skip
        if masked.all(axis=1).any():
            raise InputError(field=f"{field}.data", expected="at least one unmasked cell a row",
                             found="a row of nulls")  # fmt: skip
        if stage.name == "softmax":
            _check_weights(stage.data, field)


def _check_weights(weights: npt.NDArray[Any], field: str) -> None:
    """Attention weights are probabilities: each row in [0, 1] and summing to 1."""
    sums = weights.sum(axis=1)
    bad = np.nonzero((np.abs(sums - 1) > 1e-9) | (weights < 0).any(axis=1)
                     | (weights > 1).any(axis=1))[0]  # fmt: skip
    if bad.size:
        row = int(bad[0])
        raise InputError(field=f"{field}.data[{row}]", expected="weights in [0, 1] that sum to 1",
                         found=f"a row summing to {float(sums[row])!r}")  # fmt: skip


def _stage(value: Any, field: str, *, weight: bool = False) -> Stage:
    stage = _mapping(value, field, "an object with name, shape, rows, cols, data")
    name = _text(stage.get("name"), f"{field}.name")
    rows = _texts(stage.get("rows"), f"{field}.rows")
    cols = _texts(stage.get("cols"), f"{field}.cols")
    data = _matrix(stage.get("data"), f"{field}.data", len(rows), len(cols))
    shape = stage.get("shape")
    if shape is not None and shape != [len(rows), len(cols)]:  # written by run --json
        raise InputError(field=f"{field}.shape", expected=f"[{len(rows)}, {len(cols)}] (its "
                         "rows and cols)", found=repr(shape) if isinstance(shape, list)
                         and len(shape) <= 4 else describe(shape))  # fmt: skip
    head = _index(stage.get("head"), f"{field}.head")
    kv_head = _index(stage.get("kv_head"), f"{field}.kv_head")
    formula = weight_title(name) if weight else _text(stage.get("formula"), f"{field}.formula")
    return Stage(name, formula, rows, cols, data, head=head, kv_head=kv_head)


def _matrix(value: Any, field: str, rows: int, cols: int) -> npt.NDArray[Any]:
    """``rows × cols`` numbers; ``null`` is a masked cell (−∞)."""
    matrix = _list(value, field)
    if len(matrix) != rows:
        raise InputError(
            field=field, expected=f"{rows} rows (one per label)", found=str(len(matrix))
        )
    out = np.empty((rows, cols), dtype=np.float64)
    for i, row in enumerate(matrix):
        cells = _list(row, f"{field}[{i}]")
        if len(cells) != cols:
            raise InputError(
                field=f"{field}[{i}]", expected=f"{cols} numbers", found=str(len(cells))
            )
        for j, cell in enumerate(cells):
            if cell is None:
                out[i, j] = -math.inf
            elif isinstance(cell, bool) or not isinstance(cell, int | float):
                raise InputError(field=f"{field}[{i}][{j}]", expected="a number or null",
                                 found=describe(cell))  # fmt: skip
            elif not math.isfinite(_as_float(cell)):
                raise InputError(field=f"{field}[{i}][{j}]", expected="a finite number",
                                 found=describe(cell))  # fmt: skip
            else:
                out[i, j] = cell
    return freeze(out)  # the stage keeps it as it is (see attntrace.core.frozen)


def _as_float(number: int | float) -> float:
    try:
        return float(number)
    except OverflowError:  # an integer beyond float64
        return math.inf


def _mapping(value: Any, field: str, expected: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(field=field, expected=expected, found=describe(value))
    return value


def _list(value: Any, field: str, *, empty: bool = False) -> list[Any]:
    if not isinstance(value, list) or (not value and not empty):
        raise InputError(field=field, expected="a non-empty list", found=describe(value))
    return value


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise InputError(field=field, expected="a string", found=describe(value))
    return value


def _texts(value: Any, field: str) -> tuple[str, ...]:
    return tuple(_text(v, f"{field}[{i}]") for i, v in enumerate(_list(value, field)))


def _count(value: Any, field: str, most: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(field=field, expected="a whole number ≥ 1", found=describe(value))
    if most is not None and value > most:
        raise InputError(field=field, expected=f"at most {most:,}", found=f"{value:,}")
    return value


# A trace's heads are listed, checked and looped over: a file claiming 10**30 of them
# must be refused before that (no model has more than a few hundred).
MAX_HEADS = 4096


def _index(value: Any, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(field=field, expected="null or a whole number ≥ 0", found=describe(value))
    return value


def _flag(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise InputError(field=field, expected="true or false", found=describe(value))
    return value
