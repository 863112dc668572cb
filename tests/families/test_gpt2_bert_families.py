"""GPT-2 and BERT as families (issue 31 §2, §3): a config.json read into facts, and the
forward pass held to transformers' own, in float64, layer by layer.

The oracle is tests/families/gpt2_bert_oracle.py: tiny random models of each family
(transformers' GPT2LMHeadModel, GPT2Model, BertModel; every parameter drawn anew),
``.double()`` with eager attention, whose every layer's attention probabilities and
hidden states attntrace must give to 1e-9. transformers keeps nothing of these two in
float32 (no RoPE, no RMSNorm; their eager softmax runs in the input's dtype): the
agreement seen is about 1e-15.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpt2_bert_oracle import (
    IDS,
    DictTensors,
    Spelled,
    Tiny,
    gpt2_in_float32,
    tiny_bert,
    tiny_gpt2,
)
from tolerances import AllClose

from attntrace.errors import InputError
from attntrace.forward.attention import trace_block
from attntrace.real.bert import Bert, SafetensorsTensors
from attntrace.real.catalog import MINILM
from attntrace.real.families.encoder import bert_facts, bert_shapes, open_bert
from attntrace.real.families.gpt2 import GPT2, gpt2_facts, gpt2_shapes
from attntrace.real.forward import Transformer
from attntrace.real.layer import Tokenized, open_model, transformer_spec
from attntrace.real.weights.safetensors import read_safetensors

# 1e-9 of a value (the brief's); the agreement seen is about 1e-15
TIGHT = AllClose(rtol=1e-9, atol=1e-12)


def gpt2_of(tiny: Tiny) -> GPT2:
    facts = gpt2_facts(tiny.config, "config.json")
    return GPT2(facts, DictTensors(tiny.state), Spelled())


def bert_of(tiny: Tiny) -> Bert:
    facts = bert_facts(tiny.config, "config.json")
    return open_bert(facts, DictTensors(tiny.state), Spelled())


def held_to_transformers(model: Transformer, tiny: Tiny, last: Any = None) -> None:
    """Every layer's probabilities and hidden state: transformers' to 1e-9 (``last``:
    what the last hidden state passes through, GPT-2's ln_f)."""
    ids = list(IDS)
    hidden = model.embed(ids)
    np.testing.assert_allclose(hidden, tiny.hidden[0], **TIGHT, err_msg="embeddings")
    layers = len(tiny.attentions)
    for layer in range(layers):
        hidden, probabilities = model.layer(layer, hidden)
        np.testing.assert_allclose(
            probabilities, tiny.attentions[layer], **TIGHT, err_msg=f"L{layer}"
        )
        shown = last(hidden) if last is not None and layer == layers - 1 else hidden
        np.testing.assert_allclose(shown, tiny.hidden[layer + 1], **TIGHT, err_msg=f"h{layer + 1}")
    for layer, probabilities in enumerate(model.run(ids, layers)):
        np.testing.assert_allclose(probabilities, tiny.attentions[layer], **TIGHT)


def traced_layer_is_transformers(model: Transformer, tiny: Tiny, layer: int) -> None:
    """The trace of layer ``layer`` (real/layer.py's spec of the model) recomputes the
    softmax stage of every head as transformers computes it."""
    ids = list(IDS)
    tokens = Tokenized(ids, tuple(model.labels(ids)))
    trace = trace_block(transformer_spec(model, tokens, layer), tokens.labels)
    assert trace.model.heads == 4
    for head in range(4):
        np.testing.assert_allclose(
            trace.stage("softmax", head=head).data, tiny.attentions[layer][head], **TIGHT
        )
    assert trace["projected"].shape == (len(ids), 64)


# ---------------------------------------------------------------- GPT-2


@pytest.mark.long
@pytest.mark.parametrize("head_model", [True, False], ids=["transformer.-prefixed", "bare"])
def test_gpt2_matches_transformers_in_every_layer(head_model: bool) -> None:
    tiny = tiny_gpt2(head_model=head_model)
    model = gpt2_of(tiny)
    assert model.tensors.prefix == ("transformer." if head_model else "")
    held_to_transformers(model, tiny, last=model.final_norm)


@pytest.mark.long
@pytest.mark.parametrize(
    "extra",
    [{"n_inner": 80}, {"activation_function": "gelu"}, {"activation_function": "relu"}],
    ids=["n_inner", "exact-gelu", "relu"],
)
def test_gpt2_variants_of_config_match_transformers(extra: dict[str, Any]) -> None:
    tiny = tiny_gpt2(layers=2, seed=7, **extra)
    model = gpt2_of(tiny)
    held_to_transformers(model, tiny, last=model.final_norm)


@pytest.mark.long
def test_a_traced_gpt2_layer_shows_transformers_softmax() -> None:
    tiny = tiny_gpt2()
    model = gpt2_of(tiny)
    traced_layer_is_transformers(model, tiny, 2)
    trace = trace_block(
        transformer_spec(model, Tokenized(list(IDS), tuple(model.labels(list(IDS)))), 0),
        tuple(model.labels(list(IDS))),
    )
    assert trace.model.causal
    assert trace["Q", 0].formula == "Q = X · WQ + bQ"
    assert trace["X"].formula.startswith("X = LayerNorm(token + position embeddings)")
    assert np.all(np.triu(trace["softmax", 1].data, 1) == 0)


@pytest.mark.long
def test_gpt2_reorder_and_upcast_is_the_same_model() -> None:
    """reorder_and_upcast_attn changes only how fp16 training rounds: the facts are the
    plain model's, and transformers' own path for it (which runs in float32 only)
    agrees with attntrace's float64 to float32's precision."""
    plain = tiny_gpt2(layers=2)
    facts = gpt2_facts({**plain.config, "reorder_and_upcast_attn": True}, "config.json")
    assert facts.notes == ("reorder_and_upcast_attn: the same numbers in float64",)
    assert facts == replace(gpt2_facts(plain.config, "config.json"), notes=facts.notes)
    state, attentions = gpt2_in_float32(plain, reorder_and_upcast_attn=True)
    model = GPT2(facts, DictTensors(state), Spelled())
    for layer, probabilities in enumerate(model.run(list(IDS), 2)):
        np.testing.assert_allclose(probabilities, attentions[layer], rtol=0, atol=1e-5)


# ---------------------------------------------------------------- BERT


@pytest.mark.long
@pytest.mark.parametrize("prefix", ["", "bert."], ids=["BertModel", "bert.-prefixed"])
def test_bert_matches_transformers_in_every_layer(prefix: str) -> None:
    tiny = tiny_bert(prefix=prefix)
    model = bert_of(tiny)
    assert model.tensors.prefix == prefix
    held_to_transformers(model, tiny)


@pytest.mark.long
@pytest.mark.parametrize(
    "extra",
    [
        {"hidden_act": "gelu_new", "layer_norm_eps": 1e-5},
        {"is_decoder": True},
        {"hidden_act": "relu"},
    ],
    ids=["tanh-gelu", "is_decoder", "relu"],
)
def test_bert_variants_of_config_match_transformers(extra: dict[str, Any]) -> None:
    tiny = tiny_bert(layers=2, seed=5, **extra)
    model = bert_of(tiny)
    assert model.spec.causal == bool(extra.get("is_decoder"))
    held_to_transformers(model, tiny)


@pytest.mark.long
def test_a_traced_bert_layer_shows_transformers_softmax() -> None:
    tiny = tiny_bert()
    traced_layer_is_transformers(bert_of(tiny), tiny, 1)


@pytest.mark.long
def test_tensorflow_era_gamma_and_beta_names_are_read() -> None:
    """Checkpoints converted from TensorFlow name LayerNorm's weight and bias gamma and
    beta (transformers renames them on load): the same model either way."""
    tiny = tiny_bert(prefix="bert.")
    renamed = {
        name.replace("LayerNorm.weight", "LayerNorm.gamma").replace(
            "LayerNorm.bias", "LayerNorm.beta"
        ): array
        for name, array in tiny.state.items()
    }
    assert "bert.embeddings.LayerNorm.gamma" in renamed
    model = open_bert(bert_facts(tiny.config, "config.json"), DictTensors(renamed), Spelled())
    held_to_transformers(model, tiny)


# ---------------------------------------------------------------- config.json and tensors

GPT2_CONFIG = {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 24}
BERT_CONFIG = {
    "model_type": "bert",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 96,
}


def test_a_gpt2_config_with_only_its_sizes_takes_gpt2configs_defaults() -> None:
    facts = gpt2_facts(GPT2_CONFIG, "config.json")
    assert (facts.layers, facts.heads, facts.kv_heads, facts.head_dim) == (2, 4, 4, 16)
    assert (facts.d_ff, facts.vocabulary, facts.max_positions) == (256, 50257, 24)
    assert (facts.norm, facts.norm_eps, facts.activation) == ("layer", 1e-5, "gelu_tanh")
    assert (facts.positions, facts.rope_base, facts.causal) == ("learned", None, True)
    assert facts.qkv_bias
    assert facts.o_bias
    # transformers' attribute_map: hidden_size is n_embd, num_attention_heads n_head
    aliased = {"model_type": "gpt2", "hidden_size": 64, "num_attention_heads": 4}
    assert gpt2_facts(aliased, "c").head_dim == 16


def test_a_bert_config_with_only_its_sizes_takes_bertconfigs_defaults() -> None:
    facts = bert_facts(BERT_CONFIG, "config.json")
    assert (facts.layers, facts.heads, facts.head_dim, facts.d_ff) == (2, 4, 16, 96)
    assert (facts.vocabulary, facts.max_positions, facts.token_types) == (30522, 512, 2)
    assert (facts.norm_eps, facts.activation, facts.causal) == (1e-12, "gelu", False)
    assert bert_facts({**BERT_CONFIG, "is_decoder": True}, "c").causal


@pytest.mark.parametrize(
    ("reader", "config", "line"),
    [
        (
            gpt2_facts,
            {**GPT2_CONFIG, "scale_attn_by_inverse_layer_idx": True},
            "config.json: scale_attn_by_inverse_layer_idx: scores divided by the layer's "
            "number besides √d_k are not traced: expected false, got a boolean (true)",
        ),
        (
            gpt2_facts,
            {**GPT2_CONFIG, "scale_attn_weights": False},
            "config.json: scale_attn_weights: scores not divided by √d_k are not traced: "
            "expected true, got a boolean (false)",
        ),
        (
            gpt2_facts,
            {**GPT2_CONFIG, "add_cross_attention": True},
            "config.json: add_cross_attention: a decoder of another model's states is not "
            "traced: expected false, got a boolean (true)",
        ),
        (
            gpt2_facts,
            {**GPT2_CONFIG, "n_head": 5},
            "config.json: n_head: expected a number of heads that divides n_embd (64), got 5",
        ),
        (
            gpt2_facts,
            {**GPT2_CONFIG, "activation_function": "gelu_fast"},
            "config.json: activation_function: expected one of gelu, gelu_python, gelu_new, "
            "gelu_pytorch_tanh, gelu_python_tanh, relu, silu, swish, got a string 'gelu_fast'",
        ),
        (
            gpt2_facts,
            {**GPT2_CONFIG, "n_layer": "2"},
            "config.json: n_layer: expected a whole number ≥ 1, got a string '2'",
        ),
        (
            gpt2_facts,
            {**GPT2_CONFIG, "layer_norm_epsilon": -1},
            "config.json: layer_norm_epsilon: expected a number > 0, got -1",
        ),
        (
            gpt2_facts,
            BERT_CONFIG,
            "config.json: model_type: not this family's config: expected 'gpt2', "
            "got a string 'bert'",
        ),
        (
            bert_facts,
            {**BERT_CONFIG, "position_embedding_type": "relative_key"},
            "config.json: position_embedding_type: relative position embeddings inside "
            "attention are not traced: expected 'absolute', got a string 'relative_key'",
        ),
        (
            bert_facts,
            {**BERT_CONFIG, "is_decoder": True, "add_cross_attention": True},
            "config.json: add_cross_attention: a decoder of another model's states is not "
            "traced: expected false, got a boolean (true)",
        ),
        (
            bert_facts,
            {**BERT_CONFIG, "type_vocab_size": 0},
            "config.json: type_vocab_size: expected a whole number ≥ 1, got 0",
        ),
        (
            bert_facts,
            {**BERT_CONFIG, "hidden_size": None},
            "config.json: hidden_size: expected a whole number ≥ 1, got nothing (null)",
        ),
    ],
)
def test_what_cannot_be_traced_faithfully_is_one_line(
    reader: Any, config: dict[str, Any], line: str
) -> None:
    with pytest.raises(InputError) as refused:
        reader(config, "config.json")
    assert str(refused.value) == line


def zeros(shapes: dict[str, tuple[int, ...]], prefix: str = "") -> DictTensors:
    return DictTensors({prefix + k: np.zeros(v) for k, v in shapes.items()}, Path("model"))


def test_a_config_that_disagrees_with_its_tensors_is_one_line() -> None:
    facts = gpt2_facts(GPT2_CONFIG, "config.json")
    shapes = gpt2_shapes(facts)
    GPT2(facts, zeros(shapes, "transformer."), Spelled())  # as they should be: opened
    wide = {**shapes, "h.1.mlp.c_fc.weight": (64, 200)}
    with pytest.raises(InputError) as refused:
        GPT2(facts, zeros(wide, "transformer."), Spelled())
    assert str(refused.value) == (
        "model: transformer.h.1.mlp.c_fc.weight: the tensor disagrees with config.json "
        "(n_embd 64, n_layer 2, vocab_size 50257, n_positions 24): expected shape [64, 256], "
        "got [64, 200]"
    )
    short = {k: v for k, v in shapes.items() if k != "h.1.ln_2.bias"}
    with pytest.raises(InputError) as refused:
        GPT2(facts, zeros(short), Spelled())
    assert str(refused.value) == (
        "model: h.1.ln_2.bias: a tensor is missing: expected a tensor of shape [64], got none"
    )
    with pytest.raises(InputError) as refused:
        open_bert(bert_facts(BERT_CONFIG, "c"), zeros(shapes), Spelled())
    assert str(refused.value) == (
        "model: not this family's tensors: expected a tensor named "
        "'embeddings.word_embeddings.weight' or 'bert.embeddings.word_embeddings.weight', "
        "got neither"
    )


def test_a_bert_config_that_disagrees_with_its_tensors_is_one_line() -> None:
    facts = bert_facts(BERT_CONFIG, "config.json")
    shapes = bert_shapes(facts)
    assert open_bert(facts, zeros(shapes, "bert."), Spelled()).tensors.prefix == "bert."
    types = {**shapes, "embeddings.token_type_embeddings.weight": (1, 64)}
    with pytest.raises(InputError) as refused:
        open_bert(facts, zeros(types, "bert."), Spelled())
    assert str(refused.value).startswith(
        "model: bert.embeddings.token_type_embeddings.weight: the tensor disagrees with "
        "config.json (hidden_size 64, num_hidden_layers 2, intermediate_size 96, "
    )
    assert str(refused.value).endswith("type_vocab_size 2): expected shape [2, 64], got [1, 64]")


@pytest.mark.long
def test_minilms_folder_opened_as_a_bert_is_the_catalogued_minilm() -> None:
    """MiniLM's config.json read as any BERT's, its safetensors file as a tensor source:
    the facts are the catalogue's, and every layer's attention the catalogued model's."""
    if not MINILM.installed:
        pytest.skip(f"minilm's weights are not installed: {MINILM.install}")
    weights = MINILM.verified_weights()
    facts = bert_facts(json.loads((weights.parent / "config.json").read_text()), "config.json")
    assert (facts.layers, facts.heads, facts.d_model, facts.head_dim, facts.vocabulary) == (
        MINILM.layers,
        MINILM.heads,
        MINILM.d_model,
        MINILM.head_dim,
        MINILM.vocabulary,
    )
    assert (facts.causal, facts.positions, facts.norm_eps) == (MINILM.causal, "learned", 1e-12)
    catalogued = open_model("minilm")
    assert isinstance(catalogued, Bert)
    tensors = SafetensorsTensors(read_safetensors(weights), weights)
    model = open_bert(facts, tensors, catalogued.tokenizer)
    ids = catalogued.tokenizer.encode("The animal didn't cross the street because it was tired.")
    for ours, theirs in zip(model.run(ids, 6), catalogued.run(ids, 6), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
