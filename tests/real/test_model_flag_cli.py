"""--model through the CLI: --help says what it takes, Tab offers the stores' models, and
whatever the locating refuses is one line on stderr, exit 2 (docs/cli.md, the error
line), with the stores laid out in tmp_path (tests/disk_stores.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from disk_stores import hf_model, ollama_model, safetensors, stores
from helpers import invoke, one_line_error
from typer.testing import CliRunner

from attntrace.cli import app

__all__ = ["stores"]  # the fixture, imported for the tests that take it

FORMS = ("a .gguf file", "a model folder", "ORG/NAME[@REV]", "ollama:NAME[:TAG]")


@pytest.mark.parametrize(
    "command", ["run", "decode", "heads", "grad", "check", "flash", "explore", "kv-cache"]
)
def test_help_says_what_model_takes(command: str) -> None:
    """Rich would swallow ``[@REV]`` as markup; it shows, within 80 columns."""
    text = invoke(command, "--help").stdout
    assert all(len(line) <= 80 for line in text.splitlines())
    flat = " ".join(text.replace("│", " ").split())
    assert "MODEL" in flat
    for form in FORMS:
        assert form in flat, (command, form)


@pytest.mark.parametrize(
    ("model", "words"),
    [
        ("/nonexistent", ["/nonexistent: no such file or folder"]),
        ("./empty", ["empty: neither a Hugging Face model folder nor a GGUF file"]),
        ("Qwen/Qwen2.5-0.5B", ["not in the Hugging Face cache", "hf download Qwen/Qwen2.5-0.5B"]),
        ("ollama:nope", ["not in Ollama's store", "ollama pull nope"]),
        ("some.txt", ["some.txt: not a GGUF file"]),
        ("nope", ["--model: expected minilm, smollm2, gemma3, a .gguf file", "'nope'"]),
    ],
)
def test_each_refusal_is_one_line(stores: tuple[Path, Path], model: str, words: list[str]) -> None:
    (Path.cwd() / "empty").mkdir()
    (Path.cwd() / "some.txt").write_text("hi\n")
    for command in ("run", "kv-cache"):
        one_line_error(invoke(command, "--model", model), *words)


@pytest.mark.parametrize("value", ["", "relative/store", "~nobody-here/x"])
def test_the_stores_variables_are_read_not_validated(
    stores: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """HF_HOME, HF_HUB_CACHE and OLLAMA_MODELS are not attntrace's: any value, empty or
    relative, is where to look (or the default), never a crash."""
    for variable in ("HF_HOME", "HF_HUB_CACHE", "OLLAMA_MODELS"):
        monkeypatch.setenv(variable, value)
    one_line_error(invoke("run", "-m", "Org/Name"), "hf download Org/Name")
    one_line_error(invoke("run", "-m", "ollama:nope"), "ollama pull nope")
    assert invoke("models").exit_code == 0


def test_tab_offers_the_stores_models(stores: tuple[Path, Path]) -> None:
    hub, store = stores
    config = json.dumps({"model_type": "llama"}).encode()
    hf_model(hub, "Qwen/Qwen2.5-0.5B", {"config.json": config, "model.safetensors": safetensors()})
    ollama_model(store, "llama3.2", "1b", blob=b"GGUF")
    for words, offered in (
        (
            "attntrace run -m ",
            ["minilm", "smollm2", "gemma3", "Qwen/Qwen2.5-0.5B", "ollama:llama3.2:1b"],
        ),
        ("attntrace heads --model Q", ["Qwen/Qwen2.5-0.5B"]),
        ("attntrace kv-cache -m oll", ["ollama:llama3.2:1b"]),
        ("attntrace kv-cache -m gemma", ["gemma-2b", "gemma-7b", "gemma3-270m", "gemma3"]),
        ("attntrace run -m ./", []),  # a path: bash falls back to files
    ):
        cword = len(words.split()) - (0 if words.endswith(" ") else 1)
        env = {
            "_ATTNTRACE_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(cword),
        }
        result = CliRunner().invoke(app, [], env=env, prog_name="attntrace")
        assert result.exit_code == 0, result.output
        assert result.stdout.split() == offered, words
