"""``decode --json`` (attntrace/decode/v1) and ``kv-cache --json`` (attntrace/kv-cache/v1,
and the presets' list)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from attntrace.kernel.documents import (
    Streamed,
    low_cell,
    model_to_dict,
    plain_dumps,
    stage_error_to_dict,
    texts,
)
from attntrace.visible import well_formed

if TYPE_CHECKING:
    from attntrace.decode.decoder import Decode, DecodeStep
    from attntrace.decode.kv_memory import Shape, Variant
    from attntrace.kernel.ops import Matrix


DECODE_SCHEMA_ID = "attntrace/decode/v1"

KV_MEMORY_SCHEMA_ID = "attntrace/kv-cache/v1"


def decode_to_dict(run: Decode) -> dict[str, Any]:
    """Every decode step's numbers, the comparison with full causal attention, the costs.

    Under a low-precision dtype (docs/kernels.md "decode --dtype D"): a top-level
    ``precision``, each step's ``error`` (its heads' output against float64's decode) and
    ``projected_error``, and cells written as the float64 numbers the dtype's values
    equal (``"inf"``, ``"nan"`` and ``null`` for −∞ where they overflowed). A float64
    document is as it always was."""
    before, after = _around_steps(run)
    return {**before, "steps": [_step(run, index) for index in range(len(run.steps))], **after}


def decode_stream(run: Decode) -> Streamed:
    """:func:`decode_to_dict` as compact JSON (``plain_dumps``), in UTF-8, made a step at
    a time as it is written (``decode --json``): the text, and the lists of numbers it
    is made from, are never held whole. What ``plain_dumps`` would refuse (a number
    that is not finite, in a float64 decode) is refused here, before a byte."""
    import numpy as np

    before, after = _around_steps(run)
    first = plain_dumps(before)[:-1].encode() + b',"steps":['
    last = b"]," + plain_dumps(after)[1:].encode()
    low = not run.cast.exact
    for index, step in enumerate(run.steps):
        plain_dumps(_step(run, index, lambda _: None)).encode()  # all but the cells
        for matrix in () if low else _matrices(step):
            if not np.isfinite(matrix).all():
                plain_dumps(matrix.tolist())  # json's own error

    def pieces() -> Iterator[bytes]:
        yield first
        for index in range(len(run.steps)):
            yield (b"," if index else b"") + plain_dumps(_step(run, index)).encode()
        yield last

    return Streamed(pieces)


def _around_steps(run: Decode) -> tuple[dict[str, Any], dict[str, Any]]:
    """The document's fields before ``steps``, and after."""
    low = not run.cast.exact
    before = {
        "schema": DECODE_SCHEMA_ID,
        "model": model_to_dict(run.full.model),
        **({"precision": _precision(run)} if low else {}),
        "tokens": texts(run.tokens),
    }
    after = {
        "comparison": {
            "max_abs_delta": run.max_delta,
            "rounding_bound": run.bound,
            "matches": run.matches,
            **({"differing_cells": run.differing} if low else {}),
        },
        "totals": {"cached": run.total_cached, "recomputed": run.total_recomputed},
    }
    return before, after


_VARIANT_CELLS = ("biased", "capped", "sink")


def _matrices(step: DecodeStep) -> list[Matrix]:
    """The step's matrices, as its ``steps`` entry writes them."""
    named = [getattr(step, name) for name in _VARIANT_CELLS]
    kept = [step.q, step.k, step.v, step.scores, step.scaled, step.weights, step.output]
    return [*kept, *(m for m in [*named, step.projected] if m is not None)]


def _step(run: Decode, index: int, cells: Callable[[Matrix], Any] | None = None) -> dict[str, Any]:
    """Step ``index``'s entry of ``steps``; ``cells`` writes a matrix (the float64 lists,
    or a low-precision dtype's :func:`low_cell` lists, by default)."""
    low = not run.cast.exact
    if cells is None:
        cells = _lowp_cells if low else _plain_cells
    step = run.steps[index]
    extra: dict[str, Any] = {}
    if low:
        errors = run.errors[index]
        extra = {
            "error": stage_error_to_dict(errors.output),
            "projected_error": None
            if errors.projected is None
            else stage_error_to_dict(errors.projected),
        }
    return {
        "t": step.t,
        "token": well_formed(step.token),
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
            for name in _VARIANT_CELLS
            if getattr(step, name) is not None
        },
        "output": cells(step.output),
        "projected": None if step.projected is None else cells(step.projected),
        "multiply_adds": {"cached": step.costs.cached, "recomputed": step.costs.recomputed},
        "cache_bytes": step.cache_bytes,
        **extra,
    }


def _plain_cells(matrix: Matrix) -> Any:
    return matrix.tolist()


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
        "error": None if error is None else stage_error_to_dict(error),
        "first_overflow": _first_overflow(run),
    }


def _first_overflow(run: Decode) -> dict[str, Any] | None:
    """Where decode first holds a new ±inf or NaN (the screens' explained line), or None."""
    from attntrace.decode.dtype import first_overflow

    found = first_overflow(run)
    if found is None:
        return None
    return {
        "t": found.t,
        "stage": found.stage,
        "row": found.row,
        "col": found.col,
        "value": low_cell(found.value),
        "exact": low_cell(found.exact),
    }


def _lowp_cells(matrix: Matrix) -> Any:
    """A low-precision matrix's cells as JSON has them (:func:`low_cell`), nested."""

    def nested(values: Any) -> Any:
        return [nested(v) for v in values] if isinstance(values, list) else low_cell(values)

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
    return {
        "window": {
            "tokens": shape.window,
            "local_layers": parts.local_layers,
            "tokens_per_local_layer": parts.held,
            "local_bytes": parts.local_bytes,
            "global_layers": parts.global_layers,
            "global_bytes": parts.global_bytes,
            "bytes": parts.total,
        }
    }


def presets_to_dict() -> dict[str, Any]:
    """``kv-cache --json`` without a model: every preset's shape."""
    from attntrace.decode.kv_memory import PRESETS

    return {
        "schema": "attntrace/kv-cache-presets/v1",
        "presets": [
            {
                "name": name,
                "layers": shape.layers,
                "heads": shape.heads,
                "kv_heads": shape.kv_heads,
                "head_dim": shape.head_dim,
                "d_model": shape.d_model,
                "context": shape.context,
                "attention": shape.attention,
                **_window_shape(shape),
            }
            for name, shape in PRESETS.items()
        ],
    }
