"""What a model's files claim, held to what can be traced (the fresh-eyes review of
issue 31): a config of 10¹² layers is one line at once, not a hang that fills the
memory; `models` says it cannot be traced; a symlink loop is said as a loop; an empty
revision after ``@`` is refused rather than read as main."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attntrace.errors import InputError
from attntrace.real.disk.files import dangling_error
from attntrace.real.disk.hf_cache import locate_cached
from attntrace.real.disk.summary import Summary
from attntrace.real.families.encoder import bert_facts
from attntrace.real.families.facts import MAX_LAYERS
from attntrace.real.families.gpt2 import gpt2_facts
from attntrace.real.families.hf_config import facts_from_config

HUGE = 10**12


def test_a_decoder_config_of_huge_depth_is_refused_before_anything_per_layer() -> None:
    config = {
        "model_type": "gemma2",  # builds one layer type per layer where none are given
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_hidden_layers": HUGE,
    }
    with pytest.raises(InputError) as refused:
        facts_from_config(config, "config.json")
    assert str(refused.value) == (
        "config.json: num_hidden_layers: expected at most 1,024 layers, got 1,000,000,000,000"
    )


def test_the_deepest_allowed_config_is_read() -> None:
    config = {
        "model_type": "llama",
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_hidden_layers": MAX_LAYERS,
    }
    assert facts_from_config(config, "config.json").layers == MAX_LAYERS


@pytest.mark.parametrize(
    ("read", "family", "key"),
    [(gpt2_facts, "gpt2", "n_layer"), (bert_facts, "bert", "num_hidden_layers")],
)
def test_gpt2_and_bert_configs_too(read: object, family: str, key: str) -> None:
    assert callable(read)
    with pytest.raises(InputError, match="expected at most 1,024 layers"):
        read({"model_type": family, key: HUGE}, "config.json")


def test_models_says_a_huge_model_cannot_be_traced() -> None:
    summary = Summary("llama", HUGE, 4, 2)
    assert not summary.supported
    assert summary.why_not == "claims 1,000,000,000,000 layers (at most 1,024)"
    assert Summary("llama", 16, 4, 2).supported


def test_a_symlink_loop_is_said_as_a_loop(tmp_path: Path) -> None:
    link = tmp_path / "config.json"
    link.symlink_to("config.json")
    assert "symlink loop: config.json leads back to itself" in str(dangling_error(link))


def test_an_empty_revision_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    entry = tmp_path / "models--Org--Name"
    (entry / "refs").mkdir(parents=True)
    (entry / "refs" / "main").write_text("0" * 40)
    with pytest.raises(InputError) as refused:
        locate_cached("Org/Name@")
    assert "expected a revision after Org/Name@" in str(refused.value)
    assert json.dumps(str(refused.value)).count("\\n") == 0
