"""Hostile GGUF files: truncated, lying counts and lengths, unknown types, garbled bytes.

Each must end in one clear :class:`InputError` naming the file, never a traceback or a
huge allocation (a count of 2**60 is checked against the bytes left before anything is
allocated for it).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from weight_files import (
    ARRAY,
    BOOL,
    F32V,
    STRING,
    T_F32,
    T_IQ2_XXS,
    T_Q4_1,
    T_Q8_0,
    U8,
    U32,
    Metadata,
    Tensor,
    gguf_bytes,
    gguf_string,
    random_blocks,
    refusal,
)

from attntrace.errors import InputError
from attntrace.real.weights.gguf import GGUFFile


def _read_all_gguf(path: Path) -> None:
    reader = GGUFFile(path)
    for name in reader.tensor_names:
        assert reader.tensor(name).dtype == np.float32


def _gguf_error(path: Path) -> str:
    """The one line that refuses ``path`` (it must be refused)."""
    message = refusal(_read_all_gguf, path)
    assert message is not None, f"{path} was read, not refused"
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
            "blk.0.w: unknown ggml tensor type: expected a type ggml defines (ggml type 0 to ",
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
            [("blk.0.ffn_down.weight", (256,), T_IQ2_XXS, bytes(66))],
            {},
            "blk.0.ffn_down.weight: tensor type IQ2_XXS cannot be dequantized: expected one of "
            "F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, F64, BF16, "
            "got IQ2_XXS (ggml type 16)",
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
    refusal(_read_all_gguf, path)  # it reads, or one line names the file and what is wrong
