"""``check`` within the memory budget, and within one line whatever a header says.

The arrays are counted from their headers (a ``.npz`` member's ``.npy`` header, a
``.safetensors`` header) before any is read or widened, and the check (the arrays, the
trace, the diagnosis's recomputations, the comparison) before the trace is made: past
``ATTNTRACE_MAX_MEMORY_MB``, one line names the figure. A header that lies about its
shape or dtype is one line too, never an OverflowError or a numpy warning.
"""

from __future__ import annotations

import io
import json
import re
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import invoke, one_line_error

import attntrace.api
import attntrace.checking.user_arrays as user_arrays
from attntrace.checking.user_arrays import read_user_arrays
from attntrace.errors import InputError

MODEL = """name: long
sentence: {sentence}
embeddings:
  a: [1]
  b: [2]
weights:
  WQ: [[1]]
  WK: [[1]]
  WV: [[1]]
"""


def npz_member(header: dict[str, Any], data: bytes) -> bytes:
    """A .npy member written by hand: the magic, a header numpy's writer formats, data."""
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, header)  # type: ignore[no-untyped-call, unused-ignore]
    return out.getvalue() + data


def write_zip(path: Path, members: list[tuple[str, bytes]], compress: int) -> Path:
    with zipfile.ZipFile(path, "w", compression=compress) as archive:
        for name, raw in members:
            archive.writestr(name, raw)
    return path


def _refused(path: Path) -> str:
    with pytest.raises(InputError) as refused:
        read_user_arrays(path)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message


def _never_widened(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if an array is widened to float64 (read) at all."""

    def widened(*_: Any) -> None:
        raise AssertionError("an array was read before the budget was counted")

    monkeypatch.setattr(user_arrays, "_given", widened)


def _mib(text: str) -> int:
    """The figure in ``about N MiB``."""
    found = re.search(r"would take about ([\d,]+) MiB", text)
    assert found is not None, text
    return int(found.group(1).replace(",", ""))


def test_npz_arrays_past_the_budget_are_refused_from_their_headers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two float16 members of 1000 × 1000: 2 MB each in the file, 8 MB each as float64
    (16 MB held) plus the larger as saved while it is widened (2 MB): 18 MiB in all,
    past a budget of 10 MiB."""
    path = tmp_path / "mine.npz"
    np.savez(path, Q=np.ones((1000, 1000), np.float16), K=np.ones((1000, 1000), np.float16))
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "10")
    _never_widened(monkeypatch)
    message = _refused(path)
    assert "reading 2 arrays would take about" in message
    assert _mib(message) == round((2 * 10**6 * 8 + 10**6 * 2) / 2**20)
    assert message.endswith(
        "over the memory budget of 10 MiB (shorten the input, or set ATTNTRACE_MAX_MEMORY_MB)"
    )


def test_safetensors_arrays_past_the_budget_are_refused_from_their_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mine.safetensors"
    raw = np.ones((1000, 2000), "<f4").tobytes()
    header = json.dumps(
        {"Q": {"dtype": "F32", "shape": [1000, 2000], "data_offsets": [0, len(raw)]}}
    )
    path.write_bytes(struct.pack("<Q", len(header)) + header.encode() + raw)
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "15")
    _never_widened(monkeypatch)
    message = _refused(path)
    assert "reading 1 array would take about" in message
    assert _mib(message) == round((2 * 10**6 * 8 + 2 * 10**6 * 4) / 2**20)  # 23 MiB


def test_a_check_past_the_budget_is_refused_before_the_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 tokens of a one-head d_model-1 model: each n × n stage is 300² float64 =
    0.72 MB; the trace holds three (scores, scaled, softmax), the diagnosis three times
    as much again: about 9 MiB with the given scores, past a budget of 5 MiB."""
    config = tmp_path / "long.yaml"
    config.write_text(MODEL.format(sentence=" ".join(["a", "b"] * 150)))
    arrays = tmp_path / "mine.npz"
    np.savez(arrays, scores=np.zeros((300, 300)))

    def no_trace(*_: Any, **__: Any) -> None:
        raise AssertionError("the trace was computed")

    monkeypatch.setattr(attntrace.api, "trace_block", no_trace)
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "5")
    line = one_line_error(
        invoke("check", str(arrays), "--config", str(config)),
        "checking 1 array against a trace of 300 tokens × 300 keys would take about",
        "over the memory budget of 5 MiB",
    )
    assert _mib(line) >= round(4 * 3 * 300 * 300 * 8 / 2**20)
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "2048")
    monkeypatch.undo()
    assert invoke("check", str(arrays), "--config", str(config)).exit_code == 1


F8 = {"descr": "<f8", "fortran_order": False}


@pytest.mark.parametrize(
    ("header", "said"),
    [
        ({**F8, "shape": (10**400, 2)}, "Q: its header declares more numbers than the member"),
        ({**F8, "shape": (2**62, 4)}, "Q: its header declares more numbers than the member"),
        ({**F8, "shape": (10**4000, 10**4000)}, "Q: its header declares more numbers than"),
        ({**F8, "shape": (2, -3)}, "Q: a .npy header with a negative length"),
        ({**F8, "shape": (0, 2)}, "Q: expected a non-empty array, got 0 × 2"),
        ({**F8, "shape": ()}, "Q: expected an array (one axis or more), got a scalar"),
        ({**F8, "shape": (1,) * 40}, "Q: expected an array of at most 32 axes, got 40 axes"),
        ({"descr": "<c16", "fortran_order": False, "shape": (1,)}, "Q: expected a float array"),
        ({"descr": "|V8", "fortran_order": False, "shape": (1,)}, "Q: expected a float array"),
        ({"descr": "<M8[s]", "fortran_order": False, "shape": (1,)}, "Q: expected a float"),
        ({"descr": "<U1", "fortran_order": False, "shape": (2,)}, "Q: expected a float array"),
        ({"descr": "|b1", "fortran_order": False, "shape": (8,)}, "Q: expected a float array"),
        ({"descr": "<i8", "fortran_order": False, "shape": (1,)}, "Q: expected a float array"),
        ({"descr": [("a", "<f8")], "fortran_order": False, "shape": (1,)}, "Q: expected a flo"),
        ({"descr": "<f16", "fortran_order": False, "shape": (1,)}, "Q: expected a float array"),
    ],
)
def test_a_lying_npz_member_header_is_one_line(
    tmp_path: Path, header: dict[str, Any], said: str
) -> None:
    raw = npz_member(header, bytes(8))
    path = write_zip(tmp_path / "mine.npz", [("Q.npy", raw)], zipfile.ZIP_DEFLATED)
    assert said in _refused(path)
    one_line_error(invoke("check", str(path)), said)  # the command: one line, exit 2


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"dtype": "F64", "shape": [10**400, 2]}, "data_offsets do not match shape × dtype size"),
        ({"dtype": "F64", "shape": [2**70, 2**70]}, "more bytes than the file has"),
        ({"dtype": "F64", "shape": [-1]}, "bad shape"),
        ({"dtype": "F64", "shape": [1.5]}, "bad shape"),
        ({"dtype": "F64", "shape": [True]}, "bad shape"),
        ({"dtype": "F64", "shape": "8"}, "bad shape"),
        ({"dtype": "F8_E4M3", "shape": [8]}, "unsupported dtype"),
        ({"dtype": "C64", "shape": [1]}, "unsupported dtype"),
        ({"dtype": ["F64"], "shape": [1]}, "unsupported dtype"),
        ({"dtype": "I64", "shape": [1]}, "Q: expected a float array"),
        ({"dtype": "BOOL", "shape": [8]}, "Q: expected a float array"),
    ],
)
def test_a_lying_safetensors_header_is_one_line(
    tmp_path: Path, entry: dict[str, Any], said: str
) -> None:
    header = json.dumps({"Q": {**entry, "data_offsets": [0, 8]}}).encode()
    path = tmp_path / "mine.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(8))
    assert said in _refused(path)
    one_line_error(invoke("check", str(path)), said)


@pytest.mark.parametrize("stages", [("scores",), ("scores", "softmax"), ("Q", "K", "scores")])
def test_the_check_estimate_holds_what_the_check_allocates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stages: tuple[str, ...]
) -> None:
    """The refusal's figure is an upper bound of the arrays a check allocates (traced by
    tracemalloc, which numpy reports to), for a 400-token check whose arrays differ, so
    the diagnosis runs its whole catalogue."""
    import tracemalloc

    from attntrace.api import checked, prepared
    from attntrace.checking.given import refuse_check_past_budget

    n = 400
    config = tmp_path / "long.yaml"
    config.write_text(MODEL.format(sentence=" ".join(["a", "b"] * (n // 2))))
    shapes = {"Q": (n, 1), "K": (n, 1), "scores": (n, n), "softmax": (n, n)}
    rng = np.random.default_rng(0)
    arrays = tmp_path / "mine.npz"
    saved: dict[str, Any] = {name: rng.random(shapes[name]) for name in stages}
    np.savez(arrays, **saved)
    given = read_user_arrays(arrays)
    inputs = prepared(None, config=str(config))
    # blocks of 4,096 cells: their temporaries, counted whole, would hide the rest
    monkeypatch.setattr("attntrace.checking.tolerance.BLOCK_CELLS", 4096)
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "1")
    with pytest.raises(InputError) as refused:
        refuse_check_past_budget(given, inputs.spec, n, n)
    monkeypatch.delenv("ATTNTRACE_MAX_MEMORY_MB")
    estimate = _mib(str(refused.value)) * 2**20
    tracemalloc.start()
    try:
        report = checked(given, None, config=str(config))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.exit_code == 1
    given_bytes = sum(array.data.nbytes for array in given.values())
    assert peak + given_bytes <= estimate + 2**20  # the figure is rounded to a MiB
