"""Trace -> JSON (docs/json.md, the trace document). Plain dicts, never through the human renderer.

Values are full float64: ``json`` writes ``repr(float)``, which reads back exactly.
Masked cells (−∞ before softmax) are ``null``. The document's shape is described by the
JSON Schema shipped as ``attntrace/schema/trace-v1.schema.json``.

Every command's document is written here, one short function each (the trace, softmax,
decode, kv-cache, models, heads, diff): one job, which is why it runs past 300 lines.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: kv-cache --json and models --json need no numpy
    from attntrace.check.diff import Cell, StageDiff, TraceDiff
    from attntrace.check.report import CheckReport
    from attntrace.decode.decoder import Decode
    from attntrace.decode.kv_memory import Shape, Variant
    from attntrace.forward.softmax_walk import SoftmaxWalk
    from attntrace.kernel.casting import StageError
    from attntrace.kernel.ops import Matrix
    from attntrace.kernel.precision_record import LowPrecision
    from attntrace.kernel.trace import ModelInfo, Stage, Trace
    from attntrace.kernels.online_softmax import OnlineSoftmax
    from attntrace.real.catalog import RealModel
    from attntrace.real.layer import HeadRanking

SCHEMA_ID = "attntrace/trace/v1"
SCHEMA_FILE = "trace-v1.schema.json"


def trace_to_dict(
    trace: Trace,
    *,
    stages: Sequence[str] | None = None,
    heads: Sequence[int] | None = None,
    raw: bool = False,
) -> dict[str, Any]:
    """The trace as plain data; ``stages``/``heads`` keep only those (shared stages have
    no head and are kept by name alone). ``raw`` leaves matrices as numpy arrays, for a
    writer that serializes them itself (orjson)."""

    if heads is not None and len(set(heads)) < trace.model.heads:
        trace = trace.only_heads(sorted(set(heads)))  # as --head cuts it: no concat, WO
    traced = trace.traced_heads

    def kept(stage: Stage) -> bool:
        return stages is None or stage.name in stages

    cut = trace.is_cut
    low = trace.precision
    stage_dicts = [stage_to_dict(stage, raw=raw) for stage in trace.stages if kept(stage)]
    if low is not None:  # run --dtype: each stage's error, and inf and NaN as strings
        stage_dicts = [_low_stage(d, stage, low)
                       for d, stage in zip(stage_dicts, [s for s in trace.stages if kept(s)],
                                           strict=True)]  # fmt: skip
    return {
        "schema": SCHEMA_ID,
        "model": model_to_dict(trace.model),
        **({"precision": precision_to_dict(low)} if low is not None else {}),
        # only where some heads were left out (--head, --heads): which ones are here
        **({"heads_traced": traced} if cut else {}),
        "tokens": list(trace.tokens),
        "context_tokens": list(trace.context_tokens) if trace.context_tokens else None,
        "stages": stage_dicts,
        "weights": [matrix_to_dict(weight, raw=raw) for weight in trace.weights]
        if stages is None
        else [],
    }


def precision_to_dict(low: LowPrecision) -> dict[str, Any]:
    """``precision``: the dtype and rule a --dtype trace was computed by, and its first
    overflow (docs/kernels.md, "JSON")."""
    first = low.overflow
    return {
        "dtype": low.dtype,
        "softmax_dtype": low.softmax_dtype,
        "accumulate": low.accumulate,
        "rule": low.rule,
        "first_overflow": None if first is None else {
            "stage": first.stage, "head": first.head, "explanation": first.sentence},
    }  # fmt: skip


def _low_stage(data: dict[str, Any], stage: Stage, low: LowPrecision) -> dict[str, Any]:
    """A --dtype stage: its cells with ``"inf"``/``"nan"`` (null stays −∞), its error."""
    import numpy as np

    if not np.isfinite(stage.data[~np.isneginf(stage.data)]).all():
        data["data"] = [[_low_cell(x) for x in row] for row in stage.data.tolist()]
    error = low.error_of(stage.name, stage.head)
    if error is not None:
        data["error"] = {"max_abs": error.max_abs, "max_rel": error.max_rel,
                         "inf": error.inf, "nan": error.nan}  # fmt: skip
    return data


def _low_cell(value: float) -> float | str | None:
    """A --dtype cell: the float, null for −∞, ``"inf"`` for +∞, ``"nan"`` for NaN."""
    if math.isnan(value):
        return "nan"
    if value == math.inf:
        return "inf"
    return _cell(value)


def matrix_to_dict(matrix: Stage, *, raw: bool = False) -> dict[str, Any]:
    """A learned matrix (its slice for a head): name, head, kv_head, shape, labels, data."""
    data = stage_to_dict(matrix, raw=raw)
    return {key: data[key] for key in ("name", "head", "kv_head", "shape", "rows", "cols", "data")}


def stage_to_dict(stage: Stage, *, raw: bool = False) -> dict[str, Any]:
    """A stage as JSON-ready data; ``raw`` keeps the matrix an array, for orjson."""
    data = _c_ordered(stage.data) if raw else [[_cell(x) for x in row]
                                                for row in stage.data.tolist()]  # fmt: skip
    return {
        "name": stage.name,
        "head": stage.head,
        "kv_head": stage.kv_head,
        "formula": stage.formula,
        "shape": list(stage.shape),
        "rows": list(stage.rows),
        "cols": list(stage.cols),
        "data": data,
    }


def _c_ordered(data: Matrix) -> Matrix:
    """``data``, or a C-ordered copy of it: orjson writes C-ordered arrays only (a cut
    column slice, or a transposed view, is not)."""
    return data if data.flags.c_contiguous else data.copy(order="C")


def _cell(value: float) -> float | None:
    """A JSON cell: the float itself, or null for a masked (−∞) cell."""
    return None if value == -math.inf else value


def dump_bytes(
    trace: Trace, *, stages: Sequence[str] | None = None, heads: Sequence[int] | None = None
) -> bytes:
    """The whole trace (or the chosen stages and heads) as one compact JSON document, in
    UTF-8 bytes for writing straight to a binary stream (``jq .`` pretty-prints it).

    orjson writes the matrices straight from numpy, several times faster than json on
    lists of floats for big traces; json stays as a fallback where orjson is missing.
    Masked cells (−∞) are null either way, and every number reads back to the same
    float64.
    """
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency; kept for odd platforms
        return plain_dumps(trace_to_dict(trace, stages=stages, heads=heads)).encode()
    document = trace_to_dict(trace, stages=stages, heads=heads, raw=True)
    return orjson.dumps(document, option=orjson.OPT_SERIALIZE_NUMPY)


def schema_text() -> str:
    """The JSON Schema document for :data:`SCHEMA_ID`, as shipped in the package."""
    return (Path(__file__).parent.parent / "schema" / SCHEMA_FILE).read_text(encoding="utf-8")


WALK_SCHEMA_ID = "attntrace/softmax/v1"


def walk_to_dict(steps: SoftmaxWalk) -> dict[str, Any]:
    """The softmax walkthrough's numbers; the naive ones are null where float64 overflows."""

    def finite(values: tuple[float, ...]) -> list[float | None]:
        return [v if math.isfinite(v) else None for v in values]

    return {
        "schema": WALK_SCHEMA_ID,
        "values": list(steps.values),
        "max": steps.max,
        "shifted": list(steps.shifted),
        "exp_shifted": list(steps.exp_shifted),
        "sum_exp_shifted": steps.sum_exp_shifted,
        "weights": list(steps.weights),
        "percent": [100 * w for w in steps.weights],
        "winner": steps.winner,
        "naive": {
            "exp": finite(steps.naive_exp),
            "sum": steps.naive_sum if math.isfinite(steps.naive_sum) else None,
            "weights": finite(steps.naive_weights),
            "overflows": steps.overflows,
            "underflows": steps.underflows,
        },
    }


def walk_dumps(steps: SoftmaxWalk) -> str:
    document = walk_to_dict(steps) if steps.dtype == "float64" else walk_in_dtype_to_dict(steps)
    return json.dumps(document, allow_nan=False)


def _held(value: float) -> float | str | None:
    """A stable-way value under a narrow dtype, as the trace document writes one: the
    number, ``"inf"``, ``"nan"``, or ``null`` for −∞ (only a score past the dtype's
    largest reaches these)."""
    if math.isnan(value):
        return "nan"
    if value == math.inf:
        return "inf"
    return None if value == -math.inf else value


def walk_in_dtype_to_dict(steps: SoftmaxWalk) -> dict[str, Any]:
    """``softmax --dtype D --json``: float64's document with D's values (the float64
    numbers they equal), plus ``dtype`` and ``overflow`` (the first value that left D's
    range, with the explaining sentence's numbers, or null)."""
    document = walk_to_dict(steps)
    for key in ("values", "shifted", "exp_shifted", "weights", "percent"):
        document[key] = [_held(v) for v in document[key]]
    for key in ("max", "sum_exp_shifted"):
        document[key] = _held(document[key])
    document["winner"] = steps.winner if not steps.stable_fails else None
    found = steps.overflow
    document["dtype"] = steps.dtype
    document["overflow"] = (
        None
        if found is None
        else {
            "kind": found.kind,
            "index": None if found.index < 0 else found.index,
            "value": _held(found.value),
            "exact": _held(found.exact),
            "largest": found.largest,
        }
    )
    return document


def online_to_dict(result: OnlineSoftmax) -> dict[str, Any]:
    """``softmax --online --json``: the row and the one-pass softmax's every step (−∞,
    the first ``m_old``, is null), its weights beside the two-pass ones."""

    def number(value: float) -> float | None:
        return None if value == -math.inf else value

    return {
        "schema": WALK_SCHEMA_ID,
        "values": list(result.values),
        "online": {
            "steps": [
                {
                    "x": step.x,
                    "m_old": number(step.m_old),
                    "m_new": number(step.m_new),
                    "d_old": step.d_old,
                    "d_new": step.d_new,
                    "rescale": step.rescale,
                }
                for step in result.steps
            ],
            "max": result.max,
            "sum": result.sum,
            "weights": list(result.weights),
            "two_pass_weights": list(result.two_pass_weights),
            "max_difference": result.max_difference,
        },
    }


def online_dumps(result: OnlineSoftmax) -> str:
    return json.dumps(online_to_dict(result), allow_nan=False)


DECODE_SCHEMA_ID = "attntrace/decode/v1"
KV_MEMORY_SCHEMA_ID = "attntrace/kv-cache/v1"
MODELS_SCHEMA_ID = "attntrace/models/v1"
HEADS_SCHEMA_ID = "attntrace/heads/v1"


def model_to_dict(model: ModelInfo) -> dict[str, Any]:
    """The model's shape, as the ``model`` object of every JSON document."""
    return {
        "name": model.name,
        "d_model": model.d_model,
        "d_k": model.d_k,
        "d_v": model.d_v,
        "heads": model.heads,
        "kv_heads": model.kv_heads,
        "causal": model.causal,
        "positions": model.positions,
        **({"rope_base": model.rope_base} if model.rope_base is not None else {}),
        **({"rope_pairing": model.rope_pairing} if model.rope_pairing is not None else {}),
        **variants_to_dict(model),
    }


def variants_to_dict(model: ModelInfo) -> dict[str, Any]:
    """The variant keys of the ``model`` object (docs/variants.md, "JSON"): only those of
    the options that are on, so a trace without them is what it was before they existed."""
    v = model.variants
    out: dict[str, Any] = {}
    if v.window is not None:
        out["window"] = v.window
    if v.sinks:
        out["sinks"] = v.sinks
    if model.positions == "alibi":
        out["alibi_slopes"] = [float(m) for m in v.slopes(model.heads)]
    if v.qk_norm:
        out["qk_norm"] = {
            "eps": float(v.qk_norm_eps),
            "q_norm": None if v.q_norm is None else v.q_norm.tolist(),
            "k_norm": None if v.k_norm is None else v.k_norm.tolist(),
        }
    if v.softcap is not None:
        out["softcap"] = float(v.softcap)
    sinks = v.sink_logits(model.heads)
    if sinks is not None:
        out["sink_logits"] = [float(s) for s in sinks]
    return out


def decode_to_dict(run: Decode) -> dict[str, Any]:
    """Every decode step's numbers, the comparison with full causal attention, the costs.

    Under a low-precision dtype (docs/kernels.md "decode --dtype D"): a top-level
    ``precision``, each step's ``error`` (its heads' output against float64's decode) and
    ``projected_error``, and cells written as the float64 numbers the dtype's values
    equal (``"inf"``, ``"nan"`` and ``null`` for −∞ where they overflowed). A float64
    document is as it always was."""
    low = not run.cast.exact

    def cells(matrix: Matrix) -> Any:
        return _lowp_cells(matrix) if low else matrix.tolist()

    def extra(index: int) -> dict[str, Any]:
        if not low:
            return {}
        errors = run.errors[index]
        return {"error": _stage_error(errors.output),
                "projected_error": None if errors.projected is None
                else _stage_error(errors.projected)}  # fmt: skip

    return {
        "schema": DECODE_SCHEMA_ID,
        "model": model_to_dict(run.full.model),
        **({"precision": _precision(run)} if low else {}),
        "tokens": list(run.tokens),
        "steps": [
            {
                "t": step.t,
                "token": step.token,
                "q": cells(step.q),
                "k": cells(step.k),
                "v": cells(step.v),
                "cache_length": len(step.positions) if step.positions else step.t + 1,
                "cache_positions": list(step.positions or range(step.t + 1)),
                "dropped": step.dropped,
                "scores": cells(step.scores),
                "scaled": cells(step.scaled),
                "weights": cells(step.weights),
                **{
                    name: cells(getattr(step, name))
                    for name in ("biased", "capped", "sink")
                    if getattr(step, name) is not None
                },
                "output": cells(step.output),
                "projected": None if step.projected is None else cells(step.projected),
                "multiply_adds": {
                    "cached": step.costs.cached,
                    "recomputed": step.costs.recomputed,
                },
                "cache_bytes": step.cache_bytes,
                **extra(index),
            }
            for index, step in enumerate(run.steps)
        ],
        "comparison": {
            "max_abs_delta": run.max_delta,
            "rounding_bound": run.bound,
            "matches": run.matches,
            **({"differing_cells": run.differing} if low else {}),
        },
        "totals": {"cached": run.total_cached, "recomputed": run.total_recomputed},
    }


def _precision(run: Decode) -> dict[str, Any]:
    """decode's ``precision``: the cast, its rule, the cache's bytes a value, and the
    error of every decoded output against float64's decode."""
    cast, error = run.cast, run.error
    return {
        "dtype": cast.dtype,
        "softmax_dtype": cast.softmax_dtype,
        "accumulate": cast.accumulate,
        "rule": cast.rule,
        "bytes_per_value": cast.storage_bytes,
        "error": None if error is None else _stage_error(error),
        "first_overflow": _first_overflow(run),
    }


def _first_overflow(run: Decode) -> dict[str, Any] | None:
    """Where decode first holds a new ±inf or NaN (the screens' explained line), or None."""
    from attntrace.decode.dtype import first_overflow

    found = first_overflow(run)
    if found is None:
        return None
    return {"t": found.t, "stage": found.stage, "row": found.row, "col": found.col,
            "value": _low_cell(found.value), "exact": _low_cell(found.exact)}  # fmt: skip


def _stage_error(error: StageError) -> dict[str, Any]:
    return {"max_abs": error.max_abs, "max_rel": error.max_rel, "inf": error.inf,
            "nan": error.nan}  # fmt: skip


def _lowp_cells(matrix: Matrix) -> Any:
    """A low-precision matrix's cells as JSON has them (:func:`_low_cell`), nested."""

    def nested(values: Any) -> Any:
        return [nested(v) for v in values] if isinstance(values, list) else _low_cell(values)

    return nested(matrix.tolist())


def kv_memory_to_dict(
    name: str, shape: Shape, variants: list[Variant], tokens: int, batch: int, dtype: str
) -> dict[str, Any]:
    from attntrace.decode.kv_memory import BYTES_PER_VALUE, human_bytes

    return {
        "schema": KV_MEMORY_SCHEMA_ID,
        "model": name,
        "shape": {
            "layers": shape.layers,
            "heads": shape.heads,
            "kv_heads": shape.kv_heads,
            "head_dim": shape.head_dim,
            "d_model": shape.d_model,
            "attention": shape.attention,
            **_window_shape(shape),
        },
        "tokens": tokens,
        **_window_parts(shape, tokens, batch, dtype),
        "batch": batch,
        "dtype": dtype,
        "bytes_per_value": BYTES_PER_VALUE[dtype],
        "variants": [
            {
                "label": v.label,
                "kv_heads": v.kv_heads,
                "bytes": v.bytes,
                "human": human_bytes(v.bytes),
                "this_model": v.is_model,  # with 1 query head, MHA and MQA both
            }
            for v in variants
        ],
    }


def plain_dumps(document: Any) -> str:
    """Compact JSON, as ``run --json`` writes it."""
    return json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _window_shape(shape: Shape) -> dict[str, Any]:
    """A windowed shape's ``window`` and ``local_layers`` (absent without a window)."""
    if shape.window is None:
        return {}
    return {"window": shape.window, "local_layers": shape.windowed_layers}


def _window_parts(shape: Shape, tokens: int, batch: int, dtype: str) -> dict[str, Any]:
    """kv-cache's ``window`` object: the model's local and global parts (absent without
    a window, so a document reads as before)."""
    from attntrace.decode.kv_memory import window_parts

    parts = window_parts(shape, tokens, batch, dtype)
    if parts is None:
        return {}
    return {"window": {"tokens": shape.window, "local_layers": parts.local_layers,
                       "tokens_per_local_layer": parts.held, "local_bytes": parts.local_bytes,
                       "global_layers": parts.global_layers,
                       "global_bytes": parts.global_bytes, "bytes": parts.total}}  # fmt: skip


def presets_to_dict() -> dict[str, Any]:
    """``kv-cache --json`` without a model: every preset's shape."""
    from attntrace.decode.kv_memory import PRESETS

    return {
        "schema": "attntrace/kv-cache-presets/v1",
        "presets": [
            {"name": name, "layers": shape.layers, "heads": shape.heads,
             "kv_heads": shape.kv_heads, "head_dim": shape.head_dim, "d_model": shape.d_model,
             "context": shape.context, "attention": shape.attention,
             **_window_shape(shape)}
            for name, shape in PRESETS.items()
        ],
    }  # fmt: skip


def models_to_dict(catalog: Sequence[RealModel]) -> dict[str, Any]:
    """`attntrace models --json`: each real model's shapes, and whether it is installed."""
    return {
        "schema": MODELS_SCHEMA_ID,
        "models": [
            {
                "name": m.name,
                "title": m.title,
                "architecture": m.architecture,
                "layers": m.layers,
                "heads": m.heads,
                "kv_heads": m.kv_heads,
                "d_model": m.d_model,
                "head_dim": m.head_dim,
                "vocabulary": m.vocabulary,
                "positions": m.positions,
                "causal": m.causal,
                "license": m.license,
                "installed": m.installed,
                "install": m.install,
            }
            for m in catalog
        ],
    }


def ranking_to_dict(ranking: HeadRanking) -> dict[str, Any]:
    """`attntrace heads --json`: every layer × head, heaviest first."""
    return {
        "schema": HEADS_SCHEMA_ID,
        "model": ranking.model.name,
        "tokens": list(ranking.tokens),
        "query": ranking.query,
        "key": ranking.key,
        "heads": [
            {"layer": r.layer, "head": r.head, "weight": r.weight, "top_key": r.top_key}
            for r in ranking.rows
        ],
    }


CHECK_SCHEMA_ID = "attntrace/check/v1"


def check_to_dict(report: CheckReport, source: str | None = None) -> dict[str, Any]:
    """`check`'s report (docs/check.md): each stage and head compared, the first
    divergence and the diagnosis. A non-finite number is the string ``NaN``,
    ``Infinity`` or ``-Infinity``: a found NaN is evidence, not a missing value."""
    first, diagnosis = report.first_divergent, report.diagnosis
    return {
        "schema": CHECK_SCHEMA_ID,
        "source": source,
        "model": model_to_dict(report.model),
        "tokens": list(report.tokens),
        "context_tokens": list(report.context_tokens) if report.context_tokens else None,
        "head": report.head,
        "ok": report.ok,
        "stages": [
            {
                "name": r.name,
                "head": r.head,
                "kv_head": r.kv_head,
                "status": r.status,
                "given_as": r.given_as,
                "max_abs_delta": r.max_abs_delta,
                "cells_differing": r.cells_differing,
                "cells": r.cells,
                "cells_nonfinite": r.cells_nonfinite,
                "tolerance": None
                if r.tolerance is None
                else {
                    "dtype": r.tolerance.dtype,
                    "rtol": r.tolerance.rtol,
                    "atol": r.tolerance.atol,
                },
                "shape_found": None if r.shape_found is None else list(r.shape_found),
                "shape_expected": r.shape_expected,
            }
            for r in report.results
        ],
        "first_divergent": None
        if first is None
        else {
            "stage": first.stage,
            "head": first.head,
            "kv_head": first.kv_head,
            "given_as": first.given_as,
            "row": first.row,
            "column": first.column,
            "row_label": first.row_label,
            "column_label": first.column_label,
            "expected": _number(first.expected),
            "found": _number(first.found),
            "shape_found": None if first.shape_found is None else list(first.shape_found),
            "shape_expected": first.shape_expected,
            "region": None
            if first.region is None
            else {
                "rows": list(first.region.rows),
                "cols": list(first.region.cols),
                "expected": [[_number(x) for x in row] for row in first.region.expected.tolist()],
                "found": [[_number(x) for x in row] for row in first.region.found.tolist()],
                "wrong": first.region.wrong.tolist(),
            },
        },
        "diagnosis": None
        if diagnosis is None
        else {"cause": diagnosis.cause, "message": diagnosis.message, "also": list(diagnosis.also)},
    }


def _number(value: float | None) -> float | str | None:
    """A finite number as is; NaN and ±∞ spelled as JavaScript spells them."""
    if value is None or math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


DIFF_SCHEMA_ID = "attntrace/diff/v1"


def diff_to_dict(
    diff: TraceDiff, sources: tuple[str, str], edits: Sequence[str] = ()
) -> dict[str, Any]:
    """`attntrace diff --json`: each stage compared, the first changed one, what else
    differs. ``sources`` names A and B (file names, or the model traced); ``edits`` are
    the ``--set`` edits B was traced with."""
    from attntrace.check.diff import ATOL, RTOL

    def side(trace: Trace, source: str, made_with: Sequence[str]) -> dict[str, Any]:
        context = trace.context_tokens
        return {"source": source, "edits": list(made_with), "model": model_to_dict(trace.model),
                "tokens": list(trace.tokens),
                "context_tokens": None if context is None else list(context)}  # fmt: skip

    first = diff.first_changed
    return {
        "schema": DIFF_SCHEMA_ID,
        "changed": diff.changed,
        "tolerance": {"rtol": RTOL, "atol": ATOL},
        "a": side(diff.a, sources[0], ()),
        "b": side(diff.b, sources[1], edits),
        "model_changes": [{"field": c.field, "a": c.a, "b": c.b} for c in diff.model_changes],
        "tokens_differ": diff.tokens_differ,
        "context_differs": diff.context_differs,
        "stages": [stage_diff_to_dict(s) for s in diff.stages],
        "weights": [stage_diff_to_dict(w) for w in diff.weights] if diff.weights_compared else None,
        "first_changed": None if first is None else stage_diff_to_dict(first),
    }


def stage_diff_to_dict(stage: StageDiff) -> dict[str, Any]:
    """One stage compared; |Δ| and values that are not finite numbers are null."""
    return {
        "name": stage.name,
        "head": stage.head,
        "kv_head": stage.kv_head,
        "status": stage.status,
        "shape_a": None if stage.a is None else list(stage.a.shape),
        "shape_b": None if stage.b is None else list(stage.b.shape),
        "cells": stage.cells,
        "changed_cells": stage.changed_cells,
        "max_abs_delta": _finite(stage.max_abs_delta),
        "notes": list(stage.notes),
        "largest": None if stage.largest is None else _cell_to_dict(stage.largest),
    }


def _cell_to_dict(cell: Cell) -> dict[str, Any]:
    return {"row": cell.row, "column": cell.col, "row_label": cell.row_label,
            "column_label": cell.col_label, "a": _finite(cell.a), "b": _finite(cell.b),
            "delta": _finite(cell.delta)}  # fmt: skip


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
