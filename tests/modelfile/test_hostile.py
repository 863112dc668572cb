"""Files and streams from strangers: fuzzed model files, alias bombs, huge files, closed
pipes. Every one ends in success or exit 2 with a message, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from helpers import ctrl_c_as_a_terminal_delivers_it, invoke, raw_controls, whole_runs
from hypothesis import given
from hypothesis import strategies as st
from paths import ROOT

from attntrace.errors import InputError
from attntrace.kernel.reading import decode_limited, max_file_bytes
from attntrace.kernel.spec import ModelSpec
from attntrace.modelfile.model_file import load_model
from attntrace.visible import visible

FIELDS = [
    "name",
    "description",
    "sentence",
    "embeddings",
    "weights",
    "heads",
    "kv_heads",
    "causal",
    "positions",
    "context",
    "biases",
    "rope_base",
    "rope_pairing",
    "WQ",
    "",
    "ŵ",
    "embedding",
]
TOKENS = st.sampled_from(
    [
        "cat",
        "eats",
        "fish",
        "",
        " ",
        "CAT",
        "é",
        "🐈",
        "no",
        "1",
        "x y",
        "\x1b[2J",
        "\u202e",
        "猫",
        "食べる",
        "e\u0301",
        "\u200b",
        "\x07",
    ]
)
NUMBERS = st.one_of(
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 5e-324, 10**400]),
)
LEAVES = st.one_of(st.none(), st.booleans(), NUMBERS, st.text(max_size=4), TOKENS)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TOKENS, inner, max_size=3),
    max_leaves=12,
)
MATRIX = st.lists(st.lists(NUMBERS, min_size=0, max_size=3), min_size=0, max_size=3)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    """Near-valid models with one or more fields broken in every way."""
    document: dict[str, Any] = {
        "embeddings": draw(
            st.dictionaries(
                TOKENS, st.one_of(MATRIX.map(lambda m: m[0] if m else []), VALUES), max_size=4
            )
        ),
        "weights": draw(
            st.dictionaries(
                st.sampled_from(["WQ", "WK", "WV", "WO", "W?"]),
                st.one_of(MATRIX, VALUES),
                max_size=5,
            )
        ),
    }
    for key in draw(st.lists(st.sampled_from(FIELDS), max_size=4)):
        document[key] = draw(VALUES)
    if draw(st.booleans()):  # the fields of real models, near-valid
        document["positions"] = draw(st.sampled_from(["rope", "sinusoidal", "rotary"]))
        document["rope_base"] = draw(st.one_of(NUMBERS, VALUES))
        document["rope_pairing"] = draw(
            st.one_of(st.sampled_from(["half", "interleaved", "Half", "interleave"]), VALUES)
        )
        document["biases"] = draw(
            st.dictionaries(
                st.sampled_from(["bQ", "bK", "bV", "bO", "bq"]),
                st.one_of(st.lists(NUMBERS, max_size=3), VALUES),
                max_size=4,
            )
        )
    return document


def load(text: str, suffix: str, tmp_path: Path) -> None:
    """``text`` as a model file loads, or is refused by the one error a bad file may
    raise, saying where (the file, then the field) and what was expected and found."""
    path = tmp_path / f"model{suffix}"
    path.write_text(text, encoding="utf-8")
    try:
        spec = load_model(path)
    except InputError as error:
        said_on_one_line(error, str(path))
        return
    assert isinstance(spec, ModelSpec)


def said_on_one_line(error: InputError, source: str) -> None:
    """``str(error)`` is errors.py's one line: ``source: field: what: expected E, got F``,
    each part there when the error holds it, each shown safely (fuzzed parts are short,
    so none is cut)."""
    line = str(error)
    assert "\n" not in line, repr(line)
    assert raw_controls(line) == [], repr(line)
    assert error.source == source, line
    where = [source] + ([visible(error.field)] if error.field else [])
    assert line.startswith(": ".join(where) + ": "), line
    said = line.removeprefix(": ".join(where) + ": ")
    assert error.message or error.expected is not None, f"says nothing of what is wrong: {line}"
    if error.message:
        assert said.startswith(visible(error.message)), line
    if error.expected is not None:
        got = "" if error.found is None else f", got {visible(error.found)}"
        assert said.endswith(f"expected {visible(error.expected)}{got}"), line
    elif error.found is not None:
        assert said.endswith(f"got {visible(error.found)}"), line


@given(document=documents())
@whole_runs
def test_fuzzed_documents_as_json_and_yaml(document: dict[str, Any], tmp_path_factory: Any) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    try:
        as_json = json.dumps(document)
    except ValueError:  # NaN and friends are not JSON; YAML still carries them
        as_json = json.dumps(document, allow_nan=True)
    load(as_json, ".json", folder)
    load(yaml.safe_dump(document, allow_unicode=True), ".yaml", folder)


@given(text=st.text(max_size=200))
def test_any_text_as_a_model_file(text: str, tmp_path_factory: Any) -> None:
    folder = tmp_path_factory.mktemp("text")
    load(text, ".yaml", folder)
    load(text, ".json", folder)


SPIKES = st.sampled_from([b"", b"\x00", b"\xff", b"\xef\xbb\xbf", "é".encode()[:1]])


@given(
    data=st.one_of(st.binary(max_size=200), st.text(max_size=100).map(str.encode)),
    at=st.floats(0, 1),
    spike=SPIKES,
)
@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@whole_runs
def test_any_bytes_as_a_model_file(
    data: bytes, at: float, spike: bytes, tmp_path_factory: Any
) -> None:
    """Bytes, not text: a NUL byte or a byte that is not UTF-8 is named by its offset,
    whichever comes first, as a file and on stdin (``--config -``) alike."""
    where = int(at * len(data))
    data = data[:where] + spike + data[where:]
    path = tmp_path_factory.mktemp("bytes") / "model.yaml"
    path.write_bytes(data)
    expected = first_problem(data)
    try:
        load_model(path)
        message = None
    except InputError as error:  # the one error a bad file may raise, with a message
        said_on_one_line(error, str(path))
        message = str(error)
    piped = invoke_bytes("run", "cat", "-c", "-", stdin=data)
    assert piped.exit_code in (0, 2), piped.output
    assert "Traceback" not in piped.output
    if piped.exit_code == 2:
        assert piped.stderr.startswith("attntrace: error: stdin: "), piped.stderr
        assert piped.stderr.count("\n") == 1, piped.stderr
    if expected is not None:
        assert message == f"{path}: {expected}: expected a YAML or JSON model file"
        assert piped.stderr == (
            f"attntrace: error: stdin: {expected}: expected a YAML or JSON model file\n"
        )


def first_problem(data: bytes) -> str | None:
    """What reading ``data`` as a model file must refuse first, by a one-shot decode."""
    nul = data.find(b"\0")
    try:
        data.decode("utf-8")
        bad = None
    except UnicodeDecodeError as error:
        bad = error.start
    if nul >= 0 and (bad is None or nul < bad):
        return f"binary data (a NUL byte at byte {nul})"
    return None if bad is None else f"not UTF-8 text (byte {bad})"


def invoke_bytes(*args: str, stdin: bytes) -> Any:
    from typer.testing import CliRunner

    from attntrace.cli import app

    return CliRunner().invoke(app, list(args), input=stdin)


@given(
    data=st.binary(max_size=300) | st.text(max_size=100).map(str.encode),
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=8),
)
def test_text_read_in_any_chunks_is_the_text_read_at_once(data: bytes, sizes: list[int]) -> None:
    """However a pipe cuts the bytes (a character split across two reads), the chunked
    reader gives what one decode of the whole gives, and names the same first byte."""
    pieces = iter(cut(data, sizes))
    expected = first_problem(data)
    if expected is not None:
        with pytest.raises(InputError) as refused:
            decode_limited(lambda n: next(pieces, b"")[:n], None)
        assert refused.value.message == f"{expected}: expected a YAML or JSON model file"
        return
    text, size = decode_limited(lambda n: next(pieces, b"")[:n], None)
    assert (text, size) == (data.decode("utf-8").removeprefix("\ufeff"), len(data))


def cut(data: bytes, sizes: list[int]) -> list[bytes]:
    pieces, at, turn = [], 0, 0
    while at < len(data):
        pieces.append(data[at : at + sizes[turn % len(sizes)]])
        at += len(pieces[-1])
        turn += 1
    return pieces


@given(size=st.integers(0, 3000), chunk=st.integers(1, 700), endless=st.booleans())
def test_a_stream_is_read_to_just_past_the_limit(size: int, chunk: int, endless: bool) -> None:
    """Never a byte more than limit + 1 is asked for, however long (or endless) the
    stream; past the limit it is refused."""
    asked = 0

    def read(n: int) -> bytes:
        nonlocal asked
        give = min(n, chunk) if endless else max(0, min(n, chunk, size - asked))
        asked += give
        return b"y" * give

    with mock.patch.dict(os.environ, {"ATTNTRACE_MAX_FILE_MB": str(1000 / 2**20)}):
        limit = max_file_bytes()
        if endless or size > limit:
            with pytest.raises(InputError, match=r"^more than 1,000 bytes, over the limit"):
                decode_limited(read, None)
        else:
            assert decode_limited(read, None) == ("y" * size, size)
    assert asked <= limit + 1


@pytest.mark.parametrize("written", [b"", b'{"schema": '], ids=["nothing-yet", "half"])
def test_stdin_left_non_blocking_is_refused_not_cut_short(written: bytes, tmp_path: Path) -> None:
    """A pipe on stdin left O_NONBLOCK by whoever opened it: nothing there yet is no end
    of input, so the text is refused, never parsed half-read (nor a traceback)."""
    reader, writer = os.pipe()
    os.set_blocking(reader, False)
    os.write(writer, written)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "attntrace", "render", "-"],
            stdin=reader,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        os.close(reader)
        os.close(writer)
    assert done.returncode == 2
    assert done.stderr == (
        "attntrace: error: stdin: cannot read it: Resource temporarily unavailable\n"
    )


def test_a_fuzzed_file_through_the_cli_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("embeddings: {cat: [1, .nan]}\nweights: {WQ: 3}\n")
    result = invoke("run", "cat", "-c", str(tmp_path / "m.yaml"))
    assert result.exit_code == 2
    assert result.stderr == (
        f"attntrace: error: {tmp_path / 'm.yaml'}: embeddings.cat[1]: expected a finite "
        "number, got a non-finite number (nan)\n"
    )


BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        (
            "embeddings: {cat: [1, 2]}\nweights: {WQ: *i, WK: *i, WV: *i}\n",
            "unknown fields 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'",
        ),
        ("", "unknown fields 'a'"),
    ],
    ids=["bomb-as-weights", "bomb-alone"],
)
def test_an_alias_bomb_is_refused(tail: str, message: str, tmp_path: Path) -> None:
    """A billion laughs: aliases stay shared references (never expanded), and the first
    check that reaches one refuses it. benchmarks/hostile.py measures time and memory."""
    path = tmp_path / "bomb.yaml"
    path.write_text(BILLION_LAUGHS + tail)
    result = invoke("run", "cat", "-c", str(path))
    assert result.exit_code == 2
    assert message in result.stderr
    nested = tmp_path / "nested.yaml"
    nested.write_text(
        "embeddings: {cat: &v [1, 2]}\nweights: {WQ: &w [*v, *v], WK: *w, WV: [*v, *v]}\n"
    )
    assert invoke("run", "cat", "-c", str(nested)).exit_code == 0  # plain aliases still work


def test_a_file_over_the_size_limit_is_refused_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.json"
    path.write_text(
        json.dumps(
            {
                "description": "x" * 3_000_000,
                "embeddings": {"cat": [1]},
                "weights": {"WQ": [[1]], "WK": [[1]], "WV": [[1]]},
            }
        )
    )
    monkeypatch.setenv("ATTNTRACE_MAX_FILE_MB", "1")
    result = invoke("run", "cat", "-c", str(path))
    assert result.exit_code == 2
    assert result.stderr == (
        f"attntrace: error: {path}: the file is 2.9 MiB, over the limit of 1 MiB "
        "(set ATTNTRACE_MAX_FILE_MB to read larger files)\n"
    )
    monkeypatch.setenv("ATTNTRACE_MAX_FILE_MB", "8")
    assert invoke("run", "cat", "-c", str(path), "--json").exit_code == 0
    monkeypatch.setenv("ATTNTRACE_MAX_FILE_MB", "0.5")
    piped = invoke("render", "-", input="x" * 600_000)
    assert piped.exit_code == 2
    assert piped.stderr == (
        "attntrace: error: stdin: more than 0.5 MiB, over the limit of 0.5 MiB "
        "(set ATTNTRACE_MAX_FILE_MB to read larger files)\n"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["run", "-s", "it-animal", "--focus", "it"],
        ["run", "-s", "gqa", "--map"],
        ["run", "-s", "gqa", "--overview"],
        ["decode", "-s", "gqa"],
        ["decode", "-s", "gqa", "--json"],
        ["softmax", "1", "2", "3"],
        ["kv-cache", "--preset", "gpt2"],
        ["kv-cache"],
        ["samples", "it-animal"],
    ],
    ids=lambda args: "-".join(args[:3]),
)
@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
def test_every_output_mode_ends_quietly_into_a_closed_pipe(args: list[str], tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    with subprocess.Popen(
        [sys.executable, "-m", "attntrace", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdout.close()
        stderr = process.stderr.read()
        assert process.wait(timeout=60) == 0
    assert stderr == ""


@pytest.mark.parametrize("command", [["run", "--step"], ["decode", "--step"]])
def test_ctrl_c_at_a_step_prompt_exits_130_quietly(command: list[str], tmp_path: Path) -> None:
    import signal

    with subprocess.Popen(
        [sys.executable, "-m", "attntrace", *command],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_as_a_terminal_delivers_it,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        seen = ""
        while "> " not in seen:  # the first prompt: the program now waits for a key
            char = process.stdout.read(1)
            assert char, f"ended before its prompt: {seen[-200:]!r}"
            seen += char
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130
        assert process.stderr.read() == ""  # quietly: no traceback, no message


@pytest.mark.parametrize("value", ["0", "-1", "many", "inf", "1e400", "nan", "1e-300", "1e10"])
def test_a_size_limit_must_be_a_positive_number(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTNTRACE_MAX_FILE_MB", value)
    result = invoke(
        "run", "--json", "-c", str(ROOT / "attntrace" / "samples" / "cat-eats-fish.json")
    )
    assert result.exit_code == 2
    assert result.stderr.endswith(
        "ATTNTRACE_MAX_FILE_MB: expected a positive number of MiB (from 1e-6, about a byte, "
        f"to 2**30), got {value!r}\n"
    )


def test_help_into_a_closed_pipe_exits_0(tmp_path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "attntrace", "run", "--help"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdout.close()
        assert process.wait(timeout=60) == 0
        assert process.stderr.read() == b""


CLOSED = "attntrace: error: cannot write the output: stdout is closed\n"


@pytest.mark.parametrize(
    ("redirect", "args", "code", "stderr"),
    [
        (">&-", "run", 1, "attntrace: error: cannot write the output: stdout is closed\n"),
        (">&-", "--help", 1, "attntrace: error: cannot write the output: stdout is closed\n"),
        (
            ">&-",
            "samples cat-eats-fish",
            1,
            "attntrace: error: cannot write the output: stdout is closed\n",
        ),
        # check's and diff's 1 is their answer: trouble writing it is 2 (docs/cli.md)
        (">&-", "diff --set causal=true", 2, CLOSED),
        (">&-", "check --help", 2, CLOSED),
        ("<&- >/dev/null", "run --step", 0, ""),
        ("<&- >/dev/null", "decode --step", 0, ""),
        ("2>&-", "run 'cat dog'", 2, None),
        ("2>&- >/dev/null", "run", 0, None),
    ],
    ids=[
        "stdout-run",
        "stdout-help",
        "stdout-samples",
        "stdout-diff",
        "stdout-check",
        "stdin-step",
        "stdin-decode-step",
        "stderr-bad-input",
        "stderr-run",
    ],
)
@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
def test_a_closed_stream_is_no_traceback(
    redirect: str, args: str, code: int, stderr: str | None, tmp_path: Path
) -> None:
    """Started with stdout, stdin or stderr closed (Python then has None for it): a
    closed stdout is one line and exit 1, a closed stdin is end of input, a closed
    stderr keeps the exit code the message would have come with."""
    command = f"{sys.executable} -m attntrace {args} {redirect}"
    result = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    if stderr is not None:
        assert result.stderr == stderr


SAVED_TRACE = json.loads(invoke("run", "--json").stdout)


def _saved(change: Any) -> str:
    document = json.loads(json.dumps(SAVED_TRACE))
    change(document)
    return json.dumps(document)


@pytest.mark.parametrize(
    ("command", "name", "text", "message"),
    [
        (
            "run",
            "model.json",
            '{"embeddings": {"a": [' + "9" * 5000 + ', 1]}, "weights": {"WQ": [[1, 0], [0, 1]], '
            '"WK": [[1, 0], [0, 1]], "WV": [[1, 0], [0, 1]]}}',
            "model.json: embeddings.a[0]: expected a number, got an integer of 5,000 digits "
            "(too large for float64)",
        ),
        (
            "run",
            "model.yaml",
            "embeddings:\n  a: [" + "9" * 5000 + ", 1]\n"
            "weights: {WQ: [[1, 0], [0, 1]], WK: [[1, 0], [0, 1]], WV: [[1, 0], [0, 1]]}\n",
            "model.yaml: embeddings.a[0]: expected a number, got an integer of 5,000 digits "
            "(too large for float64)",
        ),
        (
            "render",
            "trace.json",
            _saved(lambda d: d["model"].update(heads=10**30)),
            "trace.json: model.heads: expected at most 4,096, got "
            "1,000,000,000,000,000,000,000,000,000,000",
        ),
        (
            "render",
            "trace.json",
            _saved(lambda d: d["model"].update(heads=10**8, kv_heads=1)),
            "trace.json: model.heads: expected at most 4,096, got 100,000,000",
        ),
        (
            "render",
            "trace.json",
            _saved(lambda d: d["stages"][4].update(shape=[2, 3])),
            "trace.json: stages[4].shape: expected [3, 3] (its rows and cols), got [2, 3]",
        ),
    ],
    ids=[
        "json-5000-digits",
        "yaml-5000-digits",
        "render-heads-1e30",
        "render-heads-1e8",
        "render-shape-not-its-data",
    ],
)
def test_numbers_and_counts_no_model_holds_are_one_line(
    command: str,
    name: str,
    text: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An integer of thousands of digits (Python will not convert it) and a saved trace
    claiming 10**30 heads (looped over, listed) are refused before any work."""
    monkeypatch.chdir(tmp_path)
    Path(name).write_text(text, encoding="utf-8")
    args = ["a", "--config", name] if command == "run" else [name]
    result = invoke(command, *args)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"attntrace: error: {message}\n"


def test_a_trace_too_big_to_hold_is_refused_before_it_is_computed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """20,000 tokens: one head's scores alone would be 3.2 GB (it took 95 s and 15.7 GB
    with --map); refused at once, with what it would take and how to allow it."""
    result = invoke("run", " ".join(["cat"] * 20_000), "--map")
    assert result.exit_code == 2
    assert result.stderr == (
        "attntrace: error: sample cat-eats-fish: a trace of 20,000 tokens × 20,000 keys would "
        "take about 18,700 MiB (the trace 9,158 MiB, its arithmetic 6,107 MiB, the maps 3,434 "
        "MiB), over the memory budget of 2,048 MiB "
        "(shorten the input, or set ATTNTRACE_MAX_MEMORY_MB)\n"
    )
    monkeypatch.setenv("ATTNTRACE_MAX_TRACE_MB", "10000")
    assert invoke("run", " ".join(["cat"] * 300), "--json").exit_code == 0
    monkeypatch.setenv("ATTNTRACE_MAX_TRACE_MB", "0")
    # refused at the start, by every command (issue 29): not the sample's error
    assert invoke("run", "--json").stderr == (
        "attntrace: error: ATTNTRACE_MAX_TRACE_MB: expected a number "
        "of MiB from 1 to 2**30, got '0'\n"
    )
