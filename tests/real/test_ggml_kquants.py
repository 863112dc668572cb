"""Q5_0, Q4_K and Q6_K (Gemma 3's Q4_K_M file) against ggml's C, written out weight by weight.

The loops below transcribe ggml-quants.c ``dequantize_row_q5_0``, ``dequantize_row_q4_K``
(with ``get_scale_min_k4``) and ``dequantize_row_q6_K`` in plain Python over the bytes of
ggml-common.h's block layouts, one weight at a time, and do each float32 operation of the
C as one correctly rounded step (a float64 result rounded to float32: exact for these
products, and innocuous for one subtraction, 53 ≥ 2·24 + 2). Equality is the right test
here, not a tolerance: every weight is one to three IEEE float32 operations in a fixed
order, with no sum whose order a machine could change (tests/tolerances.py's rule is
about those). The real file's tensors are compared with the ``gguf`` package's own
dequantizer in tests/real/test_real_weight_files.py, through the goldens.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from weight_files import T_Q4_K, T_Q5_0, T_Q6_K, half, to_f32

from attntrace.real.weights.ggml import DEQUANTIZABLE, GGML_TYPES, READERS
from attntrace.real.weights.gguf import GGUFFile


def scalar_q5_0(block: bytes) -> list[float]:
    d = half(block[0:2])
    qh = int.from_bytes(block[2:6], "little")
    qs = block[6:22]
    y = [0.0] * 32
    for j in range(16):
        xh_0 = ((qh >> (j + 0)) << 4) & 0x10
        xh_1 = (qh >> (j + 12)) & 0x10
        x0 = ((qs[j] & 0x0F) | xh_0) - 16
        x1 = ((qs[j] >> 4) | xh_1) - 16
        y[j] = to_f32(x0 * d)
        y[j + 16] = to_f32(x1 * d)
    return y


def get_scale_min_k4(j: int, q: bytes) -> tuple[int, int]:
    if j < 4:
        return q[j] & 63, q[j + 4] & 63
    return (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4)


def scalar_q4_k(block: bytes) -> list[float]:
    """ggml-quants.c dequantize_row_q4_K (l is w here)."""
    d, dmin = half(block[0:2]), half(block[2:4])
    scales, q = block[4:16], block[16:144]
    y: list[float] = []
    is_ = 0
    at = 0
    for _ in range(0, 256, 64):
        sc, m = get_scale_min_k4(is_ + 0, scales)
        d1, m1 = to_f32(d * sc), to_f32(dmin * m)
        sc, m = get_scale_min_k4(is_ + 1, scales)
        d2, m2 = to_f32(d * sc), to_f32(dmin * m)
        y += [to_f32(to_f32(d1 * (q[at + w] & 0xF)) - m1) for w in range(32)]
        y += [to_f32(to_f32(d2 * (q[at + w] >> 4)) - m2) for w in range(32)]
        at += 32
        is_ += 2
    return y


def int8(x: int) -> int:
    return x - 256 if x >= 128 else x


def scalar_q6_k(block: bytes) -> list[float]:
    ql_all, qh_all, sc_all = block[0:128], block[128:192], block[192:208]
    d = half(block[208:210])
    y = [0.0] * 256
    for half_index, n in enumerate(range(0, 256, 128)):
        ql = ql_all[64 * half_index :]
        qh = qh_all[32 * half_index :]
        sc = [int8(s) for s in sc_all[8 * half_index :]]
        for w in range(32):
            is_ = w // 16
            q1 = ((ql[w + 0] & 0xF) | (((qh[w] >> 0) & 3) << 4)) - 32
            q2 = ((ql[w + 32] & 0xF) | (((qh[w] >> 2) & 3) << 4)) - 32
            q3 = ((ql[w + 0] >> 4) | (((qh[w] >> 4) & 3) << 4)) - 32
            q4 = ((ql[w + 32] >> 4) | (((qh[w] >> 6) & 3) << 4)) - 32
            y[n + w + 0] = to_f32(to_f32(d * sc[is_ + 0]) * q1)
            y[n + w + 32] = to_f32(to_f32(d * sc[is_ + 2]) * q2)
            y[n + w + 64] = to_f32(to_f32(d * sc[is_ + 4]) * q3)
            y[n + w + 96] = to_f32(to_f32(d * sc[is_ + 6]) * q4)
    return y


SCALAR: dict[int, Callable[[bytes], list[float]]] = {
    T_Q5_0: scalar_q5_0,
    T_Q4_K: scalar_q4_k,
    T_Q6_K: scalar_q6_k,
}
NAMES = {T_Q5_0: "Q5_0", T_Q4_K: "Q4_K", T_Q6_K: "Q6_K"}
# Where each block's fp16 scales sit (byte offsets): drawn as finite halves, so the
# comparison is of numbers; garbled scales are the hostile tests' business.
SCALE_AT = {T_Q5_0: (0,), T_Q4_K: (0, 2), T_Q6_K: (208,)}
halves = st.floats(min_value=-65504, max_value=65504, width=16, allow_subnormal=True)


def scalar_dequantize(ggml_type: int, raw: bytes) -> list[float]:
    size = GGML_TYPES[ggml_type][2]
    out: list[float] = []
    for at in range(0, len(raw), size):
        out += SCALAR[ggml_type](raw[at : at + size])
    return out


@st.composite
def blocks(draw: st.DrawFn, ggml_type: int) -> bytes:
    size = GGML_TYPES[ggml_type][2]
    out = bytearray()
    for _ in range(draw(st.integers(1, 4))):
        block = bytearray(draw(st.binary(min_size=size, max_size=size)))
        for at in SCALE_AT[ggml_type]:
            block[at : at + 2] = struct.pack("<e", draw(halves))
        out += block
    return bytes(out)


@pytest.mark.parametrize("ggml_type", [T_Q5_0, T_Q4_K, T_Q6_K], ids=NAMES.get)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_vectorized_blocks_equal_the_scalar_c_loop(ggml_type: int, data: st.DataObject) -> None:
    raw = data.draw(blocks(ggml_type))
    _, per_block, size = GGML_TYPES[ggml_type]
    got = READERS[ggml_type](raw, 0, len(raw) // size)
    assert got.dtype == np.float32
    assert got.size == per_block * (len(raw) // size)
    expected = np.array(scalar_dequantize(ggml_type, raw), dtype=np.float32)
    np.testing.assert_array_equal(got.reshape(-1), expected)


def test_q5_0_block_by_hand() -> None:
    # d = 0.5; qh has bits 0 and 31 set; byte j = j | (15 - j) << 4.
    block = (
        struct.pack("<e", 0.5)
        + struct.pack("<I", 1 | 1 << 31)
        + bytes(j | (15 - j) << 4 for j in range(16))
    )
    got = READERS[T_Q5_0](block, 0, 1).reshape(-1).tolist()
    low = [0.5 * ((j | (16 if j == 0 else 0)) - 16) for j in range(16)]
    high = [0.5 * (((15 - j) | (16 if j == 15 else 0)) - 16) for j in range(16)]
    assert got == low + high


def test_q4_k_scales_by_hand() -> None:
    # Sub-block 1: scale 5, min 2 (low 6 bits of bytes 1 and 5); sub-block 6: scale
    # 0b10_0011 = 35 (low nibble of byte 10, top bits of byte 2), min 0b01_0100 = 20 (high
    # nibble of byte 10, top bits of byte 6). d = 1, dmin = 0.25; every nibble 1.
    scales = bytearray(12)
    scales[1], scales[5] = 5, 2
    scales[10] = 0x3 | 0x4 << 4
    scales[2] = 0b10 << 6
    scales[6] = 0b01 << 6
    block = struct.pack("<ee", 1.0, 0.25) + bytes(scales) + bytes([0x11] * 128)
    got = READERS[T_Q4_K](block, 0, 1).reshape(8, 32)
    assert got[1].tolist() == [5 * 1 - 0.25 * 2] * 32
    assert got[6].tolist() == [35 * 1 - 0.25 * 20] * 32
    assert got[0].tolist() == [0.0] * 32  # scale 0, min 0


def test_q6_k_quarters_by_hand() -> None:
    # d = 1, scale i = i + 1; ql all 0x21 (low 1, high 2), qh all 0b11_10_01_00: quarter k
    # of each half has high part k, so q = (nibble | k << 4) − 32.
    ql = bytes([0x21] * 128)
    qh = bytes([0b11100100] * 64)
    scales = struct.pack("<16b", *range(1, 17))
    got = READERS[T_Q6_K](ql + qh + scales + struct.pack("<e", 1.0), 0, 1).reshape(-1)
    for i in range(256):
        k = (i % 128) // 32
        nibble = 1 if k < 2 else 2
        assert got[i] == (i // 16 + 1) * ((nibble | k << 4) - 32), i


def test_new_types_are_listed_as_dequantizable() -> None:
    assert {"Q5_0", "Q4_K", "Q6_K"} <= set(DEQUANTIZABLE)


@pytest.mark.parametrize("ggml_type", [T_Q5_0, T_Q4_K, T_Q6_K], ids=NAMES.get)
def test_gguf_file_reads_them_in_shape_and_by_rows(
    gguf_path: Callable[..., Path], ggml_type: int
) -> None:
    _, per_block, size = GGML_TYPES[ggml_type]
    rng = np.random.default_rng(ggml_type)
    raw = bytearray(rng.integers(0, 256, size=6 * size, dtype=np.uint8).tobytes())
    for b in range(6):
        for at in SCALE_AT[ggml_type]:
            raw[b * size + at : b * size + at + 2] = struct.pack("<e", 0.125 * (b + 1))
    dims = (2 * per_block, 3)  # 3 rows of 2 blocks
    reader = GGUFFile(gguf_path({}, [("w", dims, ggml_type, bytes(raw))]))
    got = reader.tensor("w")
    assert got.shape == (3, 2 * per_block)
    expected = np.array(scalar_dequantize(ggml_type, bytes(raw)), dtype=np.float32)
    np.testing.assert_array_equal(got.reshape(-1), expected)
    np.testing.assert_array_equal(reader.rows("w", [2, 0]), got[[2, 0]])
    assert math.prod(got.shape) == 6 * per_block
