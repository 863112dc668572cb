"""A big page's numbers as binary: the embedded document packed, and taken back out exactly.

A real model's page is mostly its weight matrices, and a float64 written in decimal JSON
takes about 19 bytes: a 12-token SmolLM2 layer came to 16 MB. So a block of more than
:data:`PACK_AT` bytes of JSON is embedded packed (docs/page.md, "What the file holds"):
every run of numbers (a matrix, a vector) of at least :data:`SMALLEST` numbers leaves the
document for one binary stream, each as float32 where every one of its values is a
float32 exactly (checked) and float64 otherwise, by row or by column, laid out as
page/codecs.py says (a quantized model's weights as blocks of small integers), whichever
deflates smaller, an array equal to one already there stored once. The stream starts
with the document's JSON, ``{"$array": k}`` where the numbers stood; it is deflated
(zlib) and written in base85. The page inflates it with the browser's
DecompressionStream.

Nothing is rounded: :func:`unpack` gives back the very bytes the command's ``--json``
writes (orjson writes a float the same from a list or from numpy; a null is a NaN in the
stream), and :func:`pack` checks that it does before a page uses the packed form, keeping
the plain JSON otherwise. ``python -m attntrace.page.packing PAGE.html [BLOCK]`` writes a
page's document back out.
"""

from __future__ import annotations

import base64
import re
import sys
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy.typing as npt

#: The packed block's marker (its ``packed`` field), and the format's version.
PACKED = "attntrace/packed/v2"
#: How a document's JSON may have been written (``run``'s and ``flash``'s by orjson,
#: ``decode``'s, ``check``'s and ``diff``'s by Python's json): a packed block names which,
#: so that it is given back in the very same bytes.
WRITERS = ("orjson", "json")
#: A block of more bytes of JSON than this is packed; a smaller one stays as it is.
PACK_AT = 1 << 20
#: A packed block inflates to at most this many bytes (a page holds 64 MiB of JSON at
#: most, whose numbers take fewer bytes packed than written).
INFLATED_AT_MOST = 256 << 20
#: An array of fewer numbers stays in the document.
SMALLEST = 64

_TRIAL = 1 << 16

__all__ = ["PACKED", "PACK_AT", "SMALLEST", "is_packed", "pack", "page_documents", "unpack"]


def pack(json_bytes: bytes) -> bytes:
    """``json_bytes`` packed (as JSON), or as it is where it holds no array to pack or
    where the packed form would not give it back exactly."""
    import orjson

    arrays: list[npt.NDArray[Any]] = []
    document = _pulled(orjson.loads(json_bytes), arrays)
    if not arrays:
        return json_bytes
    head = orjson.dumps(document)
    stream, entries = _stream(arrays, len(head))
    block = {
        "packed": PACKED,
        "writer": "orjson",
        "encoding": "deflate, base85",
        "document": len(head),
        "arrays": entries,
        **_text(zlib.compress(head + stream, 6)),
    }
    for writer in WRITERS:  # the one that wrote json_bytes gives them back
        block["writer"] = writer
        if unpack(block) == json_bytes:
            return orjson.dumps(block)
    return json_bytes  # never seen: the plain page, then


def _inflated(deflated: bytes) -> bytes:
    """The stream, refused (a ValueError) past :data:`INFLATED_AT_MOST` bytes: a page
    that was not written by attntrace may inflate without end."""
    inflater = zlib.decompressobj()
    stream = inflater.decompress(deflated, INFLATED_AT_MOST + 1)
    if len(stream) > INFLATED_AT_MOST:
        raise ValueError(f"its numbers inflate past {INFLATED_AT_MOST >> 20} MiB")
    return stream


def _text(deflated: bytes) -> dict[str, Any]:
    """The deflated stream as text for the JSON: base85 (RFC 1924's alphabet, each
    ``<`` written ``,``: a page writes ``<`` as an escape of 6 characters), padded with
    zero bytes to a whole group of 4, ``bytes`` long before the padding. A quarter more
    than the bytes where base64 is a third more."""
    text = base64.b85encode(deflated, pad=True).translate(_TO_TEXT).decode("ascii")
    return {"bytes": len(deflated), "data": text}


def _binary(block: dict[str, Any]) -> bytes:
    """The deflated stream back from its text."""
    text = block["data"].encode("ascii").translate(_FROM_TEXT)
    return base64.b85decode(text)[: block["bytes"]]


_TO_TEXT = bytes.maketrans(b"<", b",")
_FROM_TEXT = bytes.maketrans(b",", b"<")


def is_packed(block: Any) -> bool:
    """Whether a parsed block is a packed document rather than the document itself."""
    return isinstance(block, dict) and block.get("packed") == PACKED


def unpack(block: dict[str, Any]) -> bytes:
    """A packed block's document, as the bytes the command's ``--json`` writes."""
    import orjson

    stream = _inflated(_binary(block))
    arrays = [_array(stream, entry) for entry in block["arrays"]]
    document = _restored(orjson.loads(stream[: block["document"]]), arrays)
    if block.get("writer") == "json":  # Python's json: 1e-09 where orjson writes 1e-9
        from attntrace.kernel.documents import plain_dumps

        return plain_dumps(_listed(document)).encode()
    return orjson.dumps(document, option=orjson.OPT_SERIALIZE_NUMPY)


def _array(stream: bytes, entry: dict[str, Any]) -> npt.NDArray[Any]:
    """One array of the stream, as float64 in its shape (docs/page.md)."""
    import numpy as np

    from attntrace.page import codecs

    count = int(np.prod(entry["shape"]))
    codec = entry["codec"]
    if codec == "affine":
        flat = codecs.affine_values(stream[entry["offset"] :], count, entry["block"])
    else:
        dtype = np.dtype("<f4" if entry["dtype"] == "float32" else "<f8")
        data = stream[entry["offset"] : entry["offset"] + count * dtype.itemsize]
        if codec == "planes":
            data = codecs.planes_values(data, dtype.itemsize)
        flat = np.frombuffer(data, dtype, count).astype(np.float64)
    shape = entry["shape"] if entry["order"] == "C" else entry["shape"][::-1]
    values = flat.reshape(shape)
    return np.ascontiguousarray(values if entry["order"] == "C" else values.T)


def page_documents(page: str) -> dict[str, bytes]:
    """Every document a page embeds, by its block's name, as the command's ``--json``
    writes it (packed or not)."""
    import json

    found = {}
    for name, text in _BLOCK.findall(page):
        block = json.loads(text)
        found[name] = unpack(block) if is_packed(block) else _unescaped(text).encode()
    return found


_BLOCK = re.compile(r'<script type="application/json" id="([^"]+)">(.*?)</script>', re.DOTALL)
# an escape \uXXXX (a pair of them for a character past U+FFFF), not itself escaped
_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)((?:\\u[0-9a-f]{4})+)")


def _unescaped(text: str) -> str:
    """A plain block's JSON as the command wrote it: the page wrote each ``<`` and each
    character a terminal would act on as its ``\\uXXXX`` escape (build._script_safe),
    where both of attntrace's JSON writers write the character itself; they escape only
    the characters below U+0020, which stay escaped."""

    def raw(match: re.Match[str]) -> str:
        units = [int(match[2][i + 2 : i + 6], 16) for i in range(0, len(match[2]), 6)]
        chars = bytes(b for u in units for b in u.to_bytes(2, "big")).decode(
            "utf-16-be", "surrogatepass"
        )
        kept = "".join(c if ord(c) >= 0x20 else f"\\u{ord(c):04x}" for c in chars)
        return match[1] + kept

    return _ESCAPE.sub(raw, text)


def _numbers(node: list[Any]) -> tuple[int, ...] | None:
    """The shape of a vector or a matrix of floats (null counted as a float), else None."""
    if node and all(type(x) is float or x is None for x in node):
        return (len(node),)
    if not node or not all(type(row) is list and row for row in node):
        return None
    width = len(node[0])
    if all(len(row) == width and all(type(x) is float or x is None for x in row) for row in node):
        return (len(node), width)
    return None


def _pulled(node: Any, arrays: list[npt.NDArray[Any]]) -> Any:
    """``node`` with each array of numbers replaced by ``{"$array": k}``, the numbers
    added to ``arrays`` (null as NaN)."""
    import numpy as np

    if isinstance(node, dict):
        return {key: _pulled(value, arrays) for key, value in node.items()}
    if not isinstance(node, list):
        return node
    shape = _numbers(node)
    if shape is None or int(np.prod(shape)) < SMALLEST:
        return [_pulled(item, arrays) for item in node]
    arrays.append(np.array(node, dtype=np.float64).reshape(shape))  # None -> nan
    return {"$array": len(arrays) - 1}


def _listed(node: Any) -> Any:
    """``node`` with each array as lists (a NaN as None), for Python's json."""
    import numpy as np

    if isinstance(node, np.ndarray):
        cells = node.astype(object)
        cells[np.isnan(node)] = None
        return cells.tolist()
    if isinstance(node, dict):
        return {key: _listed(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_listed(item) for item in node]
    return node


def _restored(node: Any, arrays: list[npt.NDArray[Any]]) -> Any:
    if isinstance(node, dict):
        if node.keys() == {"$array"}:
            return arrays[node["$array"]]
        return {key: _restored(value, arrays) for key, value in node.items()}
    if isinstance(node, list):
        return [_restored(item, arrays) for item in node]
    return node


def _stream(arrays: list[npt.NDArray[Any]], offset: int) -> tuple[bytes, list[dict[str, Any]]]:
    """The arrays' bytes one after another, the first ``offset`` bytes into the stream,
    and each one's entry; an array already in the stream, byte for byte, points at it
    (GQA's heads share their K and V)."""
    pieces: list[bytes] = []
    at: dict[bytes, int] = {}
    entries = []
    for values in arrays:
        entry, data = _encoded(values)
        key = f"{sorted(entry.items())} {values.shape}".encode() + data
        if key not in at:
            at[key] = offset
            pieces.append(data)
            offset += len(data)
        entries.append({"shape": list(values.shape), **entry, "offset": at[key]})
    return b"".join(pieces), entries


def _encoded(values: npt.NDArray[Any]) -> tuple[dict[str, Any], bytes]:
    """(entry, bytes): float32 where it holds every value exactly, else float64; by
    column where that deflates smaller (a quantized model's blocks run down a column);
    as ``affine`` blocks where the values are a quantized model's, else ``raw`` or in
    byte ``planes``, whichever deflates smaller (page/codecs.py)."""
    import numpy as np

    from attntrace.page import codecs

    narrow = values.astype("<f4")
    exact = np.array_equal(narrow.astype(np.float64), values, equal_nan=True)
    kept = narrow if exact else values.astype("<f8")
    entry: dict[str, Any] = {"dtype": "float32" if exact else "float64"}
    orders: tuple[Literal["C", "F"], ...] = ("C", "F")
    if kept.ndim < 2 or min(kept.shape) < 2:
        orders = ("C",)
    if exact:
        fitted = [(order, codecs.affine(kept.reshape(-1, order=order))) for order in orders]
        found = [(len(f[1]), order, f) for order, f in fitted if f is not None]
        if found:
            _, order, (block, data) = min(found)
            return {**entry, "order": order, "codec": "affine", "block": block}, data
    size = kept.itemsize
    tried = []
    for order in orders:
        data = kept.tobytes(order=order)
        sample = data[:_TRIAL]  # the first bytes of each tell which deflates smaller
        tried.append((_deflated(sample), order, "raw", data))
        tried.append((_deflated(codecs.planes(sample, size)), order, "planes", data))
    _, order, codec, data = min(tried)
    if codec == "planes":
        data = codecs.planes(data, size)
    return {**entry, "order": order, "codec": codec}, data


def _deflated(data: bytes) -> int:
    return len(zlib.compress(data, 1))


def main(argv: list[str]) -> int:
    """``python -m attntrace.page.packing PAGE.html [BLOCK]``: the page's document
    (its first block, or BLOCK) on stdout, byte for byte as the command's ``--json``
    writes it, its newline too."""
    if not 1 <= len(argv) <= 2:
        _error("usage: python -m attntrace.page.packing PAGE.html [BLOCK]")
        return 2
    try:
        documents = page_documents(Path(argv[0]).read_text(encoding="utf-8"))
    except (OSError, ValueError, LookupError, TypeError, zlib.error) as error:
        # unreadable, not UTF-8, not a page's JSON, a packed block that is not attntrace's
        _error(f"{argv[0]}: cannot read the page: {error}")
        return 2
    if not documents:
        _error(f"{argv[0]}: expected an attntrace page, found none")
        return 2
    name = argv[1] if len(argv) == 2 else next(iter(documents))
    if name not in documents:
        _error(f"{argv[0]}: no block {name!r} in the page")
        return 2
    sys.stdout.buffer.write(documents[name] + b"\n")  # as --json ends its document
    return 0


def _error(message: str) -> None:
    """One line on stderr, a file's name or a block's escaped as the terminal's are."""
    from attntrace.visible import visible

    sys.stderr.write(f"attntrace: error: {visible(message, 400)}\n")


if __name__ == "__main__":  # pragma: no cover - run as a script
    raise SystemExit(main(sys.argv[1:]))
