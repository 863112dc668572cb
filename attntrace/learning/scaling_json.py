"""`scaling --json`: the measurement as ``attntrace/scaling/v1`` (docs/json.md).

Plain data, every figure full float64 (``json`` writes ``repr(float)``, which reads back
exactly); the shape is the shipped schema's, ``attntrace/schema/scaling-v1.schema.json``.
Its own module, not :mod:`attntrace.forward.trace_json`: it shares nothing with the trace's
documents but the writer.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attntrace.learning.scaling import Scaling, Softmaxed, WorkedRow

SCALING_SCHEMA_ID = "attntrace/scaling/v1"


def _softmaxed(figures: Softmaxed) -> dict[str, float]:
    return asdict(figures)


def _row(row: WorkedRow) -> dict[str, Any]:
    return {
        "scores": list(row.scores),
        "weights": list(row.weights),
        "largest": row.largest,
        "rest": row.rest,
        "entropy": row.entropy,
        "jacobian": [list(line) for line in row.jacobian],
        "jacobian_norm": row.jacobian_norm,
    }


def scaling_to_dict(result: Scaling) -> dict[str, Any]:
    """The settings, one entry per d_k, the uniform row's figures, the worked example."""
    from attntrace.learning.scaling import ONE_HOT

    return {
        "schema": SCALING_SCHEMA_ID,
        "settings": {
            "seed": result.seed,
            "keys": result.keys,
            "samples": result.samples,
            "max_dk": result.max_dk,
            "one_hot": ONE_HOT,
        },
        "levels": [
            {
                "d_k": level.d_k,
                "variance": level.variance,
                "variance_scaled": level.variance_scaled,
                "unscaled": _softmaxed(level.unscaled),
                "scaled": _softmaxed(level.scaled),
            }
            for level in result.levels
        ],
        "uniform": _softmaxed(result.uniform),
        "worked": {
            "d_k": result.worked.d_k,
            "scale": result.worked.scale,
            "unscaled": _row(result.worked.unscaled),
            "scaled": _row(result.worked.scaled),
        },
    }
