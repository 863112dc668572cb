"""Read a ``.safetensors`` file with numpy alone, a tensor at a time.

Why not the ``safetensors`` package: attntrace runs on numpy and the standard library, and
the format is simple enough to read directly: an unsigned 64-bit little-endian header
length ``N``, ``N`` bytes of JSON ``{name: {dtype, shape, data_offsets: [begin, end]},
"__metadata__": {...}}``, then the data buffer, every tensor row-major and little-endian
at ``data_offsets`` (relative to the start of the buffer).

The file is opened once and its header read and checked; a tensor is read (``pread``
into its array, never a memory map: a mapped file another process shortens kills the
reader with SIGBUS) when it is asked for, so opening a 90 MB model costs a few
milliseconds and only the tensors a run uses are read. The arrays are read-only, as the
views of the map they replace were. BF16 has no numpy dtype, so BF16 tensors are
converted to float32 (bit-exact: a bfloat16 is the top half of a float32).

A garbled or hostile file must end in one :class:`~attntrace.errors.InputError` line,
never a traceback and never an allocation sized by a number the file merely claims:
the header length is checked against the file (and a 100 MB cap) before it is read, and
every tensor's shape, dtype and offsets are checked against each other, the buffer and
the other tensors before any view is made.
"""

from __future__ import annotations

import json
import math
import os
import weakref
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError
from attntrace.kernel.fields import MAX_AXES, counted
from attntrace.kernel.reading import naming, open_regular, read_array
from attntrace.real.text import first_overlap, shown

__all__ = [
    "SAFETENSORS_DTYPES",
    "SafetensorsFile",
    "read_safetensors",
    "read_safetensors_with_dtypes",
]

#: Safetensors dtype name -> numpy dtype of the stored bytes (little-endian). BF16 is stored
#: as its raw 16 bits and widened to float32 after reading.
SAFETENSORS_DTYPES: dict[str, np.dtype[Any]] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"),
    "U32": np.dtype("<u4"),
    "U16": np.dtype("<u2"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}

# The reference implementation refuses headers above 100 MB; so do we, so a lying length
# in a multi-gigabyte file cannot make us read gigabytes of "JSON".
_MAX_HEADER_BYTES = 100_000_000
_LENGTH_BYTES = 8


def read_safetensors(path: Path) -> SafetensorsFile:
    """Every tensor of the safetensors file at ``path``, by name, read when asked for.

    Shapes are as stored (row-major); dtypes are the stored ones except BF16, which comes
    back as float32; each array is read-only. ``__metadata__`` is validated (a mapping of
    strings) but not returned. Raises :class:`InputError` for anything wrong with the
    file, its header at once, its data when a tensor is read.
    """
    return SafetensorsFile(path)


def read_safetensors_with_dtypes(path: Path) -> dict[str, tuple[npt.NDArray[Any], str]]:
    """As :func:`read_safetensors`, every tensor read now, with the name of the dtype it
    was stored in (:meth:`SafetensorsFile.stored_dtype`), in the order of the data in the
    file."""
    tensors = SafetensorsFile(path)
    return {name: (tensors[name], tensors.stored_dtype(name)) for name in tensors}


class SafetensorsFile(Mapping[str, npt.NDArray[Any]]):
    """A safetensors file, held open: its header checked when it is made, each tensor
    read from the file when it is asked for (``file[name]``, or :meth:`rows`).

    Read, never mapped: a mapped file another process shortens kills the reader with
    SIGBUS; a read that comes back short is one line ("the file changed while it was
    read"). A tensor is read anew each time it is asked for (an embedding table's few
    rows by :meth:`rows`), so nothing is held that a run does not use.
    """

    def __init__(self, path: Path) -> None:
        self._source = str(path)
        self._file, size, header_len, raw = _open_and_read_header(path, self._source)
        weakref.finalize(self, self._file.close)
        header = _parse_header(raw, self._source)
        self._data_start = _LENGTH_BYTES + header_len
        entries = _check_entries(header, size - self._data_start, self._source)
        # in the order of the data in the file
        self._entries = {name: (dtype, shape, begin) for name, dtype, shape, begin in entries}

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        dtype_name, shape, begin = self._entries[name]
        stored = SAFETENSORS_DTYPES[dtype_name]
        with naming(self._source):
            flat = read_array(self._file, self._data_start + begin, stored, math.prod(shape))
        return _widened(flat, dtype_name).reshape(shape)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def shape(self, name: str) -> tuple[int, ...]:
        """Tensor ``name``'s shape, from the header (nothing read)."""
        return self._entries[name][1]

    def dtype_name(self, name: str) -> str:
        """The dtype ``name`` is stored in, as the header names it (``F32``, ``BF16``)."""
        return self._entries[name][0]

    def stored_dtype(self, name: str) -> str:
        """The dtype ``name`` was stored in: numpy's name (``float16``, ``int64``,
        ``bool``), ``bfloat16`` for BF16 (which comes back as float32)."""
        dtype_name = self._entries[name][0]
        return "bfloat16" if dtype_name == "BF16" else SAFETENSORS_DTYPES[dtype_name].name

    def rows(self, name: str, indices: Iterable[int]) -> npt.NDArray[Any]:
        """Rows ``indices`` of the table ``name`` (the first axis), reading only them."""
        dtype_name, shape, begin = self._entries[name]
        stored = SAFETENSORS_DTYPES[dtype_name]
        width = math.prod(shape[1:])
        picked = []
        for row in indices:
            if not 0 <= row < shape[0]:
                raise InputError(
                    source=self._source,
                    field=shown(name),
                    expected=f"a row from 0 to {shape[0] - 1}",
                    found=str(row),
                )
            at = self._data_start + begin + row * width * stored.itemsize
            with naming(self._source):
                picked.append(read_array(self._file, at, stored, width))
        flat = np.concatenate(picked) if picked else np.empty(0, dtype=stored)
        return _widened(flat, dtype_name).reshape(len(picked), *shape[1:])


def _widened(flat: npt.NDArray[Any], dtype_name: str) -> npt.NDArray[Any]:
    """The stored numbers as handed out, read-only: BF16 widened to float32, bit-exact
    (a bfloat16 is the top half of a float32)."""
    if dtype_name == "BF16":
        flat = (flat.astype(np.uint32) << np.uint32(16)).view(np.float32)
    flat.flags.writeable = False
    return flat


def _open_and_read_header(path: Path, source: str) -> tuple[BinaryIO, int, int, bytes]:
    """The file open, its size, its header's length and the header's bytes, each length
    checked against the file before it is read."""
    handle = _open(path, source)
    try:
        size = os.fstat(handle.fileno()).st_size
        if size < _LENGTH_BYTES:
            raise InputError(
                "file too short for a safetensors header length",
                source=source,
                expected=f"at least {_LENGTH_BYTES} bytes",
                found=counted(size, "byte"),
            )
        header_len = int.from_bytes(handle.read(_LENGTH_BYTES), "little")
        room = size - _LENGTH_BYTES
        if header_len > room:
            raise InputError(
                "header length beyond the end of the file",
                source=source,
                field="header length",
                expected=f"at most {room} (the bytes after the length)",
                found=str(header_len),
            )
        if header_len > _MAX_HEADER_BYTES:
            raise InputError(
                "header too large",
                source=source,
                field="header length",
                expected=f"at most {_MAX_HEADER_BYTES} bytes",
                found=str(header_len),
            )
        with naming(source):
            raw = read_array(handle, _LENGTH_BYTES, np.uint8, header_len).tobytes()
    except BaseException:
        handle.close()
        raise
    return handle, size, header_len, raw


def _open(path: Path, source: str) -> BinaryIO:
    """The file, if it is a regular one (it is read to the sizes its header states): a
    FIFO or a device is refused before a read that could block or never end."""
    with naming(source):
        return open_regular(path, "a .safetensors weight file")


def _parse_header(raw: bytes, source: str) -> dict[str, Any]:
    """The JSON header as a dict, duplicate keys refused (JSON would silently keep one)."""

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise InputError(
                    "duplicate key in the header",
                    source=source,
                    field="header",
                    found=repr(shown(key)),
                )
            result[key] = value
        return result

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"header is not UTF-8 (byte {error.start})", source=source, field="header"
        ) from None
    try:
        header = json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as error:
        raise InputError(
            f"header is not JSON ({error.msg} at character {error.pos})",
            source=source,
            field="header",
        ) from None
    except ValueError as error:  # e.g. an integer beyond Python's 4300-digit limit
        raise InputError(
            f"header is not usable JSON ({error})", source=source, field="header"
        ) from None
    except RecursionError:
        raise InputError("header JSON nested too deeply", source=source, field="header") from None
    if not isinstance(header, dict):
        raise InputError(
            "header is not a JSON object",
            source=source,
            field="header",
            expected="an object {name: {dtype, shape, data_offsets}}",
            found=type(header).__name__,
        )
    return header


def _check_entries(
    header: dict[str, Any], buffer_len: int, source: str
) -> list[tuple[str, str, tuple[int, ...], int]]:
    """Validate every entry; return (name, dtype, shape, begin) sorted by begin."""
    _check_metadata(header.get("__metadata__"), source)
    entries = [
        _check_entry(name, entry, buffer_len, source)
        for name, entry in header.items()
        if name != "__metadata__"
    ]
    entries.sort(key=lambda item: (item[3], item[4]))
    overlap = first_overlap((begin, end, name) for name, _, _, begin, end in entries)
    if overlap is not None:
        name, begin, before, end = overlap
        raise InputError(
            "tensors overlap",
            source=source,
            field=f"{shown(name)}.data_offsets",
            expected=f"begin >= {end} (where {shown(before)!r} ends)",
            found=str(begin),
        )
    return [(name, dtype_name, shape, begin) for name, dtype_name, shape, begin, _ in entries]


def _check_metadata(metadata: Any, source: str) -> None:
    """``__metadata__``, where there is one: an object of strings, as the format says."""
    if metadata is not None and not (
        isinstance(metadata, dict) and all(isinstance(value, str) for value in metadata.values())
    ):
        raise InputError(
            "bad __metadata__",
            source=source,
            field="__metadata__",
            expected="an object of strings",
            found=type(metadata).__name__
            if not isinstance(metadata, dict)
            else "a non-string value",
        )


def _check_entry(
    name: str, entry: Any, buffer_len: int, source: str
) -> tuple[str, str, tuple[int, ...], int, int]:
    """One tensor's entry: (name, dtype, shape, begin, end), its shape × dtype size
    exactly the bytes its offsets span, so that a view of them cannot be wrong."""
    field = shown(name)
    if not isinstance(entry, dict):
        raise InputError(
            "bad tensor entry",
            source=source,
            field=field,
            expected="an object {dtype, shape, data_offsets}",
            found=type(entry).__name__,
        )
    missing = [key for key in ("dtype", "shape", "data_offsets") if key not in entry]
    if missing:
        raise InputError(f"tensor entry lacks {', '.join(missing)}", source=source, field=field)
    dtype_name, shape = _check_dtype_and_shape(entry, field, source)
    begin, end = _check_offsets(entry["data_offsets"], field, buffer_len, source)
    itemsize = SAFETENSORS_DTYPES[dtype_name].itemsize
    nbytes = math.prod(shape) * itemsize
    if nbytes != end - begin:
        # A lying shape can make nbytes astronomically large: do not print it then.
        size = f"{nbytes} bytes" if nbytes <= buffer_len else "more bytes than the file has"
        raise InputError(
            "data_offsets do not match shape × dtype size",
            source=source,
            field=f"{field}.data_offsets",
            expected=f"{size} (shape {_short(shape)} of {itemsize}-byte {dtype_name})",
            found=f"{end - begin} bytes ([{begin}, {end}])",
        )
    return (name, dtype_name, tuple(shape), begin, end)


def _check_dtype_and_shape(entry: dict[str, Any], field: str, source: str) -> tuple[str, list[int]]:
    """A dtype this reader knows and a shape of at most MAX_AXES non-negative integers."""
    dtype_name = entry["dtype"]
    if not isinstance(dtype_name, str) or dtype_name not in SAFETENSORS_DTYPES:
        raise InputError(
            "unsupported dtype",
            source=source,
            field=f"{field}.dtype",
            expected="one of " + ", ".join(SAFETENSORS_DTYPES),
            found=repr(dtype_name),
        )
    shape = entry["shape"]
    if not (
        isinstance(shape, list)
        and all(isinstance(dim, int) and not isinstance(dim, bool) for dim in shape)
        and all(dim >= 0 for dim in shape)
    ):
        raise InputError(
            "bad shape",
            source=source,
            field=f"{field}.shape",
            expected="a list of non-negative integers",
            found=_short(shape),
        )
    if len(shape) > MAX_AXES:  # numpy makes no array of more than 64 axes
        raise InputError(
            source=source,
            field=f"{field}.shape",
            expected=f"at most {MAX_AXES} axes",
            found=f"{len(shape)} axes",
        )
    return dtype_name, shape


def _check_offsets(offsets: Any, field: str, buffer_len: int, source: str) -> tuple[int, int]:
    """``data_offsets``: [begin, end], in order and inside the data buffer (a file that
    claims more than it holds is refused before anything is mapped)."""
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offsets)
    ):
        raise InputError(
            "bad data_offsets",
            source=source,
            field=f"{field}.data_offsets",
            expected="[begin, end], two non-negative integers",
            found=_short(offsets),
        )
    begin, end = offsets
    if end < begin:
        raise InputError(
            "data_offsets end before they begin",
            source=source,
            field=f"{field}.data_offsets",
            expected="begin <= end",
            found=f"[{begin}, {end}]",
        )
    if end > buffer_len:
        raise InputError(
            "tensor data beyond the end of the file",
            source=source,
            field=f"{field}.data_offsets",
            expected=f"end <= {buffer_len} (the data buffer's size)",
            found=f"[{begin}, {end}]",
        )
    return begin, end


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."
