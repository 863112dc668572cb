"""A GGUF file's header, parsed and checked: its metadata and its tensors' infos.

Every count and length is checked against the bytes left in the file before anything
is allocated for it, so a garbled or
hostile header is one :class:`~attntrace.errors.InputError` line, never a traceback.
The layout is in :mod:`attntrace.real.weights.gguf`'s docstring.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from attntrace.errors import InputError
from attntrace.real.text import shown

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32

# ggml's GGML_MAX_DIMS: llama.cpp refuses tensors with more dimensions.
_MAX_DIMS = 4
# Arrays of arrays are legal GGUF but unused by real models; a depth cap keeps a hostile
# file from recursing without end.
_MAX_ARRAY_DEPTH = 8

_STRING = 8
_ARRAY = 9
_BOOL = 7
# Value type -> (name, struct format of a scalar, numpy dtype of an array of them).
_SCALARS: dict[int, tuple[str, str, str]] = {
    0: ("uint8", "<B", "u1"),
    1: ("int8", "<b", "i1"),
    2: ("uint16", "<H", "<u2"),
    3: ("int16", "<h", "<i2"),
    4: ("uint32", "<I", "<u4"),
    5: ("int32", "<i", "<i4"),
    6: ("float32", "<f", "<f4"),
    7: ("bool", "<B", "u1"),
    10: ("uint64", "<Q", "<u8"),
    11: ("int64", "<q", "<i8"),
    12: ("float64", "<d", "<f8"),
}
_SCALAR_UNPACK: dict[int, Callable[[Any, int], tuple[Any, ...]]] = {
    code: struct.Struct(fmt).unpack_from for code, (_, fmt, _) in _SCALARS.items()
}
_SCALAR_SIZE = {code: struct.calcsize(fmt) for code, (_, fmt, _) in _SCALARS.items()}
_TYPE_NAMES = {code: name for code, (name, _, _) in _SCALARS.items()} | {
    _STRING: "string",
    _ARRAY: "array",
}
_TYPE_CHOICES = ", ".join(f"{code} ({name})" for code, name in sorted(_TYPE_NAMES.items()))
_U32 = struct.Struct("<I").unpack_from
_U64 = struct.Struct("<Q").unpack_from


class BeyondBuffer(Exception):
    """The header runs past the bytes read so far (not past the file): read ``needed``
    bytes from the start, and parse again."""

    def __init__(self, needed: int) -> None:
        super().__init__(needed)
        self.needed = needed


class Parser:
    """A cursor over the header; every read is checked against the file's end first.

    ``buf`` holds the file's first bytes (the header, read, not mapped: a mapped file
    another process shortens kills the reader with SIGBUS); ``end`` is the file's size.
    A read within the file but past ``buf`` raises :class:`BeyondBuffer`.
    """

    def __init__(
        self, buf: bytes, end: int, source: str, skip: frozenset[str] = frozenset()
    ) -> None:
        self.buf = buf
        self.end = end
        self.pos = 0
        self.source = source
        # Keys whose arrays are stepped over, checked but not decoded (a tokenizer read
        # from its cache needs not the 262 144 strings of Gemma's vocabulary).
        self.skip = skip

    def fail(self, message: str, field: str | None = None, **kw: str) -> InputError:
        return InputError(
            message, source=self.source, field=None if field is None else shown(field), **kw
        )

    def need(self, n: int, what: str, field: str | None) -> int:
        """Claim ``n`` bytes for ``what``; return where they start."""
        start = self.pos
        if n > self.end - start:
            raise self.fail(
                f"file ends inside {what}",
                field,
                expected=f"{n} bytes at offset {start}",
                found=f"{self.end - start} left",
            )
        self.pos = start + n
        if self.pos > len(self.buf):
            raise BeyondBuffer(self.pos)
        return start

    def u32(self, what: str, field: str | None) -> int:
        value: int = _U32(self.buf, self.need(4, what, field))[0]
        return value

    def u64(self, what: str, field: str | None) -> int:
        value: int = _U64(self.buf, self.need(8, what, field))[0]
        return value

    def check_count(self, count: int, min_size: int, what: str, field: str | None) -> None:
        """Refuse a count the rest of the file cannot hold (before allocating for it)."""
        left = self.end - self.pos
        if count * min_size > left:
            raise self.fail(
                f"{what} larger than the file can hold",
                field,
                expected=f"at most {left // min_size} ({min_size}+ bytes each, {left} bytes left)",
                found=str(count),
            )

    def string(self, what: str, field: str | None) -> str:
        length = self.u64(f"the length of {what}", field)
        if length > self.end - self.pos:
            raise self.fail(
                f"{what} runs beyond the end of the file",
                field,
                expected=f"at most {self.end - self.pos} bytes",
                found=f"length {length}",
            )
        start = self.need(length, what, field)
        try:
            return self.buf[start : start + length].decode("utf-8")
        except UnicodeDecodeError as error:
            raise self.fail(
                f"{what} is not UTF-8 (byte {error.start} of {length})", field
            ) from None

    def parse(
        self,
    ) -> tuple[int, dict[str, object], list[tuple[str, tuple[int, ...], int, int]], int]:
        """(version, metadata, [(name, ggml dims, type id, relative offset)], header end)."""
        magic = self.buf[0:4]
        if magic != GGUF_MAGIC:
            raise self.fail(
                "not a GGUF file", "magic", expected=repr(GGUF_MAGIC), found=repr(bytes(magic))
            )
        self.pos = 4
        version = self.u32("the version", "version")
        if version not in SUPPORTED_VERSIONS:
            hint = " (a big-endian file?)" if version > 0xFFFF else ""
            raise self.fail(
                f"unsupported GGUF version{hint}",
                "version",
                expected=" or ".join(map(str, SUPPORTED_VERSIONS)),
                found=str(version),
            )
        tensor_count = self.u64("the tensor count", "tensor_count")
        kv_count = self.u64("the key-value count", "kv_count")
        # A key-value pair is at least 13 bytes (key length, value type, a one-byte value).
        self.check_count(kv_count, 13, "key-value count", "kv_count")

        metadata: dict[str, object] = {}
        for index in range(kv_count):
            key = self.string(f"key {index}", f"key {index}")
            if key in metadata:
                raise self.fail("duplicate metadata key", key)
            value_type = self.u32("a value type", key)
            if value_type == _ARRAY and key in self.skip:
                self.step_over_array(key)
                continue
            metadata[key] = self.value(value_type, key, 0)

        # A tensor info is at least 24 bytes (name length, n_dims, type, offset).
        self.check_count(tensor_count, 24, "tensor count", "tensor_count")
        infos: list[tuple[str, tuple[int, ...], int, int]] = []
        names: set[str] = set()
        for index in range(tensor_count):
            name = self.string(f"the name of tensor {index}", f"tensor {index}")
            if name in names:
                raise self.fail("duplicate tensor name", name)
            names.add(name)
            n_dims = self.u32("n_dims", name)
            if not 1 <= n_dims <= _MAX_DIMS:
                raise self.fail(
                    "bad number of dimensions",
                    name,
                    expected=f"1 to {_MAX_DIMS}",
                    found=str(n_dims),
                )
            start = self.need(8 * n_dims, "dims", name)
            dims = struct.unpack_from(f"<{n_dims}Q", self.buf, start)
            type_id = self.u32("the ggml type", name)
            offset = self.u64("the data offset", name)
            infos.append((name, dims, type_id, offset))
        return version, metadata, infos, self.pos

    def value(self, value_type: int, key: str, depth: int) -> object:
        if value_type == _STRING:
            return self.string("a string value", key)
        if value_type == _ARRAY:
            return self.array(key, depth + 1)
        unpack = _SCALAR_UNPACK.get(value_type)
        if unpack is None:
            raise self.fail(
                "unknown value type", key, expected=_TYPE_CHOICES, found=str(value_type)
            )
        value = unpack(self.buf, self.need(_SCALAR_SIZE[value_type], "a value", key))[0]
        if value_type == _BOOL:
            if value > 1:
                raise self.fail("bad boolean", key, expected="0 or 1", found=str(value))
            return bool(value)
        return value

    def array(self, key: str, depth: int) -> list[object]:
        if depth > _MAX_ARRAY_DEPTH:
            raise self.fail(
                "arrays nested too deeply", key, expected=f"at most {_MAX_ARRAY_DEPTH} levels"
            )
        elem_type = self.u32("an array's element type", key)
        count = self.u64("an array's length", key)
        if elem_type == _STRING:
            self.check_count(count, 8, "array length", key)
            return self.string_array(count, key)
        if elem_type == _ARRAY:
            self.check_count(count, 12, "array length", key)
            return [self.array(key, depth + 1) for _ in range(count)]
        scalar = _SCALARS.get(elem_type)
        if scalar is None:
            raise self.fail(
                "unknown array element type", key, expected=_TYPE_CHOICES, found=str(elem_type)
            )
        size = _SCALAR_SIZE[elem_type]
        self.check_count(count, size, "array length", key)
        start = self.need(count * size, "an array", key)
        import numpy as np  # here: `attntrace models` reads headers without loading numpy

        values = np.frombuffer(self.buf, dtype=scalar[2], count=count, offset=start)
        if elem_type == _BOOL:
            if count and int(values.max()) > 1:
                raise self.fail("bad boolean in array", key, expected="0 or 1")
            return (values != 0).tolist()  # type: ignore[no-any-return]
        return values.tolist()  # type: ignore[no-any-return]

    def step_over_array(self, key: str) -> None:
        """Move past an array with every bound checked, decoding no string and making no
        list: the lengths of its strings are read, nothing else."""
        elem_type = self.u32("an array's element type", key)
        count = self.u64("an array's length", key)
        if elem_type != _STRING:
            self.pos -= 12
            self.array(key, 1)  # numbers are one numpy view; arrays of arrays are rare
            return
        self.check_count(count, 8, "array length", key)
        buf, end, pos = self.buf, self.end, self.pos
        held = len(buf)
        for index in range(count):
            if held - pos < 8 and end - pos >= 8:
                raise BeyondBuffer(pos + 8)
            if end - pos < 8 or (pos := pos + 8 + _U64(buf, pos)[0]) > end:
                raise self.fail(
                    f"file ends inside string {index} of the array",
                    key,
                    expected=f"{count} strings",
                    found=f"the file's end at offset {end}",
                )
        if pos > held:
            raise BeyondBuffer(pos)
        self.pos = pos

    def string_array(self, count: int, key: str) -> list[object]:
        """``count`` strings: the tokenizer's vocabulary and merges, so kept tight."""
        buf, end, pos = self.buf, self.end, self.pos
        held = len(buf)
        out: list[object] = [None] * count
        index = 0
        try:
            for index in range(count):
                if end - pos < 8:
                    break
                if held - pos < 8:
                    raise BeyondBuffer(pos + 8)
                length = _U64(buf, pos)[0]
                pos += 8
                stop = pos + length
                if stop > end:
                    break
                if stop > held:
                    raise BeyondBuffer(stop)
                out[index] = buf[pos:stop].decode("utf-8")
                pos = stop
            else:
                self.pos = pos
                return out
        except UnicodeDecodeError as error:
            raise self.fail(
                f"string {index} of the array is not UTF-8 (byte {error.start})", key
            ) from None
        raise self.fail(
            f"file ends inside string {index} of the array",
            key,
            expected=f"{count} strings",
            found=f"the file's end at offset {end}",
        )
