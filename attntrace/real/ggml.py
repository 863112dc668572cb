"""ggml's tensor types, and how the ones real models use are read as float32.

A GGUF tensor is stored in blocks of one ggml type: plain floats (a block is one
weight) or a quantized layout (32 weights and their fp16 scale, as in ggml-common.h).
Each reader dequantizes all blocks at once with numpy over a structured view of the
memory map, never a Python loop over blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

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

# Block layouts of the quantized types read here (ggml-common.h), 32 weights per block.
_Q8_0 = np.dtype([("d", "<f2"), ("qs", "i1", (32,))])
_Q4_0 = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_Q4_1 = np.dtype([("d", "<f2"), ("m", "<f2"), ("qs", "u1", (16,))])
_NIBBLE = np.uint8(0x0F)
_FOUR = np.uint8(4)


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
READERS: dict[int, Callable[[Any, int, int], npt.NDArray[Any]]] = {
    0: _read_f32,
    1: _read_f16,
    2: _dequantize_q4_0,
    3: _dequantize_q4_1,
    8: _dequantize_q8_0,
    28: _read_f64,
    30: _read_bf16,
}

#: Names of the ggml types :meth:`GGUFFile.tensor` can read.
DEQUANTIZABLE: tuple[str, ...] = tuple(GGML_TYPES[code][0] for code in sorted(READERS))
