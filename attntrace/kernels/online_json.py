"""``softmax --online --json``: the one-pass softmax's every step (attntrace/softmax/v1)."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from attntrace.forward.softmax_json import WALK_SCHEMA_ID

if TYPE_CHECKING:
    from attntrace.kernels.online_softmax import OnlineSoftmax


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
