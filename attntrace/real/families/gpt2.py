"""GPT-2 from a Hugging Face folder: its config.json read into :class:`ModelFacts`, and
its layers as transformers' ``GPT2Model`` computes them (``models/gpt2/modeling_gpt2.py``
of transformers 5.25: ``GPT2Model.forward``, ``GPT2Block``, ``GPT2Attention``,
``GPT2MLP``).

GPT-2 is pre-norm: a layer's attention reads ``ln_1(hidden)``, its MLP ``ln_2(hidden)``,
each adding its output back; ``ln_f`` closes the stack. Positions are learned, added to
the token embeddings before layer 0 (``wte + wpe``), and the mask is causal. Its
weights are ``Conv1D``: ``[in, out]``, multiplied as ``X · W + b`` — attntrace's own
layout, so no transpose. Q, K and V come fused in ``c_attn`` (``[d, 3d]``), split in
thirds of its columns as ``GPT2Attention.forward`` splits them (``split(split_size,
dim=2)``); the MLP is ``c_fc``, GELU's tanh approximation (``gelu_new``), ``c_proj``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from attntrace.kernel.ops import Matrix
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
from attntrace.real.forward import LayerAttention, Transformer, layer_norm


def gpt2_facts(config: Mapping[str, object], source: str) -> ModelFacts:
    """A ``gpt2`` config.json as :class:`ModelFacts`, with ``GPT2Config``'s defaults;
    what ``GPT2Attention`` computes that a trace would not show faithfully is one
    :class:`InputError` naming the field."""
    fields = ConfigFields(config, source)
    model_type(fields, "gpt2")
    d_model = fields.whole("n_embd", 768, ("hidden_size",))
    heads = fields.whole("n_head", 12, ("num_attention_heads",))
    head_dim = fields.heads_divide(d_model, "n_embd", heads, "n_head")
    if not fields.flag("scale_attn_weights", True):
        raise fields.refuse(
            "scale_attn_weights", False, "true", "scores not divided by √d_k are not traced"
        )
    if fields.flag("scale_attn_by_inverse_layer_idx", False):
        raise fields.refuse(
            "scale_attn_by_inverse_layer_idx",
            True,
            "false",
            "scores divided by the layer's number besides √d_k are not traced",
        )
    if fields.flag("add_cross_attention", False):
        raise fields.refuse(
            "add_cross_attention",
            True,
            "false",
            "a decoder of another model's states is not traced",
        )
    # reorder_and_upcast_attn changes only how fp16 training rounds (K scaled before the
    # product, in float32): the same numbers in float64, so it is read and accepted.
    reordered = fields.flag("reorder_and_upcast_attn", False)
    return ModelFacts(
        family="gpt2",
        layers=checked_layers(
            fields.whole("n_layer", 12, ("num_hidden_layers",)), source, "n_layer"
        ),
        heads=heads,
        kv_heads=heads,
        d_model=d_model,
        head_dim=head_dim,
        d_ff=fields.optional_whole("n_inner") or 4 * d_model,
        vocabulary=fields.whole("vocab_size", 50257),
        norm_eps=fields.positive("layer_norm_epsilon", 1e-5),
        max_positions=fields.whole("n_positions", 1024, ("max_position_embeddings",)),
        causal=True,
        norm="layer",
        activation=fields.activation("activation_function", "gelu_new"),
        positions="learned",
        rope_base=None,
        qkv_bias=True,
        o_bias=True,
        tied_embeddings=fields.flag("tie_word_embeddings", True),
        notes=("reorder_and_upcast_attn: the same numbers in float64",) if reordered else (),
    )


def gpt2_shapes(facts: ModelFacts) -> dict[str, tuple[int, ...]]:
    """Every tensor the forward pass reads, by its name without prefix, and its shape
    as ``GPT2Model`` holds it (Conv1D: ``[in, out]``)."""
    d, ff = facts.d_model, facts.d_ff
    shapes: dict[str, tuple[int, ...]] = {
        "wte.weight": (facts.vocabulary, d),
        "wpe.weight": (facts.max_positions, d),
        "ln_f.weight": (d,),
        "ln_f.bias": (d,),
    }
    for layer in range(facts.layers):
        p = f"h.{layer}."
        shapes |= {
            p + "ln_1.weight": (d,),
            p + "ln_1.bias": (d,),
            p + "attn.c_attn.weight": (d, 3 * d),
            p + "attn.c_attn.bias": (3 * d,),
            p + "attn.c_proj.weight": (d, d),
            p + "attn.c_proj.bias": (d,),
            p + "ln_2.weight": (d,),
            p + "ln_2.bias": (d,),
            p + "mlp.c_fc.weight": (d, ff),
            p + "mlp.c_fc.bias": (ff,),
            p + "mlp.c_proj.weight": (ff, d),
            p + "mlp.c_proj.bias": (d,),
        }
    return shapes


class GPT2(Transformer):
    """GPT-2's layers, run up to the one being traced, from any :class:`TensorSource`."""

    tokenizer: Vocabulary
    added_tokens = 0  # GPT-2's tokenizer adds no token of its own

    def __init__(
        self,
        facts: ModelFacts,
        tensors: TensorSource,
        tokenizer: Vocabulary,
        spec: RealModel | None = None,
    ) -> None:
        self.facts = facts
        # GPT2LMHeadModel saves transformer.h.0…, GPT2Model (OpenAI's upload) h.0…
        self.tensors = prefixed(tensors, "wte.weight", ("", "transformer."))
        check_shapes(
            self.tensors,
            gpt2_shapes(facts),
            f"config.json (n_embd {facts.d_model}, n_layer {facts.layers}, "
            f"vocab_size {facts.vocabulary}, n_positions {facts.max_positions})",
        )
        self.tokenizer = tokenizer
        self.spec = spec or facts.as_real_model(
            tensors.path.name,
            f"GPT-2 from {tensors.path}",
            tensors.path,
            max_tokens=facts.max_positions,
        )
        self._activation = FUNCTIONS[facts.activation]

    def _norm(self, name: str, hidden: Matrix) -> Matrix:
        """LayerNorm ``name`` (``h.0.ln_1``, ``ln_f``) of ``hidden``."""
        get = self.tensors.tensor
        return layer_norm(hidden, get(name + ".weight"), get(name + ".bias"), self.facts.norm_eps)

    def embed(self, ids: list[int]) -> Matrix:
        """``wte[ids] + wpe[0 … n−1]``: token and learned position, what layer 0 reads
        (before its ln_1)."""
        words = self.tensors.rows("wte.weight", ids)
        positions = self.tensors.rows("wpe.weight", list(range(len(ids))))
        embedded: Matrix = words + positions
        return embedded

    def attention_input(self, layer: int, hidden: Matrix) -> Matrix:
        """Pre-norm: attention reads ``ln_1(hidden)``."""
        return self._norm(f"h.{layer}.ln_1", hidden)

    def attention(self, layer: int) -> LayerAttention:
        """``c_attn``'s columns in thirds (Q, K, V) with its bias likewise, and
        ``c_proj``: Conv1D's ``[in, out]`` is already ``X · W``'s layout."""
        p, d = f"h.{layer}.attn.", self.facts.d_model
        fused, bias = (
            self.tensors.tensor(p + "c_attn.weight"),
            self.tensors.tensor(p + "c_attn.bias"),
        )
        WQ, WK, WV = (fused[:, i * d : (i + 1) * d] for i in range(3))
        bQ, bK, bV = (bias[i * d : (i + 1) * d] for i in range(3))
        return LayerAttention(
            WQ,
            WK,
            WV,
            self.tensors.tensor(p + "c_proj.weight"),
            {"bQ": bQ, "bK": bK, "bV": bV, "bO": self.tensors.tensor(p + "c_proj.bias")},
        )

    def layer(self, layer: int, hidden: Matrix) -> tuple[Matrix, npt.NDArray[np.float64]]:
        """``GPT2Block.forward``: attention of ln_1, added; the MLP of ln_2, added."""
        p, get = f"h.{layer}.", self.tensors.tensor
        attended, weights = self.attend(layer, self.attention_input(layer, hidden))
        hidden = hidden + attended
        inner = self._activation(
            self._norm(p + "ln_2", hidden) @ get(p + "mlp.c_fc.weight") + get(p + "mlp.c_fc.bias")
        )
        hidden = hidden + inner @ get(p + "mlp.c_proj.weight") + get(p + "mlp.c_proj.bias")
        return hidden, weights

    def final_norm(self, hidden: Matrix) -> Matrix:
        """``ln_f``: what the last layer's output becomes (``last_hidden_state``)."""
        return self._norm("ln_f", hidden)

    def labels(self, ids: list[int]) -> list[str]:
        """Tokens as the vocabulary spells them (byte-level: ``Ġ`` a leading space)."""
        return self.tokenizer.vocab_strings(ids)

    def x_formula(self, layer: int) -> str:
        if layer == 0:
            return "X = LayerNorm(token + position embeddings) · ln_1 + b, entering layer 0"
        return f"X = LayerNorm(hidden state entering layer {layer}) · ln_1 + b"
