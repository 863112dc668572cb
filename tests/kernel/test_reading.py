"""Reading limits: files that are not regular files, not text, too big, or never end.

The bad-input catalogue's room for :mod:`attntrace.kernel.reading` (the contract and the
tools are in ``tests/catalogue.py``): a missing file, a directory, a FIFO with no writer,
a socket, bytes that are not UTF-8, a NUL byte, stdin. Devices and endless pipes
(``/dev/zero``, ``<(yes)``) are in ``NOT_FILES``: each runs as its own process under a
memory cap, so a reader that ignores the limit fails fast instead of filling the
machine's memory. Pipes that hold a model are legitimate, and are read (``PIPED``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from catalogue import (
    EMB,
    FIFO_WAIT,
    GOOD,
    PREFIX,
    WK,
    WV,
    Case,
    case,
    check_rejected,
    directory,
    fifo,
    plain_file,
    symlink_loop,
    unix_socket,
    unreadable,
    with_fifo,
    with_link,
)
from helpers import invoke as run_cli
from helpers import load_valid_trace

EMPTY_FILE = "the file is empty: expected a model (embeddings and weights)"

REJECTED = [
    # --- the file itself: missing, not a file, unreadable, empty, not text
    case("missing-file", None, "model.yaml: no such file"),
    case("directory", directory, "model.yaml: is a directory, expected a model file"),
    case(
        "unreadable-chmod-000",
        unreadable,
        "model.yaml: cannot read the file: Permission denied",
    ),
    case(
        "unreadable-symlink-loop",
        symlink_loop,
        "model.yaml: cannot read the file: Too many levels of symbolic links",
    ),
    case(
        "unreadable-parent-is-a-file",
        plain_file,
        "model.yaml/inner.yaml: cannot read the file: Not a directory",
        args=("cat", "--config", "model.yaml/inner.yaml"),
    ),
    case("empty-file", "", f"model.yaml: {EMPTY_FILE}"),
    case("whitespace-only-file", "  \n\t\n\n", f"model.yaml: {EMPTY_FILE}"),
    case("empty-json-file", "", f"model.json: {EMPTY_FILE}", suffix=".json"),
    case(
        "non-utf8-latin1",
        b"name: caf\xe9\n" + GOOD.encode(),
        "model.yaml: not UTF-8 text (byte 9): expected a YAML or JSON model file",
    ),
    case(
        "non-utf8-json",
        b'{"name": "caf\xe9"}',
        "model.json: not UTF-8 text (byte 13): expected a YAML or JSON model file",
        suffix=".json",
    ),
    case(
        "utf16-file",
        GOOD.encode("utf-16"),
        "model.yaml: not UTF-8 text (byte 0): expected a YAML or JSON model file",
    ),
    # --- not text: a NUL byte (no YAML or JSON text holds one) ends the reading at once;
    # the first problem in the file is named, whichever it is
    case(
        "nul-byte-in-yaml",
        GOOD[:20] + "\x00" + GOOD[20:],
        "model.yaml: binary data (a NUL byte at byte 20): expected a YAML or JSON model file",
    ),
    case(
        "nul-byte-in-json",
        '{"embeddings": \x00}',
        "model.json: binary data (a NUL byte at byte 15): expected a YAML or JSON model file",
        suffix=".json",
    ),
    case(
        "utf16-without-bom",
        GOOD.encode("utf-16-le"),
        "model.yaml: binary data (a NUL byte at byte 1): expected a YAML or JSON model file",
    ),
    case(
        "non-utf8-before-a-nul",
        b"name: caf\xe9\x00" + GOOD.encode(),
        "model.yaml: not UTF-8 text (byte 9): expected a YAML or JSON model file",
    ),
    case(
        "non-utf8-counts-the-bom",  # the byte in the file, from its start
        b"\xef\xbb\xbfname: caf\xe9\n" + GOOD.encode(),
        "model.yaml: not UTF-8 text (byte 12): expected a YAML or JSON model file",
    ),
    # --- not a regular file: read within the limit or refused, never waited on forever
    case(
        "fifo-without-writer",
        fifo,
        f"model.yaml: nothing came through the pipe (no writer within {FIFO_WAIT} s, or it "
        "wrote nothing): expected a model (embeddings and weights)",
    ),
    case(
        "render-fifo-without-writer",
        fifo,
        f"model.json: nothing came through the pipe (no writer within {FIFO_WAIT} s, or it "
        "wrote nothing): expected a saved trace (from attntrace run --json)",
        suffix=".json",
        command="render",
        args=("model.json",),
    ),
    case("socket", unix_socket, "model.yaml: is a socket, expected a model file"),
    case(
        "npy-fifo",
        lambda path: with_fifo(path, EMB + "weights:\n  WQ: wq.npy\n" + WK + WV, "wq.npy"),
        "model.yaml: weights.WQ: expected a .npy array file, got 'wq.npy': a named pipe "
        "(FIFO), not a regular file",
    ),
    case(
        "npy-character-device",
        lambda path: with_link(
            path, EMB + "weights:\n  WQ: wq.npy\n" + WK + WV, "wq.npy", "/dev/zero"
        ),
        "model.yaml: weights.WQ: expected a .npy array file, got 'wq.npy': a character "
        "device, not a regular file",
    ),
    # --- stdin: --config - (a model) and render - (a trace), read as bytes
    case(
        "config-stdin-empty",
        None,
        "stdin: the input is empty: expected a model (embeddings and weights)",
        args=("cat", "--config", "-"),
        stdin=b"",
    ),
    case(
        "config-stdin-nul",
        None,
        "stdin: binary data (a NUL byte at byte 11): expected a YAML or JSON model file",
        args=("cat", "--config", "-"),
        stdin=b"embeddings:\x00",
    ),
    case(
        "config-stdin-not-utf8",
        None,
        "stdin: not UTF-8 text (byte 6): expected a YAML or JSON model file",
        args=("cat", "--config", "-"),
        stdin=b"name: \xff\n",
    ),
    case(
        "render-stdin-nul",
        None,
        "stdin: binary data (a NUL byte at byte 0): expected a saved trace (from attntrace "
        "run --json)",
        command="render",
        args=("-",),
        stdin=b"\x00{}",
    ),
    case(
        "render-stdin-not-utf8",  # bytes, not the locale's characters
        None,
        "stdin: not UTF-8 text (byte 1): expected a saved trace (from attntrace run --json)",
        command="render",
        args=("-",),
        stdin=b"{\xe9}",
    ),
    # --- a file name a terminal would act on: the one line shows it as escapes
    case(
        "escape-in-the-file-name",
        None,
        "m\\x1bodel.yaml: no such file",
        args=("cat", "--config", "m\x1bodel.yaml"),
    ),
]


@pytest.mark.parametrize("case", REJECTED)
def test_an_unreadable_file_is_one_clear_line_and_exit_2(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that cannot be read as text, or must not be waited on."""
    check_rejected(case, tmp_path, monkeypatch)


# ---------------------------------------- devices and endless pipes, each its own process

# A reader that ignores the size limit fills this quickly and dies with MemoryError (exit 1,
# a traceback) instead of taking the machine's memory; a plain run needs about 300 MB of it.
MEMORY_CAP_KB = 1 << 20
MODEL_TEXT = "expected a YAML or JSON model file"
TRACE_TEXT = "expected a saved trace (from attntrace run --json)"
# /dev/urandom: whichever comes first, a NUL byte or a byte that is not UTF-8
RANDOM_MODEL = r"(binary data \(a NUL byte at byte \d+\)|not UTF-8 text \(byte \d+\)): " + (
    re.escape(MODEL_TEXT)
)
RANDOM_TRACE = RANDOM_MODEL.removesuffix(re.escape(MODEL_TEXT)) + re.escape(TRACE_TEXT)
OVER_1_MIB = re.escape(
    "more than 1 MiB, over the limit of 1 MiB (set ATTNTRACE_MAX_FILE_MB to read larger files)"
)

NOT_FILES = [
    pytest.param(
        "attntrace run cat -c /dev/zero",
        re.escape(f"/dev/zero: binary data (a NUL byte at byte 0): {MODEL_TEXT}"),
        id="config-dev-zero",
    ),
    pytest.param(
        "attntrace run cat -c /dev/urandom",
        f"/dev/urandom: {RANDOM_MODEL}",
        id="config-dev-urandom",
    ),
    pytest.param(
        "attntrace decode cat -c /dev/zero",
        re.escape(f"/dev/zero: binary data (a NUL byte at byte 0): {MODEL_TEXT}"),
        id="decode-config-dev-zero",
    ),
    pytest.param(
        "ln -s /dev/zero model.yaml && attntrace run cat -c model.yaml",
        re.escape(f"model.yaml: binary data (a NUL byte at byte 0): {MODEL_TEXT}"),
        id="config-link-to-dev-zero",
    ),
    pytest.param(
        "attntrace render /dev/zero",
        re.escape(f"/dev/zero: binary data (a NUL byte at byte 0): {TRACE_TEXT}"),
        id="render-dev-zero",
    ),
    pytest.param(
        "attntrace render /dev/urandom", f"/dev/urandom: {RANDOM_TRACE}", id="render-dev-urandom"
    ),
    pytest.param(
        "attntrace run cat -c - < /dev/zero",
        re.escape(f"stdin: binary data (a NUL byte at byte 0): {MODEL_TEXT}"),
        id="config-stdin-dev-zero",
    ),
    pytest.param(
        "attntrace render - < /dev/urandom", f"stdin: {RANDOM_TRACE}", id="render-stdin-dev-urandom"
    ),
    pytest.param(
        "ATTNTRACE_MAX_FILE_MB=1 attntrace run cat -c <(yes)",
        rf"/dev/fd/\d+: {OVER_1_MIB}",
        id="config-endless-pipe",
    ),
    pytest.param(
        "mkfifo f && { yes > f & } && ATTNTRACE_MAX_FILE_MB=1 attntrace run cat -c f",
        rf"f: {OVER_1_MIB}",
        id="config-endless-fifo",
    ),
    pytest.param(
        "yes | ATTNTRACE_MAX_FILE_MB=1 attntrace run cat -c -",
        rf"stdin: {OVER_1_MIB}",
        id="config-endless-stdin",
    ),
    pytest.param(
        "yes | ATTNTRACE_MAX_FILE_MB=1 attntrace render -",
        rf"stdin: {OVER_1_MIB}",
        id="render-endless-stdin",
    ),
    pytest.param(
        "yes x | head -c 2000000 > big && ATTNTRACE_MAX_FILE_MB=1 attntrace render - < big",
        re.escape(
            "stdin: the file is 1.9 MiB, over the limit of 1 MiB (set "
            "ATTNTRACE_MAX_FILE_MB to read larger files)"
        ),
        id="render-stdin-regular-file-by-its-size",
    ),
    pytest.param(
        "attntrace run cat -c - <&-",
        re.escape("stdin: is closed, nothing to read"),
        id="config-stdin-closed",
    ),
    pytest.param(
        "attntrace render - <&-",
        re.escape("stdin: is closed, nothing to read"),
        id="render-stdin-closed",
    ),
]


def run_capped(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` in bash, with the installed attntrace first on PATH, under the cap; a
    writer left in the background (blocked on a FIFO nobody opened) is ended with it."""
    path = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    env = {**os.environ, "COLUMNS": "80", "PATH": path}
    script = f"trap 'kill $(jobs -p) 2>/dev/null' EXIT; ulimit -v {MEMORY_CAP_KB} && {command}"
    return subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@pytest.mark.parametrize(("command", "pattern"), NOT_FILES)
def test_a_device_or_endless_pipe_is_one_line_and_exit_2(
    command: str, pattern: str, tmp_path: Path
) -> None:
    """Every reader stops at the size limit while reading, whatever ``stat`` says (0 for a
    device or a pipe): /dev/zero is refused at its first byte, an endless text stream
    just past the limit, and never with a MemoryError."""
    result = run_capped(command, tmp_path)

    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stdout == ""
    line, newline, rest = result.stderr.partition("\n")
    assert (newline, rest) == ("\n", ""), result.stderr[-2000:]
    assert re.fullmatch(PREFIX + pattern, line), line


SAMPLE = "attntrace samples cat-eats-fish"
PIPED = [
    pytest.param(f"attntrace run cat -c <({SAMPLE}) --json", id="process-substitution"),
    pytest.param(f"{SAMPLE} | attntrace run cat -c - --json", id="config-stdin-yaml"),
    pytest.param(f"{SAMPLE}.json | attntrace run cat -c - --json", id="config-stdin-json"),
    pytest.param(
        f"mkfifo f && {{ {SAMPLE} > f & }} && attntrace run cat -c f --json",
        id="fifo-with-a-writer",
    ),
    pytest.param(
        f"mkfifo f && {{ {{ sleep 0.5; {SAMPLE}; }} > f & }} && attntrace run cat -c f --json",
        id="fifo-writer-silent-at-first",
    ),
    pytest.param(
        f"mkfifo f && {{ {{ sleep 0.5; {SAMPLE} > f; }} & }} && attntrace run cat -c f --json",
        id="fifo-writer-comes-late",
    ),
    pytest.param(
        f"{SAMPLE} | while IFS= read -r line; do printf '%s\\n' \"$line\"; sleep 0.02; "
        "done | attntrace run cat -c - --json",
        id="stdin-fed-slowly",
    ),
]


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@pytest.mark.parametrize("command", PIPED)
def test_a_model_through_a_pipe_traces(command: str, tmp_path: Path) -> None:
    """Pipes are legitimate model files: ``<(...)``, ``--config -``, a named FIFO whose
    writer is slow, silent at first, or a moment late."""
    result = run_capped(command, tmp_path)

    assert (result.returncode, result.stderr) == (0, "")
    assert load_valid_trace(result.stdout)["tokens"] == ["cat"]


def test_decode_and_render_read_stdin_too(tmp_path: Path) -> None:
    decoded = run_capped(f"{SAMPLE} | attntrace decode cat eats -c - --json", tmp_path)
    assert (decoded.returncode, decoded.stderr) == (0, "")
    assert json.loads(decoded.stdout)["tokens"] == ["cat", "eats"]
    shown = run_capped(f"attntrace run cat -c <({SAMPLE}) --json | attntrace render -", tmp_path)
    assert (shown.returncode, shown.stderr) == (0, "")
    assert "softmax" in shown.stdout


@pytest.mark.parametrize("command", [("run", "-c"), ("render",), ("diff", "A.json")])
def test_a_file_s_text_is_counted_against_the_budget_before_it_is_read(
    command: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 200 MB file of spaces took 414 MiB under a budget of 50 before it was found
    empty (a fresh-eyes run): its size, from stat, is counted first; the read is never
    begun (a reader that is called fails the test)."""
    monkeypatch.chdir(tmp_path)
    Path("A.json").write_text(" " * (2 << 20), encoding="utf-8")
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "1")

    def no_read(fd: int) -> object:
        raise AssertionError("the file was read before it was counted")

    monkeypatch.setattr("attntrace.kernel.reading._reader", no_read)
    result = run_cli(*command, "A.json")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == (
        "attntrace: error: A.json: reading a file of 2.0 MiB would take about 6 MiB (its "
        "text as read 6 MiB), over the memory budget of 1 MiB (shorten the input, or set "
        "ATTNTRACE_MAX_MEMORY_MB)\n"
    )
