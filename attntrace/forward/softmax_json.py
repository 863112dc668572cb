"""``softmax --json``: one row's softmax walked the naive way and the stable way
(attntrace/softmax/v1), in float64 or in a dtype."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attntrace.forward.softmax_walk import SoftmaxWalk


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
