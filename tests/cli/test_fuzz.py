"""Whatever a user types, the CLI ends in success or exit 2, never a traceback."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import invoke, raw_controls, whole_runs
from hypothesis import given
from hypothesis import strategies as st
from paths import SAMPLES
from typer.testing import Result  # type: ignore[attr-defined, unused-ignore]  # typer 0.26

# Thousands of whole CLI runs: a long run (pytest -m long), which .ci/run makes.
pytestmark = pytest.mark.long

SAVED = json.loads(invoke("run", "the cat sat", "-s", "the-cat-sat", "--json").stdout)


def ended_cleanly(result: Result) -> None:
    assert result.exit_code in (0, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    assert raw_controls(result.output) == [], result.output  # what was typed, made visible
    if result.exit_code == 0:
        assert result.stderr == "", result.stderr
    else:  # errors.py's one line, for scripts to grep: never a usage panel, never blank
        line, end, rest = result.stderr.partition("\n")
        assert (end, rest) == ("\n", ""), f"not exactly one line: {result.stderr!r}"
        said = line.removeprefix("attntrace: error: ")
        assert said != line, f"not an attntrace error: {line!r}"
        assert said.strip() == said != "", f"an empty or padded message: {line!r}"


@given(st.text(max_size=12))
@whole_runs
def test_any_focus(which: str) -> None:
    ended_cleanly(invoke("run", "the cat sat", "-s", "the-cat-sat", "--focus", which))


@given(
    st.lists(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=8), max_size=12)
)
@whole_runs
def test_any_step_keys(keys: list[str]) -> None:
    typed = "".join(key.replace("\n", " ") + "\n" for key in keys)
    ended_cleanly(invoke("run", "--step", "--focus", "eats", input=typed))


@given(st.lists(st.text(max_size=6), min_size=1, max_size=6))
@whole_runs
def test_any_softmax_values(values: list[str]) -> None:
    ended_cleanly(invoke("softmax", "--", *values))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def mutate(document: Any, path: list[int], value: Any) -> Any:
    """Replace one node of ``document``, found by walking ``path`` through its children."""
    if not path or not isinstance(document, dict | list) or not document:
        return value
    keys = list(document) if isinstance(document, dict) else list(range(len(document)))
    key = keys[path[0] % len(keys)]
    copy = dict(document) if isinstance(document, dict) else list(document)
    copy[key] = mutate(document[key], path[1:], value)
    return copy


@given(st.lists(st.integers(0, 50), max_size=6), JSON_VALUES)
@whole_runs
def test_any_damaged_trace(path: list[int], value: Any) -> None:
    damaged = mutate(SAVED, path, value)
    ended_cleanly(invoke("render", "-", input=json.dumps(damaged)))
    ended_cleanly(invoke("render", "-", "--focus", "cat", input=json.dumps(damaged)))


WHOLE_FILES = {
    name: (SAMPLES / name).read_text(encoding="utf-8")
    for name in ("the-cat-sat.yaml", "cat-eats-fish.json")
}


@given(st.sampled_from(sorted(WHOLE_FILES)), st.floats(0, 1))
@whole_runs
def test_any_cut_off_model_file(
    tmp_path_factory: pytest.TempPathFactory, name: str, where: float
) -> None:
    """A model file cut off anywhere (a copy interrupted, a download stopped short)."""
    text = WHOLE_FILES[name]
    path = tmp_path_factory.mktemp("cut") / name
    path.write_text(text[: int(where * len(text))], encoding="utf-8")
    ended_cleanly(invoke("run", "the cat", "-c", str(path)))


@given(st.floats(0, 1))
@whole_runs
def test_any_cut_off_saved_trace(where: float) -> None:
    text = json.dumps(SAVED)
    ended_cleanly(invoke("render", "-", input=text[: int(where * len(text))]))


@given(st.sampled_from(sorted(WHOLE_FILES)), st.floats(0, 1), st.characters())
@whole_runs
def test_any_character_anywhere_in_a_model_file(
    tmp_path_factory: pytest.TempPathFactory, name: str, where: float, character: str
) -> None:
    """One character more, anywhere (a control character, a stray quote, a surrogate
    escaped by the file's encoding): success, or one line and exit 2."""
    text = WHOLE_FILES[name]
    at = int(where * len(text))
    path = tmp_path_factory.mktemp("spiked") / name
    path.write_bytes((text[:at] + character + text[at:]).encode("utf-8", "surrogatepass"))
    ended_cleanly(invoke("run", "the cat", "-c", str(path)))
