"""Hostile safetensors files, and weight files of both formats that are no regular file.

Each must end in one clear :class:`InputError` naming the file, never a traceback, a
huge allocation or a read that blocks (a FIFO, a device).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import time_limit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from weight_files import (
    refusal,
    safetensors_bytes,
)

from attntrace.errors import InputError
from attntrace.real.weights.gguf import GGUFFile
from attntrace.real.weights.safetensors import read_safetensors


def _safetensors_error(path: Path) -> str:
    """The one line that refuses ``path`` (it must be refused)."""
    message = refusal(read_safetensors, path)
    assert message is not None, f"{path} was read, not refused"
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
    assert str(refused.value) == (f"{path}: {found}, not a regular file: expected {what}")


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
    refusal(_read_all_safetensors, path)  # it reads, or one line names the file and what is wrong


def _read_all_safetensors(path: Path) -> None:
    for array in read_safetensors(path).values():
        array.copy()  # touch every byte
