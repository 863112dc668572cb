"""The eight decoder families as one forward pass, driven by :class:`ModelFacts`.

Llama, Mistral, Qwen 2 and 3, Gemma 1, 2 and 3 and Phi-3 are one network with switches.
Each is read from transformers 5.25's ``models/<family>/modeling_<family>.py``:

* **The layer** (``LlamaDecoderLayer.forward`` and its copies): pre-norm,
  ``h += attn(norm(h)); h += mlp(norm(h))`` with ``input_layernorm`` and
  ``post_attention_layernorm``. Gemma 2 and 3 (``Gemma2DecoderLayer``,
  ``Gemma3DecoderLayer``) norm each sublayer's output too:
  ``h += post_attention_layernorm(attn(input_layernorm(h)))`` and
  ``h += post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h)))``.
* **Norms**: RMSNorm, ``x / √(mean(x²) + ε) · w`` (``LlamaRMSNorm``); Gemma's multiplies
  by ``1 + w`` (``GemmaRMSNorm``, and Gemma 2's and 3's).
* **The MLP**: ``down(act(gate(x)) · up(x))``, act SiLU or Gemma's ``gelu_pytorch_tanh``;
  Phi-3 fuses gate and up into ``gate_up_proj`` (``Phi3MLP``: ``gate, up = chunk(2)``).
* **Embeddings**: Gemma's are times √d_model (``GemmaTextScaledWordEmbedding``).
* **Attention** (``eager_attention_forward``): Q, K, V projections, with biases where
  the config says (Qwen 2: q, k, v only, ``Qwen2Attention``); Phi-3 fuses them
  (``Phi3Attention``: ``qkv_proj`` rows q, then k, then v). Qwen 3 and Gemma 3 RMS-norm
  each head's q and k rows before RoPE (``q_norm``, ``k_norm``: d_k weights). RoPE pairs
  i with i + d/2 (``rotate_half``); grouped-query heads share K/V (``repeat_kv``). Gemma 2
  caps the scaled scores, ``C · tanh(s / C)`` (``attn_logit_softcapping``), before the
  mask; sliding layers hide keys more than ``sliding_window − 1`` back
  (``masking_utils.sliding_window_overlay``: ``kv_idx > q_idx − sliding_window``).
* **The scale**: ``head_dim ** −0.5``, but Gemma 2 and 3 use ``query_pre_attn_scalar **
  −0.5``. attntrace's attention divides by √d_k, so where the two differ the factor
  ``√(d_k / query_pre_attn_scalar)`` is folded into the queries: into WQ (and bQ), or,
  under QK-norm (which would undo it), into the q_norm weight. The scores, and every
  stage after them, are the reference's; Q shown in a trace carries the factor.

Everything goes through :func:`attntrace.real.forward.attend` and the kernel's attention,
with the :class:`Variants` (window, QK-norm, softcap) the trace shows. Gemma 2's final
logit softcap acts on the vocabulary logits only, which attntrace does not compute.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError
from attntrace.kernel.ops import Matrix, rms_norm
from attntrace.kernel.variants import Variants
from attntrace.real.catalog import RealModel
from attntrace.real.families.facts import ModelFacts
from attntrace.real.families.tensors import TensorSource
from attntrace.real.forward import LayerAttention, Transformer, gelu_tanh, silu

Vector = npt.NDArray[np.float64]

DECODERS = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3")
EMBEDDING = "model.embed_tokens.weight"
FINAL_NORM = "model.norm.weight"


class FolderTokenizer(Protocol):
    """What the decoder asks of a tokenizer: ids for a sentence, and each id's spelling."""

    def encode(self, text: str) -> list[int]: ...

    def vocab_strings(self, ids: list[int]) -> list[str]: ...


class NoTokenizer:
    """A model opened without a tokenizer: token ids only, labelled by their numbers."""

    def __init__(self, where: str) -> None:
        self.where = where

    def encode(self, text: str) -> list[int]:
        raise InputError(
            "this model was opened without a tokenizer",
            source=self.where,
            field="tokenizer.json",
            expected="a tokenizer to read a sentence (or token ids)",
            found="none",
        )

    def vocab_strings(self, ids: list[int]) -> list[str]:
        return [str(i) for i in ids]


def layer_names(facts: ModelFacts, layer: int) -> dict[str, tuple[int, ...]]:
    """Layer ``layer``'s tensors, by name, with the shape its facts give each."""
    p, d, hd = f"model.layers.{layer}.", facts.d_model, facts.head_dim
    q, kv, ff = facts.heads * hd, facts.kv_heads * hd, facts.d_ff
    a, m = p + "self_attn.", p + "mlp."
    # post_attention_layernorm: the MLP's pre-norm, or under post-norms attention's post-norm
    names: dict[str, tuple[int, ...]] = {
        p + "input_layernorm.weight": (d,),
        p + "post_attention_layernorm.weight": (d,),
    }
    if facts.post_norms:
        names[p + "pre_feedforward_layernorm.weight"] = (d,)
        names[p + "post_feedforward_layernorm.weight"] = (d,)
    if facts.family == "phi3":
        names[a + "qkv_proj.weight"] = (q + 2 * kv, d)
        names[m + "gate_up_proj.weight"] = (2 * ff, d)
    else:
        names.update({a + "q_proj.weight": (q, d), a + "k_proj.weight": (kv, d)})
        names[a + "v_proj.weight"] = (kv, d)
        names.update({m + "gate_proj.weight": (ff, d), m + "up_proj.weight": (ff, d)})
    names.update({a + "o_proj.weight": (d, q), m + "down_proj.weight": (d, ff)})
    if facts.qkv_bias:
        names.update({a + "q_proj.bias": (q,), a + "k_proj.bias": (kv,), a + "v_proj.bias": (kv,)})
    if facts.o_bias:
        names[a + "o_proj.bias"] = (d,)
    if facts.mlp_bias:
        names.update({m + "gate_proj.bias": (ff,), m + "up_proj.bias": (ff,)})
        names[m + "down_proj.bias"] = (d,)
    if facts.qk_norm:
        names.update({a + "q_norm.weight": (hd,), a + "k_norm.weight": (hd,)})
    return names


def check_tensors(facts: ModelFacts, source: TensorSource, config: str) -> None:
    """Every tensor the pass will read is there with the shape ``config`` (the file the
    facts came from) implies: one InputError naming the tensor, before any is read."""
    expected = {EMBEDDING: (facts.vocabulary, facts.d_model), FINAL_NORM: (facts.d_model,)}
    for layer in range(facts.layers):
        expected.update(layer_names(facts, layer))
    file_of = getattr(source, "file_of", None)
    for name, shape in expected.items():
        where = str(file_of(name)) if file_of else str(source.path)
        if not source.has(name):
            raise InputError(
                f"{config} describes a tensor the weights do not have",
                source=where,
                field=name,
                expected="the tensor",
                found="none",
            )
        found = source.shape(name)
        if found != shape:
            raise InputError(
                f"the weights disagree with {config} ({_shape_words(facts)})",
                source=where,
                field=name,
                expected=" × ".join(map(str, shape)),
                found=" × ".join(map(str, found)),
            )


def _shape_words(facts: ModelFacts) -> str:
    return (
        f"{facts.heads} heads, {facts.kv_heads} K/V heads of {facts.head_dim}, "
        f"d_model {facts.d_model}, feed-forward {facts.d_ff}"
    )


def rope_frequencies(facts: ModelFacts, layer: int) -> Vector:
    """The frequency of each turned pair of layer ``layer``: ``base^(−2i/r)`` over the
    rotary width r (``compute_default_rope_parameters``), then scaled as
    ``_compute_llama3_parameters`` (wavelengths past ``original_max / low_freq_factor``
    slowed by ``factor``, those under ``original_max / high_freq_factor`` kept, the band
    between blended) or ``_compute_linear_scaling_rope_parameters`` (all divided by
    ``factor``). Gemma 3's sliding layers have their own base and no scaling."""
    local = facts.layer_type(layer) == "sliding" and facts.rope_local_base is not None
    base = facts.rope_local_base if local else facts.rope_base
    assert base is not None
    width = facts.rotary_dim or facts.head_dim
    inverse: Vector = 1.0 / (base ** (np.arange(0, width, 2, dtype=np.float64) / width))
    if facts.rope_factors is not None and not local:
        # a GGUF file's rope_freqs.weight: the angle of pair i divided by its factor, as
        # llama.cpp turns it (the converter wrote Llama 3's scaling so, in float32)
        divided: Vector = inverse / np.asarray(facts.rope_factors, dtype=np.float64)
        return divided
    scaling = None if local else facts.rope_scaling
    if scaling is None:
        return inverse
    if scaling.kind == "linear":
        linear: Vector = inverse / scaling.factor
        return linear
    span = scaling.original_max_positions
    low, high = span / scaling.low_freq_factor, span / scaling.high_freq_factor
    wavelength = 2 * math.pi / inverse
    slowed = np.where(wavelength > low, inverse / scaling.factor, inverse)
    smooth = (span / wavelength - scaling.low_freq_factor) / (
        scaling.high_freq_factor - scaling.low_freq_factor
    )
    blended = (1 - smooth) * slowed / scaling.factor + smooth * slowed
    medium = ~(wavelength < high) & ~(wavelength > low)
    scaled: Vector = np.where(medium, blended, slowed)
    return scaled


class Decoder(Transformer):
    """Any of the eight decoder families: its facts, its tensors, its tokenizer."""

    tokenizer: FolderTokenizer

    def __init__(
        self,
        facts: ModelFacts,
        source: TensorSource,
        spec: RealModel,
        tokenizer: FolderTokenizer | None = None,
    ) -> None:
        if facts.family not in DECODERS:
            raise InputError(field="family", expected=" or ".join(DECODERS), found=facts.family)
        self.facts, self.source, self.spec = facts, source, spec
        self.tokenizer = tokenizer or NoTokenizer(str(source.path))
        self.added_tokens = int(getattr(tokenizer, "added_tokens", 0))
        self.rope_base = facts.rope_base
        # the query scale's correction (query_pre_attn_scalar); 1 where there is none
        scalar = facts.query_pre_attn_scalar
        self.query_factor = 1.0 if scalar is None else math.sqrt(facts.head_dim / scalar)

    def _get(self, name: str) -> Vector:
        return self.source.tensor(name)

    def largest_weight(self) -> int:
        """The MLP's matrices (Phi-3's gate and up are one), or the attention's."""
        facts = self.facts
        mlp = facts.d_ff * facts.d_model * (2 if facts.family == "phi3" else 1)
        attention = facts.d_model * max(facts.heads, 3 * facts.kv_heads) * facts.head_dim
        return max(mlp, attention)

    def _norm(self, x: Matrix, name: str) -> Matrix:
        """RMSNorm by weight ``name`` (Gemma's ``1 + w``)."""
        return rms_norm(x, self.facts.norm_offset + self._get(name), self.facts.norm_eps)

    def layer_rope_base(self, layer: int) -> float | None:
        local = self.facts.layer_type(layer) == "sliding" and self.facts.rope_local_base
        return self.facts.rope_local_base if local else self.facts.rope_base

    def layer_rope_frequencies(self, layer: int) -> Vector | None:
        """The frequencies where a base alone does not say them (scaled, partial)."""
        local = self.facts.layer_type(layer) == "sliding" and self.facts.rope_local_base
        scaled = self.facts.rope_scaling is not None or self.facts.rope_factors is not None
        if self.facts.rotary_dim is None and (local or not scaled):
            return None
        return rope_frequencies(self.facts, layer)

    def window_of(self, layer: int) -> int | None:
        return self.facts.sliding_window if self.facts.layer_type(layer) == "sliding" else None

    def layer_kind(self, layer: int) -> str | None:
        """``local (sliding window N)`` or ``global`` where the layers differ."""
        if not self.facts.layer_types:
            return None
        window = self.window_of(layer)
        return "global" if window is None else f"local (sliding window {window})"

    def layer_variants(self, layer: int) -> Variants:
        """The window on sliding layers, QK-norm with the layer's weights (times the query
        factor), Gemma 2's attention softcap."""
        facts, a = self.facts, f"model.layers.{layer}.self_attn."
        window, softcap = self.window_of(layer), facts.attn_softcap
        if not facts.qk_norm:
            return Variants(window=window, softcap=softcap)
        return Variants(
            window=window,
            softcap=softcap,
            qk_norm=True,
            q_norm=(facts.norm_offset + self._get(a + "q_norm.weight")) * self.query_factor,
            k_norm=facts.norm_offset + self._get(a + "k_norm.weight"),
            qk_norm_eps=facts.norm_eps,
        )

    def attention(self, layer: int) -> LayerAttention:
        """Layer ``layer``'s projections as ``X · W`` (the transposes of ``nn.Linear``),
        Phi-3's fused rows split, the query factor folded into WQ without QK-norm."""
        facts, a = self.facts, f"model.layers.{layer}.self_attn."
        if facts.family == "phi3":
            fused = self._get(a + "qkv_proj.weight")
            q, kv = facts.heads * facts.head_dim, facts.kv_heads * facts.head_dim
            wq, wk, wv = fused[:q], fused[q : q + kv], fused[q + kv :]
        else:
            wq, wk, wv = (self._get(a + f"{x}_proj.weight") for x in "qkv")
        factor = 1.0 if facts.qk_norm else self.query_factor
        biases: dict[str, Vector] = {}
        if facts.qkv_bias:
            biases = {f"b{x.upper()}": self._get(a + f"{x}_proj.bias") for x in "qkv"}
            biases["bQ"] = biases["bQ"] * factor
        if facts.o_bias:
            biases["bO"] = self._get(a + "o_proj.bias")
        return LayerAttention(
            WQ=wq.T * factor, WK=wk.T, WV=wv.T, WO=self._get(a + "o_proj.weight").T, biases=biases
        )

    def embed(self, ids: list[int]) -> Matrix:
        """The ids' rows of the embedding table (only they are read), times Gemma's √d."""
        rows = self.source.rows(EMBEDDING, ids)
        return rows * self.facts.embed_scale if self.facts.embed_scale != 1.0 else rows

    def attention_input(self, layer: int, hidden: Matrix) -> Matrix:
        """RMSNorm(hidden) · input_layernorm: X of layer ``layer``."""
        return self._norm(hidden, f"model.layers.{layer}.input_layernorm.weight")

    def layer(self, layer: int, hidden: Matrix) -> tuple[Matrix, npt.NDArray[np.float64]]:
        """The decoder layer whole: attention and MLP, each added back (normed first
        under Gemma 2's and 3's post-norms)."""
        p = f"model.layers.{layer}."
        attended, weights = self.attend(layer, self.attention_input(layer, hidden))
        if not self.facts.post_norms:
            hidden = hidden + attended
            x = self._norm(hidden, p + "post_attention_layernorm.weight")
            return hidden + self.mlp(layer, x), weights
        hidden = hidden + self._norm(attended, p + "post_attention_layernorm.weight")
        x = self._norm(hidden, p + "pre_feedforward_layernorm.weight")
        out = self._norm(self.mlp(layer, x), p + "post_feedforward_layernorm.weight")
        return hidden + out, weights

    def mlp(self, layer: int, x: Matrix) -> Matrix:
        """``down(act(gate(x)) · up(x))`` (Phi-3: gate and up from one fused matrix)."""
        m = f"model.layers.{layer}.mlp."
        if self.facts.family == "phi3":
            gate, up = np.split(x @ self._get(m + "gate_up_proj.weight").T, 2, axis=-1)
        else:
            gate, up = (
                x @ self._get(m + "gate_proj.weight").T,
                x @ self._get(m + "up_proj.weight").T,
            )
            if self.facts.mlp_bias:
                gate, up = (
                    gate + self._get(m + "gate_proj.bias"),
                    up + self._get(m + "up_proj.bias"),
                )
        act = gelu_tanh if self.facts.activation == "gelu_tanh" else silu
        out: Matrix = (act(gate) * up) @ self._get(m + "down_proj.weight").T
        return out + self._get(m + "down_proj.bias") if self.facts.mlp_bias else out

    def final_norm(self, hidden: Matrix) -> Matrix:
        """The last hidden state as the model hands it to its head: ``model.norm``."""
        return self._norm(hidden, FINAL_NORM)

    def labels(self, ids: list[int]) -> list[str]:
        """Tokens as the tokenizer spells them; their ids without one."""
        return self.tokenizer.vocab_strings(ids)

    def x_formula(self, layer: int) -> str:
        weight = "(1 + input_layernorm)" if self.facts.norm_offset else "input_layernorm"
        return f"X = RMSNorm(hidden state entering layer {layer}) · {weight}"
