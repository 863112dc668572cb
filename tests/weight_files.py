"""Weight files for the readers' tests, written byte by byte, and read back by naive loops.

The GGUF and safetensors writers here use ``struct`` and ``json`` alone, so a test can
write any file, a lying one included; the naive dequantizer applies the block formulas
weight by weight in plain Python (no numpy), so the readers' vectorized code is checked
against something independent of it. Used by ``tests/real/``'s synthetic and hostile tests.
"""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attntrace.errors import InputError

# --------------------------------------------------------------------------- GGUF writing

# GGUF value types.
U8, I8, U16, I16, U32, I32, F32V, BOOL, STRING, ARRAY, U64, I64, F64V = range(13)
_VALUE_FORMATS = {
    U8: "<B",
    I8: "<b",
    U16: "<H",
    I16: "<h",
    U32: "<I",
    I32: "<i",
    F32V: "<f",
    BOOL: "<B",
    U64: "<Q",
    I64: "<q",
    F64V: "<d",
}
# ggml tensor types.
T_F32, T_F16, T_Q4_0, T_Q4_1, T_Q8_0, T_Q4_K, T_BF16 = 0, 1, 2, 3, 8, 12, 30
T_Q5_0, T_Q5_K, T_Q6_K, T_IQ2_XXS = 6, 13, 14, 16

Metadata = dict[str, tuple[int, Any]]  # key -> (value type, value); arrays: (elem type, items)
Tensor = tuple[str, tuple[int, ...], int, bytes]  # name, ggml dims, ggml type, stored bytes


def gguf_string(text: str | bytes) -> bytes:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def gguf_value(value_type: int, value: Any) -> bytes:
    if value_type == STRING:
        return gguf_string(value)
    if value_type == ARRAY:
        elem_type, items = value
        body = b"".join(gguf_value(elem_type, item) for item in items)
        return struct.pack("<IQ", elem_type, len(items)) + body
    return struct.pack(_VALUE_FORMATS[value_type], value)


def _pad(buf: bytearray, alignment: int) -> None:
    buf.extend(b"\0" * (-len(buf) % alignment))


def gguf_bytes(
    metadata: Metadata,
    tensors: list[Tensor],
    *,
    version: int = 3,
    alignment: int = 32,
    offsets: list[int] | None = None,
) -> bytes:
    """A GGUF file: header, tensor infos, data (each tensor at an aligned offset).

    ``offsets`` overrides the recorded data offsets (to write a lying file).
    """
    out = bytearray(b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(metadata)))
    for key, (value_type, value) in metadata.items():
        out += gguf_string(key) + struct.pack("<I", value_type) + gguf_value(value_type, value)
    data = bytearray()
    for index, (name, dims, ggml_type, raw) in enumerate(tensors):
        _pad(data, alignment)
        offset = len(data) if offsets is None else offsets[index]
        out += gguf_string(name) + struct.pack("<I", len(dims))
        out += struct.pack(f"<{len(dims)}Q", *dims) + struct.pack("<IQ", ggml_type, offset)
        data += raw
    _pad(out, alignment)
    return bytes(out + data)


def write_gguf(path: Path, metadata: Metadata, tensors: list[Tensor], **options: Any) -> Path:
    """Write a synthetic GGUF file (see :func:`gguf_bytes`) and return its path."""
    path.write_bytes(gguf_bytes(metadata, tensors, **options))
    return path


# ------------------------------------------- naive dequantization, one weight at a time


def half(raw: bytes) -> float:
    value: float = struct.unpack("<e", raw)[0]
    return value


def to_f32(x: float) -> float:
    """Round a Python float to float32 (every block product here is exact before it)."""
    value: float = struct.unpack("<f", struct.pack("<f", x))[0]
    return value


def naive_dequantize(ggml_type: int, raw: bytes, n: int) -> list[float]:
    """The block formulas, weight by weight, in plain Python."""
    out: list[float] = []
    if ggml_type == T_F32:
        return [struct.unpack_from("<f", raw, 4 * i)[0] for i in range(n)]
    if ggml_type == T_F16:
        return [half(raw[2 * i : 2 * i + 2]) for i in range(n)]
    if ggml_type == T_BF16:
        return [struct.unpack("<f", b"\0\0" + raw[2 * i : 2 * i + 2])[0] for i in range(n)]
    for b in range(n // 32):
        if ggml_type == T_Q8_0:
            block = raw[34 * b : 34 * b + 34]
            d = half(block[0:2])
            for i in range(32):
                q = block[2 + i] - 256 if block[2 + i] >= 128 else block[2 + i]
                out.append(to_f32(d * q))
        elif ggml_type == T_Q4_0:
            block = raw[18 * b : 18 * b + 18]
            d = half(block[0:2])
            for i in range(32):
                byte = block[2 + i % 16]
                q = byte & 0x0F if i < 16 else byte >> 4  # low nibble: weight j; high: j + 16
                out.append(to_f32(d * (q - 8)))
        elif ggml_type == T_Q4_1:
            block = raw[20 * b : 20 * b + 20]
            d, m = half(block[0:2]), half(block[2:4])
            for i in range(32):
                byte = block[4 + i % 16]
                q = byte & 0x0F if i < 16 else byte >> 4
                out.append(to_f32(d * q + m))
        else:
            raise AssertionError(f"no naive dequantizer for type {ggml_type}")
    return out


_HALF_SCALES = [0.0, 1.0, -0.5, 0.0078125, 3.14, -2.7e-3, 6.0e-8, 65504.0, -65504.0, 1e-4]


def random_blocks(ggml_type: int, n_blocks: int, rng: random.Random) -> bytes:
    """``n_blocks`` blocks with random nibbles/bytes and scales from fp16's whole range."""
    out = bytearray()
    for _ in range(n_blocks):
        d = struct.pack("<e", rng.choice(_HALF_SCALES))
        if ggml_type == T_Q8_0:
            out += d + rng.randbytes(32)
        elif ggml_type == T_Q4_0:
            out += d + rng.randbytes(16)
        elif ggml_type == T_Q4_1:
            out += d + struct.pack("<e", rng.choice(_HALF_SCALES)) + rng.randbytes(16)
        else:
            raise AssertionError(ggml_type)
    return bytes(out)


# ------------------------------------------------------------------- safetensors writing

SafeTensor = tuple[str, list[int], bytes]  # dtype, shape, stored bytes


def safetensors_bytes(
    tensors: dict[str, SafeTensor],
    metadata: dict[str, str] | None = None,
    *,
    header: dict[str, Any] | None = None,
    pad_to: int = 8,
) -> bytes:
    """A safetensors file; ``header`` replaces the computed JSON header (to write a lie)."""
    data = bytearray()
    computed: dict[str, Any] = {}
    if metadata is not None:
        computed["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        computed[name] = {
            "dtype": dtype,
            "shape": shape,
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    text = json.dumps(computed if header is None else header).encode("utf-8")
    text += b" " * (-len(text) % pad_to)  # the format allows trailing spaces
    return struct.pack("<Q", len(text)) + text + bytes(data)


def bfloat16(x: float) -> tuple[int, float]:
    """``x`` as a bfloat16, the way torch rounds: float32 first, then its top 16 bits,
    rounded to nearest (ties to even). The stored bits, and the value they hold (finite
    ``x`` only: the rounding carry would make a NaN an infinity)."""
    bits: int = struct.unpack("<I", struct.pack("<f", x))[0]
    top = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    value: float = struct.unpack("<f", struct.pack("<I", top << 16))[0]
    return top, value


def bfloat16_bytes(values: list[float]) -> bytes:
    """A BF16 tensor's stored bytes (little-endian), each value rounded by :func:`bfloat16`."""
    return struct.pack(f"<{len(values)}H", *(bfloat16(x)[0] for x in values))


# ---------------------------------------------------------------------- reading them back


def refusal(read: Callable[[Path], object], path: Path) -> str | None:
    """None if ``read(path)`` works, else its InputError's message, checked to be one line
    that names the file first (other errors propagate: they fail the test)."""
    try:
        read(path)
    except InputError as error:
        message = str(error)
        assert "\n" not in message, repr(message)
        assert message.startswith(f"{path}: "), message
        return message
    return None
