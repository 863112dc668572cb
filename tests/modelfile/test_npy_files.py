"""``.npy`` matrices beside a model file: every corrupt header one line, the numbers read
(never mapped) and counted before they are converted (issue 29).

The bad headers are written byte by byte (numpy would not write them); each must give
exactly one line and exit 2 (the catalogue's contract, ``tests/catalogue.py``). Good
files are read as ``np.load`` reads them: the reference here is numpy's own loader.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pytest
from catalogue import EMB, WK, WV, Case, case, check_rejected, invoke

import attntrace
from attntrace.modelfile import npy_files
from attntrace.modelfile.model_file import load_model
from attntrace.modelfile.npy_files import NpyHeader

MODEL = EMB + "weights:\n  WQ: wq.npy\n" + WK + WV  # d_model 2, WQ from wq.npy
NPY = "model.yaml: weights.WQ: expected a .npy array file, got 'wq.npy': "
REAL = "model.yaml: weights.WQ: expected a 2-D array of real numbers, got "
NOT_A_DICT = NPY + "its header is not the Python dictionary a .npy header is"
F8 = "'descr': '<f8', 'fortran_order': False"


def npy_bytes(header: str, data: bytes = b"", version: tuple[int, int] = (1, 0)) -> bytes:
    """A .npy file with ``header`` as its header text, as numpy lays one out."""
    text = header.encode("latin-1")
    length = "<H" if version == (1, 0) else "<I"
    pad = 64 - (6 + 2 + struct.calcsize(length) + len(text) + 1) % 64
    text += b" " * (pad % 64) + b"\n"
    return b"\x93NUMPY" + bytes(version) + struct.pack(length, len(text)) + text + data


def with_header(header: str, data: bytes = b"", version: tuple[int, int] = (1, 0)) -> Any:
    def make(path: Path) -> None:
        path.write_text(MODEL, encoding="utf-8")
        (path.parent / "wq.npy").write_bytes(npy_bytes(header, data, version))

    return make


def shaped(shape: str, descr: str = "'<f8'", data: bytes = b"0" * 64) -> Any:
    """A header of ``shape`` and ``descr`` (both as the header's Python text)."""
    return with_header(f"{{'descr': {descr}, 'fortran_order': False, 'shape': {shape}, }}", data)


def _not_utf_8(path: Path) -> None:
    """A version-3 header (UTF-8) that does not decode."""
    path.write_text(MODEL, encoding="utf-8")
    header = b"\xff\xfe{}" + b" " * 5 + b"\n"
    (path.parent / "wq.npy").write_bytes(
        b"\x93NUMPY\x03\x00" + struct.pack("<I", len(header)) + header
    )


def _cut_in_the_magic(path: Path) -> None:
    path.write_text(MODEL, encoding="utf-8")
    (path.parent / "wq.npy").write_bytes(b"\x93NUMPY\x01")


REJECTED = [
    # --- headers that are no Python dictionary (numpy's tokenizer, ast, decoding)
    case("unclosed-brace", with_header("{" + F8 + ", 'shape': (2, 2)"), NOT_A_DICT),
    case(
        "a-name", with_header("{'descr': foo, 'fortran_order': False, 'shape': (2, 2)}"), NOT_A_DICT
    ),
    case("not-utf-8", _not_utf_8, NOT_A_DICT),
    case("not-a-dict", with_header("[1, 2]"), NPY + "Header is not a dictionary: [1, 2]"),
    case(
        "keys",
        with_header("{'descr': '<f8', 'shape': (2, 2)}"),
        NPY + "Header does not contain the correct keys: ['descr', 'shape']",
    ),
    case(
        "fortran-order-garbage",
        with_header("{'descr': '<f8', 'fortran_order': 'yes', 'shape': (2, 2)}", b"0" * 32),
        NPY + "fortran_order is not a valid bool: 'yes'",
    ),
    case(
        "descr-garbage",
        shaped("(2, 2)", "'zz'"),
        NPY + "descr is not a valid dtype descriptor: 'zz'",
    ),
    case(
        "descr-nested-lists",
        with_header(
            "{'descr': " + "[" * 90 + "]" * 90 + ", 'fortran_order': False, 'shape': (2, 2)}"
        ),
        NPY + "its header does not describe an array numpy reads (descr, fortran_order, shape)",
    ),
    case(
        "descr-subarray-past-any-size",
        shaped("(2, 2)", f"('<f8', ({10**400},))"),
        None,
        contains=(NPY + "its header does not describe an array",),
    ),
    case("shape-of-floats", shaped("(2.0, 2)"), NPY + "shape is not valid: (2.0, 2)"),
    case(
        "version-4",
        with_header("{" + F8 + ", 'shape': (2, 2)}", b"0" * 32, version=(4, 0)),
        NPY + "an unknown .npy version 4.0",
    ),
    # --- shapes: past any file, negative, not 2-D, empty
    case(
        "shape-10**400",
        shaped(f"({10**400}, 2)"),
        NPY + "its header declares a length of 401 digits × 2 float64 (about 10**401 bytes), "
        "more than the 64 bytes the file holds after it",
    ),
    case(
        "shape-2**62",
        shaped(f"({2**62}, 4)"),
        NPY + "its header declares a length of 19 digits × 4 float64 (about 10**20 bytes), "
        "more than the 64 bytes the file holds after it",
    ),
    case(
        "shape-past-the-file",
        shaped("(3, 3)"),
        NPY + "its header declares 3 × 3 float64 (72 bytes), more than the 64 bytes the file "
        "holds after it",
    ),
    case("shape-negative", shaped("(-1, 2)"), NPY + "a negative length in its shape -1 × 2"),
    case("shape-0-d", shaped("()"), REAL + "a scalar of float64"),
    case("shape-3-d", shaped("(1, 2, 2)"), REAL + "1 × 2 × 2 of float64"),
    case("shape-1-d", shaped("(2,)"), REAL + "2 of float64"),
    case(
        "shape-empty",
        shaped("(0, 2)", data=b""),
        "model.yaml: weights.WQ: expected a non-empty matrix, got 0 × 2",
    ),
    case(
        "shape-a-bool",
        shaped("(True, 2)"),
        "model.yaml: weights.WQ: expected 2 rows (d_model, the embeddings' length), got 1 × 2",
    ),
    # --- dtypes that are no real numbers
    case("dtype-object", shaped("(2, 2)", "'|O'"), REAL + "2 × 2 of object"),
    case("dtype-structured", shaped("(2, 2)", "[('a', '<f8')]"), None, contains=(REAL,)),
    case("dtype-complex", shaped("(2, 2)", "'<c16'"), REAL + "2 × 2 of complex128"),
    case("dtype-datetime", shaped("(2, 2)", "'<M8[s]'"), REAL + "2 × 2 of datetime64[s]"),
    case("dtype-unicode", shaped("(2, 2)", "'<U3'"), REAL + "2 × 2 of <U3"),
    case("dtype-bytes", shaped("(2, 2)", "'|S3'"), REAL + "2 × 2 of |S3"),
    case("dtype-bool", shaped("(2, 2)", "'|b1'"), REAL + "2 × 2 of bool"),
    case("dtype-subarray", shaped("(2, 2)", "('<f8', (2,))"), None, contains=(REAL,)),
    # --- a header cut short
    case(
        "cut-in-the-magic",
        _cut_in_the_magic,
        NPY + "EOF: reading magic string, expected 8 bytes got 7",
    ),
]


@pytest.mark.parametrize("case", REJECTED)
def test_a_bad_npy_file_is_one_line_and_exit_2(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_rejected(case, tmp_path, monkeypatch)


# ------------------------------------------------------------ read, never mapped


# learned positions from a .npy file: 2,048 rows, 32 KiB, more than a read buffers
POSITIONS = EMB + "weights:\n  WQ: [[1, 0], [0, 1]]\n" + WK + WV + "positions: pos.npy\n"
CHANGED = (
    "attntrace: error: model.yaml: positions: pos.npy: the file changed while it was read "
    "(it is shorter than its header says)\n"
)


def _cut_to(numbers_left: int) -> Any:
    """What another process's ``np.save`` does to the file between its header and its
    numbers: truncate it (here, to ``numbers_left`` bytes of numbers)."""

    def cut(handle: BinaryIO, header: NpyHeader) -> None:
        os.truncate(header.path, header.offset + numbers_left)

    return cut


@pytest.mark.parametrize(
    ("chunk", "left"),
    [(1 << 22, 3), (4096, 16384)],
    ids=["in-the-first-chunk", "past-the-first-chunks"],
)
def test_a_file_shortened_while_it_is_read_is_one_line(
    chunk: int, left: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mapped, the missing page killed the process with SIGBUS (exit 135, no word)."""
    monkeypatch.chdir(tmp_path)
    Path("model.yaml").write_text(POSITIONS, encoding="utf-8")
    np.save("pos.npy", np.ones((2048, 2)))
    monkeypatch.setattr(npy_files, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(npy_files, "after_header", _cut_to(left))
    result = invoke(("cat", "--config", "model.yaml"))
    assert result.stdout == ""
    assert result.stderr == CHANGED
    assert result.exit_code == 2


def test_a_file_shortened_in_another_process_is_never_a_signal(tmp_path: Path) -> None:
    """The same, by a real truncation from a second process while the first one reads
    (its hook waits for it): exit 2 and the one line, never SIGBUS."""
    Path(tmp_path / "model.yaml").write_text(POSITIONS, encoding="utf-8")
    np.save(tmp_path / "pos.npy", np.ones((2048, 2)))
    root = str(Path(attntrace.__file__).resolve().parents[1])
    script = (
        "import os, subprocess, sys\n"
        "from attntrace.modelfile import npy_files\n"
        "def cut(handle, header):\n"
        "    subprocess.run([sys.executable, '-c', "
        "f'import os; os.truncate({str(header.path)!r}, {header.offset + 5})'], check=True)\n"
        "npy_files.after_header = cut\n"
        "from attntrace.cli import main\n"
        "sys.argv = ['attntrace', 'run', 'cat', '-c', 'model.yaml']\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": root},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (2, "", CHANGED)


GOOD_ARRAYS = {
    "float64": np.array([[1.5, -2.0], [3.25, 4.0]]),
    "big-endian": np.array([[1.5, -2.0], [3.25, 4.0]], dtype=">f8"),
    "int8": np.array([[1, -2], [127, -128]], dtype=np.int8),
    "uint16-big-endian": np.array([[1, 2], [65535, 4]], dtype=">u2"),
    "float16": np.array([[0.5, 2], [3, 65504]], dtype=np.float16),
    "fortran-order": np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)),
    "int64-large": np.array([[2**62, 1], [-(2**62), 3]], dtype=np.int64),
}


@pytest.mark.parametrize("chunk", [4, 16, 1 << 22], ids=["a-number-a-chunk", "two", "4-MiB"])
@pytest.mark.parametrize("name", list(GOOD_ARRAYS))
def test_a_matrix_reads_as_numpy_loads_it(
    name: str, chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever its dtype, byte order, layout, or the chunks it is read in: the numbers
    are numpy's own (np.load's), widened to float64, in a read-only matrix."""
    monkeypatch.setattr(npy_files, "CHUNK_BYTES", chunk)
    array = GOOD_ARRAYS[name]
    np.save(tmp_path / "m.npy", array)
    expected = np.load(tmp_path / "m.npy").astype(np.float64)
    reader = npy_files.NpyReader(tmp_path, "model.yaml")
    loaded = reader.load("m.npy", "positions")
    assert loaded.dtype == np.float64
    assert loaded.shape == array.shape
    np.testing.assert_array_equal(loaded, expected)
    assert not loaded.flags.writeable


@pytest.mark.parametrize("fortran", [False, True], ids=["C-order", "Fortran-order"])
def test_the_first_non_finite_number_is_named_by_its_row_and_column(
    fortran: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a later chunk, and in a file stored columns first: [1][2] is row 1, column 2."""
    monkeypatch.setattr(npy_files, "CHUNK_BYTES", 16)
    array = np.zeros((3, 4))
    array[1, 2] = np.nan
    np.save(tmp_path / "m.npy", np.asfortranarray(array) if fortran else array)
    reader = npy_files.NpyReader(tmp_path, "model.yaml")
    with pytest.raises(attntrace.InputError) as raised:
        reader.load("m.npy", "target")
    assert str(raised.value) == (
        "model.yaml: target[1][2]: expected a finite number, got a non-finite number (nan)"
    )


def test_no_warning_of_numpy_reaches_stderr(tmp_path: Path) -> None:
    """A shape of (2**62, 4) made numpy's size arithmetic overflow: two RuntimeWarning
    lines came before the error line. In a fresh process, where warnings are shown."""
    (tmp_path / "model.yaml").write_text(MODEL, encoding="utf-8")
    header = f"{{{F8}, 'shape': ({2**62}, 4), }}"
    (tmp_path / "wq.npy").write_bytes(npy_bytes(header, b"0" * 64))
    root = str(Path(attntrace.__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-W", "default", "-m", "attntrace", "run", "cat", "-c", "model.yaml"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": root},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("attntrace: error: model.yaml: weights.WQ: ")


# --------------------------------------------------- counted before converting


def _never_converted(*_: object) -> None:
    raise AssertionError("a .npy file's numbers were read before its shape was checked")


def test_a_weight_of_the_wrong_rows_is_refused_by_its_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 2000 × 2000 int8 WQ in a d_model-2 model: the shape error, from the header,
    with nothing converted (was: 32 MB of float64 made first, 2,475 MB at 16000²)."""
    monkeypatch.chdir(tmp_path)
    Path("model.yaml").write_text(MODEL, encoding="utf-8")
    np.save("wq.npy", np.zeros((2000, 2000), dtype=np.int8))
    monkeypatch.setattr(npy_files.NpyReader, "_numbers", _never_converted)
    result = invoke(("cat", "--config", "model.yaml"))
    assert result.stderr == (
        "attntrace: error: model.yaml: weights.WQ: expected 2 rows (d_model, the embeddings' "
        "length), got 2000 × 2000\n"
    )
    assert result.exit_code == 2


def test_positions_of_the_wrong_width_are_refused_by_their_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("model.yaml").write_text(
        EMB + "weights:\n  WQ: [[1, 0], [0, 1]]\n" + WK + WV + "positions: pos.npy\n",
        encoding="utf-8",
    )
    np.save("pos.npy", np.zeros((8, 3)))
    monkeypatch.setattr(npy_files.NpyReader, "_numbers", _never_converted)
    result = invoke(("cat", "--config", "model.yaml"))
    assert result.stderr == (
        "attntrace: error: model.yaml: positions: expected vectors of 2 numbers (d_model), "
        "got 8 × 3\n"
    )


def test_the_matrices_are_counted_against_the_budget_before_converting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A consistent model of int8 files: each becomes 8 bytes a number. Five of 512 × 512
    make 5 × 2 MiB of float64, over a budget of 8 MiB: refused, nothing converted."""
    monkeypatch.chdir(tmp_path)
    np.save("big.npy", np.zeros((512, 512), dtype=np.int8))
    tokens = ", ".join(f"t{i}" for i in range(512))
    Path("model.yaml").write_text(
        f"embeddings: big.npy\nvocabulary: [{tokens}]\n"
        "weights: {WQ: big.npy, WK: big.npy, WV: big.npy, WO: big.npy}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "8")
    monkeypatch.setattr(npy_files.NpyReader, "_numbers", _never_converted)
    result = invoke(("t0", "--config", "model.yaml"))
    assert result.exit_code == 2
    line = result.stderr.removeprefix("attntrace: error: model.yaml: ")
    assert line.startswith("loading the model would take about 10 MiB (")
    assert "2 MiB" in line
    assert line.endswith(
        "over the memory budget of 8 MiB (shorten the input, or set ATTNTRACE_MAX_MEMORY_MB)\n"
    )


def test_within_the_budget_the_same_model_loads(tmp_path: Path) -> None:
    np.save(tmp_path / "big.npy", np.eye(64, dtype=np.int8))
    tokens = ", ".join(f"t{i}" for i in range(64))
    (tmp_path / "model.yaml").write_text(
        f"embeddings: big.npy\nvocabulary: [{tokens}]\n"
        "weights: {WQ: big.npy, WK: big.npy, WV: big.npy}\n",
        encoding="utf-8",
    )
    model = load_model(tmp_path / "model.yaml")
    np.testing.assert_array_equal(model.WQ, np.eye(64))
    np.testing.assert_array_equal(model.embeddings["t3"], np.eye(64)[3])


def test_an_edit_into_a_npy_matrix_counts_the_matrix_and_its_copy_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--set WQ[0][0]=1`` into a 1000 × 1000 int8 file: its float64 (8 MB) and the
    copy the edit is written into (8 MB more) are 15 MiB, over a budget of 8: refused
    by the header, the numbers unread."""
    monkeypatch.chdir(tmp_path)
    Path("model.yaml").write_text(MODEL, encoding="utf-8")
    np.save("wq.npy", np.zeros((1000, 1000), dtype=np.int8))
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "8")
    monkeypatch.setattr(npy_files.NpyReader, "_numbers", _never_converted)
    result = invoke(("cat", "--config", "model.yaml", "--set", "WQ[0][0]=1"))
    figure = round(2 * 8 * 1000 * 1000 / 2**20)
    assert result.stderr == (
        "attntrace: error: model.yaml (with --set WQ[0][0]): editing weights.WQ would take "
        f"about {figure} MiB (weights.WQ and its edited copy {figure} MiB), over the memory "
        "budget of 8 MiB (shorten the input, or set ATTNTRACE_MAX_MEMORY_MB)\n"
    )
    assert result.exit_code == 2


def test_a_file_replaced_after_it_was_counted_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted by its header as 2 × 2, then replaced by a larger array before its
    numbers are read: what the budget counted is no longer what would be read."""
    monkeypatch.chdir(tmp_path)
    Path("model.yaml").write_text(MODEL, encoding="utf-8")
    np.save("wq.npy", np.eye(2))
    reader = npy_files.NpyReader(Path(), "model.yaml")
    assert reader.header("wq.npy", "weights.WQ").shape == (2, 2)
    np.save("wq.npy", np.eye(3))
    with pytest.raises(attntrace.InputError) as raised:
        reader.load("wq.npy", "weights.WQ")
    assert str(raised.value) == (
        "model.yaml: weights.WQ: wq.npy: the file changed while it was read (its header is "
        "not the one read before)"
    )
