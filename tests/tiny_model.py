"""The tiny model the Python API tests build, and how they read a trace and an error.

Three tokens of two numbers, weights chosen by hand so that nothing is symmetric: the
same model as a model file (:data:`MODEL_FILE`), as Python lists and as a
:class:`~attntrace.ModelSpec` of numpy arrays (:func:`tiny_spec`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from attntrace import ModelSpec, Trace

MODEL_FILE = """\
name: tiny
sentence: a b c
embeddings:
  a: [1, 0.5]
  b: [-0.25, 2]
  c: [0.75, -1]
weights:
  WQ: [[1, 2], [0.5, -1]]
  WK: [[0, 1], [1, 0.25]]
  WV: [[2, 0], [1, 3]]
"""
EMBEDDINGS: dict[str, list[float]] = {"a": [1.0, 0.5], "b": [-0.25, 2.0], "c": [0.75, -1.0]}
WQ: list[list[float]] = [[1.0, 2.0], [0.5, -1.0]]
WK: list[list[float]] = [[0.0, 1.0], [1.0, 0.25]]
WV: list[list[float]] = [[2.0, 0.0], [1.0, 3.0]]


def tiny_spec(**changes: Any) -> ModelSpec:
    """The tiny model, built from Python with numpy arrays (``changes`` replace fields)."""
    fields: dict[str, Any] = {
        "embeddings": {t: np.array(v, dtype=float) for t, v in EMBEDDINGS.items()},
        "WQ": np.array(WQ, dtype=float),
        "WK": np.array(WK, dtype=float),
        "WV": np.array(WV, dtype=float),
    }
    return ModelSpec(**{**fields, **changes})


def arrays_of(trace: Trace) -> Iterator[tuple[str, np.ndarray[Any, Any]]]:
    """Every array ``trace`` holds (its stages, then its weights), each with a label."""
    for stage in (*trace.stages, *trace.weights):
        yield f"{stage.name} head={stage.head} kv={stage.kv_head}", stage.data


def one_line(error: BaseException) -> str:
    """``str(error)``, checked to be one non-empty line with no edge spaces."""
    text = str(error)
    assert text, "an empty message"
    assert "\n" not in text, repr(text)
    assert text.strip() == text, repr(text)
    return text
