"""Gemma 3 270M as Hugging Face's Gemma3TextModel computes it, from its GGUF file.

The reference is transformers 5.24, ``models/gemma3/modeling_gemma3.py``, loading this
very file through ``modeling_gguf_pytorch_utils.py`` (``gguf_file=``). Each layer is
pre- *and* post-normed (``Gemma3DecoderLayer.forward``)::

    h = h + post_attention_norm(attention(input_layernorm(h)))
    h = h + post_ffw_norm(mlp(pre_feedforward_norm(h)))

with RMSNorm everywhere (``Gemma3RMSNorm``: ``x / √(mean(x²) + ε) · (1 + w)``) and the
MLP ``down(gelu_tanh(gate(x)) · up(x))`` (``Gemma3MLP``, ``hidden_activation
gelu_pytorch_tanh``). Attention (``Gemma3Attention.forward``) is multi-query: 4 query
heads share 1 K/V head; each head's q and k rows are RMS-normed (``q_norm``, ``k_norm``)
*before* RoPE; the scale is ``query_pre_attn_scalar ** -0.5``; and five layers of six
are local, seeing only the last ``sliding_window`` keys.

What comes from where:

* The file says (GGUF metadata, ``gemma3.*``): 18 layers, 4 heads, 1 K/V head, key and
  value length 256, d_model 640, feed-forward 2048, ε, ``sliding_window`` 512, and the
  RoPE base 1e6 (``rope.freq_base``, which transformers' ``integrations/ggml.py`` maps to
  ``rope_theta``, the global layers' base). Each is read and checked against the
  catalogue's shape: a file that disagrees is refused.
* The reference says (``models/gemma3/configuration_gemma3.py``, ``Gemma3TextConfig``),
  since the file does not: which layers are local (``layer_types`` from
  ``sliding_window_pattern`` 6: layer i is ``sliding_attention`` unless (i + 1) % 6 == 0,
  so layers 5, 11, 17 are global), the local layers' RoPE base
  (``default_theta["local"]`` = 10,000, ``rope_local_base_freq``, set in
  ``convert_rope_params_to_dict``), ``query_pre_attn_scalar`` 256, and the embedding
  scale √d_model (``Gemma3TextModel.__init__``: ``embed_scale=hidden_size**0.5``).

Norm weights go in as the file stores them: llama.cpp's converter wrote ``1 + w``
(``Gemma3Model.modify_tensors`` in convert_hf_to_gguf.py), and transformers' GGUF loader
subtracts the 1 (``Gemma2TensorProcessor.process``) which ``Gemma3RMSNorm`` adds back.
Unlike LLaMA's, Gemma's Q and K rows are *not* permuted by the converter (llama.cpp runs
Gemma with NEOX RoPE, which pairs i with i + d/2 as ``rotate_half`` does, and
transformers' GGUF loader unpermutes nothing for gemma3), so they are used as stored.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError
from attntrace.kernel.ops import Matrix, rms_norm
from attntrace.kernel.variants import Variants
from attntrace.real.catalog import GEMMA3, RealModel
from attntrace.real.forward import LayerAttention, Transformer, gelu_tanh
from attntrace.real.tokenizers.sentencepiece import SentencePieceTokenizer, open_gguf
from attntrace.real.weights.gguf import GGUFFile

# Gemma3TextConfig (configuration_gemma3.py): what the GGUF file does not carry.
SLIDING_WINDOW_PATTERN = 6  # __post_init__: kwargs.get("sliding_window_pattern", 6)
LOCAL_ROPE_BASE = 10_000.0  # default_theta["local"], the rope_local_base_freq default
QUERY_PRE_ATTN_SCALAR = 256  # query_pre_attn_scalar: the scale is its −½ power

# The metadata keys read, and the catalogue field each must equal.
_SHAPE_KEYS = {
    "block_count": "layers",
    "attention.head_count": "heads",
    "attention.head_count_kv": "kv_heads",
    "embedding_length": "d_model",
    "attention.key_length": "head_dim",
    "attention.value_length": "head_dim",
}
FEED_FORWARD = 2048  # gemma3.feed_forward_length of the 270M model (not a catalogue field)


def is_global(layer: int) -> bool:
    """Whether layer ``layer`` attends to every earlier token (``full_attention``), as
    ``Gemma3TextConfig.__post_init__`` builds ``layer_types``: every sixth layer."""
    return (layer + 1) % SLIDING_WINDOW_PATTERN == 0


class Gemma3(Transformer):
    """The decoder's layers, run up to the one being traced."""

    spec: RealModel = GEMMA3
    tokenizer: SentencePieceTokenizer
    added_tokens = 1  # <bos>, before every sentence (tokenizer.ggml.add_bos_token)

    def __init__(self, gguf: GGUFFile, tokenizer: SentencePieceTokenizer | None = None) -> None:
        """Read ``gguf``'s facts and check them; ``tokenizer``, where given, is the file's
        own from the tokenizer cache (its arrays were stepped over when it was opened)."""
        self.gguf = gguf
        meta = gguf.metadata
        source = str(gguf.path)
        self._check_shape(meta, source)
        self.eps = self._number(meta, "attention.layer_norm_rms_epsilon", source)
        self.global_rope_base = self._number(meta, "rope.freq_base", source)
        window = self._number(meta, "attention.sliding_window", source)
        if not window.is_integer():
            raise InputError(
                source=source,
                field="gemma3.attention.sliding_window",
                expected="a whole number of tokens",
                found=f"{window:g}",
            )
        self.window = int(window)
        tokens = meta.get("tokenizer.ggml.tokens")  # stepped over where cached
        count = (
            tokenizer.vocab_size if tokenizer else len(tokens) if isinstance(tokens, list) else None
        )
        if count != self.spec.vocabulary:
            raise InputError(
                f"not the {self.spec.name} attntrace knows",
                source=source,
                field="tokenizer.ggml.tokens",
                expected=f"{self.spec.vocabulary} tokens",
                found="none" if count is None else f"{count}",
            )
        self.tokenizer = tokenizer or SentencePieceTokenizer.from_metadata(meta, source)
        self.rope_base = self.global_rope_base
        # Gemma3Attention.scaling is query_pre_attn_scalar ** -0.5; attntrace's core
        # divides by √d_k. For the 270M model both are 1/16: refuse a file where not.
        head_dim = self.spec.head_dim
        if not math.isclose(QUERY_PRE_ATTN_SCALAR**-0.5, 1 / math.sqrt(head_dim)):
            raise InputError(
                "query_pre_attn_scalar differs from the head dimension: attntrace scales "
                "scores by 1/√d_k",
                source=source,
                field="gemma3.attention.key_length",
                expected=str(QUERY_PRE_ATTN_SCALAR),
                found=str(head_dim),
            )

    @classmethod
    def load(cls, weights: Path, *, verified_sha256: str | None = None) -> Gemma3:
        """Open ``weights``; given the SHA-256 it was verified to have, the tokenizer comes
        from the tokenizer cache and the GGUF's 262,144-entry arrays are stepped over
        (:func:`attntrace.real.tokenizers.sentencepiece.open_gguf`)."""
        gguf, tokenizer = open_gguf(weights, verified_sha256)
        return cls(gguf, tokenizer)

    def _check_shape(self, meta: dict[str, object], source: str) -> None:
        """Every shape the file states equals the catalogue's: one InputError if not."""
        architecture = meta.get("general.architecture")
        if architecture != "gemma3":
            raise InputError(
                source=source,
                field="general.architecture",
                expected="gemma3",
                found=repr(architecture),
            )
        shapes = {key: getattr(self.spec, name) for key, name in _SHAPE_KEYS.items()}
        for key, expected in {**shapes, "feed_forward_length": FEED_FORWARD}.items():
            found = meta.get(f"gemma3.{key}")
            if found != expected or isinstance(found, bool):
                raise InputError(
                    f"not the {self.spec.name} attntrace knows",
                    source=source,
                    field=f"gemma3.{key}",
                    expected=str(expected),
                    found=repr(found),
                )

    @staticmethod
    def _number(meta: dict[str, object], key: str, source: str) -> float:
        """The positive finite number at ``gemma3.<key>``."""
        value = meta.get(f"gemma3.{key}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(
                source=source, field=f"gemma3.{key}", expected="a number", found=repr(value)
            )
        if not (math.isfinite(value) and value > 0):
            raise InputError(
                source=source,
                field=f"gemma3.{key}",
                expected="a positive finite number",
                found=repr(value),
            )
        return float(value)

    def window_of(self, layer: int) -> int | None:
        """The sliding window of layer ``layer``: the file's on local layers, None on
        global ones."""
        return None if is_global(layer) else self.window

    def layer_rope_base(self, layer: int) -> float:
        """The RoPE base of layer ``layer``: the file's on global layers, the reference's
        10,000 on local ones (``Gemma3RotaryEmbedding``, one set of angles per kind)."""
        return self.global_rope_base if is_global(layer) else LOCAL_ROPE_BASE

    def layer_kind(self, layer: int) -> str:
        """How a header names layer ``layer``: ``local (sliding window 512)`` or ``global``."""
        window = self.window_of(layer)
        return "global" if window is None else f"local (sliding window {window})"

    def layer_variants(self, layer: int) -> Variants:
        """QK-norm with the layer's weights and the file's ε, and on a local layer the
        window: what :meth:`attend` computes, for the stage-by-stage trace."""
        q_norm, k_norm = self.qk_norms(layer)
        return Variants(
            window=self.window_of(layer),
            qk_norm=True,
            q_norm=q_norm,
            k_norm=k_norm,
            qk_norm_eps=self.eps,
        )

    def _get(self, name: str) -> npt.NDArray[np.float64]:
        """A tensor dequantized to float64; not kept (each is read once per pass)."""
        return np.asarray(self.gguf.tensor(name), dtype=np.float64)

    def qk_norms(self, layer: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Layer ``layer``'s q_norm and k_norm weights (``1 + w``, d_k numbers each)."""
        p = f"blk.{layer}.attn_"
        return self._get(p + "q_norm.weight"), self._get(p + "k_norm.weight")

    def attention(self, layer: int) -> LayerAttention:
        """Layer ``layer``'s projections as ``X · W`` matrices, rows as stored."""
        p = f"blk.{layer}.attn_"
        return LayerAttention(
            WQ=self._get(p + "q.weight").T,
            WK=self._get(p + "k.weight").T,
            WV=self._get(p + "v.weight").T,
            WO=self._get(p + "output.weight").T,
        )

    def embed(self, ids: list[int]) -> Matrix:
        """The ids' rows of the embedding table, times √d_model.

        ``Gemma3TextScaledWordEmbedding`` multiplies by ``embed_scale`` cast to the
        weight's dtype (float32 when the reference runs in float32: 25.2982216, not
        √640 = 25.29822128…). Here the scale is √d_model in float64, the formula's value:
        the two differ by 1.2e-8 relatively, a thousand times under the goldens' 1e-5,
        and each layer's RMSNorm divides a common scale out of what attention reads.
        Only the rows asked for are dequantized (the table is 262,144 × 640).
        """
        rows = np.asarray(self.gguf.rows("token_embd.weight", ids), dtype=np.float64)
        scaled: Matrix = rows * math.sqrt(self.spec.d_model)
        return scaled

    def attention_input(self, layer: int, hidden: Matrix) -> Matrix:
        """What layer ``layer``'s attention reads: RMSNorm(hidden) · attn_norm."""
        return rms_norm(hidden, self._get(f"blk.{layer}.attn_norm.weight"), self.eps)

    def layer(self, layer: int, hidden: Matrix) -> tuple[Matrix, npt.NDArray[np.float64]]:
        """``Gemma3DecoderLayer.forward``: each sublayer's output is normed before it is
        added back (post_attention_norm, post_ffw_norm)."""
        p = f"blk.{layer}."
        attended, weights = self.attend(layer, self.attention_input(layer, hidden))
        hidden = hidden + rms_norm(attended, self._get(p + "post_attention_norm.weight"), self.eps)
        x = rms_norm(hidden, self._get(p + "ffn_norm.weight"), self.eps)
        gated = gelu_tanh(x @ self._get(p + "ffn_gate.weight").T) * (
            x @ self._get(p + "ffn_up.weight").T
        )
        out = gated @ self._get(p + "ffn_down.weight").T
        return hidden + rms_norm(out, self._get(p + "post_ffw_norm.weight"), self.eps), weights

    def labels(self, ids: list[int]) -> list[str]:
        """Tokens as the vocabulary spells them (▁ marking a leading space)."""
        return self.tokenizer.vocab_strings(ids)

    def x_formula(self, layer: int) -> str:
        return f"X = RMSNorm(hidden state entering layer {layer}) · attn_norm"
