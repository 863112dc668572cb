"""Trace -> JSON (docs/json.md, the trace document). Plain dicts, never through the human renderer.

Values are full float64: ``json`` writes ``repr(float)``, which reads back exactly.
Masked cells (−∞ before softmax) are ``null``. The document's shape is described by the
JSON Schema shipped as ``attntrace/schema/trace-v1.schema.json``; ``replay`` reads it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attntrace.kernel.documents import (
    LowCells,
    StreamedJSON,
    c_ordered,
    cell,
    model_to_dict,
    plain_dumps,
    texts,
)
from attntrace.visible import well_formed

if TYPE_CHECKING:
    from attntrace.kernel.precision_record import LowPrecision
    from attntrace.kernel.trace import Stage, Trace


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
    return _document(trace, stages, heads, raw=raw, lazy=False)


def _document(
    trace: Trace,
    stages: Sequence[str] | None,
    heads: Sequence[int] | None,
    *,
    raw: bool,
    lazy: bool,
) -> dict[str, Any]:
    """:func:`trace_to_dict`; ``lazy`` leaves a --dtype stage's cells to
    :class:`LowCells`, to be made as they are written."""
    if heads is not None and len(set(heads)) < trace.model.heads:
        trace = trace.only_heads(sorted(set(heads)))  # as --head cuts it: no concat, WO
    traced = trace.traced_heads

    def kept(stage: Stage) -> bool:
        return stages is None or stage.name in stages

    cut = trace.is_cut
    low = trace.precision
    stage_dicts = [stage_to_dict(stage, raw=raw) for stage in trace.stages if kept(stage)]
    if low is not None:  # run --dtype: each stage's error, and inf and NaN as strings
        stage_dicts = [
            _low_stage(d, stage, low, lazy=lazy)
            for d, stage in zip(stage_dicts, [s for s in trace.stages if kept(s)], strict=True)
        ]
    return {
        "schema": SCHEMA_ID,
        "model": model_to_dict(trace.model),
        **({"precision": precision_to_dict(low)} if low is not None else {}),
        # only where some heads were left out (--head, --heads): which ones are here
        **({"heads_traced": traced} if cut else {}),
        "tokens": texts(trace.tokens),
        "context_tokens": texts(trace.context_tokens) if trace.context_tokens else None,
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
        "first_overflow": None
        if first is None
        else {"stage": first.stage, "head": first.head, "explanation": well_formed(first.sentence)},
    }


def _low_stage(
    data: dict[str, Any], stage: Stage, low: LowPrecision, *, lazy: bool
) -> dict[str, Any]:
    """A --dtype stage: its cells with ``"inf"``/``"nan"`` (null stays −∞), its error."""
    import numpy as np

    if not np.isfinite(stage.data[~np.isneginf(stage.data)]).all():
        cells = LowCells(stage.data)
        data["data"] = cells if lazy else cells.cells()
    error = low.error_of(stage.name, stage.head)
    if error is not None:
        data["error"] = {
            "max_abs": error.max_abs,
            "max_rel": error.max_rel,
            "inf": error.inf,
            "nan": error.nan,
        }
    return data


def matrix_to_dict(matrix: Stage, *, raw: bool = False) -> dict[str, Any]:
    """A learned matrix (its slice for a head): name, head, kv_head, shape, labels, data."""
    data = stage_to_dict(matrix, raw=raw)
    return {key: data[key] for key in ("name", "head", "kv_head", "shape", "rows", "cols", "data")}


def stage_to_dict(stage: Stage, *, raw: bool = False) -> dict[str, Any]:
    """A stage as JSON-ready data; ``raw`` keeps the matrix an array, for orjson."""
    data = c_ordered(stage.data) if raw else [[cell(x) for x in row] for row in stage.data.tolist()]
    return {
        "name": stage.name,
        "head": stage.head,
        "kv_head": stage.kv_head,
        "formula": stage.formula,
        "shape": list(stage.shape),
        "rows": texts(stage.rows),
        "cols": texts(stage.cols),
        "data": data,
    }


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


def dump_stream(
    trace: Trace, *, stages: Sequence[str] | None = None, heads: Sequence[int] | None = None
) -> StreamedJSON:
    """What :func:`dump_bytes` writes, byte for byte, as pieces to write one after another:
    the JSON text is never held whole beside the trace (``run --json``)."""
    return StreamedJSON(_document(trace, stages, heads, raw=True, lazy=True))


def schema_text() -> str:
    """The JSON Schema document for :data:`SCHEMA_ID`, as shipped in the package."""
    return (Path(__file__).parent.parent / "schema" / SCHEMA_FILE).read_text(encoding="utf-8")
