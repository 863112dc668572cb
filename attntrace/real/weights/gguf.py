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
never a traceback. The header is read by :mod:`attntrace.real.weights.gguf_header`, the tensor
types by :mod:`attntrace.real.weights.ggml`; this module maps the file, places every tensor
within it, and hands out tensors.
"""

from __future__ import annotations

import math
import mmap
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError
from attntrace.kernel.fields import counted
from attntrace.kernel.reading import naming, open_regular
from attntrace.real.text import first_overlap, shown
from attntrace.real.weights.ggml import DEQUANTIZABLE, GGML_TYPES, READERS
from attntrace.real.weights.gguf_header import DEFAULT_ALIGNMENT, Parser
from attntrace.visible import quoted

__all__ = ["GGML_TYPES", "GGUFFile", "GGUFTensorInfo"]


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

    def __init__(self, path: Path, *, skip: Collection[str] = ()) -> None:
        """Open and check ``path``; the metadata arrays named in ``skip`` are stepped over
        (bounds checked, not decoded) and left out of :attr:`metadata`."""
        self.path = Path(path)
        self._source = str(path)
        self._map = _map_file(self.path, self._source)
        parser = Parser(self._map, len(self._map), self._source, frozenset(skip))
        self.version, self.metadata, infos, header_end = parser.parse()
        self.alignment = alignment_of(self.metadata, self._source)
        self.data_offset = -(-header_end // self.alignment) * self.alignment
        self._infos = place_tensors(
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
        with np.errstate(invalid="ignore", over="ignore"):
            flat = reader(self._map, info.offset, info.n_elements // block_size)
        return flat.reshape(info.shape)

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
                found=counted(size, "byte"),
            )
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


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
