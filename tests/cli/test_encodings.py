"""Streams that cannot encode what attntrace writes: ASCII instead of UnicodeEncodeError.

``PYTHONIOENCODING=ascii`` (or ``latin-1``, or ``LC_ALL=C PYTHONUTF8=0``) gives Python
streams that refuse ``·``, ``×``, ``√``, box drawing; every command ended in
UnicodeEncodeError there, ``attntrace -h`` included. Each command runs here in a process
of its own under each of those environments (docs/cli.md, "Environment"); and numpy's
warnings never reach stderr.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import ROOT, SAMPLES

# What each environment's streams encode in; the test reads the bytes back by it.
ENVIRONMENTS = {
    "ascii": ({"PYTHONIOENCODING": "ascii"}, "ascii"),
    "latin-1": ({"PYTHONIOENCODING": "latin-1"}, "latin-1"),
    "C locale": ({"LC_ALL": "C", "PYTHONUTF8": "0"}, "ascii"),
}

# Python's own ways to choose the streams' encoding, cleared before each is set.
_CHOSEN = ("PYTHONIOENCODING", "PYTHONUTF8", "LC_ALL", "LC_CTYPE", "LANG", "COLUMNS")


def attntrace(
    *args: str, env: dict[str, str], cwd: Path, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    base = {k: v for k, v in os.environ.items() if k not in _CHOSEN}
    return subprocess.run(
        [sys.executable, "-m", "attntrace", *args],
        cwd=cwd,
        env={**base, "PYTHONPATH": str(ROOT), "COLUMNS": "80", **env},
        input=stdin,
        capture_output=True,
        timeout=120,
    )


def in_encoding(data: bytes, encoding: str) -> str:
    """The bytes read in the stream's encoding: ASCII is strict; latin-1 reads any byte,
    so one of UTF-8's continuation bytes (C1 controls there: ─ is e2 94 80) is refused."""
    text = data.decode(encoding)
    assert not re.search("[\x80-\x9f]", text), text
    return text


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model with tokens no ASCII stream can take (猫, é, 🐟), and arrays to check."""
    path = tmp_path_factory.mktemp("encodings")
    document = json.loads((SAMPLES / "cat-eats-fish.json").read_text(encoding="utf-8"))
    document["name"] = "chat-mange-poisson·√"
    document["embeddings"] = {"猫": [1, 2], "mangé": [3, 1], "🐟": [2, 4]}
    document["sentence"] = "猫 mangé 🐟"
    (path / "model.json").write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    np.savez(path / "mine.npz", scores=np.zeros((3, 3)))
    from attntrace import trace_attention
    from attntrace.forward.trace_json import dump_bytes

    (path / "saved.json").write_bytes(dump_bytes(trace_attention(config=path / "model.json")))
    return path


# by index: in a C locale Python reads argv's UTF-8 bytes as surrogates (no token, so
# one error line), as it would read any file name
LOSS = ("--from", "0", "--to", "2")
COMMANDS = {
    "help": ("-h",),
    "run help": ("run", "-h"),
    "run": ("run",),
    "run model": ("run", "-c", "model.json"),
    "run --map": ("run", "-c", "model.json", "--map"),
    "run --overview": ("run", "--overview"),
    "run --focus": ("run", "--focus", "fish"),
    "run --step": ("run", "--step"),
    "run --dtype": ("run", "--dtype", "float16", "-c", "model.json"),
    "render": ("render", "saved.json"),
    "samples": ("samples",),
    "samples rope": ("samples", "rope"),
    "models": ("models",),
    "kv-cache": ("kv-cache",),
    "kv-cache gpt2": ("kv-cache", "--preset", "gpt2"),
    "softmax": ("softmax", "1", "2", "-3"),
    "softmax --online": ("softmax", "--online", "1", "2"),
    "softmax --dtype": ("softmax", "--dtype", "float16", "1", "70000"),
    "grad": ("grad", "-c", "model.json", *LOSS),
    "train": ("train", "-c", "model.json", "--steps", "3", *LOSS),
    "decode": ("decode", "-c", "model.json"),
    "flash": ("flash", "-c", "model.json"),
    "diff": ("diff", "-c", "model.json", "--set", "causal=true"),
    "check": ("check", "mine.npz", "-c", "model.json"),
}


# A process a case: the quick run keeps the help, a table and a model's own tokens on an
# ASCII stream; every other pair is a long run (pytest -m long), as the hostile
# catalogue's encoding kinds are.
QUICK = {("help", "ascii"), ("run", "ascii"), ("run model", "latin-1"), ("run --focus", "C locale")}


def pairs() -> list[object]:
    return [
        pytest.param(
            args,
            environment,
            id=f"{command}-{name}",
            marks=() if (command, name) in QUICK else pytest.mark.long,
        )
        for command, args in COMMANDS.items()
        for name, environment in ENVIRONMENTS.items()
    ]


@pytest.mark.parametrize(("args", "environment"), pairs())
def test_every_command_writes_in_the_streams_encoding(
    args: tuple[str, ...], environment: tuple[dict[str, str], str], folder: Path
) -> None:
    env, encoding = environment
    done = attntrace(*args, env=env, cwd=folder)
    err = in_encoding(done.stderr, encoding)
    assert "Traceback" not in err
    assert "Warning" not in err
    # diff and check: 1 is their answer (something differs)
    assert done.returncode == (1 if args[0] in ("diff", "check") else 0), err
    out = in_encoding(done.stdout, encoding)
    assert out.strip()


def test_the_ascii_forms(folder: Path) -> None:
    """What an ASCII stream shows: Rich's ASCII boxes, the house characters spelled out,
    tokens it cannot show as ? (one for each cell they take, so columns line up)."""
    env = ENVIRONMENTS["ascii"][0]
    help_text = attntrace("-h", env=env, cwd=folder).stdout.decode("ascii")
    assert "+- Options -" in help_text
    assert re.search(r"^\| --help +-h ", help_text, re.MULTILINE)  # the columns: their flags
    focus = attntrace("run", "--focus", "fish", env=env, cwd=folder).stdout.decode("ascii")
    assert "scores = Q * K^T" in focus
    assert "fish*cat  = [2, 4]*[1, 2] = 2x1 + 4x2 = 10" in focus
    assert "scores / sqrt d_k" in focus
    assert "every exp <= 1" in focus
    shown = attntrace("run", "-c", "model.json", env=env, cwd=folder).stdout.decode("ascii")
    assert "chat-mange-poisson*sqrt " in shown  # the name: · and √
    assert "\n??     " in shown  # 猫 is two cells wide: ?? keeps the column
    assert "\nmange  " in shown  # é as e
    latin = attntrace("run", "--focus", "fish", env=ENVIRONMENTS["latin-1"][0], cwd=folder)
    assert "fish·cat  = [2, 4]·[1, 2] = 2×1 + 4×2 = 10" in latin.stdout.decode("latin-1")


def test_an_error_line_escapes_what_the_stream_cannot_encode(folder: Path) -> None:
    for env, encoding in ENVIRONMENTS.values():
        done = attntrace("run", "-c", "model.json", "猫 dog", env=env, cwd=folder)
        assert done.returncode == 2
        assert done.stdout == b""
        err = in_encoding(done.stderr, encoding)
        assert err.count("\n") == 1
        assert err.startswith("attntrace: error: ")
        assert "'dog'" in err
        assert "\\u732b" in err  # 猫, said so the reader can tell which token


JSON_COMMANDS = {
    "run": ("run", "--json"),
    "decode": ("decode", "--json"),
    "grad": ("grad", "--json", *LOSS),
    "flash": ("flash", "--json"),
    "train": ("train", "--json", "--steps", "2", *LOSS),
    "diff": ("diff", "--json", "--set", "causal=true"),
    "check": ("check", "--json", "mine.npz"),
}


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@pytest.mark.parametrize("args", JSON_COMMANDS.values(), ids=JSON_COMMANDS.keys())
def test_json_on_an_ascii_stream_is_escaped_and_lossless(
    args: tuple[str, ...], folder: Path
) -> None:
    """JSON is for programs: where the stream is not UTF-8, it is written in ASCII with
    each other character as its \\uXXXX escape, the same document as UTF-8's."""
    utf8 = attntrace(*args, "-c", "model.json", env={"PYTHONIOENCODING": "utf-8"}, cwd=folder)
    assert "猫".encode() in utf8.stdout
    for env, _ in ENVIRONMENTS.values():
        done = attntrace(*args, "-c", "model.json", env=env, cwd=folder)
        assert done.returncode in (0, 1), done.stderr
        assert done.stdout.isascii()
        assert b"\\u732b" in done.stdout  # 猫
        assert b"\\ud83d\\udc1f" in done.stdout  # 🐟, as JSON writes one past U+FFFF
        assert json.loads(done.stdout) == json.loads(utf8.stdout)


def test_export_on_an_ascii_stream_saves_the_page_in_utf8(folder: Path) -> None:
    for name, (env, encoding) in ENVIRONMENTS.items():
        page = folder / f"{name}.html"
        done = attntrace("run", "-c", "model.json", "--export", str(page), env=env, cwd=folder)
        assert done.returncode == 0, done.stderr
        in_encoding(done.stdout, encoding)
        assert in_encoding(done.stderr, encoding).startswith("attntrace: saved ")
        assert "猫" in page.read_text(encoding="utf-8")  # the file is UTF-8 whatever the stream


def test_numpy_warns_nothing_on_stderr(tmp_path: Path) -> None:
    """A .npy header claiming 2**62 rows: numpy's memmap warned (``overflow encountered
    in scalar multiply``) above the error line; now the error line alone."""
    np.save(tmp_path / "small.npy", np.zeros((2, 2)))
    data = (tmp_path / "small.npy").read_bytes()
    length = int.from_bytes(data[8:10], "little")
    header = data[10 : 10 + length].decode("latin-1")
    huge = header.replace("(2, 2)", f"({2**62}, 4)").rstrip("\n").ljust(length - 1) + "\n"
    (tmp_path / "huge.npy").write_bytes(data[:10] + huge.encode("latin-1") + data[10 + length :])
    (tmp_path / "m.yaml").write_text(
        "embeddings: {cat: [1, 0], fish: [0, 1]}\n"
        "weights: {WQ: huge.npy, WK: [[1, 0], [0, 1]], WV: [[1, 0], [0, 1]]}\n",
        encoding="utf-8",
    )
    done = attntrace("run", "-c", "m.yaml", "cat fish", env={}, cwd=tmp_path)
    err = done.stderr.decode("utf-8")
    assert done.returncode == 2
    assert err.count("\n") == 1, err
    assert err.startswith("attntrace: error: m.yaml: weights.WQ: ")


def test_an_overflow_is_still_reported_without_numpy_s_warnings(tmp_path: Path) -> None:
    """Quieting numpy hides nothing that matters: float64 overflowing is attntrace's own
    error line, as it was (1e200 · 1e200 is past float64's largest, 1.8e308)."""
    (tmp_path / "big.yaml").write_text(
        "embeddings: {cat: [1.0e200, 1.0e200], fish: [1, 2]}\n"
        "weights: {WQ: [[1.0e200, 0], [0, 1.0e200]], WK: [[1, 0], [0, 1]], "
        "WV: [[1, 0], [0, 1]]}\n",
        encoding="utf-8",
    )
    for command in ("run", "decode", "flash"):
        done = attntrace(command, "-c", "big.yaml", "cat fish", env={}, cwd=tmp_path)
        err = done.stderr.decode("utf-8")
        assert done.returncode == 2, err
        assert err.count("\n") == 1, err
        assert "stage Q: float64 overflowed to inf at row 'cat', column 'd0'" in err


# no lone surrogates (no UTF-8 document holds one); no DEL, which json.dumps escapes and
# ascii_json, as JSON allows, does not
_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x7f"))
_JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
    lambda inner: st.lists(inner) | st.dictionaries(_TEXT, inner),
    max_leaves=20,
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=_JSON, chunk=st.integers(1, 64))
def test_ascii_json_escapes_as_python_s_json_does(
    document: object, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ascii_json`` of the UTF-8 document is what ``json.dumps`` writes with its default
    ``ensure_ascii``: an independent escaper. A small ``_CHUNK`` puts runs of non-ASCII
    bytes across the pieces numpy compares."""
    from attntrace.kernel import documents

    monkeypatch.setattr(documents, "_CHUNK", chunk)
    utf8 = json.dumps(document, ensure_ascii=False).encode("utf-8")
    assert documents.ascii_json(utf8) == json.dumps(document).encode("ascii")
