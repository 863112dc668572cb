"""Matrices stored as ``.npy`` files beside the model file, loaded safely.

A model file may name a ``.npy`` file where a matrix goes (``WQ: wq.npy``, an embedding
table, learned positions). It is read only if it is a regular file within the size
limit, never as a pickle, memory-mapped first (a header that claims more than the file
holds fails before anything is allocated), and must hold a non-empty 2-D array of finite
real numbers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from attntrace.errors import InputError, describe
from attntrace.kernel.fields import shape_text
from attntrace.kernel.frozen import freeze
from attntrace.kernel.reading import check_size, open_regular
from attntrace.kernel.spec import Matrix


class NpyReader:
    """Loads the .npy files a model file names, relative to its folder."""

    def __init__(self, folder: Path | None, source: str | None) -> None:
        self.folder = folder
        self.source = source

    @staticmethod
    def names_file(value: Any) -> bool:
        return isinstance(value, str) and value.lower().endswith(".npy")

    def load(self, name: str, field: str) -> Matrix:
        if self.folder is None:
            raise InputError(
                source=self.source,
                field=field,
                expected="numbers (a .npy file needs a model file to be relative to)",
                found=describe(name),
            )
        path = self.folder / name
        try:
            # A regular file only (it is memory-mapped), opened without waiting: a FIFO
            # or a device is refused before a read that could block or never end.
            with self._open(path, field) as head:
                check_size(os.fstat(head.fileno()).st_size)
                if head.read(6) != b"\x93NUMPY":
                    raise ValueError("it does not start as a .npy file does")
            # Memory-mapped first: a header that claims more than the file holds fails
            # here, instead of allocating what it claims.
            array = np.load(path, allow_pickle=False, mmap_mode="r")
        except InputError as error:
            if error.source is not None:  # from _open: complete
                raise
            raise InputError(error.message, source=self.source, field=field) from None
        except FileNotFoundError:
            raise InputError(
                source=self.source,
                field=field,
                expected="a .npy file (relative to the model file)",
                found=f"no file {str(path)!r}",
            ) from None
        except (OSError, ValueError) as error:  # not .npy, truncated, or pickled objects
            raise InputError(
                source=self.source,
                field=field,
                expected="a .npy array file",
                found=f"{str(path)!r}: {_npy_problem(error)}",
            ) from None
        if array.ndim != 2 or not (
            np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
        ):
            shape = shape_text(array.shape) or "a scalar"
            raise InputError(
                source=self.source,
                field=field,
                expected="a 2-D array of real numbers",
                found=f"{shape} of {array.dtype}",
            )
        if 0 in array.shape:
            raise InputError(
                source=self.source,
                field=field,
                expected="a non-empty matrix",
                found=shape_text(array.shape),
            )
        matrix = np.array(array, dtype=np.float64)  # into memory; the file is let go
        if not np.all(np.isfinite(matrix)):
            i, j = (int(x[0]) for x in np.nonzero(~np.isfinite(matrix)))
            raise InputError(
                source=self.source,
                field=f"{field}[{i}][{j}]",
                expected="a finite number",
                found=describe(float(matrix[i, j])),
            )
        return freeze(matrix, finite=True)  # the spec keeps it as it is (attntrace.kernel.frozen)

    def _open(self, path: Path, field: str) -> BinaryIO:
        try:
            return open_regular(path, "a .npy array file")
        except InputError as error:  # a FIFO, a device, a directory
            raise InputError(
                source=self.source,
                field=field,
                expected="a .npy array file",
                found=f"{str(path)!r}: {error.message} (.npy files are memory-mapped)",
            ) from None


def _npy_problem(error: Exception) -> str:
    """numpy's reason a .npy file would not load, without the Python internals a garbled
    header brings up (``malformed node or string ...: <ast.Name object at 0x7fa7...>``)."""
    text = str(error)
    if "malformed node" in text or " object at 0x" in text:
        return "its header is not the Python dictionary a .npy header is"
    return text
