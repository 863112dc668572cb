"""The reader of a person's saved arrays (``attntrace check FILE``), and of those handed
over from Python: every format and dtype read back exactly, and every bad file one line.

Files are written the way people write them (``np.savez``, ``json.dump``) or byte by
byte (safetensors, lying .npz members); the values expected are the ones written, as
Python floats, so widening to float64 is checked to be exact, not merely close.
"""

from __future__ import annotations

import io
import json
import math
import os
import struct
import tracemalloc
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import raw_controls, time_limit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from weight_files import bfloat16, bfloat16_bytes, refusal, safetensors_bytes

from attntrace.checking.given import DTYPES, GivenArray
from attntrace.checking.user_arrays import given_arrays, read_user_arrays
from attntrace.errors import InputError

FLOATS = "expected a float array (float16, bfloat16, float32 or float64)"
NAN, INF = math.nan, math.inf


def refused(path: Path) -> str:
    """The one line that refuses ``path``, naming it first (it must be refused)."""
    message = refusal(read_user_arrays, path)
    assert message is not None, f"{path} was read, not refused"
    assert raw_controls(message) == [], repr(message)
    return message


def same_numbers(array: GivenArray, expected: list[Any]) -> None:
    """``array`` holds exactly ``expected`` (nested Python floats), NaN where NaN is."""
    assert array.data.dtype == np.float64
    got = array.data.tolist()
    assert json.dumps(got) == json.dumps(expected), (got, expected)  # NaN == NaN here


# ----------------------------------------------------------------------------- .npz


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_npz_round_trip_in_the_saved_order_and_dtypes(
    save: Callable[..., None], tmp_path: Path
) -> None:
    arrays: dict[str, np.ndarray[Any, Any]] = {
        "V": np.array([[0.1, -2.5], [NAN, INF]], dtype=np.float32),
        "Q": np.array([[[1 / 3]], [[-0.0]]], dtype=np.float64),
        "attn": np.array([0.1, 65504, -INF], dtype=np.float16),
        "K": np.array([[1.5, 2.25, 1e-30]], dtype=">f4"),  # big-endian
        "O": np.asfortranarray(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])),
    }
    path = tmp_path / "mine.npz"
    save(path, **arrays)
    got = read_user_arrays(path)
    assert list(got) == ["V", "Q", "attn", "K", "O"]
    dtypes = {name: array.dtype for name, array in got.items()}
    assert dtypes == {
        "V": "float32",
        "Q": "float64",
        "attn": "float16",
        "K": "float32",
        "O": "float64",
    }
    for name, array in arrays.items():
        assert got[name].name == name
        assert got[name].data.shape == array.shape
        same_numbers(got[name], array.tolist())  # tolist: each stored value, exactly
    # float32's 0.1 is not float64's: the stored number, widened, not re-rounded
    assert got["V"].data[0, 0] == struct.unpack("<f", struct.pack("<f", 0.1))[0] != 0.1
    assert not got["Q"].data.flags.writeable


def npz_member(header: dict[str, Any], data: bytes, *, version: int = 1) -> bytes:
    """A .npy member written by hand: the magic, a header numpy's writer formats, data."""
    out = io.BytesIO()
    write = (
        np.lib.format.write_array_header_1_0
        if version == 1
        else np.lib.format.write_array_header_2_0
    )
    write(out, header)  # type: ignore[no-untyped-call, unused-ignore]
    return out.getvalue() + data


def write_zip(path: Path, members: list[tuple[str, bytes]], compress: int = 0) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a duplicate name: written anyway
        with zipfile.ZipFile(path, "w", compression=compress) as archive:
            for name, raw in members:
                archive.writestr(name, raw)
    return path


def test_npz_member_in_npy_version_2_is_read(tmp_path: Path) -> None:
    header = {"descr": "<f8", "fortran_order": False, "shape": (2,)}
    path = write_zip(
        tmp_path / "v2.npz",
        [("Q.npy", npz_member(header, struct.pack("<2d", 0.5, -1.25), version=2))],
    )
    same_numbers(read_user_arrays(path)["Q"], [0.5, -1.25])


def _savez(**arrays: Any) -> Callable[[Path], None]:
    return lambda path: np.savez(path, **arrays)


def _bytes(data: bytes) -> Callable[[Path], object]:
    return lambda path: path.write_bytes(data)


def _members(*members: tuple[str, bytes], compress: int = 0) -> Callable[[Path], object]:
    return lambda path: write_zip(path, list(members), compress)


F8 = {"descr": "<f8", "fortran_order": False}


def _cut_npz(path: Path) -> None:
    np.savez(path, Q=np.ones((4, 4)))
    path.write_bytes(path.read_bytes()[:300])


def _npy_renamed(path: Path) -> None:
    np.save(path.with_suffix(".npy"), np.ones(2))
    path.with_suffix(".npy").rename(path)


def _bad_checksum(path: Path) -> None:
    np.savez(path, Q=np.arange(100.0))  # stored, not packed: the numbers are there as such
    data = path.read_bytes()
    at = data.index(struct.pack("<d", 50.0))
    path.write_bytes(data[:at] + struct.pack("<d", 51.0) + data[at + 8 :])


@pytest.mark.parametrize(
    ("write", "said"),
    [
        (
            _savez(Q=np.array([1, "a"], dtype=object)),
            "Q: an array of Python objects, which only pickle can load (a .npz is never "
            f"unpickled): {FLOATS}, got object",
        ),
        (_savez(Q=np.arange(3)), f"Q: {FLOATS}, got int64"),
        (_savez(Q=np.array([True])), f"Q: {FLOATS}, got bool"),
        (_savez(Q=np.array([1j])), f"Q: {FLOATS}, got complex128"),
        (_savez(Q=np.array(["x"])), f"Q: {FLOATS}, got str32"),
        (
            _savez(Q=np.zeros(3, dtype="V2")),
            f"Q: {FLOATS}, got V2 (raw 2-byte values: how numpy saves ml_dtypes' bfloat16; "
            "save bfloat16 arrays with safetensors, or cast them to float32)",
        ),
        (_savez(Q=np.zeros(2, dtype=[("a", "<f4")])), f"Q: {FLOATS}, got void32"),
        (_savez(Q=np.float64(1.5)), "Q: expected an array (one axis or more), got a scalar"),
        (_savez(Q=np.zeros((2, 0, 3))), "Q: expected a non-empty array, got 2 × 0 × 3"),
        (_savez(), "no arrays: expected at least one named array"),
        (
            _bytes(b""),
            "the file is empty: expected named arrays (a .npz, .safetensors or .json file)",
        ),
        (
            _bytes(b"not a zip at all"),
            "not a readable .npz file (a zip of .npy arrays): File is not a zip file",
        ),
        (_cut_npz, "not a readable .npz file (a zip of .npy arrays): "),
        (
            _bad_checksum,
            "not a readable .npz file (a zip of .npy arrays): Bad CRC-32 for file 'Q.npy'",
        ),
        (
            _npy_renamed,
            "not a readable .npz file (a zip of .npy arrays): File is not a zip file",
        ),
        (
            _members(("notes.txt", b"hi")),
            "the member 'notes.txt' is no .npy array: expected only NAME.npy members, as "
            "np.savez writes",
        ),
        (
            _members(
                ("Q.npy", npz_member({**F8, "shape": (1,)}, bytes(8))),
                ("Q.npy", npz_member({**F8, "shape": (1,)}, bytes(8))),
            ),
            "Q: two arrays of one name: expected each name once",
        ),
        (
            _members(("Q.npy", b"\x93NUMPY\x01\x00\x08\x00{'a': 1}")),
            "Q: not a .npy array (Header does not contain the correct keys: ['a'])",
        ),
        (
            _members(("Q.npy", b"\x93NUMPY\x01\x00\x08\x00{'a': (}")),
            "Q: not a .npy array (its header is not the Python dictionary a .npy header is)",
        ),
        (_members(("Q.npy", b"PK\x03\x04 something else")), "Q: not a .npy array ("),
        (
            _members(("Q.npy", b"\x93NUMPY\x07\x00")),
            "Q: not a .npy array (an unknown .npy version 7.0)",
        ),
        (
            _members(("Q.npy", npz_member({**F8, "shape": (-1, 2)}, bytes(32)))),
            "Q: a .npy header with a negative length: got (-1, 2)",
        ),
        (
            _members(("Q.npy", npz_member({**F8, "shape": (3,)}, bytes(16)))),
            "Q: its header declares more numbers than the member holds: expected at most 16 "
            "bytes, got 3 float64 (24 bytes)",
        ),
    ],
)
def test_a_bad_npz_is_one_line(write: Callable[[Path], object], said: str, tmp_path: Path) -> None:
    path = tmp_path / "mine.npz"
    write(path)
    message = refused(path)
    assert message.startswith(f"{path}: {said}"), message


def test_a_member_declaring_a_huge_shape_is_refused_before_allocation(tmp_path: Path) -> None:
    # 10**6 × 10**6 float64 is 8 TB; the member holds 64 bytes. np.load would make the
    # array before reading into it.
    raw = npz_member({**F8, "shape": (10**6, 10**6)}, bytes(64))
    path = write_zip(tmp_path / "bomb.npz", [("Q.npy", raw)], zipfile.ZIP_DEFLATED)
    tracemalloc.start()
    try:
        message = refused(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "Q: its header declares more numbers than the member holds" in message
    assert "got 1000000 × 1000000 float64 (7629394.5 MiB)" in message
    assert peak < 10 * 2**20


def test_a_zip_bomb_is_refused_by_its_unpacked_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "zeros.npz"
    np.savez_compressed(path, Q=np.zeros(2**18))  # 2 MiB of zeros, packed to a few KiB
    assert path.stat().st_size < 20_000
    monkeypatch.setenv("ATTNTRACE_MAX_FILE_MB", "1")
    tracemalloc.start()
    try:
        message = refused(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert message == (
        f"{path}: the arrays unpack to 2.0 MiB, over the limit of 1 MiB "
        "(set ATTNTRACE_MAX_FILE_MB to read larger files)"
    )
    assert peak < 2**20
    monkeypatch.setenv("ATTNTRACE_MAX_FILE_MB", "3")
    assert read_user_arrays(path)["Q"].data.shape == (2**18,)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    compress=st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]),
    cuts=st.lists(st.tuples(st.integers(0, 10**6), st.binary(max_size=8)), max_size=4),
    length=st.none() | st.integers(0, 10**6),
)
def test_a_garbled_npz_is_arrays_or_one_line(
    compress: int, cuts: list[tuple[int, bytes]], length: int | None, tmp_path: Path
) -> None:
    """Bytes overwritten anywhere (the zip's headers, a .npy header, packed numbers), or
    the file cut short: arrays, or one line naming the file; never a traceback."""
    path = tmp_path / "garbled.npz"
    save = np.savez_compressed if compress == zipfile.ZIP_DEFLATED else np.savez
    save(path, Q=np.arange(12.0).reshape(3, 4), attn=np.ones((2, 2), np.float16))
    data = bytearray(path.read_bytes())
    for at, raw in cuts:
        at %= len(data)
        data[at : at + len(raw)] = raw
    path.write_bytes(bytes(data if length is None else data[: length % (len(data) + 1)]))
    if refusal(read_user_arrays, path) is None:  # the bytes changed were not looked at
        for array in read_user_arrays(path).values():
            assert array.data.dtype == np.float64
            assert array.dtype in DTYPES


# ---------------------------------------------------------------------- .safetensors


def test_safetensors_round_trip_with_bfloat16(tmp_path: Path) -> None:
    brain = [1.0, 0.1, -1 / 3, 1 + 3 * 2**-8, 3.0e38]  # rounded to 7 bits of mantissa
    tensors = {
        "scores": ("F32", [1, 2, 2], struct.pack("<4f", 0.5, NAN, -INF, 1e-30)),
        "Q": ("BF16", [5], bfloat16_bytes(brain)),
        "K": ("F16", [3], struct.pack("<3e", 1.5, -65504, 6e-8)),
        "V": ("F64", [2], struct.pack("<2d", 0.1, -0.0)),
    }
    path = tmp_path / "mine.safetensors"
    path.write_bytes(safetensors_bytes(tensors, {"format": "pt"}))
    got = read_user_arrays(path)
    assert list(got) == ["scores", "Q", "K", "V"]  # the order of the data in the file
    assert {n: a.dtype for n, a in got.items()} == {
        "scores": "float32",
        "Q": "bfloat16",
        "K": "float16",
        "V": "float64",
    }
    f32 = [struct.unpack("<f", struct.pack("<f", x))[0] for x in (0.5, NAN, -INF, 1e-30)]
    same_numbers(got["scores"], [[f32[:2], f32[2:]]])
    same_numbers(got["Q"], [bfloat16(x)[1] for x in brain])
    same_numbers(got["K"], [1.5, -65504.0, struct.unpack("<e", struct.pack("<e", 6e-8))[0]])
    same_numbers(got["V"], [0.1, -0.0])
    # the rounding kept 8 significant bits, no more
    assert got["Q"].data[1] != 0.1
    assert abs(got["Q"].data[1] - 0.1) <= 0.1 * 2**-8


@pytest.mark.parametrize(
    ("tensors", "said"),
    [
        ({"Q": ("I64", [2], struct.pack("<2q", 1, 2))}, f"Q: {FLOATS}, got int64"),
        ({"mask": ("BOOL", [2], bytes([1, 0]))}, f"mask: {FLOATS}, got bool"),
        (
            {"Q": ("F32", [], struct.pack("<f", 1))},
            "Q: expected an array (one axis or more), got a scalar",
        ),
        ({"Q": ("F32", [0, 3], b"")}, "Q: expected a non-empty array, got 0 × 3"),
        ({}, "no arrays: expected at least one named array"),
        ({"Q": ("F8_E4M3", [2], bytes(2))}, "Q.dtype: unsupported dtype: expected one of "),
    ],
)
def test_a_bad_safetensors_file_is_one_line(
    tensors: dict[str, Any], said: str, tmp_path: Path
) -> None:
    path = tmp_path / "mine.safetensors"
    path.write_bytes(safetensors_bytes(tensors))
    message = refused(path)
    assert message.startswith(f"{path}: {said}"), message


# ----------------------------------------------------------------------------- .json


def test_json_round_trip_with_nan_and_infinity(tmp_path: Path) -> None:
    # what json.dump writes for an unstable softmax: NaN, Infinity, -Infinity
    arrays = {"softmax": [[NAN, INF], [-INF, 0.25]], "Q": [[[1, 2.5]]], "X": [0.1, -3]}
    path = tmp_path / "mine.json"
    with path.open("w", encoding="utf-8") as file:
        json.dump(arrays, file)
    assert "NaN" in path.read_text(encoding="utf-8")
    got = read_user_arrays(path)
    assert list(got) == ["softmax", "Q", "X"]
    # every number but 0.1 is a float32 (docs/check.md: such arrays compare as float32)
    assert {n: a.dtype for n, a in got.items()} == {
        "softmax": "float32",
        "Q": "float32",
        "X": "float64",
    }
    assert got["Q"].data.shape == (1, 1, 2)
    for name, expected in arrays.items():
        same_numbers(got[name], json.loads(json.dumps(expected), parse_int=float))
    assert [type(x) for x in got["X"].data.tolist()] == [float, float]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '{"Q": [[1, 2], [3]]}',
            "Q[1]: ragged lists: expected a list of 2 numbers, as Q[0] is, got a list of 1 item",
        ),
        (
            '{"Q": [[[1], [2]], [[1]]]}',
            "Q[1]: ragged lists: expected a list of 2 lists, as Q[0] is, got a list of 1 item",
        ),
        (
            '{"Q": [[[1], [2]], [[1], [2, 3]]]}',
            "Q[1][1]: ragged lists: expected a list of "
            "1 number, as Q[0][0] is, got a list of 2 items",
        ),
        (
            '{"Q": [[1, 2], 3]}',
            "Q[1]: ragged lists: expected a list of 2 numbers, as Q[0] is, got 3",
        ),
        ('{"Q": [[1, 2], [3, [4]]]}', "Q[1][1]: expected a number, got a list of 1 item"),
        ('{"Q": [[1, 2], ["x", 4]]}', "Q[1][0]: expected a number, got a string 'x'"),
        ('{"Q": [[1, 2], [true, 4]]}', "Q[1][0]: expected a number, got a boolean (true)"),
        ('{"Q": [[1, null]]}', "Q[0][1]: expected a number, got nothing (null)"),
        ('{"Q": [{"a": 1}]}', "Q[0]: expected a number, got a mapping with 1 key"),
        ('{"Q": []}', "Q: expected a non-empty list, got a list of 0 items"),
        ('{"Q": [[], []]}', "Q[0]: expected a non-empty list, got a list of 0 items"),
        ('{"Q": 3}', "Q: expected an array (a list, or nested lists, of numbers), got 3"),
        (
            '{"Q": "abc"}',
            "Q: expected an array (a list, or nested lists, of numbers), got a string 'abc'",
        ),
        (
            "[1, 2]",
            "expected a JSON object of name -> nested lists of numbers, got a list of 2 items",
        ),
        ("{}", "no arrays: expected at least one named array"),
        ('{"Q": [1], "Q": [2]}', "duplicate key 'Q': each array may appear once"),
        (
            '{"Q": [1' + "0" * 5000 + "]}",
            "Q[0]: expected a number, got an integer of 5,001 digits (too large for float64)",
        ),
        (
            '{"Q": [1' + "0" * 400 + "]}",
            "Q[0]: expected a number within float64's range, "
            "got an integer of 1329 bits (too large for float64)",
        ),
        (
            '{"Q": ' + "[" * 40 + "1" + "]" * 40 + "}",
            "Q: lists nested more than 32 deep: expected an array of at most 32 axes",
        ),
        ('{"Q": [1, 2],}', "line 1, column 14: malformed JSON: "),
        ('{"Q": [1\0]}', "binary data (a NUL byte at byte 8): expected named arrays"),
        ("", "the file is empty: expected named arrays"),
    ],
)
def test_a_bad_json_file_is_one_line(text: str, said: str, tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(text, encoding="utf-8")
    message = refused(path)
    assert message.startswith(f"{path}: {said}"), message


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3)),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=2)
    ),
    max_leaves=10,
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=st.dictionaries(st.text(max_size=3), JSON_VALUES, max_size=3) | JSON_VALUES)
def test_any_json_is_arrays_or_one_line(document: Any, tmp_path: Path) -> None:
    """Whatever JSON holds: arrays of exactly its numbers, or one line naming the file."""
    path = tmp_path / "fuzzed.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    message = refusal(read_user_arrays, path)
    if message is None:
        got = read_user_arrays(path)
        assert list(got) == list(document)
        for name, array in got.items():
            same_numbers(array, json.loads(json.dumps(document[name]), parse_int=float))


# ----------------------------------------------------------------------- any file


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
def test_files_that_are_no_file_of_arrays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    npy = tmp_path / "one.npy"
    np.save(npy, np.ones(2))
    assert refused(npy) == (
        f"{npy}: expected a .npz, .safetensors or .json file of named "
        "arrays, got a .npy file (one unnamed array: save named ones "
        "with np.savez(path, Q=q, ...))"
    )
    bare = tmp_path / "arrays"
    assert refused(bare).endswith("got a file with no suffix")
    for suffix in (".npz", ".safetensors", ".json"):
        assert refused(tmp_path / f"absent{suffix}") == f"{tmp_path}/absent{suffix}: no such file"
        folder = tmp_path / f"folder{suffix}"
        folder.mkdir()
        assert refused(folder).startswith(f"{folder}: is a directory, expected ")
        fifo = tmp_path / f"pipe{suffix}"
        os.mkfifo(fifo)
        with time_limit(10):  # no writer: refused, not waited on (or read as empty)
            assert refused(fifo).startswith(f"{fifo}: ")
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"Q": [0.5] * 1000}), encoding="utf-8")
    monkeypatch.setenv("ATTNTRACE_MAX_FILE_MB", str(1000 / 2**20))
    for path in (big, tmp_path / "big.npz", tmp_path / "big.safetensors"):
        if path.suffix != ".json":
            path.write_bytes(bytes(5000))
        assert refused(path) == (
            f"{path}: the file is {path.stat().st_size:,} bytes, over "
            "the limit of 1,000 bytes (set ATTNTRACE_MAX_FILE_MB to "
            "read larger files)"
        )


# ------------------------------------------------------------------------- Python


class FakeTensor:
    """What attntrace asks of a torch tensor, and nothing else: detach, cpu, float,
    numpy, dtype. Its module says torch, as a real tensor's type does."""

    __module__ = "torch"

    def __init__(self, values: Any, dtype: str) -> None:
        self.values = np.asarray(values, dtype=np.float32 if dtype == "bfloat16" else dtype)
        self.dtype = f"torch.{dtype}"
        self.sparse = False

    def detach(self) -> FakeTensor:
        return self

    def cpu(self) -> FakeTensor:
        return self

    def float(self) -> FakeTensor:
        return FakeTensor(self.values, "float32")

    def numpy(self) -> np.ndarray[Any, Any]:
        if self.dtype == "torch.bfloat16":
            raise TypeError("Got unsupported ScalarType BFloat16")  # as torch does
        if self.sparse:
            raise TypeError("can't convert sparse tensor to numpy")
        return self.values


class FakeSparse(FakeTensor):
    """A tensor numpy cannot take (torch's sparse and quantized ones)."""

    __module__ = "torch"

    def __init__(self, values: Any, dtype: str) -> None:
        super().__init__(values, dtype)
        self.sparse = True


class FakeSize(tuple[int, ...]):
    """torch.Size: a tuple of ints, a shape and no array."""

    __module__ = "torch"


def test_python_arrays_lists_and_tensors(tmp_path: Path) -> None:
    brain = [bfloat16(x)[1] for x in (0.1, -2.0, 1 / 3)]
    got = given_arrays(
        {
            "Q": np.array([[0.1, 2.0]], dtype=np.float32),
            "K": [[1, 2.5], (3, np.float32(0.1))],  # lists, tuples, numpy's scalars
            "V": FakeTensor([[0.5, NAN]], "float16"),
            "attn": FakeTensor(brain, "bfloat16"),
            "X": np.array([1.0, 2.0])[::2],  # a view: copied, the caller's left writeable
        }
    )
    assert list(got) == ["Q", "K", "V", "attn", "X"]
    assert {n: a.dtype for n, a in got.items()} == {
        "Q": "float32",
        "K": "float64",
        "V": "float16",
        "attn": "bfloat16",
        "X": "float64",
    }
    f32 = struct.unpack("<f", struct.pack("<f", 0.1))[0]
    same_numbers(got["Q"], [[f32, 2.0]])
    same_numbers(got["K"], [[1.0, 2.5], [3.0, f32]])
    same_numbers(got["V"], [[0.5, NAN]])
    same_numbers(got["attn"], brain)
    same_numbers(got["X"], [1.0])


def test_ml_dtypes_bfloat16_is_read_when_installed() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = [bfloat16(x)[1] for x in (0.1, -2.0, 1 / 3)]
    got = given_arrays({"attn": np.array(values, dtype=ml_dtypes.bfloat16)})["attn"]
    assert got.dtype == "bfloat16"
    same_numbers(got, values)


def test_torch_tensors_when_installed() -> None:
    torch = pytest.importorskip("torch")
    values = [bfloat16(x)[1] for x in (0.1, -2.0, 1 / 3)]
    weights = torch.ones(2, 2, requires_grad=True)
    got = given_arrays(
        {
            "Q": torch.tensor(values, dtype=torch.bfloat16),
            "W": weights * 0.5,
            "h": torch.tensor([0.1], dtype=torch.float16),
        }
    )
    assert {n: a.dtype for n, a in got.items()} == {"Q": "bfloat16", "W": "float32", "h": "float16"}
    same_numbers(got["Q"], values)
    same_numbers(got["W"], [[0.5, 0.5], [0.5, 0.5]])
    same_numbers(got["h"], [struct.unpack("<e", struct.pack("<e", 0.1))[0]])
    with pytest.raises(TypeError, match=r"got Size$"):
        given_arrays({"Q": weights.shape})


def test_what_the_safetensors_package_writes_when_installed(tmp_path: Path) -> None:
    """What the safetensors package itself writes, bfloat16 from ml_dtypes included."""
    numpy_writer = pytest.importorskip("safetensors.numpy")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = [bfloat16(x)[1] for x in (0.1, -2.0, 1 / 3)]
    path = tmp_path / "theirs.safetensors"
    numpy_writer.save_file(
        {"Q": np.array([values], dtype=ml_dtypes.bfloat16), "K": np.array([0.1], dtype=np.float16)},
        str(path),
    )
    got = read_user_arrays(path)
    assert {n: a.dtype for n, a in got.items()} == {"Q": "bfloat16", "K": "float16"}
    same_numbers(got["Q"], [values])
    same_numbers(got["K"], [struct.unpack("<e", struct.pack("<e", 0.1))[0]])


@pytest.mark.parametrize(
    ("arrays", "said"),
    [
        ([np.ones(2)], "arrays must be a mapping of names to arrays (a dict), got list"),
        ({1: np.ones(2)}, "each name in arrays must be a str, got int"),
        (
            {"Q": 1.5},
            "arrays['Q'] must be a numpy array, a torch tensor or nested lists of "
            "numbers, got float",
        ),
        (
            {"Q": "1, 2"},
            "arrays['Q'] must be a numpy array, a torch tensor or nested lists of numbers, got str",
        ),
        (
            {"Q": FakeSize((2, 3))},
            "arrays['Q'] must be a numpy array, a torch tensor or "
            "nested lists of numbers, got FakeSize",
        ),
        (
            {"Q": np.float32(1)},
            "arrays['Q'] must be a numpy array, a torch tensor or "
            "nested lists of numbers, got float32",
        ),
    ],
)
def test_a_wrong_python_type_is_a_type_error(arrays: Any, said: str) -> None:
    with pytest.raises(TypeError) as caught:
        given_arrays(arrays)
    assert str(caught.value) == said


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (np.arange(3), f"Q: {FLOATS}, got int64"),
        (np.ones(2, dtype=np.complex64), f"Q: {FLOATS}, got complex64"),
        (np.array([None, 1.0]), f"Q: {FLOATS}, got object (Python objects)"),
        (np.array(2.0), "Q: expected an array (one axis or more), got a scalar"),
        (np.zeros((3, 0)), "Q: expected a non-empty array, got 3 × 0"),
        (
            [[1.0], [2.0, 3.0]],
            "Q[1]: ragged lists: expected a list of 1 number, as Q[0] is, got a list of 2 items",
        ),
        ([[1.0, "2"]], "Q[0][1]: expected a number, got a string '2'"),
        ([np.True_], "Q[0]: expected a number, got a boolean (true)"),
        ([1j], "Q[0]: expected a number, got a complex"),
        ([], "Q: expected a non-empty list, got a list of 0 items"),
        (FakeTensor([1, 2], "int64"), f"Q: {FLOATS}, got int64"),
        (FakeTensor([1, 2], "complex64"), f"Q: {FLOATS}, got complex64"),
        (
            FakeSparse([1.0], "float32"),
            "Q: a tensor numpy cannot read (can't convert sparse "
            "tensor to numpy): expected a dense tensor (call .to_dense() first)",
        ),
    ],
)
def test_a_bad_python_value_is_one_line(value: Any, said: str) -> None:
    with pytest.raises(InputError) as caught:
        given_arrays({"Q": value})
    assert str(caught.value) == said


def test_no_arrays_from_python() -> None:
    with pytest.raises(InputError, match=r"^arrays: no arrays: expected at least one named"):
        given_arrays({})


def test_json_of_a_float32_array_is_compared_as_float32(tmp_path: Path) -> None:
    """json.dump(a.tolist()) of float32 writes each float32 exactly; of float64, not."""
    values = np.array([[0.1, 1 / 3], [2.0, -7.25]])
    path = tmp_path / "mine.json"
    for dtype, said in ((np.float32, "float32"), (np.float64, "float64")):
        path.write_text(json.dumps({"Q": values.astype(dtype).tolist()}), encoding="utf-8")
        got = read_user_arrays(path)["Q"]
        assert got.dtype == said
        np.testing.assert_array_equal(got.data, values.astype(dtype).astype(np.float64))


def test_a_safetensors_tensor_of_more_axes_than_numpy_makes_is_one_line(tmp_path: Path) -> None:
    """Found by a fresh pair of eyes: 65 axes of 1 reached numpy, which raised."""
    header = json.dumps({"Q": {"dtype": "F32", "shape": [1] * 65, "data_offsets": [0, 4]}})
    path = tmp_path / "deep.safetensors"
    raw = header.encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + b"\0\0\0\0")
    assert refused(path) == f"{path}: Q.shape: expected at most 32 axes, got 65 axes"
