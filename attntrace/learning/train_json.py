"""A training run -> ``attntrace/train/v1`` (docs/json.md, ``train --json``).

Plain data, every number full float64 (orjson writes the shortest text that reads back
to the same float). The schema is ``attntrace/schema/train-v1.schema.json``. The bytes
are written from the history's arrays as they are (orjson reads numpy), so a long run
is never held as Python floats.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attntrace.kernel.documents import model_to_dict, optional_texts, texts
from attntrace.learning.grad_json import loss_to_dict
from attntrace.learning.train import Training

SCHEMA_ID = "attntrace/train/v1"


def _document(training: Training) -> dict[str, Any]:
    """The document, the history's arrays left as arrays (orjson writes them from numpy,
    so a long run is never held as Python floats)."""
    trace = training.before
    cell = training.loss.cell
    return {
        "schema": SCHEMA_ID,
        "model": model_to_dict(trace.model),
        "tokens": texts(trace.tokens),
        "context_tokens": optional_texts(trace.context_tokens),
        "loss": loss_to_dict(training.loss, trace, value=False),
        "settings": {
            "train": list(training.names),
            "steps": training.steps,
            "lr": training.lr,
            "init": training.init,
            "seed": training.seed,
        },
        "history": [
            {
                "step": step,
                "loss": float(training.losses[step]),
                "to_weights": training.weights[step] if cell is not None else None,
                "rows": None if cell is None or training.rows is None else training.rows[step],
            }
            for step in range(training.steps + 1)
        ],
        "before": {c.name: c.before.tolist() for c in training.changes},
        "after": {c.name: c.after.tolist() for c in training.changes},
        "changes": [
            {"name": c.name, "largest": c.largest, "at": list(c.where), "delta": c.delta.tolist()}
            for c in training.changes
        ],
    }


def training_bytes(training: Training) -> bytes:
    """The document as compact UTF-8 JSON (one line, as every document)."""
    import orjson

    return orjson.dumps(_document(training), option=orjson.OPT_SERIALIZE_NUMPY, default=_listed)


def _listed(value: Any) -> Any:
    """What orjson cannot write itself (an array that is not C-contiguous): as a list."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(type(value).__name__)
