"""The bad-input catalogue: every way a user can get input wrong, and what they see.

SPEC.md section 5: bad input is exit 2 with one line on stderr, ``attntrace: error: ...``,
that names the file, the field path, what was expected and what was found; no
traceback, and nothing on stdout. Each row of ``REJECTED`` is one such input, run
through the real CLI (``attntrace run``) with Typer's ``CliRunner``; the expected line
is exact wherever the message is stable.

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
hanging. Devices and endless pipes (``/dev/zero``, ``<(yes)``) are in ``NOT_FILES``: each
runs as its own process under a memory cap, so a reader that ignores the limit fails
fast instead of filling the machine's memory.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from helpers import load_valid_trace, time_limit
from typer.testing import CliRunner, Result  # type: ignore[attr-defined, unused-ignore]

from attntrace.cli import app

PREFIX = "attntrace: error: "

# The worked example of SPEC.md section 6, as YAML lines: 4 lines of embeddings, then 4 of
# weights. Cases below splice a broken line into it, so every other field stays valid.
EMB = "embeddings:\n  cat: [1, 2]\n  eats: [3, 1]\n  fish: [2, 4]\n"
WQ = "  WQ: [[1, 0], [0, 1]]\n"
WK = "  WK: [[1, 0], [0, 1]]\n"
WV = "  WV: [[0, 1], [1, 0]]\n"
W = "weights:\n" + WQ + WK + WV
GOOD = EMB + W

# The same model as JSON, in pieces.
J_EMB = '"embeddings": {"cat": [1, 2], "eats": [3, 1], "fish": [2, 4]}'
J_W = '"weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[0, 1], [1, 0]]}'

# YAML merge keys (<<) do not exist in YAML 1.2, which the loader follows: refused.
MERGE = (
    "YAML merge keys (<<) are not supported in model files (YAML 1.2 has none): "
    "write the keys out, or share a whole matrix with an alias (WK: *wq)"
)

KNOWN_FIELDS = (
    "name, description, sentence, embeddings, weights, heads, kv_heads, causal, positions, "
    "context, vocabulary, biases, rope_base"
)
TOP_LEVEL = "expected a mapping of model fields at the top level (embeddings, weights, ...)"
TAG_REFUSED = "is not allowed: a model file holds plain data (mappings, lists, numbers, strings)"
EMPTY_FILE = "the file is empty: expected a model (embeddings and weights)"
TOKEN_MAP = "expected a non-empty mapping of token -> vector"
ONCE = "each key may appear once"
OVERFLOW = (
    "float64 overflowed to inf at row 'cat', column {col}; scale the embeddings or weights down"
)
BAD_KEY = "a mapping key must be a plain string"
HUGE_INT = "1" + "0" * 400  # 10**400, written out: an integer no float64 can hold
FIFO_WAIT = 0.25  # seconds a FIFO's writer is waited for, in this table

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
    marks = [pytest.mark.xfail(strict=True, reason=f"BUG: {bug}")] if bug else []
    if args is None:
        args = with_file(suffix=suffix)
    return pytest.param(
        Case(make, suffix, args, message, contains, command, stdin), id=id, marks=marks
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


# ------------------------------------------------------------------------ the table

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
    case(
        "config-empty-name-message",
        None,
        "--config: expected a file name, got ''",
        args=("cat", "--config", ""),
    ),
    case(
        "config-blank-name-contract",
        None,
        None,
        args=("cat", "--config", "   "),
        contains=("--config: expected a file name, got ",),
    ),
    case(
        "config-blank-name-shows-it",
        None,
        "--config: expected a file name, got '   '",
        args=("cat", "--config", "   "),
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
        lambda path: _with_fifo(path, EMB + "weights:\n  WQ: wq.npy\n" + WK + WV, "wq.npy"),
        "model.yaml: weights.WQ: expected a .npy array file, got 'wq.npy': a named pipe "
        "(FIFO), not a regular file (.npy files are memory-mapped)",
    ),
    case(
        "npy-character-device",
        lambda path: _with_link(
            path, EMB + "weights:\n  WQ: wq.npy\n" + WK + WV, "wq.npy", "/dev/zero"
        ),
        "model.yaml: weights.WQ: expected a .npy array file, got 'wq.npy': a character "
        "device, not a regular file (.npy files are memory-mapped)",
    ),
    # --- --config - reads the model from stdin: JSON if it starts with {, else YAML
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
        "config-stdin-yaml-checked",
        None,
        "stdin: missing required field 'weights'",
        args=("cat", "--config", "-"),
        stdin=EMB.encode(),
    ),
    case(
        "config-stdin-json-by-its-brace",
        None,
        "stdin: line 2, column 31: malformed JSON: "
        "Expecting property name enclosed in double quotes (a trailing comma?)",
        args=("cat", "--config", "-"),
        stdin=b' \n{"embeddings": {"cat": [1, 2],}}',
    ),
    case(
        "config-stdin-with-step",
        None,
        "--step reads its keys from stdin, so the model cannot come from stdin too",
        args=("cat", "--config", "-", "--step"),
        stdin=GOOD.encode(),
    ),
    case(
        "decode-config-stdin-with-step",
        None,
        "--step reads its keys from stdin, so the model cannot come from stdin too",
        command="decode",
        args=("cat", "--config", "-", "--step"),
        stdin=GOOD.encode(),
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
    # --- syntax
    case(
        "yaml-unclosed-bracket",
        "embeddings: [1, 2\n",
        "model.yaml: line 2, column 1: malformed YAML: did not find expected ',' or ']'",
    ),
    case(
        "yaml-bad-indent",
        "embeddings:\n  cat: [1, 2]\n bad: x\n",
        "model.yaml: line 3, column 2: malformed YAML: did not find expected key",
    ),
    case(
        "yaml-tab-indent",
        "embeddings:\n\tcat: [1, 2]\n",
        "model.yaml: line 2, column 1: malformed YAML: found character that cannot start "
        "any token (a tab: YAML indents with spaces only)",
    ),
    case(
        "yaml-two-documents",
        GOOD + "---\nname: second\n",
        "model.yaml: line 9, column 1: malformed YAML: "
        "expected one document, found a second one (after ---)",
    ),
    case(
        "yaml-nested-too-deeply",
        nested(100_000),
        None,
        contains=("model.yaml: ", "malformed YAML: "),
    ),
    case(
        "json-trailing-comma",
        '{"embeddings": {"cat": [1, 2],}}',
        "model.json: line 1, column 31: malformed JSON: "
        "Expecting property name enclosed in double quotes (a trailing comma?)",
        suffix=".json",
    ),
    case(
        "yaml-control-character",
        "embeddings:\n  cat: [1, 2]\x01\n" + W,
        "model.yaml: line 2, column 14: malformed YAML: character #x0001 is not printable, "
        "and YAML allows only printable ones",
    ),
    case(
        "yaml-control-character-after-non-ascii",  # libyaml counts bytes: −∞ is 6 of them
        "# −∞ first\nembeddings:\n  cat: [1, 2]\x7f\n" + W,
        "model.yaml: line 3, column 14: malformed YAML: character #x007f is not printable, "
        "and YAML allows only printable ones",
    ),
    case(
        "json-cut-off-after-a-comma",
        '{"embeddings": {"cat": [1, 2]},',
        "model.json: line 1, column 32: malformed JSON: "
        "Expecting property name enclosed in double quotes",
        suffix=".json",
    ),
    case(
        "json-cut-off-inside-a-list",
        '{"embeddings": {"cat": [1, 2,',
        "model.json: line 1, column 30: malformed JSON: Expecting value",
        suffix=".json",
    ),
    case(
        "json-file-holding-yaml",
        GOOD,
        "model.json: line 1, column 1: malformed JSON: Expecting value",
        suffix=".json",
    ),
    case(
        "json-nested-too-deeply",
        nested(100_000),
        "model.json: malformed JSON: nested too deeply",
        suffix=".json",
    ),
    case(
        "json-nan-field-path",
        '{"embeddings": {"cat": [NaN, 2]}, ' + J_W + "}",
        "model.json: embeddings.cat[0]: expected a finite number, got a non-finite number (nan)",
        suffix=".json",
    ),
    case(
        "json-infinity-field-path",
        '{"embeddings": {"cat": [1, 2]}, "weights": {"WQ": [[Infinity, 0], [0, 1]], '
        '"WK": [[1, 0], [0, 1]], "WV": [[0, 1], [1, 0]]}}',
        "model.json: weights.WQ[0][0]: expected a finite number, got a non-finite number (inf)",
        suffix=".json",
    ),
    case(
        "json-negative-infinity-field-path",
        '{"embeddings": {"cat": [-Infinity, 2]}, ' + J_W + "}",
        "model.json: embeddings.cat[0]: expected a finite number, got a non-finite number (-inf)",
        suffix=".json",
    ),
    case(
        "json-nan-where-a-string-goes",
        '{"name": NaN, ' + J_EMB + ", " + J_W + "}",
        "model.json: name: expected a string, got a non-finite number (nan)",
        suffix=".json",
    ),
    # --- the top level is not a mapping
    case("top-level-list", "- 1\n- 2\n", f"model.yaml: {TOP_LEVEL}, got a list of 2 items"),
    case("top-level-string", "hello\n", f"model.yaml: {TOP_LEVEL}, got a string 'hello'"),
    case("top-level-number", "42\n", f"model.yaml: {TOP_LEVEL}, got 42"),
    case("top-level-comment-only", "# nothing\n", f"model.yaml: {TOP_LEVEL}, got nothing (null)"),
    case(
        "json-top-level-list",
        "[1, 2]",
        f"model.json: {TOP_LEVEL}, got a list of 2 items",
        suffix=".json",
    ),
    case(
        "json-top-level-string",
        '"hello"',
        f"model.json: {TOP_LEVEL}, got a string 'hello'",
        suffix=".json",
    ),
    case("json-top-level-number", "42", f"model.json: {TOP_LEVEL}, got 42", suffix=".json"),
    case(
        "json-top-level-null",
        "null",
        f"model.json: {TOP_LEVEL}, got nothing (null)",
        suffix=".json",
    ),
    # --- fields: missing, unknown, wrong kind
    case("missing-embeddings", W, "model.yaml: missing required field 'embeddings'"),
    case("missing-weights", EMB, "model.yaml: missing required field 'weights'"),
    case(
        "missing-WQ",
        EMB + "weights:\n" + WK + WV,
        "model.yaml: weights: missing required matrix 'WQ'",
    ),
    case(
        "missing-WK",
        EMB + "weights:\n" + WQ + WV,
        "model.yaml: weights: missing required matrix 'WK'",
    ),
    case(
        "missing-WV",
        EMB + "weights:\n" + WQ + WK,
        "model.yaml: weights: missing required matrix 'WV'",
    ),
    case(
        "unknown-field-kv_head",
        GOOD + "kv_head: 1\n",
        "model.yaml: unknown field 'kv_head' (did you mean 'kv_heads'?) "
        f"(known fields: {KNOWN_FIELDS})",
    ),
    case(
        "unknown-fields-all-named",
        "kv_head: 1\n" + GOOD + "causl: false\n",
        "model.yaml: unknown fields 'kv_head' (did you mean 'kv_heads'?), "
        f"'causl' (did you mean 'causal'?) (known fields: {KNOWN_FIELDS})",
    ),
    case(
        "unknown-weight-WX",
        GOOD + "  WX: [[1, 0], [0, 1]]\n",
        "model.yaml: weights: unknown weight matrix 'WX' (known: WQ, WK, WV, WO)",
    ),
    case(
        "embeddings-a-list",
        "embeddings: [1, 2]\n" + W,
        f"model.yaml: embeddings: {TOKEN_MAP}, got a list of 2 items",
    ),
    case(
        "embeddings-empty-mapping",
        "embeddings: {}\n" + W,
        f"model.yaml: embeddings: {TOKEN_MAP}, got a mapping with 0 keys",
    ),
    case(
        "embeddings-null",
        "embeddings:\n" + W,
        f"model.yaml: embeddings: {TOKEN_MAP}, got nothing (null)",
    ),
    case(
        "embeddings-a-set",
        "embeddings: !!set {cat, eats}\n" + W,
        f"model.yaml: embeddings: {TOKEN_MAP}, got a set (!!set)",
    ),
    case(
        "weights-a-list",
        EMB + "weights: [1, 2]\n",
        "model.yaml: weights: expected a mapping with WQ, WK, WV, got a list of 2 items",
    ),
    case("name-a-number", "name: 123\n" + GOOD, "model.yaml: name: expected a string, got 123"),
    case(
        "sentence-a-number",
        "sentence: 12\n" + GOOD,
        "model.yaml: sentence: expected a string, got 12",
    ),
    case(
        "name-binary",
        "name: !!binary aGk=\n" + GOOD,
        "model.yaml: name: expected a string, got binary data (!!binary)",
    ),
    # --- entries that are not (finite) numbers
    case(
        "entry-quoted-number",
        "embeddings:\n  cat: ['1.5', 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a number, got a string '1.5'",
    ),
    case(
        "json-entry-quoted-number",
        '{"embeddings": {"cat": ["1.5", 2]}, ' + J_W + "}",
        "model.json: embeddings.cat[0]: expected a number, got a string '1.5'",
        suffix=".json",
    ),
    case(
        "entry-true",
        "embeddings:\n  cat: [1, true]\n" + W,
        "model.yaml: embeddings.cat[1]: expected a number, got a boolean (true)",
    ),
    case(
        "entry-null",
        "embeddings:\n  cat: [null, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a number, got nothing (null)",
    ),
    case(
        "entry-nested-list",
        "embeddings:\n  cat: [[1], 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a number, got a list of 1 item",
    ),
    case(
        "entry-date-is-a-string",  # YAML 1.2 has no timestamps
        "embeddings:\n  cat: [2020-01-01, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a number, got a string '2020-01-01'",
    ),
    case(
        "entry-binary",
        "embeddings:\n  cat: [!!binary aGk=, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a number, got binary data (!!binary)",
    ),
    case(
        "weight-entry-word",
        EMB + "weights:\n  WQ: [[1, x], [0, 1]]\n" + WK + WV,
        "model.yaml: weights.WQ[0][1]: expected a number, got a string 'x'",
    ),
    case(
        "yaml-inf",
        "embeddings:\n  cat: [.inf, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a finite number, got a non-finite number (inf)",
    ),
    case(
        "yaml-negative-inf",
        "embeddings:\n  cat: [1, -.inf]\n" + W,
        "model.yaml: embeddings.cat[1]: expected a finite number, got a non-finite number (-inf)",
    ),
    case(
        "yaml-nan-in-weights",
        EMB + "weights:\n" + WQ + WK + "  WV: [[0, 1], [.nan, 0]]\n",
        "model.yaml: weights.WV[1][0]: expected a finite number, got a non-finite number (nan)",
    ),
    case(
        "integer-too-large",
        f"embeddings:\n  cat: [{HUGE_INT}, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a finite number, "
        "got an integer of 1329 bits (too large for float64)",
    ),
    case(
        "json-integer-too-large",
        f'{{"embeddings": {{"cat": [{HUGE_INT}, 2]}}, {J_W}}}',
        "model.json: embeddings.cat[0]: expected a finite number, "
        "got an integer of 1329 bits (too large for float64)",
        suffix=".json",
    ),
    case(
        "json-float-too-large",
        '{"embeddings": {"cat": [1e400, 2]}, ' + J_W + "}",
        "model.json: embeddings.cat[0]: expected a finite number, got a non-finite number (inf)",
        suffix=".json",
    ),
    case(
        "yaml-float-too-large-1e400",
        "embeddings:\n  cat: [1e400, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a finite number, got a non-finite number (inf)",
    ),
    case(
        "yaml-sexagesimal-is-not-a-number",
        "embeddings:\n  cat: [1:30, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a number, got a string '1:30'",
        args=with_file(sentence="cat"),
    ),
    case(
        "yaml-underscore-digits-are-not-a-number",
        "embeddings:\n  cat: [1_000, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a number, got a string '1_000'",
    ),
    # --- shapes
    case(
        "ragged-WK-row-1",
        EMB + "weights:\n" + WQ + "  WK: [[1, 0], [0, 1, 2]]\n" + WV,
        "model.yaml: weights.WK[1]: expected 2 numbers like row 0 "
        "(rows of a matrix have one length), got 3",
    ),
    case(
        "ragged-WV-row-1",
        EMB + "weights:\n" + WQ + WK + "  WV: [[0, 1], [1]]\n",
        "model.yaml: weights.WV[1]: expected 2 numbers like row 0 "
        "(rows of a matrix have one length), got 1",
    ),
    case(
        "WK-2x3",
        EMB + "weights:\n" + WQ + "  WK: [[1, 0, 0], [0, 1, 0]]\n" + WV,
        "model.yaml: weights.WK: expected 2 × 2 (d_model × kv_heads·d_k = 2 × 1·2, d_k from "
        "WQ), got 2 × 3",
    ),
    case(
        "WQ-3x2",
        EMB + "weights:\n  WQ: [[1, 0], [0, 1], [1, 1]]\n" + WK + WV,
        "model.yaml: weights.WQ: expected 2 rows (d_model, the embeddings' length), got 3 × 2",
    ),
    case(
        "WV-1x2",
        EMB + "weights:\n" + WQ + WK + "  WV: [[0, 1]]\n",
        "model.yaml: weights.WV: expected 2 rows (d_model, the embeddings' length), got 1 × 2",
    ),
    case(
        "WQ-a-flat-list",
        EMB + "weights:\n  WQ: [1, 0]\n" + WK + WV,
        "model.yaml: weights.WQ: expected a matrix (a non-empty list of rows, each a list of "
        "numbers), got a list of 2 items",
    ),
    case(
        "WQ-empty",
        EMB + "weights:\n  WQ: []\n" + WK + WV,
        "model.yaml: weights.WQ: expected a matrix (a non-empty list of rows, each a list of "
        "numbers), got a list of 0 items",
    ),
    case(
        "WQ-empty-rows",
        EMB + "weights:\n  WQ: [[], []]\n" + WK + WV,
        "model.yaml: weights.WQ[0]: expected a non-empty list of numbers, got a list of 0 items",
    ),
    case(
        "embedding-lengths-differ",
        "embeddings:\n  cat: [1, 2]\n  eats: [3, 1, 5]\n" + W,
        "model.yaml: embeddings.eats: expected a vector of 2 numbers "
        "(d_model, the length of 'cat'), got 3 numbers",
    ),
    case(
        "embedding-empty-vector",
        "embeddings:\n  cat: []\n" + W,
        "model.yaml: embeddings.cat: expected a non-empty list of numbers, got a list of 0 items",
    ),
    case(
        "embedding-a-string",
        "embeddings:\n  cat: '1 2'\n" + W,
        "model.yaml: embeddings.cat: expected a non-empty list of numbers, got a string '1 2'",
    ),
    # --- token keys
    case(
        "token-with-space",
        "embeddings:\n  big cat: [1, 2]\n" + W,
        "model.yaml: embeddings: expected tokens without spaces "
        "(a sentence is split on whitespace), got a string 'big cat'",
    ),
    case(
        "json-token-with-tab",
        '{"embeddings": {"a\\tb": [1, 2]}, ' + J_W + "}",
        "model.json: embeddings: expected tokens without spaces "
        "(a sentence is split on whitespace), got a string 'a\\tb'",
        suffix=".json",
    ),
    case(
        "json-empty-token",
        '{"embeddings": {"": [1, 2]}, ' + J_W + "}",
        "model.json: embeddings: expected a non-empty token, got a string ''",
        suffix=".json",
    ),
    case(
        "yaml-empty-token",
        "embeddings:\n  '': [1, 2]\n" + W,
        "model.yaml: embeddings: expected a non-empty token, got a string ''",
    ),
    # --- duplicate keys: the mapping's field path, and the line where YAML has one
    case(
        "yaml-duplicate-token",
        "embeddings:\n  cat: [1, 2]\n  cat: [3, 1]\n" + W,
        f"model.yaml: embeddings: duplicate key 'cat' (line 3): {ONCE}",
    ),
    case(
        "yaml-duplicate-weight",
        EMB + "weights:\n" + WQ + WK + WV + WQ,
        f"model.yaml: weights: duplicate key 'WQ' (line 9): {ONCE}",
    ),
    case(
        "yaml-duplicate-field",
        GOOD + "weights: {}\n",
        f"model.yaml: duplicate key 'weights' (line 9): {ONCE}",
    ),
    case(
        "json-duplicate-token-field-path",
        '{"embeddings": {"cat": [1, 2], "cat": [3, 1]}, ' + J_W + "}",
        f"model.json: embeddings: duplicate key 'cat': {ONCE}",
        suffix=".json",
    ),
    case(
        "json-duplicate-field",
        "{" + J_EMB + ", " + J_W + ", " + J_W + "}",
        f"model.json: duplicate key 'weights': {ONCE}",
        suffix=".json",
    ),
    # --- YAML that would build objects, or is not plain data
    case(
        "yaml-tag-object-apply",
        'name: !!python/object/apply:os.system ["echo hi"]\n' + GOOD,
        f"model.yaml: line 1, column 7: YAML tag !!python/object/apply:os.system {TAG_REFUSED}",
    ),
    case(
        "yaml-tag-name",
        "name: !!python/name:os.system\n" + GOOD,
        f"model.yaml: line 1, column 7: YAML tag !!python/name:os.system {TAG_REFUSED}",
    ),
    case(
        "yaml-tag-tuple-vector",
        "embeddings:\n  cat: !!python/tuple [1, 2]\n" + W,
        f"model.yaml: line 2, column 8: YAML tag !!python/tuple {TAG_REFUSED}",
    ),
    case(
        "yaml-tag-custom",
        "name: !custom x\n" + GOOD,
        f"model.yaml: line 1, column 7: YAML tag !custom {TAG_REFUSED}",
    ),
    case(
        "yaml-tag-on-a-key",
        "embeddings:\n  !!python/name:os.system cat: [1, 2]\n  eats: [3, 1]\n  fish: [2, 4]\n" + W,
        f"model.yaml: line 2, column 3: YAML tag !!python/name:os.system {TAG_REFUSED}",
    ),
    case(
        "yaml-custom-tag-on-a-key",
        "embeddings:\n  cat: [1, 2]\n  !custom eats: [3, 1]\n" + W,
        f"model.yaml: line 3, column 3: YAML tag !custom {TAG_REFUSED}",
    ),
    case(
        "yaml-complex-key",
        "embeddings:\n  ? [a, b]\n  : [3, 1]\n" + W,
        f"model.yaml: line 2: {BAD_KEY}, got a list",
    ),
    case(
        "yaml-mapping-key",
        "embeddings:\n  ? {a: 1}\n  : [3, 1]\n" + W,
        f"model.yaml: line 2: {BAD_KEY}, got a mapping",
    ),
    case(
        "yaml-complex-key-not-first-line",
        "embeddings:\n  cat: [1, 2]\n  eats: [3, 1]\n  ? [a, b]\n  : [2, 4]\n" + W,
        f"model.yaml: line 4: {BAD_KEY}, got a list",
    ),
    # An alias has no position of its own (PyYAML shares the anchored node), so the
    # message names the mapping it is used in.
    case(
        "yaml-alias-key-line",
        "description: &k [1, 2]\nembeddings:\n  *k : [3, 1]\n" + W,
        f"model.yaml: in the mapping at line 3: {BAD_KEY}, got an alias of a list",
    ),
    case(
        "yaml-alias-key-not-first",
        "description: &k [1, 2]\nembeddings:\n  cat: [1, 2]\n  *k : [3, 1]\n" + W,
        f"model.yaml: in the mapping at line 3: {BAD_KEY}, got an alias of a list",
    ),
    # --- YAML merge keys: not in YAML 1.2, refused with a way out
    case(
        "yaml-merge-of-a-scalar",
        "embeddings:\n  <<: [1, 2]\n" + W,
        f"model.yaml: line 2: {MERGE}",
    ),
    case(
        "yaml-merge-of-a-mapping",
        "base: &base {cat: [1, 2]}\nembeddings:\n  <<: *base\n  eats: [3, 1]\n" + W,
        f"model.yaml: line 3: {MERGE}",
    ),
    # --- tokens and sentences
    case(
        "unknown-tokens",
        GOOD,
        "model.yaml: embeddings: unknown tokens 'dog', 'bird' (vocabulary: cat, eats, fish)",
        args=with_file(sentence="dog cat bird dog"),
    ),
    case(
        "unknown-punctuation-token-explained",
        GOOD,
        "model.yaml: embeddings: unknown token '.' (vocabulary: cat, eats, fish); '.': "
        "punctuation at a word's edge is a token of its own, so the embeddings need it too",
        args=with_file(sentence="cat eats fish."),
    ),
    case(
        "unknown-field-capitalized-did-you-mean",
        EMB + "Weights:\n" + WQ + WK + WV,
        f"model.yaml: unknown field 'Weights' (did you mean 'weights'?) (known fields: "
        f"{KNOWN_FIELDS})",
    ),
    case(
        "unknown-token-default-model",
        None,
        "sample cat-eats-fish: embeddings: unknown token 'dog' (vocabulary: cat, eats, fish)",
        args=("dog",),
    ),
    case(
        "unknown-token-json-output",
        GOOD,
        "model.yaml: embeddings: unknown token 'dog' (vocabulary: cat, eats, fish)",
        args=with_file("--json", sentence="cat dog"),
    ),
    case(
        "unknown-token-large-vocabulary",
        "embeddings:\n" + "".join(f"  t{i}: [1, 2]\n" for i in range(25)) + W,
        "model.yaml: embeddings: unknown token 'dog' (vocabulary: "
        + ", ".join(f"t{i}" for i in range(20))
        + ", … and 5 more)",
        args=with_file(sentence="t0 dog"),
    ),
    case(
        "empty-sentence",
        None,
        "SENTENCE: empty sentence: expected at least one token, got ''",
        args=("",),
    ),
    case(
        "blank-sentence",
        None,
        "SENTENCE: empty sentence: expected at least one token, got '   '",
        args=("   ",),
    ),
    case(
        "blank-sentence-with-file",
        GOOD,
        "SENTENCE: empty sentence: expected at least one token, got '   '",
        args=with_file(sentence="   "),
    ),
    case(
        "blank-sentence-from-file-names-it",
        GOOD + "sentence: '   '\n",
        "model.yaml: sentence: empty sentence: expected at least one token, got '   '",
        args=with_file(sentence=None),
    ),
    case(
        "no-sentence-anywhere",
        GOOD,
        "model.yaml: no sentence: give one, or set `sentence` in the model file",
        args=with_file(sentence=None),
    ),
    # --- flags
    case(
        "config-and-sample",
        GOOD,
        "--config and --sample both name a model: give one of them",
        args=with_file("--sample", "cat-eats-fish"),
    ),
    case(
        "unknown-sample",
        None,
        None,
        args=("cat", "--sample", "no-such-sample"),
        contains=("unknown sample 'no-such-sample' (samples: ", "cat-eats-fish"),
    ),
    case(
        "step-with-json",
        None,
        "--json writes the whole trace for programs: it does not mix with --step",
        args=("cat", "--step", "--json"),
    ),
    # --- fields this version knows but does not compute yet
    # --- the attention block: heads, K/V heads, WO, causal, context, positions
    case(
        "heads-not-dividing-WQ",
        GOOD + "heads: 3\n",
        "model.yaml: weights.WQ: expected a number of columns divisible by heads (3), got 2 × 2",
    ),
    case(
        "heads-zero",
        GOOD + "heads: 0\n",
        "model.yaml: heads: expected a whole number ≥ 1, got 0",
    ),
    case(
        "heads-true",
        GOOD + "heads: true\n",
        "model.yaml: heads: expected a whole number ≥ 1, got a boolean (true)",
    ),
    case(
        "kv_heads-not-dividing-heads",
        EMB + "weights:\n  WQ: [[1, 0, 0], [0, 1, 0]]\n  WK: [[1, 0], [0, 1]]\n"
        "  WV: [[1, 0], [0, 1]]\nheads: 3\nkv_heads: 2\n",
        "model.yaml: kv_heads: each K/V head serves the same number of query heads: "
        "expected a divisor of heads (3): 1, 3, got 2",
    ),
    case(
        "kv_heads-more-than-heads",
        GOOD + "kv_heads: 2\n",
        "model.yaml: kv_heads: each K/V head serves the same number of query heads: "
        "expected a divisor of heads (1): 1, got 2",
    ),
    case(
        "WK-width-not-kv_heads-times-d_k",
        EMB + "weights:\n  WQ: [[1, 0], [0, 1]]\n  WK: [[1], [0]]\n  WV: [[1], [0]]\n"
        "heads: 2\nkv_heads: 2\n",
        "model.yaml: weights.WK: expected 2 × 2 (d_model × kv_heads·d_k = 2 × 2·1, d_k from "
        "WQ), got 2 × 1",
    ),
    case(
        "WK-shaped-for-gqa-without-kv_heads",
        EMB + "weights:\n  WQ: [[1, 0], [0, 1]]\n  WK: [[1], [0]]\n  WV: [[1], [0]]\nheads: 2\n",
        "model.yaml: weights.WK: expected 2 × 2 (d_model × kv_heads·d_k = 2 × 2·1, d_k from "
        "WQ); for grouped-query attention with 1 K/V head, set kv_heads: 1, got 2 × 1",
    ),
    case(
        "WV-width-not-divisible-by-kv_heads",
        EMB + "weights:\n  WQ: [[1, 0], [0, 1]]\n  WK: [[1, 0], [0, 1]]\n"
        "  WV: [[1, 0, 0], [0, 1, 0]]\nheads: 2\n",
        "model.yaml: weights.WV: expected a number of columns divisible by kv_heads (2), got 2 × 3",
    ),
    case(
        "WO-wrong-shape",
        GOOD + "  WO: [[1, 0, 0], [0, 1, 0]]\n",
        "model.yaml: weights.WO: expected 2 × 2 (heads·d_v × d_model = 1·2 × 2), got 2 × 3",
    ),
    case(
        "causal-with-context",
        EMB + "  le: [1, 0]\n" + W + "causal: true\ncontext: le\n",
        "model.yaml: causal: a causal mask hides later tokens of the same sequence; with a "
        "context (cross-attention) every query sees every context token: expected false with "
        "context, got true",
    ),
    case(
        "causal-flag-with-context",
        EMB + "  le: [1, 0]\n" + W + "context: le\n",
        "--causal: a causal mask hides later tokens of the same sequence, but this model "
        "cross-attends to a context: expected --no-causal (or no context), got --causal",
        args=with_file("--causal"),
    ),
    case(
        "context-flag-on-a-causal-model",
        GOOD + "causal: true\n",
        "--context: cross-attention lets every query see every context token, but the model "
        "is causal (a decoder): expected --no-causal with --context, got --context 'cat'",
        args=with_file("--context", "cat"),
    ),
    case(
        "context-flag-unknown-token",
        GOOD,
        "--context: unknown token 'wolf' (vocabulary: cat, eats, fish)",
        args=with_file("--context", "cat wolf"),
    ),
    case(
        "causal-yes-is-a-string",
        GOOD + "causal: yes\n",
        "model.yaml: causal: expected true or false, got a string 'yes'",
    ),
    case(
        "context-unknown-tokens",
        GOOD + "context: le chat\n",
        "model.yaml: context: unknown tokens 'le', 'chat' (vocabulary: cat, eats, fish)",
    ),
    case(
        "context-flag-empty",
        GOOD,
        "--context: empty context: expected at least one token, got '  '",
        args=with_file("--context", "  "),
    ),
    case(
        "positions-unknown-kind",
        GOOD + "positions: rotary\n",
        "model.yaml: positions: expected none, sinusoidal, rope, or a list of position vectors, "
        "got a string 'rotary'",
    ),
    case(
        "positions-too-few",
        GOOD + "positions: [[0, 0], [1, 1]]\n",
        "model.yaml: positions: expected at least 3 position vectors (one per token of the "
        "sentence), got 2",
    ),
    case(
        "positions-wrong-width",
        GOOD + "positions: [[0, 0, 0], [1, 1, 1], [2, 2, 2]]\n",
        "model.yaml: positions: expected vectors of 2 numbers (d_model), got 3 × 3",
    ),
    # --- matrices as .npy files beside the model file
    case(
        "npy-missing",
        EMB + "weights:\n  WQ: wq.npy\n" + WK + WV,
        "model.yaml: weights.WQ: expected a .npy file (relative to the model file), got no "
        "file 'wq.npy'",
    ),
    case(
        "npy-not-an-array",
        lambda path: _with_npy(
            path, EMB + "weights:\n  WQ: wq.npy\n" + WK + WV, {"wq.npy": "not numbers"}
        ),
        "model.yaml: weights.WQ: expected a 2-D array of real numbers, got a scalar of <U11",
    ),
    case(
        "npy-non-finite",
        lambda path: _with_npy(
            path,
            EMB + "weights:\n  WQ: wq.npy\n" + WK + WV,
            {"wq.npy": [[1.0, float("inf")], [0.0, 1.0]]},
        ),
        "model.yaml: weights.WQ[0][1]: expected a finite number, got a non-finite number (inf)",
    ),
    case(
        "npy-vocabulary-length",
        lambda path: _with_npy(
            path, "embeddings: e.npy\nvocabulary: [cat]\n" + W, {"e.npy": [[1.0, 2.0], [3.0, 1.0]]}
        ),
        "model.yaml: vocabulary: expected 2 tokens (one per row of embeddings), got 1",
        args=with_file(sentence="cat"),
    ),
    case(
        "npy-header-claims-more-than-the-file",
        lambda path: _with_npy_header(
            path, EMB + "weights:\n  WQ: wq.npy\n" + WK + WV, "wq.npy", (100000, 100000)
        ),
        "model.yaml: weights.WQ: expected a .npy array file, got 'wq.npy': mmap length is "
        "greater than file size",
    ),
    case(
        "npy-not-a-npy-file",
        lambda path: _with_text(
            path, EMB + "weights:\n  WQ: wq.npy\n" + WK + WV, {"wq.npy": "hello"}
        ),
        "model.yaml: weights.WQ: expected a .npy array file, got 'wq.npy': it does not start "
        "as a .npy file does",
    ),
    case(
        "npy-vocabulary-numbers",
        lambda path: _with_npy(
            path, "embeddings: e.npy\nvocabulary: [1, 2]\n" + W, {"e.npy": [[1.0, 2.0], [3.0, 1.0]]}
        ),
        "model.yaml: vocabulary[0]: expected a token (a string: quote numbers), got 1",
        args=with_file(sentence="cat"),
    ),
    case(
        "vocabulary-without-npy",
        GOOD + "vocabulary: [cat]\n",
        "model.yaml: vocabulary: expected nothing, unless embeddings is a .npy file, got a "
        "list of 1 item",
    ),
    # --- text a terminal would act on: the one line shows it as escapes (attntrace.visible)
    case(
        "unknown-token-clears-the-screen",
        GOOD,
        "model.yaml: embeddings: unknown token '\\x1b[2J' (vocabulary: cat, eats, fish)",
        args=with_file(sentence="cat \x1b[2J"),
    ),
    case(
        "unknown-token-turns-the-line-around",
        GOOD,
        "model.yaml: embeddings: unknown token '\\u202ehsif' (vocabulary: cat, eats, fish)",
        args=with_file(sentence="cat \u202ehsif"),
    ),
    case(
        "escape-in-a-field-path",
        'embeddings:\n  "\\e[31m": [1, x]\n  eats: [3, 1]\n' + W,
        "model.yaml: embeddings.\\x1b[31m[1]: expected a number, got a string 'x'",
        args=with_file(sentence="eats"),
    ),
    case(
        "bell-in-the-vocabulary-listed",
        'embeddings:\n  "\\abell": [1, 2]\n  eats: [3, 1]\n' + W,
        "model.yaml: embeddings: unknown token 'dog' (vocabulary: \\x07bell, eats)",
        args=with_file(sentence="dog"),
    ),
    case(
        "escape-in-the-file-name",
        None,
        "m\\x1bodel.yaml: no such file",
        args=("cat", "--config", "m\x1bodel.yaml"),
    ),
    case(
        "wide-unknown-token",
        GOOD,
        "model.yaml: embeddings: unknown tokens '猫', '🐟' (vocabulary: cat, eats, fish)",
        args=with_file(sentence="猫 eats 🐟"),
    ),
    case(
        "token-spelled-with-other-code-points",
        'embeddings:\n  "\\u00e9": [1, 2]\n' + W,
        "model.yaml: embeddings: unknown token 'e\u0301' (vocabulary: \u00e9); 'e\u0301' "
        "(U+0065 U+0301) looks like the vocabulary's '\u00e9' (U+00E9) but is spelled with "
        "other code points",
        args=with_file(sentence="e\u0301"),
    ),
    # --- arithmetic that overflows float64: exit 2, never NaN, never a traceback
    case(
        "overflow-names-the-file",
        "embeddings:\n  cat: [1.0e+200, 1.0e+200]\n" + W,
        "model.yaml: stage scores: " + OVERFLOW.format(col="'cat'"),
        args=with_file(sentence="cat"),
    ),
    case(
        "json-overflow-scores",
        '{"embeddings": {"cat": [1e200, 1e200]}, ' + J_W + "}",
        "model.json: stage scores: " + OVERFLOW.format(col="'cat'"),
        suffix=".json",
        args=with_file("--json", suffix=".json", sentence="cat"),
    ),
    case(
        "overflow-Q",
        "embeddings:\n  cat: [1.0e+300, 1.0e+300]\n"
        "weights:\n  WQ: [[1.0e+10, 0], [0, 1]]\n" + WK + WV,
        "model.yaml: stage Q: " + OVERFLOW.format(col="'d0'"),
        args=with_file(sentence="cat"),
    ),
    case(
        "yaml-overflow-1e200",
        "embeddings:\n  cat: [1e200, 1e200]\n" + W,
        "model.yaml: stage scores: " + OVERFLOW.format(col="'cat'"),
        args=with_file(sentence="cat"),
    ),
    # --- flags that do not go together, named before the model file is read
    case(
        "export-a-folder-name",
        plain_file,
        "--export: expected a .svg, .html or .txt file, got 'x.svg/'",
        args=with_file("--export", "x.svg/"),
    ),
    case(
        "export-no-name",
        plain_file,
        "--export: expected a .svg, .html or .txt file, got ''",
        args=with_file("--export", ""),
    ),
    case(
        "heads-without-json",
        plain_file,
        "--heads chooses what --json writes: add --json",
        args=with_file("--heads", "0"),
    ),
]


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


@pytest.mark.parametrize("case", REJECTED)
def test_bad_input_is_one_clear_line_and_exit_2(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    materialize(case.make, Path(f"model{case.suffix}"))
    if case.make is fifo:  # the wait for a writer, made short (the default is 2 s)
        monkeypatch.setattr("attntrace.files.reading.FIFO_WAIT_SECONDS", FIFO_WAIT)

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


def run_entry_point(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed command as a user runs it (usage errors are shaped in ``main``)."""
    return subprocess.run(
        [sys.executable, "-m", "attntrace", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )


@pytest.mark.parametrize(
    ("args", "says", "hint"),
    [
        (("run", "--precision", "-1"), "Invalid value for '--precision': -1 ", "run"),
        (("run", "--precision", "99"), "Invalid value for '--precision': 99 ", "run"),
        (("run", "--precision", "four"), "Invalid value for '--precision': 'four' ", "run"),
        (("run", "--no-such-flag"), "No such option: --no-such-flag", "run"),
        (("frob",), "No such command 'frob'.", ""),
        (("softmax",), "Missing argument 'V1 V2 ...'.", "softmax"),
        (("heads", "--from"), "Option '--from' requires an argument.", "heads"),
        (("run", "--layer", "-1", "-m", "minilm"), "Invalid value for '--layer': -1 ", "run"),
        (("run", "--max-heads", "-1"), "Invalid value for '--max-heads': -1 ", "run"),
        (("render", "t.json", "--max-heads", "two"), "Invalid value for '--max-heads': 'two' ",
         "render"),
    ],
    ids=["precision--1", "precision-99", "precision-not-a-number", "unknown-flag",
         "unknown-command", "missing-argument", "option-without-value", "negative-layer",
         "negative-max-heads", "max-heads-not-a-number"],
)  # fmt: skip
def test_usage_error_is_one_line(args: tuple[str, ...], says: str, hint: str) -> None:
    """A usage error is one ``attntrace: error:`` line like every other bad input, with
    click's wording (which varies a little between Typer versions) and where to get help."""
    result = run_entry_point(*args)

    assert result.returncode == 2
    assert result.stdout == ""
    line, newline, rest = result.stderr.partition("\n")
    assert (newline, rest) == ("\n", "")
    assert line.startswith("attntrace: error: " + says)
    assert line.endswith(f"(try '{' '.join(['attntrace', hint]).strip()} -h')")
    if "precision" in args and "four" not in args:
        assert "0<=x<=15" in line or "equal to 15" in line


def test_no_arguments_prints_the_help() -> None:
    result = run_entry_point()

    assert result.returncode == 2
    assert "Usage: attntrace [OPTIONS] COMMAND [ARGS]..." in result.stdout


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
    pytest.param("attntrace run cat -c /dev/zero",
                 re.escape(f"/dev/zero: binary data (a NUL byte at byte 0): {MODEL_TEXT}"),
                 id="config-dev-zero"),
    pytest.param("attntrace run cat -c /dev/urandom", f"/dev/urandom: {RANDOM_MODEL}",
                 id="config-dev-urandom"),
    pytest.param("attntrace decode cat -c /dev/zero",
                 re.escape(f"/dev/zero: binary data (a NUL byte at byte 0): {MODEL_TEXT}"),
                 id="decode-config-dev-zero"),
    pytest.param("ln -s /dev/zero model.yaml && attntrace run cat -c model.yaml",
                 re.escape(f"model.yaml: binary data (a NUL byte at byte 0): {MODEL_TEXT}"),
                 id="config-link-to-dev-zero"),
    pytest.param("attntrace render /dev/zero",
                 re.escape(f"/dev/zero: binary data (a NUL byte at byte 0): {TRACE_TEXT}"),
                 id="render-dev-zero"),
    pytest.param("attntrace render /dev/urandom", f"/dev/urandom: {RANDOM_TRACE}",
                 id="render-dev-urandom"),
    pytest.param("attntrace run cat -c - < /dev/zero",
                 re.escape(f"stdin: binary data (a NUL byte at byte 0): {MODEL_TEXT}"),
                 id="config-stdin-dev-zero"),
    pytest.param("attntrace render - < /dev/urandom", f"stdin: {RANDOM_TRACE}",
                 id="render-stdin-dev-urandom"),
    pytest.param("ATTNTRACE_MAX_FILE_MB=1 attntrace run cat -c <(yes)",
                 rf"/dev/fd/\d+: {OVER_1_MIB}", id="config-endless-pipe"),
    pytest.param("mkfifo f && { yes > f & } && ATTNTRACE_MAX_FILE_MB=1 attntrace run cat -c f",
                 rf"f: {OVER_1_MIB}", id="config-endless-fifo"),
    pytest.param("yes | ATTNTRACE_MAX_FILE_MB=1 attntrace run cat -c -", rf"stdin: {OVER_1_MIB}",
                 id="config-endless-stdin"),
    pytest.param("yes | ATTNTRACE_MAX_FILE_MB=1 attntrace render -", rf"stdin: {OVER_1_MIB}",
                 id="render-endless-stdin"),
    pytest.param("yes x | head -c 2000000 > big && ATTNTRACE_MAX_FILE_MB=1 attntrace render - "
                 "< big", re.escape("stdin: the file is 1.9 MiB, over the limit of 1 MiB (set "
                                    "ATTNTRACE_MAX_FILE_MB to read larger files)"),
                 id="render-stdin-regular-file-by-its-size"),
    pytest.param("attntrace run cat -c - <&-", re.escape("stdin: is closed, nothing to read"),
                 id="config-stdin-closed"),
    pytest.param("attntrace render - <&-", re.escape("stdin: is closed, nothing to read"),
                 id="render-stdin-closed"),
]  # fmt: skip


def run_capped(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` in bash, with the installed attntrace first on PATH, under the cap; a
    writer left in the background (blocked on a FIFO nobody opened) is ended with it."""
    path = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    env = {**os.environ, "COLUMNS": "80", "PATH": path}
    script = f"trap 'kill $(jobs -p) 2>/dev/null' EXIT; ulimit -v {MEMORY_CAP_KB} && {command}"
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip


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
    pytest.param(f"mkfifo f && {{ {SAMPLE} > f & }} && attntrace run cat -c f --json",
                 id="fifo-with-a-writer"),
    pytest.param(f"mkfifo f && {{ {{ sleep 0.5; {SAMPLE}; }} > f & }} && "
                 "attntrace run cat -c f --json", id="fifo-writer-silent-at-first"),
    pytest.param(f"mkfifo f && {{ {{ sleep 0.5; {SAMPLE} > f; }} & }} && "
                 "attntrace run cat -c f --json", id="fifo-writer-comes-late"),
    pytest.param(f"{SAMPLE} | while IFS= read -r line; do printf '%s\\n' \"$line\"; sleep 0.02; "
                 "done | attntrace run cat -c - --json", id="stdin-fed-slowly"),
]  # fmt: skip


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


# -------------------------------------------------------- accepted: the same contract

# Tokens that YAML 1.1 would turn into booleans, numbers or null.
WORD_TOKENS = (
    "embeddings:\n  no: [1, 2]\n  yes: [3, 1]\n  on: [2, 4]\n  1: [1, 1]\n"
    "  off: [0, 1]\n  null: [2, 2]\n  ~: [1, 0]\n" + W
)
DEFAULTS_SPELLED_OUT = (
    GOOD + "heads: 1\nkv_heads: 1\ncausal: false\npositions: none\ncontext: null\n"
)


def accepted(
    id: str,
    make: Make,
    sentence: str | None,
    tokens: list[str],
    *,
    x: list[list[float]] | None = None,
    suffix: str = ".yaml",
    bug: str | None = None,
) -> object:
    """A file that must trace: exit 0, these ``tokens``, and (if given) this stage X."""
    marks = [pytest.mark.xfail(strict=True, reason=f"BUG: {bug}")] if bug else []
    args = with_file("--json", suffix=suffix, sentence=sentence)
    return pytest.param(make, suffix, args, tokens, x, id=id, marks=marks)


ACCEPTED = [
    accepted("yaml-1.1-words-are-tokens", WORD_TOKENS, "no yes on 1", ["no", "yes", "on", "1"]),
    accepted("null-and-tilde-are-tokens", WORD_TOKENS, "null ~ off", ["null", "~", "off"]),
    accepted(
        "sentence-no-from-the-file",
        WORD_TOKENS + "sentence: no on\n",
        None,
        ["no", "on"],
    ),
    accepted(
        "defaults-spelled-out", DEFAULTS_SPELLED_OUT, "cat eats fish", ["cat", "eats", "fish"]
    ),
    accepted("positions-null", GOOD + "positions: null\ncausal: false\n", "cat", ["cat"]),
    accepted(
        "yaml-alias-as-value",
        EMB + "weights:\n  WQ: &id [[1, 0], [0, 1]]\n  WK: *id\n" + WV,
        "cat fish",
        ["cat", "fish"],
    ),
    accepted(
        "yaml-scalar-alias-as-key",
        "name: &a cat\nembeddings:\n  *a : [1, 2]\n  eats: [3, 1]\n" + W,
        "cat eats",
        ["cat", "eats"],
    ),
    accepted("yaml-with-bom", "\ufeff" + GOOD, "fish", ["fish"]),
    accepted(
        "json-with-bom",
        "\ufeff{" + J_EMB + ", " + J_W + "}",
        "fish",
        ["fish"],
        suffix=".json",
    ),
    accepted("yml-suffix", GOOD, "cat", ["cat"], suffix=".yml"),
    accepted(
        "upper-case-JSON-suffix", "{" + J_EMB + ", " + J_W + "}", "cat", ["cat"], suffix=".JSON"
    ),
    accepted("case-folded-lookup", GOOD, "Cat EATS fish", ["Cat", "EATS", "fish"]),
    accepted(
        "yaml-1.1-exponent",
        "embeddings:\n  cat: [1.0e+2, 2.5e-1]\n" + W,
        "cat",
        ["cat"],
        x=[[100.0, 0.25]],
    ),
    accepted(
        "yaml-scientific-notation",
        "embeddings:\n  cat: [1e-3, 2]\n  eats: [1.5e2, 1E+1]\n" + W,
        "cat eats",
        ["cat", "eats"],
        x=[[0.001, 2.0], [150.0, 10.0]],
    ),
    accepted(
        "yaml-leading-zero-is-decimal",
        "embeddings:\n  cat: [017, 2]\n" + W,
        "cat",
        ["cat"],
        x=[[17.0, 2.0]],
    ),
    accepted(
        "yaml-octal-and-hex-as-yaml-1.2-writes-them",
        "embeddings:\n  cat: [0o17, 0x1F]\n" + W,
        "cat",
        ["cat"],
        x=[[15.0, 31.0]],
    ),
    accepted(
        "yaml-a-matrix-shared-by-alias",
        EMB + "weights:\n  WQ: &eye [[1, 0], [0, 1]]\n  WK: *eye\n" + WV,
        "cat",
        ["cat"],
        x=[[1.0, 2.0]],
    ),
]


@pytest.mark.parametrize(("make", "suffix", "args", "tokens", "x"), ACCEPTED)
def test_accepted_input_traces(
    make: Make,
    suffix: str,
    args: tuple[str, ...],
    tokens: list[str],
    x: list[list[float]] | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    materialize(make, Path(f"model{suffix}"))

    result = invoke(args)

    assert_no_traceback(result)
    assert result.stderr == ""
    assert result.exit_code == 0
    trace = load_valid_trace(result.stdout)
    assert trace["tokens"] == tokens

    if x is not None:
        stage = trace["stages"][0]
        assert stage["name"] == "X"
        assert stage["data"] == x


def _with_npy(path: Path, text: str, arrays: dict[str, Any]) -> None:
    """Write the model file and, beside it, .npy files holding ``arrays``."""
    import numpy as np

    path.write_text(text, encoding="utf-8")
    for name, data in arrays.items():
        np.save(path.parent / name, np.array(data))


def _with_npy_header(path: Path, text: str, name: str, shape: tuple[int, int]) -> None:
    """A .npy file whose header claims ``shape`` but holds almost nothing."""
    import numpy as np

    path.write_text(text, encoding="utf-8")
    with (path.parent / name).open("wb") as out:
        header = {"descr": "<f8", "fortran_order": False, "shape": shape}
        npy_format: Any = np.lib.format  # untyped in numpy 1.24's stubs
        npy_format.write_array_header_1_0(out, header)
        out.write(b"0" * 100)


def _with_fifo(path: Path, text: str, name: str) -> None:
    """The model file, and beside it a FIFO that nothing writes to."""
    path.write_text(text, encoding="utf-8")
    os.mkfifo(path.parent / name)


def _with_link(path: Path, text: str, name: str, target: str) -> None:
    """The model file, and beside it a symbolic link to ``target``."""
    path.write_text(text, encoding="utf-8")
    (path.parent / name).symlink_to(target)


def _with_text(path: Path, text: str, files: dict[str, str]) -> None:
    """The model file, and beside it files with the given text."""
    path.write_text(text, encoding="utf-8")
    for name, content in files.items():
        (path.parent / name).write_text(content, encoding="utf-8")
