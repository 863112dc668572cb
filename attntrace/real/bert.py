"""all-MiniLM-L6-v2 as Hugging Face's BertModel computes it, from its safetensors file.

BERT is post-norm: each layer's attention reads the hidden state as it is, and the
LayerNorms come after each residual sum. The embeddings are word + position + token
type (all 0 for one sentence), layer-normed. Weights are float32 in the file and
float64 here, which is what attntrace computes in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import numpy.typing as npt

from attntrace.kernel.ops import Matrix
from attntrace.real.catalog import MINILM, RealModel
from attntrace.real.forward import LayerAttention, Transformer, gelu, layer_norm
from attntrace.real.tokenizers.wordpiece import WordPiece
from attntrace.real.weights.safetensors import SafetensorsFile, read_safetensors

EPS = 1e-12  # config.json: layer_norm_eps


class Bert(Transformer):
    """The encoder's layers, run up to the one being traced."""

    spec: RealModel = MINILM
    tokenizer: WordPiece
    added_tokens = 2  # [CLS] first, [SEP] last

    def __init__(self, tensors: Mapping[str, npt.NDArray[np.generic]], tokenizer: WordPiece):
        self.tensors = tensors
        self.tokenizer = tokenizer

    @classmethod
    def load(cls, weights: Path) -> Bert:
        """The model from its safetensors file, with vocab.txt beside it."""
        return cls(
            read_safetensors(weights), WordPiece.from_vocab_file(weights.parent / "vocab.txt")
        )

    def _get(self, name: str, rows: Iterable[int] | None = None) -> npt.NDArray[np.float64]:
        """Tensor ``name`` (or just its ``rows``, of an embedding table) in float64."""
        if rows is None:
            return np.asarray(self.tensors[name], dtype=np.float64)
        if isinstance(self.tensors, SafetensorsFile):  # a few rows read, not the table
            return np.asarray(self.tensors.rows(name, rows), dtype=np.float64)
        return np.asarray(self.tensors[name][list(rows)], dtype=np.float64)

    def attention(self, layer: int) -> LayerAttention:
        """Layer ``layer``'s Q, K, V and output projections, with their biases."""
        prefix = f"encoder.layer.{layer}.attention."
        names = {"Q": "self.query", "K": "self.key", "V": "self.value", "O": "output.dense"}
        matrices = {key: self._get(f"{prefix}{name}.weight").T for key, name in names.items()}
        biases = {f"b{key}": self._get(f"{prefix}{name}.bias") for key, name in names.items()}
        return LayerAttention(matrices["Q"], matrices["K"], matrices["V"], matrices["O"], biases)

    def embed(self, ids: list[int]) -> Matrix:
        """Word + position + token-type embeddings, layer-normed: what layer 0 reads."""
        words = self._get("embeddings.word_embeddings.weight", ids)
        positions = self._get("embeddings.position_embeddings.weight", range(len(ids)))
        token_type = self._get("embeddings.token_type_embeddings.weight", [0])[0]
        return layer_norm(
            words + positions + token_type,
            self._get("embeddings.LayerNorm.weight"),
            self._get("embeddings.LayerNorm.bias"),
            EPS,
        )

    def attention_input(self, layer: int, hidden: Matrix) -> Matrix:
        """BERT is post-norm: attention reads the hidden state as it is."""
        return hidden

    def layer(self, layer: int, hidden: Matrix) -> tuple[Matrix, npt.NDArray[np.float64]]:
        p = f"encoder.layer.{layer}."
        attended, weights = self.attend(layer, hidden)
        hidden = layer_norm(
            attended + hidden,
            self._get(p + "attention.output.LayerNorm.weight"),
            self._get(p + "attention.output.LayerNorm.bias"),
            EPS,
        )
        inner = gelu(
            hidden @ self._get(p + "intermediate.dense.weight").T
            + self._get(p + "intermediate.dense.bias")
        )
        out = inner @ self._get(p + "output.dense.weight").T + self._get(p + "output.dense.bias")
        hidden = layer_norm(
            out + hidden,
            self._get(p + "output.LayerNorm.weight"),
            self._get(p + "output.LayerNorm.bias"),
            EPS,
        )
        return hidden, weights

    def labels(self, ids: list[int]) -> list[str]:
        """Tokens as the vocabulary spells them: ``[CLS]``, ``the``, ``##ing``."""
        return self.tokenizer.tokens(ids)

    def x_formula(self, layer: int) -> str:
        if layer == 0:
            return "X = LayerNorm(word + position + type embeddings), entering layer 0"
        return f"X = hidden state entering layer {layer} (the output of layer {layer - 1})"
