"""Ġ, ▁ and ## explained once, the first time a trained model's tokens are shown
(issue 30: they were explained only in the README), and never in JSON."""

from __future__ import annotations

import json
import re

import pytest
from helpers import invoke

from attntrace.real.catalog import MINILM, SMOLLM2, RealModel

# Each command loads a real model's weights: seconds, so a long run.
pytestmark = pytest.mark.long

BPE = "Ġ = a space before the token (byte-level BPE: GPT-2, SmolLM2)."
WORDPIECE = "## = the token continues the word before it (WordPiece: BERT, MiniLM)."


def need(model: RealModel) -> None:
    if not model.installed:
        pytest.skip(f"{model.name}'s weights are not installed: {model.install}")


@pytest.mark.parametrize(
    "args",
    [
        ["run", "-m", "smollm2", "--layer", "0", "--head", "0", "The cat sat"],
        ["decode", "-m", "smollm2", "--layer", "0", "The cat sat"],
        ["flash", "-m", "smollm2", "--layer", "0", "The cat sat"],
        ["heads", "-m", "smollm2", "--from", "sat", "--to", "cat", "The cat sat"],
        ["grad", "-m", "smollm2", "--layer", "0", "--from", "sat", "--to", "cat", "The cat sat"],
    ],
    ids=["run", "decode", "flash", "heads", "grad"],
)
def test_bpe_space_is_explained_once(args: list[str]) -> None:
    need(SMOLLM2)
    out = invoke(*args, columns=200).stdout
    assert "Ġcat" in out
    assert out.count(BPE) == 1, out[:2000]
    assert "SentencePiece" not in out
    assert "WordPiece" not in out


@pytest.mark.parametrize("command", ["run", "grad"])
def test_step_mode_explains_it_on_the_first_screen_only(command: str) -> None:
    need(SMOLLM2)
    loss = ["--from", "sat", "--to", "cat"] if command == "grad" else []
    args = [command, "-m", "smollm2", "--layer", "0", *loss, "--step", "The cat sat"]
    out = invoke(*args, input="n\nn\nq\n", columns=200).stdout
    screens = [screen for screen in re.split(r"^─{200}$", out, flags=re.MULTILINE) if "Ġ" in screen]
    assert len(screens) == 3  # the first, the next two
    assert screens[0].count(BPE) == 1
    assert BPE not in "".join(screens[1:])


def test_wordpiece_is_explained_only_where_a_word_is_split() -> None:
    need(MINILM)
    split = invoke("run", "-m", "minilm", "--layer", "0", "--head", "0", "tokenization is fun")
    assert "##ization" in split.stdout
    assert split.stdout.count(WORDPIECE) == 1
    whole = invoke("run", "-m", "minilm", "--layer", "0", "--head", "0", "the cat sat")
    assert "WordPiece" not in whole.stdout


def test_json_has_no_such_line() -> None:
    need(SMOLLM2)
    out = invoke("run", "-m", "smollm2", "--layer", "0", "--head", "0", "--json", "The cat").stdout
    assert "byte-level BPE" not in out
    json.loads(out)
