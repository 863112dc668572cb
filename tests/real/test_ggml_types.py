"""Every ggml tensor type attntrace reads, bit for bit against the ``gguf`` package.

The oracle is ``gguf.quants.dequantize`` (llama.cpp's gguf-py, its own numpy transcription
of ggml-quants.c's ``dequantize_row_*``): random blocks of every readable type, scale
fields and all, must come out as the same float32 bits. Equality is the right test here,
not a tolerance: each weight is one to three IEEE float32 operations in a fixed order,
with no sum a machine could reorder. Only NaN payloads are not pinned (where a garbled
scale makes a weight NaN, which NaN bits come out is the FPU's business, not ggml's): a
NaN must be NaN where the reference's is, every other weight its exact bits, -0.0
included. F64 has no ``gguf`` dequantizer; its reference is C's ``(float)`` cast, as
Python's ``array('f')`` does it.

Then through the file: a GGUF written by the package's ``GGUFWriter`` (quantized by
``gguf.quants.quantize`` where the package can, else random blocks) is read by
:class:`GGUFFile` and by ``gguf.GGUFReader``. And the types attntrace does not read:
each is one line naming it, the tensor and the file.
"""

from __future__ import annotations

import importlib.util
import math
import re
import struct
from array import array
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import llama_cpp, require

from attntrace.errors import InputError
from attntrace.real.weights.ggml import DEQUANTIZABLE, GGML_TYPES, READERS, REMOVED_TYPES
from attntrace.real.weights.gguf import GGUFFile

NAME = {code: name for code, (name, _, _) in GGML_TYPES.items()}
CODE = {name: code for code, name in NAME.items()}
READ = sorted(READERS)
UNREAD = sorted(set(GGML_TYPES) - set(READERS))

# Byte offsets of each block's fp16 scale fields (ggml-common.h): drawn apart from the
# other bytes, so finite, subnormal, infinite and NaN scales all come up often.
SCALES: dict[str, tuple[int, ...]] = {
    "Q4_0": (0,),
    "Q4_1": (0, 2),
    "Q5_0": (0,),
    "Q5_1": (0, 2),
    "Q8_0": (0,),
    "Q2_K": (80, 82),
    "Q3_K": (108,),
    "Q4_K": (0, 2),
    "Q5_K": (0, 2),
    "Q6_K": (208,),
}
FINITE_HALVES = st.floats(min_value=-65504, max_value=65504, width=16, allow_subnormal=True)
SPECIAL_HALVES = st.sampled_from(
    [0x0000, 0x8000, 0x0001, 0x83FF, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0x7FFF, 0xFD55]
)
HALF_BITS = st.one_of(
    FINITE_HALVES.map(lambda x: struct.unpack("<H", struct.pack("<e", x))[0]),
    SPECIAL_HALVES,
    st.integers(0, 0xFFFF),
)


@pytest.fixture(scope="module")
def gguf() -> ModuleType:
    return require("gguf")


def reference(gguf: ModuleType, code: int, raw: bytes) -> npt.NDArray[np.float32]:
    """The weights of ``raw`` (whole blocks of ggml type ``code``) as the oracle gives them."""
    if NAME[code] == "F64":
        doubles = np.frombuffer(raw, dtype="<f8")
        return np.frombuffer(array("f", doubles.tolist()).tobytes(), dtype=np.float32)
    qtype = gguf.GGMLQuantizationType(code)
    data = np.frombuffer(raw, dtype=np.uint8).reshape(1, -1)
    with np.errstate(all="ignore"):
        out = gguf.quants.dequantize(data, qtype)
    assert out.dtype == np.float32
    return np.asarray(out).reshape(-1)


def assert_same_floats(got: npt.NDArray[Any], expected: npt.NDArray[Any]) -> None:
    """Equal float32 bit patterns, except that any NaN stands for any NaN."""
    assert got.dtype == expected.dtype == np.float32
    assert got.shape == expected.shape
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got.view(np.uint32)[~nan], expected.view(np.uint32)[~nan])


@st.composite
def stored_blocks(draw: st.DrawFn, code: int) -> bytes:
    """1 to 4 blocks of random bytes, their fp16 scale fields drawn as halves."""
    _, _, size = GGML_TYPES[code]
    per_draw = size if NAME[code] in SCALES else size * draw(st.integers(1, 32))
    out = bytearray()
    for _ in range(draw(st.integers(1, 4))):
        block = bytearray(draw(st.binary(min_size=per_draw, max_size=per_draw)))
        for at in SCALES.get(NAME[code], ()):
            block[at : at + 2] = struct.pack("<H", draw(HALF_BITS))
        out += block
    return bytes(out)


def _check_random_blocks(gguf: ModuleType, code: int, data: st.DataObject) -> None:
    raw = data.draw(stored_blocks(code))
    _, per_block, size = GGML_TYPES[code]
    with np.errstate(all="ignore"):
        got = READERS[code](raw, 0, len(raw) // size).reshape(-1)
    assert got.size == per_block * (len(raw) // size)
    assert_same_floats(got, reference(gguf, code, raw))


@pytest.mark.parametrize("code", READ, ids=NAME.get)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_blocks_dequantize_as_gguf_does(
    gguf: ModuleType, code: int, data: st.DataObject
) -> None:
    _check_random_blocks(gguf, code, data)


@pytest.mark.long
@pytest.mark.parametrize("code", READ, ids=NAME.get)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_many_more_random_blocks(gguf: ModuleType, code: int, data: st.DataObject) -> None:
    _check_random_blocks(gguf, code, data)


def test_the_issue_s_types_are_all_read() -> None:
    wanted = [
        "F32",
        "F16",
        "BF16",
        "Q8_0",
        "Q4_0",
        "Q4_1",
        "Q5_0",
        "Q5_1",
        "Q2_K",
        "Q3_K",
        "Q4_K",
        "Q5_K",
        "Q6_K",
    ]
    assert set(wanted) <= set(DEQUANTIZABLE)


def test_q3_k_by_hand() -> None:
    # Scale i = 32 + i − 8 packed: low nibble in byte i % 8 (high nibble for i ≥ 8), top
    # bits in byte 8 + i % 4 at bit 2·(i // 4). d = 0.5; every 2-bit code 3; hmask bit m
    # set for the m-th run of 32 weights where m is even: those weights are 3, the
    # others 3 − 4 = −1.
    values = [24 + i for i in range(16)]
    scales = bytearray(12)
    for i, v in enumerate(values):
        scales[i % 8] |= (v & 0xF) << (4 * (i // 8))
        scales[8 + i % 4] |= (v >> 4) << (2 * (i // 4))
    hmask = bytes([0b01010101] * 32)
    block = hmask + bytes([0xFF] * 64) + bytes(scales) + struct.pack("<e", 0.5)
    got = READERS[CODE["Q3_K"]](block, 0, 1).reshape(-1)
    for w in range(256):
        q = 3 if (w // 32) % 2 == 0 else -1
        assert got[w] == 0.5 * (values[w // 16] - 32) * q, w


def test_q2_k_and_q5_k_by_hand() -> None:
    # Q2_K: weight w of half h, shift k, byte j is bits 2k of qs[32h + j]; its 16-weight
    # group g = w // 16 has scale g % 16 (low nibble) and minimum 1 (high nibble).
    qs = bytes([0b11_10_01_00] * 64)
    block = bytes(0x10 | g for g in range(16)) + qs + struct.pack("<ee", 1.0, 0.5)
    q2 = READERS[CODE["Q2_K"]](block, 0, 1).reshape(-1)
    assert q2.tolist() == [(w // 16) * ((w // 32) % 4) - 0.5 for w in range(256)]
    # Q5_K: scales 1, minimums 0 for sub-blocks 0-3 (bytes 0-7); qh bit s of byte l is
    # the fifth bit of sub-block s's weight l, set where s is odd.
    scales = bytes([1] * 4 + [0] * 8)
    block = struct.pack("<ee", 2.0, 1.0) + scales + bytes([0b10101010] * 32) + bytes(128)
    q5 = READERS[CODE["Q5_K"]](block, 0, 1).reshape(8, 32)
    assert q5[:4].tolist() == [[2.0 * 16 * (s % 2)] * 32 for s in range(4)]
    assert q5[4:].tolist() == [[0.0] * 32] * 4  # scale 0


# ------------------------------------------------------------------- through a GGUF file

ROWS = 3


def _tensor_for(gguf: ModuleType, code: int, rng: np.random.Generator) -> npt.NDArray[Any]:
    """A tensor of ROWS rows of 2 blocks for GGUFWriter.add_tensor: quantized by the
    package where it can, else random blocks with small finite scales (as bytes)."""
    name, per_block, size = GGML_TYPES[code]
    weights = rng.normal(size=(ROWS, 2 * per_block)).astype(np.float32)
    if name in ("F32", "F16", "F64"):
        return weights.astype({"F32": np.float32, "F16": np.float16, "F64": np.float64}[name])
    try:
        return np.asarray(gguf.quants.quantize(weights, gguf.GGMLQuantizationType(code)))
    except NotImplementedError:  # the k-quants: no quantizer in gguf-py
        raw = rng.integers(0, 256, size=(ROWS, 2, size), dtype=np.uint8)
        halves = rng.uniform(-0.1, 0.1, size=(ROWS, 2, 2)).astype("<f2").view(np.uint8)
        for i, at in enumerate(SCALES[name]):
            raw[..., at : at + 2] = halves[..., 2 * i : 2 * i + 2]
        return raw.reshape(ROWS, 2 * size)


def _write(gguf: ModuleType, path: Path, tensors: dict[str, tuple[int, Any]]) -> Path:
    writer = gguf.GGUFWriter(str(path), arch="llama")
    for name, (code, tensor) in tensors.items():
        quantized = tensor.dtype == np.uint8
        raw_dtype = gguf.GGMLQuantizationType(code) if quantized else None
        writer.add_tensor(name, tensor, raw_dtype=raw_dtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def every_type_file(gguf: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tensor of each readable type, named after it, and an IQ2_XXS one."""
    rng = np.random.default_rng(31)
    tensors = {f"blk.{NAME[code]}.weight": (code, _tensor_for(gguf, code, rng)) for code in READ}
    iq2 = rng.integers(0, 256, size=(ROWS, GGML_TYPES[CODE["IQ2_XXS"]][2]), dtype=np.uint8)
    tensors["blk.0.attn_q.weight"] = (CODE["IQ2_XXS"], iq2)
    return _write(gguf, tmp_path_factory.mktemp("types") / "every-type.gguf", tensors)


def _oracle(gguf: ModuleType, path: Path) -> dict[str, tuple[str, npt.NDArray[Any]]]:
    """Each tensor as gguf.GGUFReader and gguf.quants.dequantize read it."""
    out = {}
    for tensor in gguf.GGUFReader(str(path)).tensors:
        kind = tensor.tensor_type
        data = np.asarray(tensor.data)
        if kind.name == "F64":
            weights = reference(gguf, int(kind), data.tobytes()).reshape(data.shape)
        elif kind.name in DEQUANTIZABLE:
            weights = np.asarray(gguf.quants.dequantize(data, kind))
        else:
            weights = data
        out[tensor.name] = (kind.name, weights)
    return out


@pytest.mark.parametrize("code", READ, ids=NAME.get)
def test_a_gguf_file_of_every_type_reads_as_the_gguf_reader_reads_it(
    gguf: ModuleType, every_type_file: Path, code: int
) -> None:
    name = f"blk.{NAME[code]}.weight"
    kind, expected = _oracle(gguf, every_type_file)[name]
    reader = GGUFFile(every_type_file)
    assert (reader.tensor_info(name).type_name, kind) == (NAME[code], NAME[code])
    got = reader.tensor(name)
    per_block = GGML_TYPES[code][1]
    assert got.shape == (ROWS, 2 * per_block) == expected.shape
    assert_same_floats(got, expected.astype(np.float32, copy=False))
    assert_same_floats(reader.rows(name, [2, 0, 2]), got[[2, 0, 2]])
    assert math.isfinite(float(np.abs(got).max()))


@pytest.mark.parametrize("by_rows", [False, True], ids=["tensor", "rows"])
def test_an_unread_type_in_a_gguf_file_is_one_line(every_type_file: Path, by_rows: bool) -> None:
    reader = GGUFFile(every_type_file)
    assert reader.tensor_info("blk.0.attn_q.weight").type_name == "IQ2_XXS"
    name = "blk.0.attn_q.weight"
    read = partial(reader.rows, name, [0]) if by_rows else partial(reader.tensor, name)
    with pytest.raises(InputError) as caught:
        read()
    message = str(caught.value)
    assert "\n" not in message
    assert message == (
        f"{every_type_file}: blk.0.attn_q.weight: tensor type IQ2_XXS cannot be "
        "dequantized: expected one of F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, "
        "Q3_K, Q4_K, Q5_K, Q6_K, F64, BF16, got IQ2_XXS (ggml type 16)"
    )


# ---------------------------------------------------------------- types not read: one line


@pytest.mark.parametrize("code", UNREAD, ids=NAME.get)
def test_every_unread_type_is_named(gguf_path: Callable[..., Path], code: int) -> None:
    name, per_block, size = GGML_TYPES[code]
    path = gguf_path({}, [("blk.3.ffn_up.weight", (per_block, 2), code, bytes(2 * size))])
    with pytest.raises(InputError) as caught:
        GGUFFile(path).tensor("blk.3.ffn_up.weight")
    message = str(caught.value)
    assert message.startswith(f"{path}: blk.3.ffn_up.weight: tensor type {name} cannot be ")
    assert message.endswith(f", got {name} (ggml type {code})")
    assert "expected one of " + ", ".join(DEQUANTIZABLE) in message


def test_an_unknown_type_code_is_one_line(gguf_path: Callable[..., Path]) -> None:
    path = gguf_path({}, [("blk.0.w", (32, 2), 99, bytes(64))])
    with pytest.raises(InputError) as caught:
        GGUFFile(path)
    assert str(caught.value) == (
        f"{path}: blk.0.w: unknown ggml tensor type: expected a type ggml defines (ggml type "
        f"0 to 42); attntrace reads {', '.join(DEQUANTIZABLE)}, got ggml type 99"
    )


@pytest.mark.parametrize("code", sorted(REMOVED_TYPES))
def test_a_removed_type_is_named(gguf_path: Callable[..., Path], code: int) -> None:
    path = gguf_path({}, [("output.weight", (32, 2), code, bytes(64))])
    with pytest.raises(InputError) as caught:
        GGUFFile(path)
    name = REMOVED_TYPES[code]
    assert str(caught.value).startswith(
        f"{path}: output.weight: tensor type {name} has been removed from ggml"
    )
    assert str(caught.value).endswith(f"F64, BF16, got {name} (ggml type {code})")


# ------------------------------------------------------------- the type table is ggml's


def _check_table(enum: Any, sizes: Any) -> None:
    for kind in enum:
        assert NAME.get(int(kind)) == kind.name, kind
        assert GGML_TYPES[int(kind)][1:] == tuple(sizes[kind]), kind.name
    assert set(GGML_TYPES) == {int(kind) for kind in enum}


def test_the_type_table_knows_the_gguf_package_s_types(gguf: ModuleType) -> None:
    """Every type the installed package names, by the same name; the sizes of the types
    read here as it has them (the released gguf 0.19.0 sizes Q8_1 as ggml once laid it out: the
    llama.cpp test below holds the whole table to the newest)."""
    for kind in gguf.GGMLQuantizationType:
        assert NAME.get(int(kind)) == kind.name, kind
        if int(kind) in READERS:
            assert GGML_TYPES[int(kind)][1:] == tuple(gguf.GGML_QUANT_SIZES[kind]), kind.name


@pytest.mark.long  # llama.cpp's files: ATTNTRACE_LLAMA_CPP, given to the long runs
def test_the_type_table_is_llama_cpp_s() -> None:
    """Names and sizes as the newest gguf-py (llama.cpp's own) has them; ggml.h's removed
    types as its comments name them."""
    folder = llama_cpp()
    spec = importlib.util.spec_from_file_location(
        "lcp_gguf_constants", folder / "gguf-py" / "gguf" / "constants.py"
    )
    assert spec is not None
    assert spec.loader is not None
    constants = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(constants)
    _check_table(constants.GGMLQuantizationType, constants.GGML_QUANT_SIZES)
    header = (folder / "ggml" / "include" / "ggml.h").read_text()
    found = re.findall(r"^\s*(//)?\s*GGML_TYPE_(\w+)\s*=\s*(\d+)", header, re.MULTILINE)
    removed = {int(code): name for comment, name, code in found if comment}
    defined = {int(code): name for comment, name, code in found if not comment}
    assert removed == REMOVED_TYPES
    assert defined.pop(max(defined)) == "COUNT"
    assert defined == NAME
