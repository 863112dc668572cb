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

The file is opened once and read, never memory-mapped: a mapped file that another
process shortens kills the reader with SIGBUS, while a read comes back short and is one
line ("the file changed while it was read"). The header is read into memory (its first
8 MiB, more only where it runs longer; Gemma 3's is 6.5 MB) and parsed when a
:class:`GGUFFile` is made (the tokenizer's 49152-string arrays in a tight loop: about
0.04 s); a tensor's bytes are read when it is asked for and dequantized with numpy over
all blocks at once (a structured dtype view of the bytes, no Python loop over blocks).

A garbled or hostile file must end in one :class:`~attntrace.errors.InputError` line,
never a traceback. The header is read by :mod:`attntrace.real.weights.gguf_header`, the tensor
types by :mod:`attntrace.real.weights.ggml`; this module reads the file, places every tensor
within it, and hands out tensors.
"""

from __future__ import annotations

import math
import os
import weakref
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError
from attntrace.kernel.fields import counted
from attntrace.kernel.reading import naming, open_regular, read_array
from attntrace.real.text import first_overlap, shown
from attntrace.real.weights.ggml import DEQUANTIZABLE, GGML_TYPES, READERS, REMOVED_TYPES
from attntrace.real.weights.gguf_header import DEFAULT_ALIGNMENT, BeyondBuffer, Parser
from attntrace.visible import quoted

__all__ = ["GGML_TYPES", "GGUFFile", "GGUFTensorInfo"]

#: How much of the file is read for its header at first: more than any real model's
#: header (Gemma 3's vocabulary makes 6.5 MB), so one read is the usual case.
HEADER_READ_BYTES = 8 << 20


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


class GGUFFile:
    """A GGUF file, held open: its metadata, tensor infos and dequantized tensors.

    The header is read, parsed and validated in the constructor (so a bad file fails at
    once, with an :class:`InputError`); tensor data is read only by :meth:`tensor` and
    :meth:`rows`, from the file opened then (a file renamed over it is not read).
    """

    path: Path
    version: int
    #: Every key-value pair, arrays as lists (e.g. ``tokenizer.ggml.tokens``).
    metadata: dict[str, object]
    alignment: int
    #: Absolute offset of the data section.
    data_offset: int

    def __init__(self, path: Path, *, skip: Collection[str] = ()) -> None:
        """Open and check ``path``; the metadata arrays named in ``skip`` are stepped over
        (bounds checked, not decoded) and left out of :attr:`metadata`."""
        self.path = Path(path)
        self._source = str(path)
        self._file, size = _open_file(self.path, self._source)
        weakref.finalize(self, self._file.close)
        with naming(self._source):
            self.version, self.metadata, infos, header_end = _parse(
                self._file, size, self._source, frozenset(skip)
            )
        self.alignment = alignment_of(self.metadata, self._source)
        self.data_offset = -(-header_end // self.alignment) * self.alignment
        self._infos = place_tensors(infos, self.data_offset, self.alignment, size, self._source)

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

        The array is read-only (F32 ones are the bytes as read; the others dequantized).
        """
        info = self.tensor_info(name)
        reader = READERS.get(info.type_id)
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
        stored = self._read(info.offset, info.nbytes)
        with np.errstate(invalid="ignore", over="ignore"):
            flat = reader(stored, 0, info.n_elements // block_size)
        flat.flags.writeable = False
        return flat.reshape(info.shape)

    def _read(self, offset: int, nbytes: int) -> npt.NDArray[np.uint8]:
        """``nbytes`` of the file from ``offset``; an InputError if it has been shortened."""
        with naming(self._source):
            return read_array(self._file, offset, np.uint8, nbytes)

    def rows(self, name: str, indices: Sequence[int]) -> npt.NDArray[Any]:
        """Rows ``indices`` of the 2-D tensor ``name`` as float32, dequantizing only them.

        An embedding table of 49152 tokens is read a few rows at a time: each row is a
        whole number of blocks, so its bytes can be found without touching the rest.
        """
        info = self.tensor_info(name)
        reader = READERS.get(info.type_id)
        if reader is None or len(info.shape) != 2:
            return self.tensor(name)[list(indices)]
        _, block_size, block_bytes = GGML_TYPES[info.type_id]
        blocks = info.shape[1] // block_size
        out = np.empty((len(indices), info.shape[1]), dtype=np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            for i, row in enumerate(indices):
                if not 0 <= row < info.shape[0]:
                    raise InputError(
                        source=self._source,
                        field=shown(name),
                        expected=f"a row from 0 to {info.shape[0] - 1}",
                        found=str(row),
                    )
                stored = self._read(info.offset + row * blocks * block_bytes, blocks * block_bytes)
                out[i] = reader(stored, 0, blocks).reshape(-1)
        return out

    def __repr__(self) -> str:
        return f"GGUFFile({self._source!r}: v{self.version}, {len(self._infos)} tensors)"


def _open_file(path: Path, source: str) -> tuple[BinaryIO, int]:
    """The file, open, and its size: a regular file only (it is read to the sizes its
    header states), so a FIFO or a device is refused before a read."""
    with naming(source):
        handle = open_regular(path, "a GGUF weight file")
        size = os.fstat(handle.fileno()).st_size
    if size < 24:
        handle.close()
        raise InputError(
            "file too short for a GGUF header",
            source=source,
            expected="at least 24 bytes (magic, version, counts)",
            found=counted(size, "byte"),
        )
    return handle, size


def _parse(
    file: BinaryIO, size: int, source: str, skip: frozenset[str]
) -> tuple[int, dict[str, object], list[tuple[str, tuple[int, ...], int, int]], int]:
    """The header, parsed from the file's first bytes: 8 MiB, or as many as it runs to
    (each retry reads at least twice as much, so a long header costs a few reads)."""
    length = min(size, HEADER_READ_BYTES)
    while True:
        buf = read_array(file, 0, np.uint8, length).tobytes()
        try:
            return Parser(buf, size, source, skip).parse()
        except BeyondBuffer as short:
            length = min(size, max(2 * length, short.needed))


def alignment_of(metadata: dict[str, object], source: str) -> int:
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


def _unknown_type(name: str, type_id: int, source: str) -> InputError:
    """The error for a tensor type id no ggml reader can size: one ggml has removed (named,
    as llama.cpp refuses the file too) or one it never defined."""
    readable = "; attntrace reads " + ", ".join(DEQUANTIZABLE)
    removed = REMOVED_TYPES.get(type_id)
    if removed is not None:
        return InputError(
            f"tensor type {removed} has been removed from ggml (llama.cpp no longer reads it)",
            source=source,
            field=shown(name),
            expected="a type ggml still defines" + readable,
            found=f"{removed} (ggml type {type_id})",
        )
    return InputError(
        "unknown ggml tensor type",
        source=source,
        field=shown(name),
        expected=f"a type ggml defines (ggml type 0 to {max(GGML_TYPES)}){readable}",
        found=f"ggml type {type_id}",
    )


def place_tensors(
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
            raise _unknown_type(name, type_id, source)
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

    overlap = first_overlap(
        sorted((info.offset, info.offset + info.nbytes, info.name) for info in placed.values())
    )
    if overlap is not None:
        name, start, before, end = overlap
        raise InputError(
            "tensors overlap",
            source=source,
            field=shown(name),
            expected=f"data from byte {end} on (where {quoted(before, 80)} ends)",
            found=f"data from byte {start}",
        )
    return placed
