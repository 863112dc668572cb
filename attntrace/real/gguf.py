"""Read a GGUF model file (llama.cpp's format) with numpy alone: metadata and dequantized tensors.

Why not the ``gguf`` package: attntrace runs on numpy and the standard library. GGUF is a
flat little-endian layout, readable in a page of code:

* ``b"GGUF"``, uint32 version (2 or 3), uint64 tensor count, uint64 key-value count;
* the key-value pairs: a string key, a uint32 value type, the value (strings are a uint64
  length and UTF-8 bytes; arrays a uint32 element type, a uint64 count and the elements);
* one info per tensor: name, uint32 n_dims, n_dims uint64 dims (ggml order, ``dims[0]``
  varies fastest, so the numpy shape is the reverse), uint32 ggml type, uint64 offset
  relative to the data section;
* the data section, at the next multiple of ``general.alignment`` (default 32).

The file is memory-mapped once. The header is parsed when a :class:`GGUFFile` is made
(the tokenizer's 49152-string arrays in a tight loop over the map: about 0.04 s); tensors
are dequantized on request with numpy over all blocks at once (a structured dtype view of
the map, no Python loop over blocks).

A garbled or hostile file must end in one :class:`~attntrace.errors.InputError` line,
never a traceback: every count and length is checked against the bytes left in the file
before anything is allocated for it, and every tensor's data against the file's end.
"""

from __future__ import annotations

import math
import mmap
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError
from attntrace.files.reading import naming, open_regular
from attntrace.real.text import first_overlap, shown

__all__ = ["GGML_TYPES", "GGUFFile", "GGUFTensorInfo"]

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32

#: ggml type id -> (name, weights per block, bytes per block), as in ggml.h / gguf-py.
#: Every known type can be listed and its size checked; :data:`DEQUANTIZABLE` can be read.
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    9: ("Q8_1", 32, 40),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66),
    17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18),
    21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2),
    34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),
}

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

# Block layouts of the quantized types read here (ggml-common.h), 32 weights per block.
_Q8_0 = np.dtype([("d", "<f2"), ("qs", "i1", (32,))])
_Q4_0 = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_Q4_1 = np.dtype([("d", "<f2"), ("m", "<f2"), ("qs", "u1", (16,))])
_NIBBLE = np.uint8(0x0F)
_FOUR = np.uint8(4)


@dataclass(frozen=True)
class GGUFTensorInfo:
    """Where a tensor lives and how it is stored.

    ``shape`` is numpy order (ggml dims reversed), so a linear layer's weight is
    ``(out_features, in_features)`` as in PyTorch; ``ggml_dims`` is the file's order.
    ``offset`` is absolute (from the start of the file) and ``nbytes`` the stored size.
    """

    name: str
    shape: tuple[int, ...]
    type_id: int
    type_name: str
    offset: int
    nbytes: int

    @property
    def ggml_dims(self) -> tuple[int, ...]:
        """The dimensions as the file lists them: fastest-varying first."""
        return tuple(reversed(self.shape))

    @property
    def n_elements(self) -> int:
        """How many weights the tensor holds."""
        return math.prod(self.shape)


def _f32(x: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return np.asarray(x, dtype=np.float32)


def _dequantize_q8_0(buf: Any, offset: int, n_blocks: int) -> npt.NDArray[Any]:
    """x = d·q: fp16 scale, 32 int8."""
    blocks = np.frombuffer(buf, dtype=_Q8_0, count=n_blocks, offset=offset)
    out = blocks["qs"].astype(np.float32)
    out *= _f32(blocks["d"])[:, None]
    return out


def _nibbles(qs: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The 32 4-bit values of each block as float32: byte j holds weight j (low nibble)
    and weight j + 16 (high nibble)."""
    out = np.empty((qs.shape[0], 32), dtype=np.float32)
    out[:, :16] = qs & _NIBBLE
    out[:, 16:] = qs >> _FOUR
    return out


def _dequantize_q4_0(buf: Any, offset: int, n_blocks: int) -> npt.NDArray[Any]:
    """x = d·(q − 8): fp16 scale, 16 bytes of nibbles."""
    blocks = np.frombuffer(buf, dtype=_Q4_0, count=n_blocks, offset=offset)
    out = _nibbles(blocks["qs"])
    out -= np.float32(8.0)
    out *= _f32(blocks["d"])[:, None]
    return out


def _dequantize_q4_1(buf: Any, offset: int, n_blocks: int) -> npt.NDArray[Any]:
    """x = d·q + m: fp16 scale, fp16 minimum, 16 bytes of nibbles."""
    blocks = np.frombuffer(buf, dtype=_Q4_1, count=n_blocks, offset=offset)
    out = _nibbles(blocks["qs"])
    out *= _f32(blocks["d"])[:, None]
    out += _f32(blocks["m"])[:, None]
    return out


def _read_f32(buf: Any, offset: int, count: int) -> npt.NDArray[Any]:
    return np.frombuffer(buf, dtype="<f4", count=count, offset=offset)


def _read_f16(buf: Any, offset: int, count: int) -> npt.NDArray[Any]:
    return np.frombuffer(buf, dtype="<f2", count=count, offset=offset).astype(np.float32)


def _read_bf16(buf: Any, offset: int, count: int) -> npt.NDArray[Any]:
    # A bfloat16 is the top half of a float32: widen the bits, do not convert the value.
    wide = np.frombuffer(buf, dtype="<u2", count=count, offset=offset).astype(np.uint32)
    wide <<= np.uint32(16)
    return wide.view(np.float32)


def _read_f64(buf: Any, offset: int, count: int) -> npt.NDArray[Any]:
    return np.frombuffer(buf, dtype="<f8", count=count, offset=offset).astype(np.float32)


# ggml type id -> reader(buffer, absolute offset, number of blocks) -> float32 array.
# For the unquantized types a block is one weight.
_READERS: dict[int, Callable[[Any, int, int], npt.NDArray[Any]]] = {
    0: _read_f32,
    1: _read_f16,
    2: _dequantize_q4_0,
    3: _dequantize_q4_1,
    8: _dequantize_q8_0,
    28: _read_f64,
    30: _read_bf16,
}

#: Names of the ggml types :meth:`GGUFFile.tensor` can read.
DEQUANTIZABLE: tuple[str, ...] = tuple(GGML_TYPES[code][0] for code in sorted(_READERS))


class GGUFFile:
    """A GGUF file, memory-mapped: its metadata, tensor infos and dequantized tensors.

    The header is parsed and validated in the constructor (so a bad file fails at once,
    with an :class:`InputError`); tensor data is read only by :meth:`tensor`.
    """

    path: Path
    version: int
    #: Every key-value pair, arrays as lists (e.g. ``tokenizer.ggml.tokens``).
    metadata: dict[str, object]
    alignment: int
    #: Absolute offset of the data section.
    data_offset: int

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._source = str(path)
        self._map = _map_file(self.path, self._source)
        parser = _Parser(self._map, len(self._map), self._source)
        self.version, self.metadata, infos, header_end = parser.parse()
        self.alignment = _alignment(self.metadata, self._source)
        self.data_offset = -(-header_end // self.alignment) * self.alignment
        self._infos = _place_tensors(
            infos, self.data_offset, self.alignment, len(self._map), self._source
        )

    @property
    def tensor_names(self) -> tuple[str, ...]:
        """Tensor names in file order."""
        return tuple(self._infos)

    def tensor_info(self, name: str) -> GGUFTensorInfo:
        """Shape (numpy order), ggml type and location of tensor ``name``."""
        info = self._infos.get(name)
        if info is None:
            some = ", ".join(shown(known) for known in list(self._infos)[:3])
            raise InputError(
                "no such tensor",
                source=self._source,
                field=shown(name),
                found=f"{len(self._infos)} tensors, e.g. {some}" if some else "no tensors",
            )
        return info

    def tensor(self, name: str) -> npt.NDArray[Any]:
        """Tensor ``name`` as float32, dequantized, in numpy shape (ggml dims reversed).

        F32 tensors are read-only views of the file; every other type gives a new array.
        """
        info = self.tensor_info(name)
        reader = _READERS.get(info.type_id)
        if reader is None:
            raise InputError(
                f"tensor type {info.type_name} cannot be dequantized",
                source=self._source,
                field=shown(name),
                expected="one of " + ", ".join(DEQUANTIZABLE),
                found=f"{info.type_name} (ggml type {info.type_id})",
            )
        block_size = GGML_TYPES[info.type_id][1]
        # A garbled scale (inf, NaN) gives NaN weights, as it would in llama.cpp: say so in
        # the values, not in RuntimeWarnings.
        with np.errstate(invalid="ignore", over="ignore"):
            flat = reader(self._map, info.offset, info.n_elements // block_size)
        return flat.reshape(info.shape)

    def rows(self, name: str, indices: Sequence[int]) -> npt.NDArray[Any]:
        """Rows ``indices`` of the 2-D tensor ``name`` as float32, dequantizing only them.

        An embedding table of 49152 tokens is read a few rows at a time: each row is a
        whole number of blocks, so its bytes can be found without touching the rest.
        """
        info = self.tensor_info(name)
        reader = _READERS.get(info.type_id)
        if reader is None or len(info.shape) != 2:
            return self.tensor(name)[list(indices)]
        _, block_size, block_bytes = GGML_TYPES[info.type_id]
        blocks = info.shape[1] // block_size
        out = np.empty((len(indices), info.shape[1]), dtype=np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            for i, row in enumerate(indices):
                if not 0 <= row < info.shape[0]:
                    raise InputError(source=self._source, field=shown(name),
                                     expected=f"a row from 0 to {info.shape[0] - 1}",
                                     found=str(row))  # fmt: skip
                block = reader(self._map, info.offset + row * blocks * block_bytes, blocks)
                out[i] = block.reshape(-1)
        return out

    def __repr__(self) -> str:
        return f"GGUFFile({self._source!r}: v{self.version}, {len(self._infos)} tensors)"


def _map_file(path: Path, source: str) -> mmap.mmap:
    # a regular file only (it is mapped): a FIFO or a device is refused before a read
    with naming(source), open_regular(path, "a GGUF weight file (it is memory-mapped)") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        if size < 24:
            raise InputError(
                "file too short for a GGUF header",
                source=source,
                expected="at least 24 bytes (magic, version, counts)",
                found=f"{size} byte{'s' if size != 1 else ''}",
            )
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


class _Parser:
    """A cursor over the header; every read is checked against the file's end first."""

    def __init__(self, buf: mmap.mmap, end: int, source: str) -> None:
        self.buf = buf
        self.end = end
        self.pos = 0
        self.source = source

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
        values = np.frombuffer(self.buf, dtype=scalar[2], count=count, offset=start)
        if elem_type == _BOOL:
            if count and int(values.max()) > 1:
                raise self.fail("bad boolean in array", key, expected="0 or 1")
            return (values != 0).tolist()  # type: ignore[no-any-return]
        return values.tolist()  # type: ignore[no-any-return]

    def string_array(self, count: int, key: str) -> list[object]:
        """``count`` strings: the tokenizer's vocabulary and merges, so kept tight."""
        buf, end, pos = self.buf, self.end, self.pos
        out: list[object] = [None] * count
        index = 0
        try:
            for index in range(count):
                if end - pos < 8:
                    break
                length = _U64(buf, pos)[0]
                pos += 8
                stop = pos + length
                if stop > end:
                    break
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


def _alignment(metadata: dict[str, object], source: str) -> int:
    value = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or value <= 0
        or value & (value - 1)
        or value > 1 << 30
    ):
        raise InputError(
            "bad alignment",
            source=source,
            field="general.alignment",
            expected="a power of two",
            found=repr(value),
        )
    return value


def _place_tensors(
    infos: list[tuple[str, tuple[int, ...], int, int]],
    data_offset: int,
    alignment: int,
    file_size: int,
    source: str,
) -> dict[str, GGUFTensorInfo]:
    """Check each tensor's type, size and place in the file; return infos by name."""
    placed: dict[str, GGUFTensorInfo] = {}
    for name, dims, type_id, offset in infos:
        known = GGML_TYPES.get(type_id)
        if known is None:
            raise InputError(
                "unknown ggml tensor type",
                source=source,
                field=shown(name),
                expected="one of " + ", ".join(f"{c} ({n})" for c, (n, _, _) in GGML_TYPES.items()),
                found=str(type_id),
            )
        type_name, block_size, type_size = known
        if dims[0] % block_size:
            raise InputError(
                f"first dimension not a whole number of {type_name} blocks",
                source=source,
                field=shown(name),
                expected=f"a multiple of {block_size}",
                found=str(dims[0]),
            )
        if offset % alignment:
            raise InputError(
                "tensor data not aligned",
                source=source,
                field=shown(name),
                expected=f"an offset that is a multiple of {alignment}",
                found=str(offset),
            )
        nbytes = math.prod(dims) // block_size * type_size
        start = data_offset + offset
        if start + nbytes > file_size:
            raise InputError(
                "tensor data beyond the end of the file",
                source=source,
                field=shown(name),
                expected=f"bytes {start} to {start + nbytes} within the file's {file_size}",
                found=f"offset {offset}, {nbytes} bytes of {type_name}",
            )
        placed[name] = GGUFTensorInfo(
            name=name,
            shape=tuple(reversed(dims)),
            type_id=type_id,
            type_name=type_name,
            offset=start,
            nbytes=nbytes,
        )

    overlap = first_overlap(sorted((info.offset, info.offset + info.nbytes, info.name)
                                   for info in placed.values()))  # fmt: skip
    if overlap is not None:
        name, start, before, end = overlap
        raise InputError(
            "tensors overlap",
            source=source,
            field=shown(name),
            expected=f"data from byte {end} on (where {shown(before)!r} ends)",
            found=f"data from byte {start}",
        )
    return placed
