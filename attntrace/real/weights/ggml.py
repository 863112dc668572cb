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
    9: ("Q8_1", 32, 36),  # fp16 d and s (the gguf 0.19.0 release: 40, once float d, s)
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
    40: ("NVFP4", 64, 36),
    41: ("Q1_0", 128, 18),
    42: ("Q2_0", 64, 18),
}

#: Type ids ggml has defined and since removed (ggml.h keeps them as comments): no file
#: with them can be read, by llama.cpp or here, but the message can name them.
REMOVED_TYPES: dict[int, str] = {
    4: "Q4_2",
    5: "Q4_3",
    31: "Q4_0_4_4",
    32: "Q4_0_4_8",
    33: "Q4_0_8_8",
    36: "IQ4_NL_4_4",
    37: "IQ4_NL_4_8",
    38: "IQ4_NL_8_8",
}

# Block layouts of the quantized types read here (ggml-common.h: block_q8_0 and so on),
# 32 weights per block ...
_Q8_0 = np.dtype([("d", "<f2"), ("qs", "i1", (32,))])
_Q4_0 = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_Q4_1 = np.dtype([("d", "<f2"), ("m", "<f2"), ("qs", "u1", (16,))])
_Q5_0 = np.dtype([("d", "<f2"), ("qh", "u1", (4,)), ("qs", "u1", (16,))])  # qh: a LE uint32
_Q5_1 = np.dtype([("d", "<f2"), ("m", "<f2"), ("qh", "u1", (4,)), ("qs", "u1", (16,))])
# ... and 256 in the k-quants' super-blocks (QK_K).
_Q2_K = np.dtype([("scales", "u1", (16,)), ("qs", "u1", (64,)), ("d", "<f2"), ("dmin", "<f2")])
_Q3_K = np.dtype(
    [("hmask", "u1", (32,)), ("qs", "u1", (64,)), ("scales", "u1", (12,)), ("d", "<f2")]
)
_Q4_K = np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", (12,)), ("qs", "u1", (128,))])
_Q5_K = np.dtype(
    [
        ("d", "<f2"),
        ("dmin", "<f2"),
        ("scales", "u1", (12,)),
        ("qh", "u1", (32,)),
        ("qs", "u1", (128,)),
    ]
)
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


def _five_bit_codes(blocks: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The 32 five-bit codes of each Q5_0 or Q5_1 block (uint8 [n, 32], 0 to 31).

    ggml-quants.c ``dequantize_row_q5_0``: weight j (j < 16) is the low nibble of byte j
    with bit j of qh above it, weight j + 16 the high nibble with bit j + 16.
    """
    q = _low_high(blocks["qs"]).reshape(blocks.shape[0], 32)
    # qh's 4 little-endian bytes, bit j (least significant first) for weight j
    high = np.unpackbits(blocks["qh"], axis=1, bitorder="little")
    high <<= _FOUR
    q |= high
    return q


def _dequantize_q5_0(buf: Any, offset: int, n_blocks: int) -> npt.NDArray[Any]:
    """x = d·(q − 16), q of 5 bits: fp16 scale, 32 high bits (a little-endian uint32
    ``qh``), 16 bytes of low nibbles."""
    blocks = np.frombuffer(buf, dtype=_Q5_0, count=n_blocks, offset=offset)
    signed = _five_bit_codes(blocks).view(np.int8)  # 0..31: the bit pattern is the value
    signed -= np.int8(16)  # exact in int8, as ggml's int ``x0 - 16``
    return _scaled(signed, _f32(blocks["d"])[:, None])


def _dequantize_q5_1(buf: Any, offset: int, n_blocks: int) -> npt.NDArray[Any]:
    """x = d·q + m, q of 5 bits: fp16 scale and minimum, then Q5_0's ``qh`` and nibbles
    (ggml-quants.c ``dequantize_row_q5_1``: ``x0*d + m``)."""
    blocks = np.frombuffer(buf, dtype=_Q5_1, count=n_blocks, offset=offset)
    out = _scaled(_five_bit_codes(blocks), _f32(blocks["d"])[:, None])
    out += _f32(blocks["m"])[:, None]
    return out


def _bit_planes(bits: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Bytes [n, 32] as 8 planes of single bits, uint8 [n, 8, 32]: plane b holds bit b of
    each byte, as Q3_K's ``hmask`` and Q5_K's ``qh`` give one bit to each of 8 runs of 32
    weights (ggml's ``m <<= 1`` / ``u1 <<= 2`` walk over the bits)."""
    return np.unpackbits(bits[:, None, :], axis=1, bitorder="little")


def _two_bit_quarters(qs: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Q2_K's and Q3_K's 64 bytes of 2-bit codes as uint8 [n, 8, 32]: each half of 128
    weights reads 32 bytes four times, shifted by 0, 2, 4 and 6 bits (ggml's ``shift``)."""
    quarters: npt.NDArray[Any] = qs.reshape(qs.shape[0], 2, 1, 32) >> _QH_SHIFTS[:, None]
    quarters &= _TWO_BITS
    return quarters.reshape(qs.shape[0], 8, 32)


def _dequantize_q2_k(buf: Any, offset: int, n_blocks: int) -> npt.NDArray[Any]:
    """x = (d·sc)·q − dmin·m per 16 weights, q of 2 bits: 16 bytes of 4-bit scale (low
    nibble) and minimum (high nibble), 64 bytes of codes, fp16 d and dmin (last).

    ggml-quants.c ``dequantize_row_q2_K``: ``dl * ((q[l] >> shift) & 3) - ml`` with
    ``dl = d * (sc & 0xF)`` and ``ml = dmin * (sc >> 4)``, in float32.
    """
    blocks = np.frombuffer(buf, dtype=_Q2_K, count=n_blocks, offset=offset)
    scales = blocks["scales"]
    scale = _f32(blocks["d"])[:, None] * (scales & _NIBBLE).astype(np.float32)
    minimum = _f32(blocks["dmin"])[:, None] * (scales >> _FOUR).astype(np.float32)
    q = _two_bit_quarters(blocks["qs"]).reshape(n_blocks, 16, 16)
    out = _scaled(q, scale[:, :, None])
    out -= minimum[:, :, None]
    return out.reshape(n_blocks, 256)


def _k3_scales(scales: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Q3_K's 16 six-bit scales, less 32 (int8 [n, 16], −32 to 31), from its 12 bytes:
    scale i has its low 4 bits in byte i % 8 (low nibble for i < 8, high for i ≥ 8) and its
    top 2 bits in byte 8 + i % 4, at bit 2·(i // 4) (ggml's ``kmask`` unpacking)."""
    low = _low_high(scales[:, :8]).reshape(scales.shape[0], 16)
    high = (scales[:, None, 8:12] >> _QH_SHIFTS[:, None]) & _TWO_BITS
    low |= high.reshape(scales.shape[0], 16) << _FOUR
    signed = low.view(np.int8)
    signed -= np.int8(32)  # exact in int8, as ggml's ``(int8_t)scales[i] - 32``
    return signed


def _dequantize_q3_k(buf: Any, offset: int, n_blocks: int) -> npt.NDArray[Any]:
    """x = (d·sc)·q per 16 weights, q of 3 bits from −4 to 3: 32 bytes of high bits
    (``hmask``), 64 bytes of 2-bit low parts, 12 bytes of 6-bit scales, fp16 d (last).

    ggml-quants.c ``dequantize_row_q3_K``: a weight is its two low bits less 4 where its
    ``hmask`` bit is clear (so ``(low | h << 2) − 4``), times ``dl = d * (sc − 32)``.
    """
    blocks = np.frombuffer(buf, dtype=_Q3_K, count=n_blocks, offset=offset)
    scale = _f32(blocks["d"])[:, None] * _k3_scales(blocks["scales"]).astype(np.float32)
    q = _two_bit_quarters(blocks["qs"])
    high = _bit_planes(blocks["hmask"])
    high <<= np.uint8(2)
    q |= high
    signed = q.view(np.int8).reshape(n_blocks, 16, 16)
    signed -= np.int8(4)
    return _scaled(signed, scale[:, :, None]).reshape(n_blocks, 256)


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


def _sub_blocks(blocks: npt.NDArray[Any], q: npt.NDArray[Any], n_blocks: int) -> npt.NDArray[Any]:
    """(d·sc)·q − dmin·m over Q4_K's or Q5_K's 8 sub-blocks of 32 codes (q: [n, 8, 32])."""
    sc, mins = _k4_scales_mins(blocks["scales"])
    scale = _f32(blocks["d"])[:, None] * sc.astype(np.float32)
    minimum = _f32(blocks["dmin"])[:, None] * mins.astype(np.float32)
    out = _scaled(q, scale[:, :, None])
    out -= minimum[:, :, None]
    return out.reshape(n_blocks, 256)


def _dequantize_q4_k(buf: Any, offset: int, n_blocks: int) -> npt.NDArray[Any]:
    """x = (d·sc)·q − dmin·m per 32-weight sub-block: fp16 d and dmin, 12 bytes of 6-bit
    scales and minimums, 128 bytes of nibbles.

    ggml-quants.c ``dequantize_row_q4_K``: each 64 weights read 32 bytes, the low nibbles
    (sub-block 2i, scale d1 = d·sc, offset m1 = dmin·m) then the high ones (2i + 1), each
    weight ``d1 * q - m1`` in float32.
    """
    blocks = np.frombuffer(buf, dtype=_Q4_K, count=n_blocks, offset=offset)
    q = _low_high(blocks["qs"].reshape(n_blocks, 4, 32)).reshape(n_blocks, 8, 32)
    return _sub_blocks(blocks, q, n_blocks)


def _dequantize_q5_k(buf: Any, offset: int, n_blocks: int) -> npt.NDArray[Any]:
    """Q4_K with a fifth bit: fp16 d and dmin, Q4_K's 12 bytes of scales and minimums, 32
    bytes of high bits (``qh``), 128 bytes of nibbles.

    ggml-quants.c ``dequantize_row_q5_K``: sub-block s takes the nibbles as Q4_K does and
    bit s of ``qh[l]`` as bit 4 of its weight l; each weight ``d1 * q - m1`` in float32.
    """
    blocks = np.frombuffer(buf, dtype=_Q5_K, count=n_blocks, offset=offset)
    q = _low_high(blocks["qs"].reshape(n_blocks, 4, 32)).reshape(n_blocks, 8, 32)
    high = _bit_planes(blocks["qh"])
    high <<= _FOUR
    q |= high
    return _sub_blocks(blocks, q, n_blocks)


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
    7: _dequantize_q5_1,
    8: _dequantize_q8_0,
    10: _dequantize_q2_k,
    11: _dequantize_q3_k,
    12: _dequantize_q4_k,
    13: _dequantize_q5_k,
    14: _dequantize_q6_k,
    28: _read_f64,
    30: _read_bf16,
}

#: Names of the ggml types :meth:`GGUFFile.tensor` can read.
DEQUANTIZABLE: tuple[str, ...] = tuple(GGML_TYPES[code][0] for code in sorted(READERS))
