"""What every JSON document writes alike: the model object, cells, compact JSON.

The ``model`` object (its shape and variant keys) heads the trace, decode, check and diff
documents; a masked cell (−∞) is ``null`` and a --dtype cell's ``inf`` and ``nan`` are
strings in all of them. Each document itself is written beside its capability
(``forward/trace_json``, ``decode/decode_json``, ``checking/check_json``, ...).

A big document (a trace, a backward pass, flash's tiles) is written as it is serialized,
by :class:`StreamedJSON`: its text is never held whole beside its numbers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from itertools import chain
from typing import TYPE_CHECKING, Any

from attntrace.kernel.labels import Dims
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
        **(
            {"rope_frequencies": list(model.rope_frequencies)}
            if model.rope_frequencies is not None
            else {}
        ),
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
    document can hold one (docs/json.md, "What every document shares"). Dimension
    labels are one list for every stage that has them (a model of 2,048 heads gave each
    head's four matrices a list of 2,048 labels: 134 MB), shared: documents are read."""
    if isinstance(values, Dims):
        return _dims_listed(values)
    return [well_formed(value) for value in values]


@lru_cache(maxsize=64)
def _dims_listed(labels: Dims) -> list[str]:
    return list(labels)  # plain ASCII: nothing to replace


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


# --- Writing a big document as it is serialized -------------------------------------

JSON_PIECE_BYTES = 16 << 20
"""The most JSON text a streamed document (:class:`StreamedJSON`) holds at once: 16 MiB.
A trace's JSON is 10 to 25 bytes a float, more than the trace itself; written whole it
was held beside the trace (a 5,812 MiB peak at 9,300 tokens for a 1,980 MiB trace; 2,037
MiB streamed: docs/json.md, "Memory"). A memory estimate counts a streamed document as
``min(its size, JSON_PIECE_BYTES)``; decode's (:mod:`attntrace.decode.decode_json`) is
written a step at a time instead."""

_GATHER = 1 << 20  # small pieces are gathered up to this, so the stream is few writes
# the most a piece holds: the writer holds the last one (and what it has gathered) while
# the next is made
_HALF = (JSON_PIECE_BYTES - _GATHER) // 2
_NUMBER = 24  # the longest number orjson writes: -2.2250738585072014e-308, or "null"
_SCALARS = (str, int, float, type(None))  # bool is an int

Piece = bytes | bytearray | memoryview


class LowCells:
    """A --dtype matrix whose cells are written as :func:`low_cell` says (null for −∞,
    ``"inf"``, ``"nan"``), made a block of rows at a time as it is written rather than
    held whole as lists."""

    def __init__(self, data: Matrix) -> None:
        self.data = data

    def cells(self, start: int = 0, stop: int | None = None) -> Any:
        """Rows ``start`` to ``stop`` as nested lists of :func:`low_cell`."""

        def nested(values: Any) -> Any:
            return [nested(v) for v in values] if isinstance(values, list) else low_cell(values)

        return nested(self.data[start:stop].tolist())


def orjson_default(value: Any) -> Any:
    """orjson's ``default``: a :class:`LowCells` as its nested lists."""
    if isinstance(value, LowCells):
        return value.cells()
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def orjson_bytes(document: Any) -> bytes:
    """``document`` whole, compact, as UTF-8 (numpy arrays written straight from numpy,
    −∞ and NaN as null)."""
    import orjson

    return orjson.dumps(document, default=orjson_default, option=orjson.OPT_SERIALIZE_NUMPY)


class Streamed:
    """A document written piece by piece as ``make()`` serializes it (small pieces
    gathered up to 1 MiB, so that it is few writes). Whoever makes one has checked
    first that its pieces cannot fail, and keeps them small: a :class:`StreamedJSON`'s
    are, with what is gathered, at most :data:`JSON_PIECE_BYTES` two at a time."""

    def __init__(self, make: Callable[[], Iterator[Piece]]) -> None:
        self.make = make

    def __iter__(self) -> Iterator[Piece]:
        gathered = bytearray()
        for piece in self.make():
            if len(gathered) + len(piece) <= _GATHER:
                gathered += piece
                continue
            if gathered:
                yield gathered
                gathered = bytearray()
            if len(piece) > _GATHER:
                yield piece
            else:
                gathered += piece
        if gathered:
            yield gathered


class StreamedJSON(Streamed):
    """``document`` in pieces, byte for byte what :func:`orjson_bytes` makes of it whole.

    What can fail is found here, before a byte is written (a half-written document is
    worse than none): every string, key and integer is checked as orjson would refuse
    it; a numpy array orjson writes without fail is left to the writing, and anything
    else is serialized now, so that its error is raised now.
    """

    def __init__(self, document: Any) -> None:
        _check(document)
        self.document = document
        super().__init__(lambda: _pieces(document))


def _safe_array(value: Any) -> bool:
    import numpy as np

    if not isinstance(value, np.ndarray):
        return False
    if value.ndim == 0 or not value.flags.c_contiguous:
        return False
    import orjson

    try:  # orjson's own verdict on this dtype and byte order, whatever its version
        orjson_bytes(value[:1])
    except orjson.JSONEncodeError:
        return False
    return True


def _check(value: Any) -> None:
    """Raise what orjson would raise on ``value``, without serializing its arrays."""
    if value is None or isinstance(value, bool | float | LowCells) or _safe_array(value):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not (isinstance(key, str) and _encodes(key)):
                orjson_bytes({key: None})  # raises orjson's own error
            _check(item)
    elif isinstance(value, list | tuple):
        if all(isinstance(item, _SCALARS) for item in value):
            orjson_bytes(value)  # a list of numbers or words: faster whole, in C
            return
        for item in value:
            _check(item)
    elif not _plain(value):
        orjson_bytes(value)  # a bad one raises orjson's own error; anything else is tried


def _plain(value: Any) -> bool:
    """A string or an integer orjson writes without fail."""
    if isinstance(value, str):
        return _encodes(value)
    return isinstance(value, int) and -(2**63) <= value < 2**64


def _encodes(text: str) -> bool:
    """Whether orjson can write ``text``: not where it holds a lone surrogate."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _bound(value: Any, limit: int) -> int:
    """An upper bound of ``value``'s JSON text in bytes, counted until it passes ``limit``."""
    if isinstance(value, str):
        return 6 * len(value) + 2  # \u001f is 6 bytes for 1 code point; UTF-8 at most 4
    if value is None or isinstance(value, int | float):
        return _NUMBER
    if isinstance(value, LowCells):
        return _array_bound(value.data.shape)
    if _safe_array(value):
        return _array_bound(value.shape)
    if isinstance(value, dict):  # each key and value, with its ':' or ','
        return _bound_each(chain.from_iterable(value.items()), limit)
    if isinstance(value, list | tuple):
        return _bound_each(value, limit)
    return limit + 1  # something else: written whole, never cut


def _bound_each(items: Iterable[Any], limit: int) -> int:
    """The bound of a list (or dict) of ``items``: theirs, and a byte after each."""
    total = 2
    for item in items:
        if isinstance(item, str):  # the common cases inline: a long list is mostly these
            total += 6 * len(item) + 3
        elif item is None or isinstance(item, int | float):
            total += _NUMBER + 1
        else:
            total += _bound(item, limit) + 1
        if total > limit:
            break
    return total


def _array_bound(shape: tuple[int, ...]) -> int:
    total = _NUMBER
    for size in reversed(shape):
        total = size * (total + 1) + 2
    return total


def _pieces(value: Any) -> Iterator[Piece]:
    """``value``'s JSON in pieces of at most ``_HALF`` bytes, but for a string or a
    thing orjson alone writes (each written whole)."""
    if _bound(value, _HALF) <= _HALF:
        yield orjson_bytes(value)
    elif isinstance(value, LowCells) or _safe_array(value):
        yield from _array_pieces(value)
    elif isinstance(value, dict):
        yield b"{"
        for index, (key, item) in enumerate(value.items()):
            yield (b"," if index else b"") + orjson_bytes(key) + b":"
            yield from _pieces(item)
        yield b"}"
    elif isinstance(value, list | tuple):
        yield from _list_pieces(value)
    else:
        yield orjson_bytes(value)


def _list_pieces(items: list[Any] | tuple[Any, ...]) -> Iterator[Piece]:
    """A big list: its items by runs that fit a piece (flash's tiles, a trace's stages),
    each run written by orjson at once without its brackets; an item too big for a
    piece opened up itself."""
    yield b"["
    start = size = 0
    for index, item in enumerate(items):
        bound = _bound(item, _HALF) + 1
        if size + bound > _HALF and index > start:  # the run so far, before this one
            yield from _run(items, start, index)
            start, size = index, 0
        if bound > _HALF:
            yield b"," if index else b""
            yield from _pieces(item)
            start = index + 1
            continue
        size += bound
    if start < len(items):
        yield from _run(items, start, len(items))
    yield b"]"


def _run(items: list[Any] | tuple[Any, ...], start: int, stop: int) -> Iterator[Piece]:
    if start:
        yield b","
    yield memoryview(orjson_bytes(items[start:stop]))[1:-1]


def _array_pieces(array: Any) -> Iterator[Piece]:
    """A big array (or :class:`LowCells`) by blocks of rows, each as orjson writes it
    without its brackets; where one row is more than a block, row by row."""
    low = isinstance(array, LowCells)
    data = array.data if low else array
    yield b"["
    step = _HALF // (_array_bound(data.shape[1:]) + 1)
    if step == 0:  # a row (of a 2-d array at least) is more than a block
        for index in range(len(data)):
            if index:
                yield b","
            yield from _pieces(LowCells(data[index]) if low else data[index])
    else:
        for start in range(0, len(data), step):
            rows = array.cells(start, start + step) if low else data[start : start + step]
            if start:
                yield b","
            yield memoryview(orjson_bytes(rows))[1:-1]
    yield b"]"
