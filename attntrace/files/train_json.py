"""A training run -> ``attntrace/train/v1`` (docs/json.md, ``train --json``).

Plain data, every number full float64 (orjson writes the shortest text that reads back
to the same float). The schema is ``attntrace/schema/train-v1.schema.json``.
"""

from __future__ import annotations

from typing import Any

from attntrace.core.train import Training
from attntrace.files.serialize import model_to_dict

SCHEMA_ID = "attntrace/train/v1"


def training_to_dict(training: Training) -> dict[str, Any]:
    """The settings, the loss, the history (one entry per step, 0 first), the trained
    matrices before and after, and their changes."""
    trace = training.before
    loss = training.loss
    keys = trace.tokens if trace.context_tokens is None else trace.context_tokens

    def token(index: int, tokens: tuple[str, ...]) -> dict[str, Any]:
        return {"index": index, "token": tokens[index]}

    cell = loss.cell
    return {
        "schema": SCHEMA_ID,
        "model": model_to_dict(trace.model),
        "tokens": list(trace.tokens),
        "context_tokens": None if trace.context_tokens is None else list(trace.context_tokens),
        "loss": {
            "kind": loss.loss.name,
            "formula": loss.formula,
            "from": None if cell is None else token(cell[0], trace.tokens),
            "to": None if cell is None else token(cell[1], keys),
            "heads": list(loss.heads),
        },
        "settings": {"train": list(training.names), "steps": training.steps,
                     "lr": training.lr, "init": training.init, "seed": training.seed},
        "history": [
            {"step": r.step, "loss": r.loss,
             "to_weights": list(r.to_weights) if cell is not None else None,
             "rows": [list(row) for row in r.rows] if cell is not None else None}
            for r in training.history
        ],
        "before": {c.name: c.before.tolist() for c in training.changes},
        "after": {c.name: c.after.tolist() for c in training.changes},
        "changes": [
            {"name": c.name, "largest": c.largest, "at": list(c.where),
             "delta": c.delta.tolist()}
            for c in training.changes
        ],
    }  # fmt: skip


def training_bytes(training: Training) -> bytes:
    """The document as compact UTF-8 JSON (one line, as every document)."""
    import orjson

    return orjson.dumps(training_to_dict(training))
