"""The bad-input catalogue's contract and its tools, shared by the tables of each room.

docs/cli.md#the-error-line: bad input is exit 2 with one line on stderr, ``attntrace: error: ...``,
that names the file, the field path, what was expected and what was found; no
traceback, and nothing on stdout. Each room keeps its own table of such inputs, each
row run through the real CLI (``attntrace run``) with Typer's ``CliRunner`` by
:func:`check_rejected`; the expected line is exact wherever the message is stable:

- tests/kernel/test_reading.py: files that are not regular files, not text, or too big;
- tests/modelfile/test_parse.py: YAML and JSON syntax, YAML that is not plain data;
- tests/modelfile/test_model_file.py: a model file's fields, matrices, tokens, .npy files;
- tests/modelfile/test_edits.py: ``run --set``'s edits: paths, values, what the model refuses;
- tests/kernel/test_spec.py: shapes that do not fit, tokens the vocabulary does not hold;
- tests/forward/test_overflow.py: arithmetic that overflows float64;
- tests/cli/test_arguments.py: the command line's arguments and flags.

Every test runs inside its own ``tmp_path`` (the working directory), and the model file
is passed by a relative name (``model.yaml``), so messages read exactly as a user sees
them: ``model.yaml: weights.WK: expected 2 × 2 ..., got 2 × 3``.

A row marked ``xfail(strict=True, reason="BUG: ...")`` records behaviour that breaks
the contract today; it asserts what the message should say, so the row fails (and so
passes as xfail) until the bug is fixed, and then XPASS fails loudly: drop the mark.
A ``...-contract`` row beside it checks that today's output still keeps the rest of
the contract (exit 2, one line on stderr, no traceback).

A row may give the command (``render``, ``decode``) and what stdin holds. Every row runs
under a time limit, so a read that would block (a FIFO with no writer) fails instead of
hanging.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from helpers import time_limit
from typer.testing import CliRunner, Result  # type: ignore[attr-defined, unused-ignore]

from attntrace.cli import app

PREFIX = "attntrace: error: "

# The worked example of docs/model-file.md, as YAML lines: 4 lines of embeddings, then 4 of
# weights. Cases splice a broken line into it, so every other field stays valid.
EMB = "embeddings:\n  cat: [1, 2]\n  eats: [3, 1]\n  fish: [2, 4]\n"
WQ = "  WQ: [[1, 0], [0, 1]]\n"
WK = "  WK: [[1, 0], [0, 1]]\n"
WV = "  WV: [[0, 1], [1, 0]]\n"
W = "weights:\n" + WQ + WK + WV
GOOD = EMB + W

# The same model as JSON, in pieces.
J_EMB = '"embeddings": {"cat": [1, 2], "eats": [3, 1], "fish": [2, 4]}'
J_W = '"weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[0, 1], [1, 0]]}'

FIFO_WAIT = 0.25  # seconds a FIFO's writer is waited for, in these tables

# A file's content: text (written as UTF-8), raw bytes, a function that makes whatever is
# at the path (a directory, a symlink loop, ...), or None for no file at all.
Make = str | bytes | Callable[[Path], None] | None


class Case(NamedTuple):
    make: Make
    suffix: str
    args: tuple[str, ...]
    message: str | None  # the exact text after "attntrace: error: ", if stable
    contains: tuple[str, ...]  # substrings the text must hold, where it is not exact
    command: str = "run"
    stdin: bytes | None = None


def with_file(
    *extra: str, suffix: str = ".yaml", sentence: str | None = "cat eats fish"
) -> tuple[str, ...]:
    """``run`` arguments: the sentence (if any), ``--config model<suffix>``, then ``extra``."""
    head = () if sentence is None else (sentence,)
    return (*head, "--config", f"model{suffix}", *extra)


def case(
    id: str,
    make: Make,
    message: str | None,
    *,
    suffix: str = ".yaml",
    args: tuple[str, ...] | None = None,
    contains: tuple[str, ...] = (),
    bug: str | None = None,
    command: str = "run",
    stdin: bytes | None = None,
) -> object:
    """One row: the file to make as ``model<suffix>``, and the one line it must give."""
    marks = [pytest.mark.xfail(strict=True, reason=f"BUG: {bug}")] if bug else []
    if args is None:
        args = with_file(suffix=suffix)
    return pytest.param(
        Case(make, suffix, args, message, contains, command, stdin), id=id, marks=marks
    )


def check_rejected(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run one row and hold it to the contract: exit 2, one line, nothing on stdout."""
    monkeypatch.chdir(tmp_path)
    materialize(case.make, Path(f"model{case.suffix}"))
    if case.make is fifo:  # the wait for a writer, made short (the default is 2 s)
        monkeypatch.setattr("attntrace.kernel.reading.FIFO_WAIT_SECONDS", FIFO_WAIT)

    result = invoke(case.args, case.command, case.stdin)

    assert_no_traceback(result)
    assert result.stdout == "", "bad input must leave stdout empty"
    lines = result.stderr.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {result.stderr!r}"
    assert result.stderr.endswith("\n")
    line = lines[0]
    assert line.startswith(PREFIX), line
    text = line.removeprefix(PREFIX)
    if case.message is not None:
        assert text == case.message
    for part in case.contains:
        assert part in text
    assert result.exit_code == 2, f"exit {result.exit_code}: {result.stderr!r}"


def materialize(make: Make, path: Path) -> None:
    if make is None:
        return
    if isinstance(make, str):
        path.write_text(make, encoding="utf-8")
    elif isinstance(make, bytes):
        path.write_bytes(make)
    else:
        make(path)


def invoke(args: tuple[str, ...], command: str = "run", stdin: bytes | None = None) -> Result:
    with time_limit(20):  # a read that blocks fails the test, not the suite
        return CliRunner().invoke(app, [command, *args], input=stdin)


def assert_no_traceback(result: Result) -> None:
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"an exception escaped: {result.exception!r}"
    )


# ------------------------------------------------------------------- file makers


def directory(path: Path) -> None:
    path.mkdir()


def unreadable(path: Path) -> None:
    path.write_text(GOOD, encoding="utf-8")
    path.chmod(0)
    try:
        path.read_bytes()
    except PermissionError:
        return
    pytest.skip(
        "chmod 000 does not stop this user from reading (root or CAP_DAC_OVERRIDE); "
        "the same code path is covered by symlink-loop and parent-is-a-file"
    )


def symlink_loop(path: Path) -> None:
    path.symlink_to(path.name)


def plain_file(path: Path) -> None:
    path.write_text(GOOD, encoding="utf-8")


def fifo(path: Path) -> None:
    os.mkfifo(path)


def unix_socket(path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path.name)  # relative: the test runs in the file's folder


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def with_npy(path: Path, text: str, arrays: dict[str, Any]) -> None:
    """Write the model file and, beside it, .npy files holding ``arrays``."""
    import numpy as np

    path.write_text(text, encoding="utf-8")
    for name, data in arrays.items():
        np.save(path.parent / name, np.array(data))


def with_npy_header(path: Path, text: str, name: str, shape: tuple[int, int]) -> None:
    """A .npy file whose header claims ``shape`` but holds almost nothing."""
    import numpy as np

    path.write_text(text, encoding="utf-8")
    with (path.parent / name).open("wb") as out:
        header = {"descr": "<f8", "fortran_order": False, "shape": shape}
        npy_format: Any = np.lib.format  # untyped in numpy 1.24's stubs
        npy_format.write_array_header_1_0(out, header)
        out.write(b"0" * 100)


def with_fifo(path: Path, text: str, name: str) -> None:
    """The model file, and beside it a FIFO that nothing writes to."""
    path.write_text(text, encoding="utf-8")
    os.mkfifo(path.parent / name)


def with_link(path: Path, text: str, name: str, target: str) -> None:
    """The model file, and beside it a symbolic link to ``target``."""
    path.write_text(text, encoding="utf-8")
    (path.parent / name).symlink_to(target)


def with_text(path: Path, text: str, files: dict[str, str]) -> None:
    """The model file, and beside it files with the given text."""
    path.write_text(text, encoding="utf-8")
    for name, content in files.items():
        (path.parent / name).write_text(content, encoding="utf-8")
