"""What every JSON document writes alike: the model object, cells, compact JSON.

The ``model`` object (its shape and variant keys) heads the trace, decode, check and diff
documents; a masked cell (−∞) is ``null`` and a --dtype cell's ``inf`` and ``nan`` are
strings in all of them. Each document itself is written beside its capability
(``forward/trace_json``, ``decode/decode_json``, ``checking/check_json``, ...).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from attntrace.visible import well_formed

if TYPE_CHECKING:
    from attntrace.kernel.casting import StageError
    from attntrace.kernel.ops import Matrix
    from attntrace.kernel.trace import ModelInfo


def model_to_dict(model: ModelInfo) -> dict[str, Any]:
    """The model's shape, as the ``model`` object of every JSON document."""
    return {
        "name": well_formed(model.name),
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


def texts(values: Iterable[str]) -> list[str]:
    """Tokens, labels, names as a document writes them: each lone surrogate (a JSON
    model's ``"\\udcff"``, a sentence byte that is not UTF-8) as U+FFFD, since no UTF-8
    document can hold one (docs/json.md, "What every document shares")."""
    return [well_formed(value) for value in values]


def optional_texts(values: Iterable[str] | None) -> list[str] | None:
    """:func:`texts`, or None (a trace's ``context_tokens`` without cross-attention)."""
    return None if values is None else texts(values)


def plain_dumps(document: Any) -> str:
    """Compact JSON, as ``run --json`` writes it."""
    return json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def ascii_json(data: bytes) -> bytes:
    """A UTF-8 JSON document in ASCII: each other character (only strings hold one) as its
    ``\\uXXXX`` escape, a pair of them past U+FFFF, as ``json.dumps`` escapes by default.
    It reads back to the same document; written where stdout's encoding is not UTF-8
    (docs/json.md). An ASCII document is returned as it is; else numpy finds the bytes
    past 0x7f (a regular expression took 5 s over a 160 MB trace whose only non-ASCII was
    one token) and only their runs, whole characters each, are rewritten."""
    if data.isascii():
        return data
    import numpy as np

    codes = np.frombuffer(data, dtype=np.uint8)
    high = np.concatenate(
        [
            np.flatnonzero(codes[start : start + _CHUNK] >= 0x80) + start
            for start in range(0, len(codes), _CHUNK)
        ]
    )
    breaks = np.flatnonzero(np.diff(high) != 1)
    firsts = high[np.concatenate(([0], breaks + 1))].tolist()
    ends = (high[np.concatenate((breaks, [high.size - 1]))] + 1).tolist()
    pieces: list[bytes] = []
    done = 0
    for first, end in zip(firsts, ends, strict=True):
        pieces += [data[done:first], _escapes(data[first:end])]
        done = end
    pieces.append(data[done:])
    return b"".join(pieces)


_CHUNK = 1 << 23  # bytes compared at a time: a bool array of 8 MiB, whatever the document


def _escapes(run: bytes) -> bytes:
    """A run of non-ASCII UTF-8 (whole characters: UTF-8 never puts an ASCII byte inside
    one) as JSON's escapes of its UTF-16 code units."""
    units = run.decode("utf-8").encode("utf-16-be")
    return "".join(
        f"\\u{int.from_bytes(units[i : i + 2], 'big'):04x}" for i in range(0, len(units), 2)
    ).encode("ascii")


def cell(value: float) -> float | None:
    """A JSON cell: the float itself, or null for a masked (−∞) cell."""
    return None if value == -math.inf else value


def low_cell(value: float) -> float | str | None:
    """A --dtype cell: the float, null for −∞, ``"inf"`` for +∞, ``"nan"`` for NaN."""
    if math.isnan(value):
        return "nan"
    if value == math.inf:
        return "inf"
    return cell(value)


def c_ordered(data: Matrix) -> Matrix:
    """``data``, or a C-ordered copy of it: orjson writes C-ordered arrays only (a cut
    column slice, or a transposed view, is not)."""
    return data if data.flags.c_contiguous else data.copy(order="C")


def stage_error_to_dict(error: StageError) -> dict[str, Any]:
    return {"max_abs": error.max_abs, "max_rel": error.max_rel, "inf": error.inf, "nan": error.nan}
