"""config.json read into ModelFacts: the config formats found on the Hub (transformers 4's
``rope_theta`` and ``rope_scaling``, Gemma 3's ``rope_local_base_freq`` and
``sliding_window_pattern``, a multimodal Gemma 3's ``text_config``), the defaults of the
config classes, and one line for each bad config. (The tiny models of
test_decoder_families.py cover the format transformers 5 writes, against the oracle.)
"""

from __future__ import annotations

from typing import Any

import pytest
from published_configs import GEMMA3_270M, LLAMA_32_1B

from attntrace.errors import InputError
from attntrace.real.families.facts import FAMILIES, RopeScaling
from attntrace.real.families.hf_config import READERS, facts_from_config
from attntrace.real.families.hf_rows import ROWS


def test_llama_3_2_reads_as_published() -> None:
    facts = facts_from_config(LLAMA_32_1B, "config.json")
    assert (facts.family, facts.layers, facts.heads, facts.kv_heads) == ("llama", 16, 32, 8)
    assert (facts.d_model, facts.head_dim, facts.d_ff, facts.norm_eps) == (2048, 64, 8192, 1e-5)
    assert facts.rope_base == 500000.0
    assert facts.tied_embeddings
    assert facts.rope_scaling == RopeScaling(32.0, 1.0, 4.0, 8192, "llama3")
    assert facts.layer_types == ()
    assert facts.sliding_window is None


def test_gemma3_270m_reads_as_the_catalogued_one_knows_it() -> None:
    """The facts attntrace/real/gemma.py takes from the reference: every sixth layer
    global, local base 10,000, global 1e6, the query scalar, √d_model."""
    facts = facts_from_config(GEMMA3_270M, "config.json")
    assert facts.family == "gemma3"
    assert [i for i in range(18) if facts.layer_type(i) == "full"] == [5, 11, 17]
    assert (facts.rope_base, facts.rope_local_base) == (1e6, 1e4)
    assert facts.query_pre_attn_scalar == 256
    assert facts.embed_scale == 640**0.5
    assert facts.qk_norm
    assert facts.post_norms
    assert facts.norm_offset == 1.0
    assert facts.activation == "gelu_tanh"
    assert facts.attn_softcap is None


def test_a_multimodal_gemma3_reads_its_text_config() -> None:
    facts = facts_from_config({"model_type": "gemma3", "text_config": GEMMA3_270M}, "c.json")
    assert facts.family == "gemma3"
    assert facts.layers == 18


def test_defaults_are_the_config_classes() -> None:
    """A config naming only the shape gets the rest from its class's defaults."""
    shape = {"hidden_size": 2048, "num_attention_heads": 32, "num_hidden_layers": 2}
    gemma2 = facts_from_config({"model_type": "gemma2", **shape}, "c.json")
    assert (gemma2.attn_softcap, gemma2.final_softcap) == (50.0, 30.0)
    assert gemma2.layer_types == ("sliding", "full")
    assert gemma2.sliding_window == 4096
    assert gemma2.query_pre_attn_scalar == 256
    assert gemma2.head_dim == 256
    mistral = facts_from_config({"model_type": "mistral", **shape}, "c.json")
    assert mistral.sliding_window == 4096
    assert mistral.layer_type(1) == "sliding"
    assert mistral.kv_heads == 8
    assert mistral.head_dim == 64
    qwen2 = facts_from_config({"model_type": "qwen2", **shape}, "c.json")
    assert qwen2.qkv_bias
    assert not qwen2.o_bias
    assert qwen2.sliding_window is None
    phi3 = facts_from_config({"model_type": "phi3", **shape}, "c.json")
    assert phi3.norm_eps == 1e-5
    assert phi3.kv_heads == 32
    assert phi3.rotary_dim is None
    llama = facts_from_config({"model_type": "llama", **shape}, "c.json")
    assert llama.rope_base == 10_000.0
    assert llama.kv_heads == 32
    assert not llama.tied_embeddings


def test_every_decoder_family_has_a_row_and_gpt2_bert_a_place() -> None:
    decoders = {row.family for row in ROWS.values()}
    assert decoders == set(FAMILIES) - {"gpt2", "bert"}
    assert set(READERS) >= set(ROWS)


SHAPE = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2}
BAD = [
    ({"model_type": "mamba"}, "model_type", "'mamba'"),
    ({"model_type": None}, "model_type", "None"),
    ({"model_type": "llama", **SHAPE, "hidden_size": "64"}, "hidden_size", "'64'"),
    ({"model_type": "llama", **SHAPE, "num_key_value_heads": 3}, "num_key_value_heads", "3"),
    ({"model_type": "llama", **SHAPE, "rms_norm_eps": -1}, "rms_norm_eps", "-1"),
    ({"model_type": "llama", **SHAPE, "hidden_act": "relu"}, "hidden_act", "'relu'"),
    (
        {"model_type": "llama", **SHAPE, "rope_scaling": {"type": "dynamic", "factor": 2.0}},
        "rope_scaling.rope_type",
        "'dynamic'",
    ),
    (
        {"model_type": "llama", **SHAPE, "rope_scaling": {"rope_type": "llama3", "factor": 8}},
        "rope_scaling.low_freq_factor",
        "None",
    ),
    (
        {
            "model_type": "gemma",
            **SHAPE,
            "num_key_value_heads": 4,
            "use_bidirectional_attention": True,
        },
        "use_bidirectional_attention",
        "true",
    ),
    (
        {"model_type": "gemma2", **SHAPE, "layer_types": ["full_attention"]},
        "layer_types",
        "full_attention",
    ),
    (
        {"model_type": "phi3", **SHAPE, "partial_rotary_factor": 0.1},
        "partial_rotary_factor",
        "0.1",
    ),
    ({"model_type": "gemma3", "text_config": 5}, "text_config", "5"),
]


@pytest.mark.parametrize(("config", "field", "found"), BAD, ids=lambda v: str(v)[:40])
def test_a_bad_config_is_one_line_naming_the_field(
    config: dict[str, Any], field: str, found: str
) -> None:
    with pytest.raises(InputError) as caught:
        facts_from_config(config, "here/config.json")
    line = str(caught.value)
    assert line.startswith(f"here/config.json: {field}: ")
    assert found in line
    assert "\n" not in line
