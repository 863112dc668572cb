"""SmolLM2-135M-Instruct as Hugging Face's LlamaModel computes it, from its GGUF file.

LLaMA is pre-norm: each layer's attention reads RMSNorm(hidden) · attn_norm, then adds
its output back to the hidden state (the residual); the MLP likewise with a SiLU gate.
There are no biases; positions enter as RoPE on Q and K inside attention, and the mask
is causal. 9 query heads share 3 K/V heads (grouped-query attention).

One detail of the file format: llama.cpp's converter reorders the rows of each head's
Q and K weights so that its own RoPE can turn adjacent pairs (2i, 2i+1). Hugging Face
turns the pairs (i, i + d/2) instead. ``unpermute`` (the GGUF reader's, shared with every
model on disk) puts the rows back, so the Q and K shown here are Hugging Face's, column
for column (the scores are the same either way).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from attntrace.kernel.ops import Matrix, rms_norm
from attntrace.real.catalog import SMOLLM2, RealModel
from attntrace.real.families.gguf_tensors import unpermute
from attntrace.real.forward import LayerAttention, Transformer, silu
from attntrace.real.tokenizers.bpe import ByteLevelBPE
from attntrace.real.tokenizers.tokenizer_cache import open_gguf
from attntrace.real.weights.gguf import GGUFFile

TOKENIZER_KIND = "byte-level-bpe"
# The metadata a cached tokenizer replaces: stepped over when the GGUF is opened.
TOKENIZER_ARRAYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type")


class Llama(Transformer):
    """The decoder's layers, run up to the one being traced."""

    spec: RealModel = SMOLLM2
    tokenizer: ByteLevelBPE

    def __init__(self, gguf: GGUFFile, tokenizer: ByteLevelBPE | None = None) -> None:
        self.gguf = gguf
        meta = gguf.metadata
        self.eps = float(meta["llama.attention.layer_norm_rms_epsilon"])  # type: ignore[arg-type]
        self.rope_base = float(meta["llama.rope.freq_base"])  # type: ignore[arg-type]
        self.tokenizer = tokenizer or ByteLevelBPE.from_lists(
            meta["tokenizer.ggml.tokens"],  # type: ignore[arg-type]
            meta["tokenizer.ggml.merges"],  # type: ignore[arg-type]
            meta.get("tokenizer.ggml.token_type"),  # type: ignore[arg-type]
            source=str(gguf.path),
        )

    @classmethod
    def load(cls, weights: Path, *, verified_sha256: str | None = None) -> Llama:
        """Open ``weights``. Given the SHA-256 the file was verified to have, the tokenizer
        comes from attntrace's tokenizer cache (:mod:`attntrace.real.tokenizers.tokenizer_cache`),
        written on the first run, and the GGUF's tokenizer arrays are stepped over."""
        if verified_sha256 is None:
            return cls(GGUFFile(weights))
        gguf, tokenizer = open_gguf(
            weights,
            verified_sha256,
            TOKENIZER_KIND,
            TOKENIZER_ARRAYS,
            ByteLevelBPE.from_tables,
            lambda gguf: cls(gguf).tokenizer,
        )
        return cls(gguf, tokenizer)

    def _get(self, name: str) -> npt.NDArray[np.float64]:
        """A tensor dequantized to float64. Not kept: a forward pass reads each tensor once,
        and all 30 layers would hold about 1 GB."""
        return np.asarray(self.gguf.tensor(name), dtype=np.float64)

    def attention(self, layer: int) -> LayerAttention:
        """Layer ``layer``'s projections as ``X · W`` matrices (Hugging Face's row order)."""
        p = f"blk.{layer}.attn_"
        spec = self.spec
        return LayerAttention(
            WQ=unpermute(self._get(p + "q.weight"), spec.heads).T,
            WK=unpermute(self._get(p + "k.weight"), spec.kv_heads).T,
            WV=self._get(p + "v.weight").T,
            WO=self._get(p + "output.weight").T,
        )

    def embed(self, ids: list[int]) -> Matrix:
        return np.asarray(self.gguf.rows("token_embd.weight", ids), dtype=np.float64)

    def attention_input(self, layer: int, hidden: Matrix) -> Matrix:
        """What layer ``layer``'s attention reads: RMSNorm(hidden) · attn_norm."""
        return rms_norm(hidden, self._get(f"blk.{layer}.attn_norm.weight"), self.eps)

    def layer(self, layer: int, hidden: Matrix) -> tuple[Matrix, npt.NDArray[np.float64]]:
        """Pre-norm: attention of the normed state is added back, then the MLP's."""
        attended, weights = self.attend(layer, self.attention_input(layer, hidden))
        hidden = hidden + attended
        return hidden + self.mlp(layer, hidden), weights

    def mlp(self, layer: int, hidden: Matrix) -> Matrix:
        p = f"blk.{layer}.ffn_"
        x = rms_norm(hidden, self._get(p + "norm.weight"), self.eps)
        gated = silu(x @ self._get(p + "gate.weight").T) * (x @ self._get(p + "up.weight").T)
        out: Matrix = gated @ self._get(p + "down.weight").T
        return out

    def labels(self, ids: list[int]) -> list[str]:
        """Tokens as the vocabulary spells them, Ġ marking a leading space (``Ġanimal``),
        as Hugging Face shows them: a word and the same word after a space differ."""
        return self.tokenizer.vocab_strings(ids)

    def x_formula(self, layer: int) -> str:
        return f"X = RMSNorm(hidden state entering layer {layer}) · attn_norm"
