"""A saved ``run --json`` trace -> :class:`Trace`, checked, never recomputed.

``attntrace render`` shows what a trace file holds, so a trace saved on one machine (or
edited by hand) reads the same elsewhere. This module reads the document's fields (the
model's sizes, the tokens, each stage's labels and numbers) with the validators of
:mod:`attntrace.kernel.fields`; :mod:`attntrace.forward.trace_layout` then checks that the
stages fit together as one computation. Every problem is an :class:`InputError` with
the field path (``stages[4].data[1][2]``); a schema string this version does not know
is refused rather than guessed at.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError, describe
from attntrace.forward.replay_precision import saved_precision
from attntrace.forward.replay_variants import saved_variants
from attntrace.forward.trace_json import SCHEMA_ID
from attntrace.forward.trace_layout import check_layout
from attntrace.kernel import fields, progress
from attntrace.kernel.fields import is_rope_base
from attntrace.kernel.frozen import freeze
from attntrace.kernel.spec import POSITION_KINDS, ROPE_PAIRINGS
from attntrace.kernel.trace import ModelInfo, Stage, Trace, weight_title
from attntrace.modelfile.parse import parse_document

SAVED_TRACE = "a saved trace (from attntrace run --json)"  # what render reads, in messages

# A trace's heads are listed, checked and looped over: a file claiming 10**30 of them
# must be refused before that (no model has more than a few hundred).
MAX_HEADS = 4096
KINDS_LISTED = ", ".join(POSITION_KINDS)  # what model.positions may be, in messages


def load_trace(text: str, source: str) -> Trace:
    """Parse and check the JSON text of a saved trace."""
    if not text.strip():  # stdin with nothing on it (a file is checked as it is read)
        raise InputError("the input is empty", source=source, expected=SAVED_TRACE)
    with progress.task(f"reading {source}"):  # a big trace takes seconds to parse
        document = parse_document(text, source, is_json=True)
        try:
            return _trace(document)
        except InputError as error:
            raise error.with_source(source) from None


def _trace(document: Any) -> Trace:
    document = fields.mapping(document, "the trace", "a JSON object from `attntrace run --json`")
    schema = document.get("schema")
    if schema != SCHEMA_ID:
        found = describe(schema) if schema is not None else "no schema field"
        raise InputError(
            "not a trace this version can read",
            field="schema",
            expected=repr(SCHEMA_ID),
            found=found,
        )
    model = fields.mapping(document.get("model"), "model", "an object with the model's sizes")
    d_k = fields.whole(model.get("d_k"), "model.d_k")
    heads = fields.whole(model.get("heads", 1), "model.heads", most=MAX_HEADS)
    causal = fields.flag(model.get("causal", False), "model.causal")
    info = ModelInfo(
        name=fields.text(model.get("name"), "model.name"),
        d_model=fields.whole(model.get("d_model"), "model.d_model"),
        d_k=d_k,
        d_v=fields.whole(model.get("d_v"), "model.d_v"),
        heads=heads,
        kv_heads=fields.whole(model.get("kv_heads", 1), "model.kv_heads", most=MAX_HEADS),
        causal=causal,
        positions=fields.choice(
            model.get("positions", "none"), "model.positions", POSITION_KINDS, KINDS_LISTED
        ),
        rope_base=_rope_base(model),
        rope_pairing=_rope_pairing(model),
        variants=saved_variants(model, heads=heads, d_k=d_k, causal=causal),
        rope_frequencies=_rope_frequencies(model, d_k),
    )
    tokens = fields.texts(document.get("tokens"), "tokens")
    context = document.get("context_tokens")
    stages = fields.items(document.get("stages"), "stages")
    low = "precision" in document  # run --dtype: "inf" and "nan" cells, each stage's error
    read = tuple(_stage(s, f"stages[{i}]", low=low) for i, s in enumerate(stages))
    weights = tuple(
        _stage(w, f"weights[{i}]", weight=True)
        for i, w in enumerate(fields.items(document.get("weights", []), "weights", empty=True))
    )
    trace = Trace(
        model=info,
        tokens=tokens,
        stages=read,
        context_tokens=None if context is None else fields.texts(context, "context_tokens"),
        weights=weights,
        precision=saved_precision(document, stages, read, weights) if low else None,
    )
    check_layout(trace, _heads_traced(document.get("heads_traced"), info))
    return trace


def _rope_base(model: Mapping[str, Any]) -> float | None:
    """RoPE's base, which the step screens quote; only a rope trace carries one."""
    if model.get("positions") != "rope":
        return None
    value = model.get("rope_base")
    if not is_rope_base(value):
        raise InputError(field="model.rope_base", expected="a number > 1", found=describe(value))
    return float(value)


def _rope_frequencies(model: Mapping[str, Any], d_k: int) -> tuple[float, ...] | None:
    """RoPE's frequencies where the trace was turned by its own per pair (a scaled or
    partial RoPE, docs/real-models.md), which the step screens quote; else None."""
    if model.get("positions") != "rope" or "rope_frequencies" not in model:
        return None
    field = "model.rope_frequencies"
    values = np.array(fields.numbers(model["rope_frequencies"], field), dtype=np.float64)
    fields.rope_frequencies_fit(values, d_k, field)
    return tuple(float(f) for f in values)


def _rope_pairing(model: Mapping[str, Any]) -> str | None:
    """RoPE's pairing, which the Q_rope and K_rope formulas already say in words; only a
    rope trace carries one, and a trace saved before the field existed was ``half``."""
    if model.get("positions") != "rope":
        return None
    return fields.choice(
        model.get("rope_pairing", "half"),
        "model.rope_pairing",
        ROPE_PAIRINGS,
        "half or interleaved",
    )


def _heads_traced(value: Any, model: ModelInfo) -> list[int]:
    """``heads_traced``: the heads a cut trace holds (absent: all of them)."""
    if value is None:
        return list(range(model.heads))
    last = model.heads - 1
    if (
        not isinstance(value, list)
        or not value
        or len(set(value)) != len(value)
        or not all(isinstance(h, int) and not isinstance(h, bool) and 0 <= h <= last for h in value)
    ):
        raise InputError(
            field="heads_traced",
            expected=f"distinct head numbers from 0 to {last}",
            found=describe(value),
        )
    return sorted(value)


def _stage(value: Any, field: str, *, weight: bool = False, low: bool = False) -> Stage:
    stage = fields.mapping(value, field, "an object with name, shape, rows, cols, data")
    name = fields.text(stage.get("name"), f"{field}.name")
    rows = fields.texts(stage.get("rows"), f"{field}.rows")
    cols = fields.texts(stage.get("cols"), f"{field}.cols")
    data = _matrix(stage.get("data"), f"{field}.data", len(rows), len(cols), low=low)
    shape = stage.get("shape")
    if shape is not None and shape != [len(rows), len(cols)]:  # written by run --json
        # compared with the list expected, a short list is shown as written: [2, 3]
        raise InputError(
            field=f"{field}.shape",
            expected=f"[{len(rows)}, {len(cols)}] (its rows and cols)",
            found=repr(shape) if isinstance(shape, list) and len(shape) <= 4 else describe(shape),
        )
    head = fields.optional_whole(stage.get("head"), f"{field}.head")
    kv_head = fields.optional_whole(stage.get("kv_head"), f"{field}.kv_head")
    formula = (
        weight_title(name) if weight else fields.text(stage.get("formula"), f"{field}.formula")
    )
    return Stage(name, formula, rows, cols, data, head=head, kv_head=kv_head)


_LOW_CELLS = {"inf": math.inf, "nan": math.nan}  # a --dtype trace's overflowed cells


def _matrix(value: Any, field: str, rows: int, cols: int, *, low: bool = False) -> npt.NDArray[Any]:
    """``rows × cols`` numbers; ``null`` is a masked cell (−∞); in a --dtype trace
    (``low``), ``"inf"`` and ``"nan"`` are cells that overflowed."""
    matrix = fields.items(value, field)
    if len(matrix) != rows:
        raise InputError(
            field=field, expected=f"{rows} rows (one per label)", found=describe(len(matrix))
        )
    out = np.empty((rows, cols), dtype=np.float64)
    for i, row in enumerate(matrix):
        cells = fields.items(row, f"{field}[{i}]")
        if len(cells) != cols:
            raise InputError(
                field=f"{field}[{i}]", expected=f"{cols} numbers", found=describe(len(cells))
            )
        out[i] = [
            -math.inf
            if cell is None
            else _LOW_CELLS[cell]
            if low and isinstance(cell, str) and cell in _LOW_CELLS
            else fields.number(
                cell,
                f"{field}[{i}][{j}]",
                expected="a number or null" + (', "inf" or "nan"' if low else ""),
            )
            for j, cell in enumerate(cells)
        ]
    return freeze(out)  # the stage keeps it as it is (see attntrace.kernel.frozen)
