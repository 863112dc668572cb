"""BERT from a Hugging Face folder: its config.json read into :class:`ModelFacts`, and the
model opened on :class:`attntrace.real.bert.Bert`, the forward pass the catalogued MiniLM
runs (transformers' ``models/bert/modeling_bert.py``: ``BertConfig``'s defaults,
``BertEmbeddings``, ``BertSelfAttention``, ``BertLayer``).

Any ``bert`` config, not only MiniLM's: its sizes, ``hidden_act``, ``layer_norm_eps``,
``type_vocab_size``, and ``is_decoder`` (a causal BERT, as ``BertLMHeadModel``). What
transformers computes that this pass does not — relative position embeddings (the
``position_embedding_type`` of transformers before 5), cross-attention — is one line.
"""

from __future__ import annotations

from collections.abc import Mapping

from attntrace.real.bert import Bert
from attntrace.real.catalog import RealModel
from attntrace.real.families.classic import (
    FUNCTIONS,
    ConfigFields,
    Vocabulary,
    check_shapes,
    model_type,
    prefixed,
)
from attntrace.real.families.facts import ModelFacts, checked_layers
from attntrace.real.families.tensors import TensorSource


def bert_facts(config: Mapping[str, object], source: str) -> ModelFacts:
    """A ``bert`` config.json as :class:`ModelFacts`, with ``BertConfig``'s defaults."""
    fields = ConfigFields(config, source)
    model_type(fields, "bert")
    d_model = fields.whole("hidden_size", 768)
    heads = fields.whole("num_attention_heads", 12)
    head_dim = fields.heads_divide(d_model, "hidden_size", heads, "num_attention_heads")
    kind = fields.text("position_embedding_type", "absolute")
    if kind != "absolute":
        raise fields.refuse(
            "position_embedding_type",
            kind,
            "'absolute'",
            "relative position embeddings inside attention are not traced",
        )
    if fields.flag("add_cross_attention", False):
        raise fields.refuse(
            "add_cross_attention",
            True,
            "false",
            "a decoder of another model's states is not traced",
        )
    return ModelFacts(
        family="bert",
        layers=checked_layers(fields.whole("num_hidden_layers", 12), source, "num_hidden_layers"),
        heads=heads,
        kv_heads=heads,
        d_model=d_model,
        head_dim=head_dim,
        d_ff=fields.whole("intermediate_size", 3072),
        vocabulary=fields.whole("vocab_size", 30522),
        norm_eps=fields.positive("layer_norm_eps", 1e-12),
        max_positions=fields.whole("max_position_embeddings", 512),
        causal=fields.flag("is_decoder", False),
        norm="layer",
        activation=fields.activation("hidden_act", "gelu"),
        positions="learned",
        rope_base=None,
        qkv_bias=True,
        o_bias=True,
        tied_embeddings=fields.flag("tie_word_embeddings", True),
        token_types=fields.whole("type_vocab_size", 2),
    )


def bert_shapes(facts: ModelFacts) -> dict[str, tuple[int, ...]]:
    """Every tensor the forward pass reads, by its ``BertModel`` name, and its shape
    (``nn.Linear``: ``[out, in]``)."""
    d, ff = facts.d_model, facts.d_ff
    e = "embeddings."
    shapes: dict[str, tuple[int, ...]] = {
        e + "word_embeddings.weight": (facts.vocabulary, d),
        e + "position_embeddings.weight": (facts.max_positions, d),
        e + "token_type_embeddings.weight": (facts.token_types, d),
        e + "LayerNorm.weight": (d,),
        e + "LayerNorm.bias": (d,),
    }
    for layer in range(facts.layers):
        p = f"encoder.layer.{layer}."
        for name in ("self.query", "self.key", "self.value", "output.dense"):
            shapes |= {f"{p}attention.{name}.weight": (d, d), f"{p}attention.{name}.bias": (d,)}
        shapes |= {
            p + "attention.output.LayerNorm.weight": (d,),
            p + "attention.output.LayerNorm.bias": (d,),
            p + "intermediate.dense.weight": (ff, d),
            p + "intermediate.dense.bias": (ff,),
            p + "output.dense.weight": (d, ff),
            p + "output.dense.bias": (d,),
            p + "output.LayerNorm.weight": (d,),
            p + "output.LayerNorm.bias": (d,),
        }
    return shapes


def open_bert(
    facts: ModelFacts,
    tensors: TensorSource,
    tokenizer: Vocabulary,
    spec: RealModel | None = None,
    where: str = "config.json",
) -> Bert:
    """The BERT whose ``facts`` and ``tensors`` these are: names with the ``bert.``
    prefix of ``BertFor…`` checkpoints or without (``BertModel``), every shape held to
    the config before a number is read. ``spec`` (default: from ``facts``, named after
    the folder) is what a trace's header says."""
    named = prefixed(tensors, "embeddings.word_embeddings.weight", ("", "bert."))
    check_shapes(
        named,
        bert_shapes(facts),
        f"{where} (hidden_size {facts.d_model}, num_hidden_layers {facts.layers}, "
        f"intermediate_size {facts.d_ff}, vocab_size {facts.vocabulary}, "
        f"max_position_embeddings {facts.max_positions}, type_vocab_size {facts.token_types})",
    )
    return Bert(
        named,
        tokenizer,
        spec=spec
        or facts.as_real_model(
            tensors.path.name,
            f"BERT from {tensors.path}",
            tensors.path,
            max_tokens=facts.max_positions,
        ),
        eps=facts.norm_eps,
        activation=FUNCTIONS[facts.activation],
    )
