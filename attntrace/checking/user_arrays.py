"""The arrays a person's own attention saved, read for ``attntrace check`` (docs/check.md).

A file of named arrays comes in three formats, told apart by the suffix: ``.npz`` (what
``np.savez`` writes), ``.safetensors`` and ``.json`` (an object of name -> nested lists of
numbers). From Python, :func:`attntrace.check` takes a mapping of numpy arrays, torch
tensors or nested lists (:func:`given_arrays`). Either way each array becomes a
:class:`~attntrace.checking.given.GivenArray`: its numbers widened to float64 (exactly) and
the dtype it was saved in, which sets the comparison's tolerance.

The file is a stranger's, so every way it can be wrong is one :class:`InputError` naming
the file and the array, and memory is bounded before it is spent: the file must fit the
size limit (:func:`~attntrace.kernel.reading.max_file_bytes`), and a ``.npz``, which
unpacks to more than it holds, has every member's unpacked size (the zip's, and its
``.npy`` header's shape × item size) checked against that limit before anything is read.
A ``.npz`` member is read the way ``np.load(allow_pickle=False)`` reads it, by its
``.npy`` header, but never as an object array: nothing is unpickled. NaN and infinity
are numbers here, not errors: an unstable softmax writes them, and ``check`` names that
mistake from them. Nested lists are read by :mod:`.nested_lists`.
"""

from __future__ import annotations

import math
import os
import struct
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from tokenize import TokenError
from typing import Any, BinaryIO, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from attntrace.arguments import wrong_type
from attntrace.checking.given import DTYPES, GivenArray
from attntrace.checking.nested_lists import nested_numbers
from attntrace.errors import InputError, describe
from attntrace.kernel.budget import FLOAT, refuse_past_budget
from attntrace.kernel.fields import counted, shape_text
from attntrace.kernel.frozen import freeze
from attntrace.kernel.reading import (
    MAX_MB_VARIABLE,
    check_size,
    max_file_bytes,
    open_regular,
    read_text,
    sized,
)
from attntrace.modelfile.parse import ParsedMapping, parse_document

SUFFIXES = (".npz", ".safetensors", ".json")
HOLDING = "named arrays (a .npz, .safetensors or .json file)"  # what the file holds
FLOAT_ARRAY = "a float array (float16, bfloat16, float32 or float64)"


def read_user_arrays(path: str | Path) -> dict[str, GivenArray]:
    """Every array of the file at ``path``, by name, in the order the file holds them."""
    path = Path(path)
    source = str(path)
    readers = {".npz": _read_npz, ".safetensors": _read_safetensors, ".json": _read_json}
    suffix = path.suffix.lower()
    reader = readers.get(suffix)
    if reader is None:
        found = f"a {suffix} file" if suffix else "a file with no suffix"
        if suffix == ".npy":  # one unnamed array
            found += " (one unnamed array: save named ones with np.savez(path, Q=q, ...))"
        raise InputError(
            source=source,
            expected="a " + ", ".join(SUFFIXES[:-1]) + f" or {SUFFIXES[-1]} file of named arrays",
            found=found,
        )
    try:
        arrays = reader(path)
        if not arrays:
            raise InputError("no arrays", expected="at least one named array")
    except InputError as error:
        raise error.with_source(source) from None
    return arrays


def given_arrays(arrays: Mapping[str, object]) -> dict[str, GivenArray]:
    """The arrays handed to :func:`attntrace.check`, by name, in the mapping's order.

    A value may be a numpy array (float16, float32, float64, or ml_dtypes' bfloat16), a
    torch tensor (recognised without importing torch) or nested lists of numbers (read
    as float64). Another type is a :class:`TypeError`; a value of the right type that is
    no float array (integers, an empty one) an :class:`InputError` naming it.
    """
    if not isinstance(arrays, Mapping):
        raise wrong_type(arrays, "arrays", "a mapping of names to arrays (a dict)")
    given: dict[str, GivenArray] = {}
    for name, value in arrays.items():
        if not isinstance(name, str):
            raise wrong_type(name, "each name in arrays", "a str")
        given[name] = _python_array(name, value)
    if not given:
        raise InputError("no arrays", field="arrays", expected="at least one named array")
    return given


# --------------------------------------------------------------------------- arrays


def _given(name: str, array: npt.NDArray[Any], dtype: str | None = None) -> GivenArray:
    """``array`` (of the float ``dtype`` it was saved in, by default its own) as a
    GivenArray: checked to be an array of at least one number, and widened to float64."""
    saved = dtype if dtype is not None else _float_dtype(array.dtype, name)
    if saved not in DTYPES:
        raise InputError(field=name, expected=FLOAT_ARRAY, found=saved)
    _check_shape(array.shape, name)
    if array.dtype.name == "bfloat16":  # ml_dtypes': every bfloat16 is a float32
        array = array.astype(np.float32)
    return GivenArray(name, freeze(np.array(array, dtype=np.float64)), saved)


def _float_dtype(dtype: np.dtype[Any], name: str) -> str:
    """The name of ``dtype`` if it is one an array may be saved in (DTYPES)."""
    if dtype.name in DTYPES:
        return str(dtype.name)
    found = dtype.name
    if dtype.hasobject:
        found = "object (Python objects)"
    elif dtype.kind == "V" and dtype.itemsize == 2 and dtype.names is None:
        found = (
            "V2 (raw 2-byte values: how numpy saves ml_dtypes' bfloat16; save "
            "bfloat16 arrays with safetensors, or cast them to float32)"
        )
    raise InputError(field=name, expected=FLOAT_ARRAY, found=found)


def _check_shape(shape: tuple[int, ...], name: str) -> None:
    if not shape:
        raise InputError(field=name, expected="an array (one axis or more)", found="a scalar")
    if 0 in shape:
        raise InputError(field=name, expected="a non-empty array", found=shape_text(shape))
    if len(shape) > MAX_AXES:  # numpy 1.x holds no more; 2.x holds 64: refused alike
        raise InputError(
            field=name, expected=f"an array of at most {MAX_AXES} axes", found=f"{len(shape)} axes"
        )


# The most axes an array may have: numpy 1's limit (a stage has two; the most any layout
# adds is a head's and a batch's), so every numpy says the same.
MAX_AXES = 32


# ---------------------------------------------------------------------------- .npz


def _read_npz(path: Path) -> dict[str, GivenArray]:
    with _binary(path, "a .npz file (what np.savez writes)") as handle:
        try:
            with zipfile.ZipFile(handle) as archive:
                members = _npz_members(archive)
                headers = [(name, info, _npz_header(archive, info, name)) for name, info in members]
                refuse_arrays_past_budget(
                    [(math.prod(header.shape), header.dtype.itemsize) for _, _, header in headers]
                )
                return {
                    name: _npz_array(archive, info, name, header) for name, info, header in headers
                }
        except _UNPACK_ERRORS as error:  # garbled, cut short, encrypted, unknown packing
            raise InputError(
                f"not a readable .npz file (a zip of .npy arrays): {_first_line(error)}"
            ) from None


def refuse_arrays_past_budget(arrays: list[tuple[int, int]]) -> None:
    """Refuse arrays of (numbers, bytes each as saved) that would not fit the memory
    budget once widened to float64, counted from their headers before any is read: each
    is held as float64, and the largest also as it was saved while it is widened."""
    held = sum(count * FLOAT for count, _ in arrays)
    saved = max((count * itemsize for count, itemsize in arrays), default=0)
    refuse_past_budget(
        f"reading {counted(len(arrays), 'array')}",
        {"the arrays as float64": held, "the largest as saved, while widened": saved},
    )


def _npz_members(archive: zipfile.ZipFile) -> list[tuple[str, zipfile.ZipInfo]]:
    """The archive's ``.npy`` members, named as np.savez named them, their unpacked
    sizes together within the size limit (a zip bomb is refused here, unread)."""
    members: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        name = info.filename.removesuffix(".npy")
        if name == info.filename:
            raise InputError(
                f"the member {info.filename!r} is no .npy array",
                expected="only NAME.npy members, as np.savez writes",
            )
        if name in members:
            raise InputError("two arrays of one name", field=name, expected="each name once")
        members[name] = info
    total = sum(info.file_size for info in members.values())
    limit = max_file_bytes()
    if total > limit:
        raise InputError(
            f"the arrays unpack to {sized(total)}, over the limit of "
            f"{sized(limit, limit=True)} (set {MAX_MB_VARIABLE} to read "
            "larger files)"
        )
    return list(members.items())


class NpyHeader(NamedTuple):
    """A member's checked ``.npy`` header: what to read, and where its numbers start."""

    shape: tuple[int, ...]
    fortran_order: bool
    dtype: np.dtype[Any]
    saved: str  # the dtype's name, one of DTYPES
    offset: int


def _npz_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> NpyHeader:
    """One member's ``.npy`` header, checked (a float dtype, a shape of at least one
    number, no more numbers than the member holds) before any of its numbers is read:
    (shape, Fortran order, dtype, the dtype's name as saved, where the numbers start)."""
    with archive.open(info) as member:
        try:
            version = np.lib.format.read_magic(member)  # type: ignore[no-untyped-call, unused-ignore]
            if version not in ((1, 0), (2, 0), (3, 0)):
                raise ValueError(f"an unknown .npy version {version[0]}.{version[1]}")
            # 3.0 differs from 2.0 only in its header's encoding (UTF-8, for structured
            # dtypes' field names, which are refused here whatever they read as)
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran_order, dtype = read_header(member)  # type: ignore[no-untyped-call, unused-ignore]
        except (ValueError, TypeError, SyntaxError, TokenError, RecursionError) as error:
            # numpy parses the header as a Python literal (ast), Python 2's via tokenize
            raise InputError(f"not a .npy array ({_header_problem(error)})", field=name) from None
        offset = member.tell()
    if dtype.hasobject:  # np.load would need allow_pickle=True
        raise InputError(
            "an array of Python objects, which only pickle can load (a .npz is never unpickled)",
            field=name,
            expected=FLOAT_ARRAY,
            found="object",
        )
    saved = _float_dtype(dtype, name)
    if any(length < 0 for length in shape):
        raise InputError("a .npy header with a negative length", field=name, found=str(shape))
    _check_shape(shape, name)
    size = math.prod(shape) * dtype.itemsize
    room = info.file_size - offset  # what the zip says follows the header
    if size > room:  # said plainly (read() would stop at the member's end anyway)
        raise InputError(
            "its header declares more numbers than the member holds",
            field=name,
            expected=f"at most {sized(room)}",
            found=f"{shape_text(shape)} {dtype.name} ({sized(size)})",
        )
    return NpyHeader(shape, fortran_order, dtype, saved, offset)


def _npz_array(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, header: NpyHeader
) -> GivenArray:
    """One member's numbers, read by its checked header (:func:`_npz_header`)."""
    shape, fortran_order, dtype, saved, offset = header
    size = math.prod(shape) * dtype.itemsize
    with archive.open(info) as member:
        member.read(offset)  # the header again: a zip member reads forward only
        data = member.read(size)
    if len(data) < size:
        raise InputError(
            "the array is cut short", field=name, expected=sized(size), found=sized(len(data))
        )
    order: Literal["C", "F"] = "F" if fortran_order else "C"
    return _given(name, np.frombuffer(data, dtype=dtype).reshape(shape, order=order), saved)


def _header_problem(error: Exception) -> str:
    """Why a .npy header would not read, without the Python internals a garbled one
    brings up (``malformed node or string ...``, a tokenizer's tuple)."""
    text = _first_line(error)
    if isinstance(error, ValueError | TypeError) and not (
        "malformed node" in text or " object at 0x" in text or "Cannot parse" in text
    ):
        return text
    return "its header is not the Python dictionary a .npy header is"


def _first_line(error: BaseException) -> str:
    """An error's own words, first line only (numpy's header errors run to several)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _unpack_errors() -> tuple[type[Exception], ...]:
    """What unpacking a garbled zip can raise: zipfile's own error, and those of the
    decompressors and readers under it."""
    errors: list[type[Exception]] = [
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        OSError,
        NotImplementedError,
        RuntimeError,
        ValueError,
        struct.error,
    ]
    try:
        import lzma
    except ImportError:  # a Python built without lzma (zipfile then refuses LZMA members)
        return tuple(errors)
    return (*errors, lzma.LZMAError)


_UNPACK_ERRORS = _unpack_errors()


@contextmanager
def _binary(path: Path, holding: str) -> Iterator[BinaryIO]:
    """The file opened to read, if it is a regular one, not empty, within the size limit."""
    try:
        handle = open_regular(path, holding)
    except FileNotFoundError:
        raise InputError("no such file") from None
    except IsADirectoryError:
        raise InputError(f"is a directory, expected {holding}") from None
    except OSError as error:
        raise InputError(f"cannot read the file: {error.strerror or error}") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            raise InputError("the file is empty", expected=HOLDING)
        check_size(size)
        yield handle


# --------------------------------------------------------------------- .safetensors


def _read_safetensors(path: Path) -> dict[str, GivenArray]:
    from attntrace.real.weights.safetensors import SAFETENSORS_DTYPES, SafetensorsFile

    with _binary(path, "a .safetensors file"):
        pass  # a regular file, not empty, within the size limit: then read
    tensors = SafetensorsFile(path)
    # a BF16 array is read as 2 bytes a number, then widened through 4 (float32)
    widening = {"BF16": 6}
    refuse_arrays_past_budget(
        [
            (
                math.prod(tensors.shape(name)),
                widening.get(
                    tensors.dtype_name(name), SAFETENSORS_DTYPES[tensors.dtype_name(name)].itemsize
                ),
            )
            for name in tensors
        ]
    )
    # each array read and widened in turn: one array as saved is held at a time
    return {name: _given(name, tensors[name], tensors.stored_dtype(name)) for name in tensors}


# ---------------------------------------------------------------------------- .json


def _read_json(path: Path) -> dict[str, GivenArray]:
    document = parse_document(read_text(path, HOLDING), str(path), is_json=True)
    if not isinstance(document, ParsedMapping):
        raise InputError(
            expected="a JSON object of name -> nested lists of numbers", found=describe(document)
        )
    if document.duplicates:
        key = document.duplicates[0][0]
        raise InputError(f"duplicate key {key!r}: each array may appear once")
    arrays = {name: nested_numbers(value, name, python=False) for name, value in document.items()}
    return {name: _given(name, array, _json_dtype(array)) for name, array in arrays.items()}


def _json_dtype(numbers: npt.NDArray[np.float64]) -> str:
    """float32 where every number is one, else float64 (docs/check.md, "The file").

    JSON has no dtypes: ``json.dump(a.tolist())`` of a float32 array writes each float32
    exactly, and holding those numbers to float64's tolerance would fail every float32
    implementation. A float64 computation whose every result is a float32 is all but
    impossible unless the numbers are small integers, which match either way.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        narrowed = numbers.astype(np.float32).astype(np.float64)
    same = (narrowed == numbers) | (np.isnan(narrowed) & np.isnan(numbers))
    return "float32" if bool(same.all()) else "float64"


# ------------------------------------------------------------------ Python's arrays


def _python_array(name: str, value: object) -> GivenArray:
    if isinstance(value, np.ndarray):
        return _given(name, value)
    # torch's other types are no array: a torch.Size is a tuple, but a shape (q.shape)
    torch = type(value).__module__.split(".")[0] == "torch"
    if torch and hasattr(value, "detach"):
        return _torch_array(name, value)
    if isinstance(value, list | tuple) and not torch:
        return _given(name, nested_numbers(value, name, python=True), "float64")
    raise wrong_type(
        value, f"arrays[{name!r}]", "a numpy array, a torch tensor or nested lists of numbers"
    )


def _torch_array(name: str, tensor: Any) -> GivenArray:
    """A torch tensor, read through numpy without importing torch: bfloat16, which numpy
    lacks, through float32 (exactly)."""
    tensor = tensor.detach().cpu()
    dtype = str(tensor.dtype).removeprefix("torch.")
    if dtype not in DTYPES:
        raise InputError(field=name, expected=FLOAT_ARRAY, found=dtype)
    try:
        array = (tensor.float() if dtype == "bfloat16" else tensor).numpy()
    except (TypeError, RuntimeError) as error:  # a sparse or quantized tensor
        raise InputError(
            f"a tensor numpy cannot read ({_first_line(error)})",
            field=name,
            expected="a dense tensor (call .to_dense() first)",
        ) from None
    return _given(name, array, dtype)
