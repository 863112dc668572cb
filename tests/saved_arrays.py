"""A person's arrays saved the three ways `attntrace check` reads (docs/check.md, "The file").

``.npz`` by ``np.savez``; ``.safetensors`` by a writer of the format's few bytes (what
``safetensors.numpy.save_file`` writes: the library is not installed here), through
tests/weight_files.py's :func:`safetensors_bytes`; ``.json`` by ``json.dump`` of
``.tolist()``, NaN and ±Infinity as Python writes them. bfloat16, which numpy has no
dtype for, is float32 rounded to nearest-even in its top 16 bits, as torch rounds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from weight_files import safetensors_bytes

FORMATS = ("npz", "safetensors", "json")
_SAFETENSORS_DTYPES = {"float16": "F16", "float32": "F32", "float64": "F64"}


def bfloat16_bytes(array: npt.NDArray[Any]) -> bytes:
    """The array as little-endian bfloat16: float32's top 16 bits, rounded to nearest
    even (NaN kept a quiet NaN)."""
    bits = np.ascontiguousarray(array, dtype="<f4").view("<u4").astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(np.asarray(array, dtype=np.float32))
    top = np.where(nan, (bits >> 16) | 0x0040, rounded).astype("<u2")
    return top.tobytes()


def bfloat16_values(array: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
    """What the bfloat16 file holds, read back as float32 (the low 16 bits zero)."""
    top = np.frombuffer(bfloat16_bytes(array), dtype="<u2").astype(np.uint32) << 16
    return top.view(np.float32).reshape(np.shape(array))


def safetensors_file(arrays: Mapping[str, npt.NDArray[Any]], dtype: str | None = None) -> bytes:
    """A .safetensors file of ``arrays``, each in its own dtype or all in ``dtype``
    (``bfloat16`` included): row-major data after the JSON header."""
    tensors = {}
    for name, array in arrays.items():
        kind = dtype or array.dtype.name
        if kind == "bfloat16":
            raw, code = bfloat16_bytes(array), "BF16"
        else:
            raw = np.ascontiguousarray(array, dtype=np.dtype(kind).newbyteorder("<")).tobytes()
            code = _SAFETENSORS_DTYPES[kind]
        tensors[name] = (code, list(array.shape), raw)
    return safetensors_bytes(tensors)


def save(
    folder: Path,
    arrays: Mapping[str, npt.NDArray[Any]],
    fmt: str,
    *,
    dtype: str | None = None,
    stem: str = "mine",
) -> Path:
    """Write ``arrays`` into ``folder`` as ``stem.FMT`` and return the path. ``dtype``
    (safetensors only) stores every array in that dtype, ``bfloat16`` among them."""
    path = folder / f"{stem}.{fmt}"
    if fmt == "npz":
        np.savez(path, **arrays)  # type: ignore[arg-type, unused-ignore]
    elif fmt == "safetensors":
        path.write_bytes(safetensors_file(arrays, dtype))
    elif fmt == "json":
        with path.open("w", encoding="utf-8") as f:
            json.dump({name: a.tolist() for name, a in arrays.items()}, f)
    else:
        raise ValueError(f"no format {fmt!r}")
    return path
