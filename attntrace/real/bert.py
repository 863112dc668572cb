"""BERT as Hugging Face's BertModel computes it: the catalogued all-MiniLM-L6-v2 from
its safetensors file, and any BERT on disk (:mod:`attntrace.real.families.encoder`),
through one forward pass.

BERT is post-norm: each layer's attention reads the hidden state as it is, and the
LayerNorms come after each residual sum. The embeddings are word + position + token
type (all 0 for one sentence), layer-normed. Weights are float32 in the file and
float64 here, which is what attntrace computes in. The references are transformers'
``models/bert/modeling_bert.py`` (``BertEmbeddings``, ``BertSelfAttention``,
``BertSelfOutput``, ``BertIntermediate``, ``BertOutput``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError
from attntrace.kernel.ops import Matrix
from attntrace.real.catalog import MINILM, RealModel
from attntrace.real.families.classic import Prefixed, Vocabulary
from attntrace.real.families.tensors import Tensor, TensorSource
from attntrace.real.forward import LayerAttention, Transformer, gelu, layer_norm
from attntrace.real.tokenizers.wordpiece import WordPiece
from attntrace.real.weights.safetensors import SafetensorsFile, read_safetensors

EPS = 1e-12  # MiniLM's config.json: layer_norm_eps


class SafetensorsTensors:
    """One safetensors file as a :class:`TensorSource`: each tensor read when asked
    (an embedding table by its rows), widened to float64."""

    def __init__(self, file: SafetensorsFile, path: Path) -> None:
        self.file = file
        self._path = path

    @property
    def path(self) -> Path:
        return self._path

    def has(self, name: str) -> bool:
        return name in self.file

    def _known(self, name: str) -> None:
        if name not in self.file:
            raise InputError(
                "a tensor is missing", source=str(self._path), field=name, found="none"
            )

    def shape(self, name: str) -> tuple[int, ...]:
        self._known(name)
        return tuple(self.file.shape(name))

    def tensor(self, name: str) -> Tensor:
        self._known(name)
        return np.asarray(self.file[name], dtype=np.float64)

    def rows(self, name: str, ids: Sequence[int]) -> Tensor:
        self._known(name)
        return np.asarray(self.file.rows(name, ids), dtype=np.float64)


class Bert(Transformer):
    """The encoder's layers, run up to the one being traced.

    ``tensors`` are read by their names in ``BertModel`` (``embeddings.…``,
    ``encoder.layer.0.…``); a checkpoint saved with a prefix (``bert.``) comes wrapped
    in :class:`Prefixed`. ``spec``, ``eps`` and ``activation`` are MiniLM's unless the
    model's config says otherwise; ``spec.causal`` masks as ``is_decoder`` does.
    """

    spec: RealModel = MINILM
    tokenizer: Vocabulary
    added_tokens = 2  # [CLS] first, [SEP] last

    def __init__(
        self,
        tensors: TensorSource,
        tokenizer: Vocabulary,
        *,
        spec: RealModel = MINILM,
        eps: float = EPS,
        activation: Callable[[Matrix], Matrix] = gelu,
    ) -> None:
        self.tensors = tensors if isinstance(tensors, Prefixed) else Prefixed(tensors, "")
        self.tokenizer = tokenizer
        self.spec = spec
        self.eps = eps
        self.activation = activation

    @classmethod
    def load(cls, weights: Path) -> Bert:
        """The model from its safetensors file, with vocab.txt beside it."""
        return cls(
            SafetensorsTensors(read_safetensors(weights), weights),
            WordPiece.from_vocab_file(weights.parent / "vocab.txt"),
        )

    def _get(self, name: str) -> npt.NDArray[np.float64]:
        """Tensor ``name`` in float64."""
        return self.tensors.tensor(name)

    def _norm(self, name: str, x: Matrix) -> Matrix:
        """LayerNorm ``name`` (``embeddings.LayerNorm``, …) of ``x``."""
        return layer_norm(x, self._get(name + ".weight"), self._get(name + ".bias"), self.eps)

    def _dense(self, name: str, x: Matrix) -> Matrix:
        """``nn.Linear`` ``name``: ``x · weightᵀ + bias``."""
        out: Matrix = x @ self._get(name + ".weight").T + self._get(name + ".bias")
        return out

    def attention(self, layer: int) -> LayerAttention:
        """Layer ``layer``'s Q, K, V and output projections, with their biases."""
        prefix = f"encoder.layer.{layer}.attention."
        names = {"Q": "self.query", "K": "self.key", "V": "self.value", "O": "output.dense"}
        matrices = {key: self._get(f"{prefix}{name}.weight").T for key, name in names.items()}
        biases = {f"b{key}": self._get(f"{prefix}{name}.bias") for key, name in names.items()}
        return LayerAttention(matrices["Q"], matrices["K"], matrices["V"], matrices["O"], biases)

    def embed(self, ids: list[int]) -> Matrix:
        """Word + position + token-type embeddings, layer-normed: what layer 0 reads."""
        words = self.tensors.rows("embeddings.word_embeddings.weight", ids)
        positions = self.tensors.rows("embeddings.position_embeddings.weight", range(len(ids)))
        token_type = self.tensors.rows("embeddings.token_type_embeddings.weight", [0])[0]
        return self._norm("embeddings.LayerNorm", words + token_type + positions)

    def attention_input(self, layer: int, hidden: Matrix) -> Matrix:
        """BERT is post-norm: attention reads the hidden state as it is."""
        return hidden

    def layer(self, layer: int, hidden: Matrix) -> tuple[Matrix, npt.NDArray[np.float64]]:
        p = f"encoder.layer.{layer}."
        attended, weights = self.attend(layer, hidden)
        hidden = self._norm(p + "attention.output.LayerNorm", attended + hidden)
        inner = self.activation(self._dense(p + "intermediate.dense", hidden))
        out = self._dense(p + "output.dense", inner)
        return self._norm(p + "output.LayerNorm", out + hidden), weights

    def labels(self, ids: list[int]) -> list[str]:
        """Tokens as the vocabulary spells them: ``[CLS]``, ``the``, ``##ing``."""
        return self.tokenizer.vocab_strings(ids)

    def x_formula(self, layer: int) -> str:
        if layer == 0:
            return "X = LayerNorm(word + position + type embeddings), entering layer 0"
        return f"X = hidden state entering layer {layer} (the output of layer {layer - 1})"
