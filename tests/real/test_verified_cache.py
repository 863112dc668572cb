"""The note of verified weight files (``$XDG_CACHE_HOME/attntrace/verified.json``) when
it is damaged: ignored and written anew, never an error (docs/cli.md, XDG_CACHE_HOME).

The note only spares a hash, so whatever is in its place (JSON nested past Python's
recursion limit, no JSON, the wrong types, a file over its size, a directory, a link to
itself) must leave ``--model`` runs working, and the next verified file rewrites it
whole where it can be written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import invoke

from attntrace.real.catalog import MINILM, remember_verified, verified_before
from attntrace.real.layer import opened

SHA = "ab" * 32


@pytest.fixture
def note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The note in a fresh cache; models opened earlier in this process are forgotten,
    so that a run verifies its weights (and writes the note) as a new process would."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    opened.cache_clear()
    folder = tmp_path / "cache" / "attntrace"
    folder.mkdir(parents=True)
    yield folder / "verified.json"
    opened.cache_clear()


def _text(text: str) -> Callable[[Path], object]:
    return lambda path: path.write_text(text)


DAMAGED: dict[str, Callable[[Path], object]] = {
    "nested 3,000 levels": _text("[" * 3000 + "]" * 3000),
    "nested 100,000 levels": _text("[" * 100_000 + "]" * 100_000),
    "not JSON": _text("hello {"),
    "empty": _text(""),
    "an object": _text('{"a": 1}'),
    "not strings": _text('[1, null, ["x"], {"y": 2}]'),
    "a string": _text('"abc"'),
    "over 64 KiB": _text(json.dumps(["x" * 100] * 1000)),
    "an integer past Python's digit limit": _text("[" + "9" * 5000 + "]"),
    "not UTF-8": lambda path: path.write_bytes(b'["\xff\xfe"]'),
    "binary": lambda path: path.write_bytes(bytes(range(256)) * 4),
    "a link to itself": lambda path: path.symlink_to(path),
    "a link to nowhere": lambda path: path.symlink_to(path.parent / "absent"),
}


@pytest.mark.parametrize("damage", DAMAGED, ids=list(DAMAGED))
def test_a_damaged_note_is_ignored_and_written_anew(
    note: Path, tmp_path: Path, damage: str
) -> None:
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    DAMAGED[damage](note)
    assert not verified_before(weights, SHA)
    remember_verified(weights, SHA)
    assert verified_before(weights, SHA)
    entries = json.loads(note.read_text())
    assert len(entries) == 1
    assert entries[0].startswith(f"{SHA}:{weights.resolve()}:")


def test_a_note_that_is_a_directory_is_left_and_runs_still_work(note: Path, tmp_path: Path) -> None:
    """It cannot be replaced by a rename (nor is a folder of the user's deleted): each
    run hashes again, and none fails."""
    note.mkdir()
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    remember_verified(weights, SHA)
    assert not verified_before(weights, SHA)
    assert note.is_dir()
    assert list(note.parent.iterdir()) == [note]  # no temporary file left behind


def test_a_cache_folder_that_is_a_file_leaves_runs_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "cache"
    home.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    remember_verified(weights, SHA)
    assert not verified_before(weights, SHA)


def test_the_last_twenty_good_entries_are_kept(note: Path, tmp_path: Path) -> None:
    kept = [f"{i:064x}:/x:1:2:3:4" for i in range(25)]
    note.write_text(json.dumps([*kept[:3], 7, *kept[3:]]))
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    remember_verified(weights, SHA)
    entries = json.loads(note.read_text())
    assert entries[:-1] == kept[-20:]
    assert entries[-1].startswith(SHA)


@pytest.mark.skipif(not MINILM.installed, reason="MiniLM's weights are not installed")
def test_a_model_run_works_with_a_deeply_nested_note(note: Path) -> None:
    """The issue's case: 3,000 levels (16 KB) made every --model run a RecursionError."""
    note.write_text("[" * 3000 + "]" * 3000)
    result = invoke("run", "--model", "minilm", "--layer", "0")
    assert result.exit_code == 0, result.stderr
    assert len(json.loads(note.read_text())) == 2  # the weights and vocab.txt, verified
