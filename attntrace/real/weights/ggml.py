"""ggml's tensor types, and how the ones real models use are read as float32.

A GGUF tensor is stored in blocks of one ggml type: plain floats (a block is one
weight) or a quantized layout (32 weights and their fp16 scale, or a 256-weight
"k-quant" super-block of sub-block scales, as in ggml-common.h). Each reader
dequantizes all blocks at once with numpy over a structured view of the bytes read,
never a Python loop over blocks.

Every reader computes what ggml's ``dequantize_row_*`` (ggml-quants.c) computes, in the
same float32 operations in the same order, so the weights are the ones llama.cpp and the
``gguf`` package's ``gguf/quants.py`` produce, bit for bit (tools/make_reader_goldens.py
checks it against the real files).
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
# Gemma 3's Q4_K_M file adds these (ggml-common.h: block_q5_0, block_q4_K, block_q6_K).
_Q5_0 = np.dtype([("d", "<f2"), ("qh", "u1", (4,)), ("qs", "u1", (16,))])  # qh: a LE uint32
_Q4_K = np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", (12,)), ("qs", "u1", (128,))])
_Q6_K = np.dtype([("ql", "u1", (128,)), ("qh", "u1", (64,)), ("scales", "i1", (16,)), ("d", "<f2")])
_NIBBLE = np.uint8(0x0F)
_FOUR = np.uint8(4)
_SIX_BITS = np.uint8(0x3F)
_TWO_BITS = np.uint8(0x03)
_QH_SHIFTS = np.array([0, 2, 4, 6], dtype=np.uint8)


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


def _low_high(qs: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Bytes [..., k] as their 2k 4-bit values: the low nibbles first, then the high ones
    (uint8, along a new last-but-one axis of 2)."""
    out = np.empty((*qs.shape[:-1], 2, qs.shape[-1]), dtype=np.uint8)
    out[..., 0, :] = qs & _NIBBLE
    out[..., 1, :] = qs >> _FOUR
    return out


def _scaled(q: npt.NDArray[Any], scale: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """float32(q) · scale in one pass (the small integers cast as they are multiplied, no
    float32 copy of them first): the same product, rounded once, as ggml's ``q * d``."""
    out = np.empty(q.shape, dtype=np.float32)
    np.multiply(q, scale, out=out, dtype=np.float32)
    return out


def _dequantize_q5_0(buf: Any, offset: int, n_blocks: int) -> npt.NDArray[Any]:
    """x = d·(q − 16), q of 5 bits: fp16 scale, 32 high bits (a little-endian uint32
    ``qh``), 16 bytes of low nibbles.

    ggml-quants.c ``dequantize_row_q5_0``: weight j (j < 16) is the low nibble of byte j
    with bit j of qh above it, weight j + 16 the high nibble with bit j + 16.
    """
    blocks = np.frombuffer(buf, dtype=_Q5_0, count=n_blocks, offset=offset)
    q = _low_high(blocks["qs"]).reshape(n_blocks, 32)
    # qh's 4 little-endian bytes, bit j (least significant first) for weight j
    high = np.unpackbits(blocks["qh"], axis=1, bitorder="little")
    high <<= _FOUR
    q |= high
    signed = q.view(np.int8)  # 0..31: the bit pattern is the value
    signed -= np.int8(16)  # exact in int8, as ggml's int ``x0 - 16``
    return _scaled(signed, _f32(blocks["d"])[:, None])


def _k4_scales_mins(scales: npt.NDArray[Any]) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """The 8 six-bit scales and 8 six-bit minimums packed in Q4_K's 12 bytes (uint8 [n, 8]
    each), as ggml-quants.c ``get_scale_min_k4`` unpacks them: sub-block j < 4 has its
    scale and minimum in the low 6 bits of bytes j and j + 4; sub-block j ≥ 4 has their low
    4 bits in byte j + 4 (low and high nibble) and their top 2 bits in the top bits of bytes
    j − 4 and j."""
    first, second, third = scales[:, 0:4], scales[:, 4:8], scales[:, 8:12]
    sc = np.empty((scales.shape[0], 8), dtype=np.uint8)
    mins = np.empty((scales.shape[0], 8), dtype=np.uint8)
    sc[:, :4] = first & _SIX_BITS
    mins[:, :4] = second & _SIX_BITS
    sc[:, 4:] = (third & _NIBBLE) | ((first >> np.uint8(6)) << _FOUR)
    mins[:, 4:] = (third >> _FOUR) | ((second >> np.uint8(6)) << _FOUR)
    return sc, mins


def _dequantize_q4_k(buf: Any, offset: int, n_blocks: int) -> npt.NDArray[Any]:
    """x = (d·sc)·q − dmin·m per 32-weight sub-block: fp16 d and dmin, 12 bytes of 6-bit
    scales and minimums, 128 bytes of nibbles.

    ggml-quants.c ``dequantize_row_q4_K``: each 64 weights read 32 bytes, the low nibbles
    (sub-block 2i, scale d1 = d·sc, offset m1 = dmin·m) then the high ones (2i + 1), each
    weight ``d1 * q - m1`` in float32.
    """
    blocks = np.frombuffer(buf, dtype=_Q4_K, count=n_blocks, offset=offset)
    sc, mins = _k4_scales_mins(blocks["scales"])
    scale = _f32(blocks["d"])[:, None] * sc.astype(np.float32)
    minimum = _f32(blocks["dmin"])[:, None] * mins.astype(np.float32)
    q = _low_high(blocks["qs"].reshape(n_blocks, 4, 32)).reshape(n_blocks, 8, 32)
    out = _scaled(q, scale[:, :, None])
    out -= minimum[:, :, None]
    return out.reshape(n_blocks, 256)


def _dequantize_q6_k(buf: Any, offset: int, n_blocks: int) -> npt.NDArray[Any]:
    """x = (d·sc)·(q − 32), q of 6 bits, one int8 scale per 16 weights: 128 bytes of low
    nibbles, 64 bytes of 2-bit high parts, 16 scales, fp16 d (last in the block).

    ggml-quants.c ``dequantize_row_q6_K``: each half of 128 weights reads 64 bytes of ql and
    32 of qh; its quarter k (32 weights) takes the low nibbles of ql[0:32] (k = 0) or
    ql[32:64] (k = 1), or their high nibbles (k = 2, 3), with bits 2k, 2k + 1 of qh on top;
    weight i of the block has scale sc[i // 16], computed as ``d * sc * q`` (left to right).
    """
    blocks = np.frombuffer(buf, dtype=_Q6_K, count=n_blocks, offset=offset)
    # [half, nibble, 64 bytes] -> [half, quarter k = 2·nibble + byte // 32, 32]
    low = _low_high(blocks["ql"].reshape(n_blocks, 2, 64)).reshape(n_blocks, 2, 4, 32)
    high = (blocks["qh"].reshape(n_blocks, 2, 1, 32) >> _QH_SHIFTS[:, None]) & _TWO_BITS
    low |= high << _FOUR
    signed = low.view(np.int8).reshape(n_blocks, 16, 16)
    signed -= np.int8(32)  # exact in int8, as ggml's ``(int8_t)(...) - 32``
    scale = _f32(blocks["d"])[:, None] * blocks["scales"].astype(np.float32)
    return _scaled(signed, scale[:, :, None]).reshape(n_blocks, 256)


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
    6: _dequantize_q5_0,
    8: _dequantize_q8_0,
    12: _dequantize_q4_k,
    14: _dequantize_q6_k,
    28: _read_f64,
    30: _read_bf16,
}

#: Names of the ggml types :meth:`GGUFFile.tensor` can read.
DEQUANTIZABLE: tuple[str, ...] = tuple(GGML_TYPES[code][0] for code in sorted(READERS))
