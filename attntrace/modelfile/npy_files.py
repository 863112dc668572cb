"""Matrices stored as ``.npy`` files beside the model file, loaded safely.

A model file may name a ``.npy`` file where a matrix goes (``WQ: wq.npy``, an embedding
table, learned positions). It is read only if it is a regular file within the size
limit, never as a pickle, and must hold a non-empty 2-D array of finite real numbers.

A file is known by its header before its numbers are read: :meth:`NpyReader.header`
reads and checks the header alone (a shape, a dtype, the numbers it declares against
the bytes the file holds), so that a model file's matrices can be checked against each
other and counted against the memory budget before any is converted
(:mod:`attntrace.modelfile.model_budget`). The numbers are then read, not memory-mapped:
another process may shorten a file while it is read (``np.save`` truncates before it
writes), and a mapped page past the new end kills the reader with SIGBUS, while a read
just comes back short, which is said in one line. They are read a chunk at a time into
the float64 matrix they become, so converting costs the matrix and one chunk.
"""

from __future__ import annotations

import math
import os
import struct
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from tokenize import TokenError
from typing import Any, BinaryIO

import numpy as np

from attntrace.errors import InputError, describe
from attntrace.kernel.fields import shape_text
from attntrace.kernel.frozen import freeze
from attntrace.kernel.reading import check_size, open_regular, sized
from attntrace.kernel.spec import Matrix

NPY = "a .npy array file"
CHUNK_BYTES = 1 << 22  # the raw numbers read (and converted) at a time: 4 MiB
FLOAT = 8  # bytes of a float64, what every matrix is held as

# What a garbled header can raise from numpy's reader: its own ValueError, and those of
# the Python literal parser under it (Python 2 headers go through tokenize), and of
# dtypes and shapes past any size (a dtype of (f8, (10**400,)), nesting 1,000 deep).
_HEADER_ERRORS = (
    ValueError,
    TypeError,
    SyntaxError,
    TokenError,
    RecursionError,
    OverflowError,
    MemoryError,
    struct.error,
)


@dataclass(frozen=True)
class NpyHeader:
    """What a ``.npy`` file's header declares, checked: a non-empty 2-D array of real
    numbers (integers or floats) that the file holds in full."""

    path: Path
    shape: tuple[int, int]
    dtype: np.dtype[Any]
    fortran_order: bool
    offset: int  # where the numbers start

    @property
    def held_bytes(self) -> int:
        """The bytes of the float64 matrix it becomes."""
        return self.shape[0] * self.shape[1] * FLOAT


def _after_header(handle: BinaryIO, header: NpyHeader) -> None:
    """Called once a header is read, before the numbers are (a test shortens the file
    here, as another process's ``np.save`` would)."""


# The hook above, as the reader calls it: replaced in tests only.
after_header: Callable[[BinaryIO, NpyHeader], None] = _after_header


class NpyReader:
    """Loads the .npy files a model file names, relative to its folder."""

    def __init__(self, folder: Path | None, source: str | None) -> None:
        self.folder = folder
        self.source = source
        # the headers read before the numbers (by field): what the budget counted, which
        # the file must still declare when its numbers are read
        self.counted: dict[str, NpyHeader] = {}

    @staticmethod
    def names_file(value: Any) -> bool:
        return isinstance(value, str) and value.lower().endswith(".npy")

    def header(self, name: str, field: str) -> NpyHeader:
        """The checked header of the file ``name`` (the numbers are not read)."""
        path = self._path(name, field)
        with self._open(path, field) as handle:
            header = self._header(handle, path, field)
        self.counted[field] = header
        return header

    def load(self, name: str, field: str) -> Matrix:
        """The matrix of the file ``name``, read-only float64, its numbers all finite."""
        path = self._path(name, field)
        with self._open(path, field) as handle:
            header = self._header(handle, path, field)
            if self.counted.get(field, header) != header:  # replaced since it was counted
                raise self._changed(header, field, "its header is not the one read before")
            after_header(handle, header)
            return self._numbers(handle, header, field)

    def _changed(self, header: NpyHeader, field: str, how: str) -> InputError:
        return InputError(
            f"the file changed while it was read ({how})",
            source=self.source,
            field=f"{field}: {header.path.name}",
        )

    def _path(self, name: str, field: str) -> Path:
        if self.folder is None:
            raise InputError(
                source=self.source,
                field=field,
                expected="numbers (a .npy file needs a model file to be relative to)",
                found=describe(name),
            )
        return self.folder / name

    def _open(self, path: Path, field: str) -> BinaryIO:
        """The file, if it is a regular one (opened without waiting: a FIFO or a device
        is refused before a read that could block or never end) within the size limit."""
        try:
            handle = open_regular(path, NPY)
        except FileNotFoundError:
            raise InputError(
                source=self.source,
                field=field,
                expected="a .npy file (relative to the model file)",
                found=f"no file {str(path)!r}",
            ) from None
        except InputError as error:  # a FIFO, a device, a directory
            raise self._refused(path, field, error.message or "not a regular file") from None
        except OSError as error:
            raise self._refused(path, field, f"cannot read it: {error.strerror or error}") from None
        try:
            check_size(os.fstat(handle.fileno()).st_size)
        except InputError as error:
            handle.close()
            raise InputError(error.message, source=self.source, field=field) from None
        return handle

    def _refused(self, path: Path, field: str, why: str) -> InputError:
        return InputError(
            source=self.source, field=field, expected=NPY, found=f"{str(path)!r}: {why}"
        )

    def _header(self, handle: BinaryIO, path: Path, field: str) -> NpyHeader:
        """Read and check the header: a 2-D array of real numbers, all in the file."""
        try:
            shape, fortran_order, dtype = _read_header(handle)
        except OSError as error:
            raise self._refused(path, field, f"cannot read it: {error.strerror or error}") from None
        except _HEADER_ERRORS as error:
            raise self._refused(path, field, _header_problem(error)) from None
        if any(length < 0 for length in shape):
            raise self._refused(path, field, f"a negative length in its shape {_shape(shape)}")
        if len(shape) != 2 or dtype.kind not in "iuf" or dtype.names or dtype.shape:
            shown = _shape(shape) or "a scalar"
            raise InputError(
                source=self.source,
                field=field,
                expected="a 2-D array of real numbers",
                found=f"{shown} of {dtype}",
            )
        if 0 in shape:
            raise InputError(
                source=self.source, field=field, expected="a non-empty matrix", found=_shape(shape)
            )
        offset = handle.tell()
        room = os.fstat(handle.fileno()).st_size - offset
        size = math.prod(shape) * dtype.itemsize
        if size > room:
            raise self._refused(
                path,
                field,
                f"its header declares {_shape(shape)} {dtype.name} ({_bytes(size)}), more than "
                f"the {sized(room)} the file holds after it",
            )
        return NpyHeader(path, (shape[0], shape[1]), dtype, fortran_order, offset)

    def _numbers(self, handle: BinaryIO, header: NpyHeader, field: str) -> Matrix:
        """The numbers, a chunk at a time into the float64 matrix, each chunk checked
        finite as it comes; a file that comes back shorter than its header said has
        changed while it was read, and is said so."""
        rows, columns = header.shape
        # numpy writes a Fortran-ordered array's columns first: as the transposed matrix
        stored = np.empty((columns, rows) if header.fortran_order else (rows, columns))
        flat = stored.reshape(-1)  # a view: filling it fills the matrix
        per_chunk = max(1, CHUNK_BYTES // header.dtype.itemsize)
        for start in range(0, flat.size, per_chunk):
            count = min(per_chunk, flat.size - start)
            data = handle.read(count * header.dtype.itemsize)
            if len(data) < count * header.dtype.itemsize:
                raise self._changed(header, field, "it is shorter than its header says")
            with np.errstate(all="ignore"):  # a longdouble past float64's range: inf
                flat[start : start + count] = np.frombuffer(data, dtype=header.dtype)
            self._check_finite(flat[start : start + count], start, stored.shape, header, field)
        return freeze(stored.T if header.fortran_order else stored, finite=True)

    def _check_finite(
        self,
        chunk: Matrix,
        start: int,
        stored: tuple[int, ...],
        header: NpyHeader,
        field: str,
    ) -> None:
        """An error at the first NaN or infinity of ``chunk``, by its row and column."""
        if np.isfinite(chunk).all():
            return
        at = start + int(np.flatnonzero(~np.isfinite(chunk))[0])
        i, j = divmod(at, stored[1])
        if header.fortran_order:
            i, j = j, i
        raise InputError(
            source=self.source,
            field=f"{field}[{i}][{j}]",
            expected="a finite number",
            found=describe(float(chunk[at - start])),
        )


def _read_header(handle: BinaryIO) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    """The shape, order and dtype a ``.npy`` header declares, by numpy's own reader
    (which parses it as a Python literal, never unpickling anything), with no warning
    of numpy's let through to stderr (a Python 2 header's, an overflow's)."""
    if handle.read(6) != b"\x93NUMPY":
        raise ValueError("it does not start as a .npy file does")
    handle.seek(0)
    npy_format: Any = np.lib.format  # untyped in numpy's stubs
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        version = npy_format.read_magic(handle)
        if version not in ((1, 0), (2, 0), (3, 0)):
            raise ValueError(f"an unknown .npy version {version[0]}.{version[1]}")
        # 3.0 differs from 2.0 only in its header's encoding (UTF-8, for structured
        # dtypes' field names, which are refused here whatever they read as)
        read = (
            npy_format.read_array_header_1_0
            if version == (1, 0)
            else npy_format.read_array_header_2_0
        )
        shape, fortran_order, dtype = read(handle)
    return tuple(int(length) for length in shape), bool(fortran_order), dtype


def _shape(shape: tuple[int, ...]) -> str:
    """A shape as messages write it, a length past any file's in digits rather than in
    full (``10**400`` would be 401 characters of the line)."""
    if all(abs(length) < 10**15 for length in shape):
        return shape_text(shape)
    return " × ".join(
        str(length) if abs(length) < 10**15 else f"a length of {len(str(length))} digits"
        for length in shape
    )


def _bytes(count: int) -> str:
    """``76293.9 MiB``, or for a count past any memory its power of ten (``about
    10**19 bytes``: no float holds 10**400, and MiB of 17 digits read as noise)."""
    return sized(count) if count < 2**50 else f"about 10**{len(str(count)) - 1} bytes"


# numpy's own words for a header it reads but refuses, passed on as they are
_NUMPY_REASONS = (
    "Header is not a dictionary",
    "Header does not contain the correct keys",
    "shape is not valid",
    "fortran_order is not a valid bool",
    "descr is not a valid dtype descriptor",
    "Header info length",
    "EOF",
    "an unknown .npy version",
    "it does not start as a .npy file does",
)
_NOT_A_DICTIONARY = "its header is not the Python dictionary a .npy header is"


def _header_problem(error: BaseException) -> str:
    """Why a header would not read: numpy's reason where it gave one of its own (first
    line only, at most 120 characters), else what kind of wrong it is, without the
    Python internals a garbled header brings up (``malformed node or string ...: <ast.Name
    object at 0x7fa7...>``, a tokenizer's tuple, an unpacking's counts)."""
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else ""
    if isinstance(error, SyntaxError | TokenError | RecursionError | UnicodeDecodeError):
        return _NOT_A_DICTIONARY
    if isinstance(error, ValueError) and text.startswith(_NUMPY_REASONS):
        if text.startswith("Header info length"):  # numpy's advice is about its own API
            return "its header is over 10,000 characters (numpy's limit for a safe read)"
        return text if len(text) <= 120 else text[:119] + "…"
    if "Cannot parse" in text or "malformed node" in text:
        return _NOT_A_DICTIONARY
    return "its header does not describe an array numpy reads (descr, fortran_order, shape)"
