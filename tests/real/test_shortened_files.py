"""A weight file shortened by another process while attntrace reads it.

``np.save`` and most writers truncate a file before writing it again; a reader that
memory-maps the file dies by SIGBUS (exit 135, no message) when it touches a page past
the new end. The readers read instead of mapping, so a file shortened between the
header's read and the data's is one line, "the file changed while it was read". Each
test shortens the file at that moment (after the reader has opened and sized it).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import invoke, one_line_error
from weight_files import T_F32, T_Q8_0, safetensors_bytes, write_gguf

import attntrace.real.weights.gguf as gguf_module
import attntrace.real.weights.safetensors as safetensors_module
from attntrace.checking.user_arrays import read_user_arrays
from attntrace.errors import InputError
from attntrace.kernel import reading
from attntrace.real.weights.gguf import GGUFFile
from attntrace.real.weights.safetensors import read_safetensors

CHANGED = "the file changed while it was read"
ROWS, COLUMNS = 64, 1024  # 256 KiB of float32: many pages past a shortened end


def _gguf(path: Path) -> Path:
    weights = struct.pack(f"<{ROWS * COLUMNS}f", *range(ROWS * COLUMNS))
    q8 = (struct.pack("<e", 0.5) + bytes(range(32))) * (ROWS * COLUMNS // 32)
    return write_gguf(
        path, {}, [("w", (COLUMNS, ROWS), T_F32, weights), ("q", (COLUMNS, ROWS), T_Q8_0, q8)]
    )


def _safetensors(path: Path) -> Path:
    values = np.arange(ROWS * COLUMNS, dtype="<f4")
    tensors = {
        "Q": ("F32", [ROWS, COLUMNS], values.tobytes()),
        "K": ("F32", [ROWS, COLUMNS], values[::-1].tobytes()),
    }
    path.write_bytes(safetensors_bytes(tensors))
    return path


def _shorten(path: Path, keep: int) -> None:
    """What a writer that truncates first does to the file: cut it to ``keep`` bytes."""
    os.truncate(path, keep)


def _refused(read: Callable[[], object]) -> str:
    with pytest.raises(InputError) as refused:
        read()
    return str(refused.value)


@pytest.mark.parametrize("read", ["tensor w", "tensor q", "rows w", "rows q"])
def test_a_gguf_shortened_after_its_header_is_read_is_one_line(tmp_path: Path, read: str) -> None:
    path = _gguf(tmp_path / "m.gguf")
    reader = GGUFFile(path)
    _shorten(path, reader.data_offset + 100)
    how, name = read.split()
    message = _refused(
        lambda: reader.tensor(name) if how == "tensor" else reader.rows(name, [ROWS - 1])
    )
    assert message.startswith(f"{path}: {CHANGED} (")
    assert "\n" not in message


def test_a_gguf_shortened_before_its_header_is_read_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sized at 260 KiB when opened, 30 bytes when its header is read."""
    path = _gguf(tmp_path / "m.gguf")
    read = reading.read_array

    def shorten_then_read(*args: Any) -> Any:
        _shorten(path, 30)
        return read(*args)

    monkeypatch.setattr("attntrace.real.weights.gguf.read_array", shorten_then_read)
    message = _refused(lambda: GGUFFile(path))
    assert message.startswith(f"{path}: {CHANGED} (")


def test_a_gguf_read_whole_gives_the_numbers_it_holds(tmp_path: Path) -> None:
    """The reads give every byte: the F32 tensor is 0, 1, 2, ... in numpy order, and
    Q8_0's is 0.5 × (0..31) in each block (ggml's d·q), read-only as before."""
    reader = GGUFFile(_gguf(tmp_path / "m.gguf"))
    w = reader.tensor("w")
    assert w.shape == (ROWS, COLUMNS)
    assert w.ravel().tolist() == list(range(ROWS * COLUMNS))
    assert reader.rows("q", [3]).ravel().tolist() == [0.5 * q for q in range(32)] * (COLUMNS // 32)
    assert not w.flags.writeable
    assert not reader.tensor("q").flags.writeable


def test_a_gguf_header_longer_than_the_first_read_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A header past the first read's bytes is read again, longer (here from 64 bytes)."""
    monkeypatch.setattr(gguf_module, "HEADER_READ_BYTES", 64)
    path = write_gguf(
        tmp_path / "m.gguf",
        {"general.name": (8, "x" * 500), "list": (9, (8, ["ab", "c" * 300, "d"]))},
        [("w", (4,), T_F32, struct.pack("<4f", 1, 2, 3, 4))],
    )
    reader = GGUFFile(path)
    assert reader.metadata == {"general.name": "x" * 500, "list": ["ab", "c" * 300, "d"]}
    assert reader.tensor("w").tolist() == [1, 2, 3, 4]
    stepped = GGUFFile(path, skip=("list",))
    assert stepped.metadata == {"general.name": "x" * 500}


@pytest.mark.parametrize("read", ["item", "rows"])
def test_a_safetensors_file_shortened_after_its_header_is_read_is_one_line(
    tmp_path: Path, read: str
) -> None:
    path = _safetensors(tmp_path / "m.safetensors")
    tensors = read_safetensors(path)
    _shorten(path, 1000)
    message = _refused(lambda: tensors["K"] if read == "item" else tensors.rows("K", [ROWS - 1]))
    assert message.startswith(f"{path}: {CHANGED} (")


def test_check_on_a_safetensors_file_shortened_while_read_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``attntrace check``'s arrays, the file cut between its header and its data."""
    path = _safetensors(tmp_path / "mine.safetensors")
    made = safetensors_module.SafetensorsFile.__init__

    def made_then_shortened(self: Any, *args: Any) -> None:
        made(self, *args)
        _shorten(path, 2000)

    monkeypatch.setattr(safetensors_module.SafetensorsFile, "__init__", made_then_shortened)
    message = _refused(lambda: read_user_arrays(path))
    assert message.startswith(f"{path}: {CHANGED} (")
    _safetensors(path)  # whole again, for the command
    result = invoke("check", str(path))
    assert CHANGED in one_line_error(result)


def test_the_rows_of_a_safetensors_table_are_the_rows(tmp_path: Path) -> None:
    tensors = read_safetensors(_safetensors(tmp_path / "m.safetensors"))
    rows = tensors.rows("Q", [5, 0, 5])
    expected = [[float(r * COLUMNS + c) for c in range(COLUMNS)] for r in (5, 0, 5)]
    assert rows.tolist() == expected
    assert tensors["K"][0, 0] == ROWS * COLUMNS - 1


def test_a_row_past_a_safetensors_table_is_one_line(tmp_path: Path) -> None:
    path = _safetensors(tmp_path / "m.safetensors")
    message = _refused(lambda: read_safetensors(path).rows("Q", [ROWS]))
    assert message == f"{path}: Q: expected a row from 0 to {ROWS - 1}, got {ROWS}"
