"""The numpy GGUF and safetensors readers on synthetic files, written here byte by byte.

Each file's values are computed by a naive per-weight Python loop straight from the block
formulas (tests/weight_files.py, no numpy on that side), so the vectorized dequantizers
are checked independently of any other reader.
"""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from weight_files import (
    ARRAY,
    BOOL,
    F32V,
    F64V,
    I8,
    I16,
    I32,
    I64,
    STRING,
    T_BF16,
    T_F16,
    T_F32,
    T_Q4_0,
    T_Q4_1,
    T_Q8_0,
    U8,
    U16,
    U32,
    U64,
    Metadata,
    SafeTensor,
    Tensor,
    half,
    naive_dequantize,
    random_blocks,
    safetensors_bytes,
    to_f32,
)

from attntrace.real.weights.gguf import GGUFFile
from attntrace.real.weights.safetensors import read_safetensors, read_safetensors_with_dtypes

# ------------------------------------------------------------- GGUF: dequantization


def test_q4_1_block_by_hand(gguf_path: Callable[..., Path]) -> None:
    # d = 0.5, m = -1, byte j = j (low nibble) | (15 - j) (high nibble):
    # weight j = 0.5·j − 1, weight j + 16 = 0.5·(15 − j) − 1.
    block = struct.pack("<ee", 0.5, -1.0) + bytes(j | (15 - j) << 4 for j in range(16))
    path = gguf_path({}, [("w", (32,), T_Q4_1, block)])
    expected = [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 6.5]
    expected += expected[::-1]
    assert GGUFFile(path).tensor("w").tolist() == expected


def test_q4_0_block_by_hand(gguf_path: Callable[..., Path]) -> None:
    # d = 2, byte j = j | 8 << 4: weight j = 2·(j − 8), weight j + 16 = 2·(8 − 8) = 0.
    block = struct.pack("<e", 2.0) + bytes(j | 8 << 4 for j in range(16))
    path = gguf_path({}, [("w", (32,), T_Q4_0, block)])
    expected = [float(2 * (j - 8)) for j in range(16)] + [0.0] * 16
    assert GGUFFile(path).tensor("w").tolist() == expected


def test_q8_0_block_by_hand(gguf_path: Callable[..., Path]) -> None:
    qs = [-128, -1, 0, 1, 127, *range(-13, 14)]
    block = struct.pack("<e", 0.25) + struct.pack("<32b", *qs)
    path = gguf_path({}, [("w", (32,), T_Q8_0, block)])
    assert GGUFFile(path).tensor("w").tolist() == [0.25 * q for q in qs]


@pytest.mark.parametrize("ggml_type", [T_Q4_0, T_Q4_1, T_Q8_0], ids=["Q4_0", "Q4_1", "Q8_0"])
def test_quantized_blocks_match_the_naive_loop(
    gguf_path: Callable[..., Path], ggml_type: int
) -> None:
    rng = random.Random(ggml_type)
    # ggml dims (96, 5, 2): numpy shape (2, 5, 96), 3 blocks per row, 30 blocks in all.
    dims = (96, 5, 2)
    raw = random_blocks(ggml_type, 30, rng)
    path = gguf_path({}, [("w", dims, ggml_type, raw)])
    got = GGUFFile(path).tensor("w")
    assert got.dtype == np.float32
    assert got.shape == (2, 5, 96)
    expected = naive_dequantize(ggml_type, raw, math.prod(dims))
    # Row-major: element [a, b, c] is weight a·480 + b·96 + c of the file.
    assert got[1, 3, 40] == expected[1 * 480 + 3 * 96 + 40]
    np.testing.assert_array_equal(got.ravel(), np.array(expected, dtype=np.float32))


def test_float_tensors_match_the_naive_loop(gguf_path: Callable[..., Path]) -> None:
    specials = [0.0, -0.0, 1.0, -2.5, 65504.0, 6e-8, math.inf, -math.inf, math.nan, 1 / 3]
    f16 = struct.pack(f"<{len(specials) * 2}e", *(specials * 2))
    f32 = struct.pack("<6f", 1.5, -1e-40, 3.4e38, math.nan, 0.1, -7.0)
    bf16 = struct.pack("<6H", 0x3F80, 0xC000, 0x7F80, 0x0001, 0x3FC0, 0xFFC0)
    tensors: list[Tensor] = [
        ("half", (5, 4), T_F16, f16),
        ("single", (3, 2), T_F32, f32),
        ("brain", (6,), T_BF16, bf16),
    ]
    reader = GGUFFile(gguf_path({}, tensors))
    for name, dims, ggml_type, raw in tensors:
        got = reader.tensor(name)
        assert got.dtype == np.float32, name
        assert got.shape == tuple(reversed(dims)), name
        expected = np.array(naive_dequantize(ggml_type, raw, math.prod(dims)), dtype=np.float32)
        np.testing.assert_array_equal(got.ravel(), expected)
    assert reader.tensor("brain")[:5].tolist() == [1.0, -2.0, math.inf, 2.0**-133, 1.5]


def test_tensor_infos_offsets_and_alignment(gguf_path: Callable[..., Path]) -> None:
    rng = random.Random(7)
    tensors: list[Tensor] = [
        ("a", (64, 3), T_Q8_0, random_blocks(T_Q8_0, 6, rng)),
        ("b", (7,), T_F32, struct.pack("<7f", *range(7))),
        ("c", (32, 2), T_Q4_1, random_blocks(T_Q4_1, 2, rng)),
    ]
    path = gguf_path({"general.alignment": (U32, 64)}, tensors, alignment=64)
    reader = GGUFFile(path)
    assert reader.version == 3
    assert reader.alignment == 64
    assert reader.data_offset % 64 == 0
    assert reader.tensor_names == ("a", "b", "c")
    info = reader.tensor_info("a")
    assert (info.shape, info.ggml_dims, info.type_name, info.type_id) == (
        (3, 64),
        (64, 3),
        "Q8_0",
        8,
    )
    assert info.nbytes == 6 * 34
    assert info.n_elements == 192
    assert [reader.tensor_info(n).offset % 64 for n in "abc"] == [0, 0, 0]
    assert reader.tensor("b").tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    for name, dims, ggml_type, raw in tensors:
        expected = naive_dequantize(ggml_type, raw, math.prod(dims))
        np.testing.assert_array_equal(reader.tensor(name).ravel(), expected)


def test_f32_tensors_are_read_only_views(gguf_path: Callable[..., Path]) -> None:
    path = gguf_path({}, [("b", (2,), T_F32, struct.pack("<2f", 1, 2))])
    got = GGUFFile(path).tensor("b")
    assert not got.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        got[0] = 5.0


def test_metadata_value_types(gguf_path: Callable[..., Path]) -> None:
    metadata: Metadata = {
        "u8": (U8, 255),
        "i8": (I8, -128),
        "u16": (U16, 65535),
        "i16": (I16, -32768),
        "u32": (U32, 2**32 - 1),
        "i32": (I32, -(2**31)),
        "f32": (F32V, 0.1),
        "yes": (BOOL, 1),
        "no": (BOOL, 0),
        "text": (STRING, "héllo ✓"),
        "empty": (STRING, ""),
        "u64": (U64, 2**64 - 1),
        "i64": (I64, -(2**63)),
        "f64": (F64V, 0.1),
        "strings": (ARRAY, (STRING, ["a", "", "Ġthe", "日本"])),
        "ints": (ARRAY, (I32, [1, -2, 3])),
        "floats": (ARRAY, (F32V, [0.5, -1.25])),
        "flags": (ARRAY, (BOOL, [1, 0, 1])),
        "nothing": (ARRAY, (U64, [])),
        "nested": (ARRAY, (ARRAY, [(U8, [1, 2]), (STRING, ["x"])])),
    }
    got = GGUFFile(gguf_path(metadata, [])).metadata
    assert got == {
        "u8": 255,
        "i8": -128,
        "u16": 65535,
        "i16": -32768,
        "u32": 2**32 - 1,
        "i32": -(2**31),
        "f32": to_f32(0.1),
        "yes": True,
        "no": False,
        "text": "héllo ✓",
        "empty": "",
        "u64": 2**64 - 1,
        "i64": -(2**63),
        "f64": 0.1,
        "strings": ["a", "", "Ġthe", "日本"],
        "ints": [1, -2, 3],
        "floats": [0.5, -1.25],
        "flags": [True, False, True],
        "nothing": [],
        "nested": [[1, 2], ["x"]],
    }
    assert type(got["yes"]) is bool
    assert type(got["u8"]) is int
    assert all(type(flag) is bool for flag in got["flags"])  # type: ignore[attr-defined]


def test_empty_tensors(gguf_path: Callable[..., Path]) -> None:
    tensors: list[Tensor] = [
        ("w", (1,), T_F32, struct.pack("<f", 1)),
        ("z", (0, 3), T_F32, b""),
        ("q", (32, 0), T_Q4_1, b""),  # last, so its offset is the file's end
    ]
    reader = GGUFFile(gguf_path({}, tensors))
    assert reader.tensor("z").shape == (3, 0)
    assert reader.tensor("q").shape == (0, 32)


def test_version_2_is_read(gguf_path: Callable[..., Path]) -> None:
    path = gguf_path({"k": (U32, 1)}, [("b", (1,), T_F32, struct.pack("<f", 2))], version=2)
    reader = GGUFFile(path)
    assert (reader.version, reader.metadata, reader.tensor("b").tolist()) == (2, {"k": 1}, [2.0])


# ------------------------------------------------------------- safetensors


def test_safetensors_dtypes_shapes_values(tmp_path: Path) -> None:
    tensors: dict[str, SafeTensor] = {
        "f32": ("F32", [2, 3], struct.pack("<6f", 0.5, -1, 2, 3.25, -0.0, 1e-30)),
        "f16": ("F16", [3], struct.pack("<3e", 1.5, -65504, 6e-8)),
        "bf16": ("BF16", [2, 2], struct.pack("<4H", 0x3F80, 0xC000, 0x7F80, 0x0001)),
        "f64": ("F64", [1], struct.pack("<d", 0.1)),
        "i64": ("I64", [1, 3], struct.pack("<3q", -(2**63), 0, 2**63 - 1)),
        "i32": ("I32", [2], struct.pack("<2i", -7, 9)),
        "i16": ("I16", [1], struct.pack("<h", -300)),
        "i8": ("I8", [2], struct.pack("<2b", -128, 127)),
        "u8": ("U8", [2], bytes([0, 255])),
        "bool": ("BOOL", [2], bytes([1, 0])),
        "scalar": ("F32", [], struct.pack("<f", 42)),
        "empty": ("F32", [0, 3], b""),
    }
    path = tmp_path / "m.safetensors"
    path.write_bytes(safetensors_bytes(tensors, {"format": "pt"}))
    got = read_safetensors(path)
    assert sorted(got) == sorted(tensors)
    expected_dtypes = {
        "f32": "float32",
        "f16": "float16",
        "bf16": "float32",
        "f64": "float64",
        "i64": "int64",
        "i32": "int32",
        "i16": "int16",
        "i8": "int8",
        "u8": "uint8",
        "bool": "bool",
        "scalar": "float32",
        "empty": "float32",
    }
    for name, (_, shape, _) in tensors.items():
        assert got[name].shape == tuple(shape), name
        assert str(got[name].dtype) == expected_dtypes[name], name
    assert got["f32"].tolist() == [[0.5, -1.0, 2.0], [3.25, -0.0, to_f32(1e-30)]]
    assert got["f16"].tolist() == [1.5, -65504.0, half(struct.pack("<e", 6e-8))]
    assert got["bf16"].tolist() == [[1.0, -2.0], [math.inf, 2.0**-133]]
    assert got["f64"].tolist() == [0.1]
    assert got["i64"].tolist() == [[-(2**63), 0, 2**63 - 1]]
    assert got["i32"].tolist() == [-7, 9]
    assert got["i16"].tolist() == [-300]
    assert got["i8"].tolist() == [-128, 127]
    assert got["u8"].tolist() == [0, 255]
    assert got["bool"].tolist() == [True, False]
    assert got["scalar"].tolist() == 42.0
    assert got["empty"].size == 0
    assert not got["f32"].flags.writeable
    # each tensor's stored dtype, for a reader that must know BF16 from F32 (check's)
    stored = {name: dtype for name, (_, dtype) in read_safetensors_with_dtypes(path).items()}
    assert stored == {**expected_dtypes, "bf16": "bfloat16"}


def test_safetensors_unaligned_and_unordered(tmp_path: Path) -> None:
    # A 1-byte tensor first puts the F64 at an odd offset; the header lists them out of order.
    raw = bytes([7]) + struct.pack("<2d", 1.5, -2.25)
    header = {
        "x": {"dtype": "F64", "shape": [2], "data_offsets": [1, 17]},
        "b": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
    }
    path = tmp_path / "m.safetensors"
    path.write_bytes(safetensors_bytes({}, header=header, pad_to=3) + raw)
    got = read_safetensors(path)
    assert got["x"].tolist() == [1.5, -2.25]
    assert got["b"].tolist() == [7]


def test_safetensors_without_tensors(tmp_path: Path) -> None:
    path = tmp_path / "m.safetensors"
    path.write_bytes(safetensors_bytes({}, {"format": "pt"}))
    assert read_safetensors(path) == {}
