"""The pieces of a transformer layer around attention, in float64 numpy.

A real model's layer L reads the hidden state that layers 0 … L−1 made, so tracing it
means running those layers first. These are the textbook formulas (the references are
Hugging Face transformers' BertModel and LlamaModel, which the golden tests compare
with). Attention is the kernel's own (:func:`attntrace.kernel.ops.attention`), given every
head at once: the projections here multiply all of a layer's heads in one product each
and split the result into heads, because a forward pass needs every head of every layer
before the traced one; attntrace's stage-by-stage trace then recomputes the one layer
the user asked for, a head at a time.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from attntrace import arguments
from attntrace.errors import InputError
from attntrace.kernel import masks, progress
from attntrace.kernel.ops import Matrix, attention, linear, rms_norm, rope
from attntrace.kernel.ops import rope_frequencies as rope_frequencies_of
from attntrace.kernel.variants import Variants
from attntrace.real.catalog import RealModel
from attntrace.real.erf import erf
from attntrace.real.text import checked_ids

Vector = npt.NDArray[np.float64]


@dataclass(frozen=True)
class LayerAttention:
    """One layer's attention weights, as attntrace multiplies them: ``X · WQ`` (d_model ×
    heads·d_k), so each is the transpose of PyTorch's ``nn.Linear.weight``."""

    WQ: Matrix
    WK: Matrix
    WV: Matrix
    WO: Matrix
    biases: Mapping[str, Vector] = field(default_factory=dict)


class Tokenizer(Protocol):
    def encode(self, text: str) -> list[int]: ...


class Transformer(ABC):
    """A trained model's layers: what attntrace needs to trace one of them.

    A subclass says how its layers compute (:meth:`layer`) and what a layer's attention
    reads (:meth:`attention_input`); running the layers before the traced one is shared.
    """

    spec: RealModel
    tokenizer: Tokenizer
    rope_base: float | None = None  # with rotary positions: the base of their angles
    added_tokens = 0  # tokens the tokenizer adds to every sentence ([CLS], [SEP])

    @abstractmethod
    def embed(self, ids: list[int]) -> Matrix:
        """The hidden state entering layer 0: ``[n, d_model]``."""

    @abstractmethod
    def attention_input(self, layer: int, hidden: Matrix) -> Matrix:
        """What layer ``layer``'s attention multiplies by WQ, WK, WV: X of its trace."""

    @abstractmethod
    def layer(self, layer: int, hidden: Matrix) -> tuple[Matrix, npt.NDArray[np.float64]]:
        """Layer ``layer`` whole: the hidden state it passes on, and its attention
        probabilities ``[heads, n, n]``."""

    @abstractmethod
    def attention(self, layer: int) -> LayerAttention:
        """Layer ``layer``'s attention weights, as attntrace multiplies them."""

    @abstractmethod
    def labels(self, ids: list[int]) -> list[str]:
        """The tokens as the vocabulary spells them."""

    @abstractmethod
    def x_formula(self, layer: int) -> str:
        """How the X stage of layer ``layer`` reads."""

    def layer_rope_base(self, layer: int) -> float | None:
        """The RoPE base of layer ``layer``: the model's, unless its layers differ."""
        return self.rope_base

    def layer_rope_frequencies(self, layer: int) -> Vector | None:
        """Layer ``layer``'s RoPE frequencies, one per turned pair, where they are not
        ``base^(−2i/d_k)`` over the whole head (Llama 3.1's scaled ones, a partial
        rotary width): None where :meth:`layer_rope_base` says it all."""
        return None

    def layer_variants(self, layer: int) -> Variants:
        """What layer ``layer``'s attention computes beyond the paper's (docs/variants.md):
        none, unless the model says."""
        return Variants()

    def layer_kind(self, layer: int) -> str | None:
        """How a header names the kind of layer ``layer`` where a model's layers differ
        (Gemma 3: ``local (sliding window 512)`` or ``global``); None where all are alike."""
        return None

    def checked_ids(self, ids: Sequence[int]) -> list[int]:
        """``ids`` as the model reads them: 1 to ``max_tokens`` token ids, each from 0 to
        the vocabulary's size − 1 (a TypeError for what is no sequence of ints)."""
        spec = self.spec
        ids = checked_ids(arguments.head_numbers(ids, "ids", what="token ids"), spec.vocabulary)
        if not 1 <= len(ids) <= spec.max_tokens:
            raise InputError(
                field="ids",
                expected=f"1 to {spec.max_tokens} token ids for {spec.name}",
                found=f"{len(ids)}",
            )
        return ids

    def _checked_count(self, name: str, value: int, low: int, high: int) -> int:
        """``layer`` (or ``layers``) an int from ``low`` to ``high``."""
        value = arguments.whole(value, name)
        if not low <= value <= high:
            raise InputError(
                field=name,
                expected=f"a number from {low} to {high} "
                f"({self.spec.name} has {self.spec.layers} layers)",
                found=str(value),
            )
        return value

    def largest_weight(self) -> int:
        """The most numbers one weight tensor of a layer holds (an MLP matrix, usually):
        a layer is run one tensor at a time, so this bounds what running it holds. From
        the spec alone: the attention's projections, and an MLP of 4 · d_model (BERT's
        and GPT-2's width); a family that knows its own MLP says so."""
        spec = self.spec
        return spec.d_model * max(spec.heads * spec.head_dim, 4 * spec.d_model)

    def refuse_layers_past_budget(self, n: int) -> None:
        """Running the layers holds one weight at a time in float64, with a copy being
        reordered and the file's own numbers beside it (about 2.5 copies), and the
        hidden states: refused before the first layer where that passes the budget
        (a 70B model's 235M-number MLP matrices would take about 5.6 GB)."""
        from attntrace.kernel.budget import FLOAT, refuse_past_budget

        refuse_past_budget(
            f"running {self.spec.name}'s layers over {n:,} tokens",
            {
                "a layer's largest weight as float64, with its copies": (
                    3 * FLOAT * self.largest_weight()
                ),
                "the hidden states": 8 * FLOAT * n * self.spec.d_model,
            },
        )

    def layer_input(self, ids: Sequence[int], layer: int) -> Matrix:
        """X of layer ``layer``: the layers before it run, and nothing after."""
        ids = self.checked_ids(ids)
        layer = self._checked_count("layer", layer, 0, self.spec.layers - 1)
        self.refuse_layers_past_budget(len(ids))
        hidden = self.embed(ids)
        if layer:
            with progress.task(f"{self.spec.name} up to layer {layer}", layer, "layers") as run:
                for before in range(layer):
                    hidden, _ = self.layer(before, hidden)
                    run.advance()
        return self.attention_input(layer, hidden)

    def attend(self, layer: int, x: Matrix) -> tuple[Matrix, npt.NDArray[np.float64]]:
        """Layer ``layer``'s attention over its input ``x``, with the model's own heads,
        mask and positions: the projected output and the probabilities."""
        spec = self.spec
        return attend(
            x,
            self.attention(layer),
            spec.heads,
            spec.kv_heads,
            causal=spec.causal,
            rope_base=self.layer_rope_base(layer),
            variants=self.layer_variants(layer),
            rope_frequencies=self.layer_rope_frequencies(layer),
        )

    def run(
        self,
        ids: Sequence[int],
        layers: int,
        rows: Sequence[int] | None = None,
        *,
        task: str | None = None,
    ) -> list[npt.NDArray[np.float64]]:
        """The attention probabilities ``[heads, n, n]`` of each of the first ``layers``
        layers (only query ``rows``, where given: every layer's n × n weights of a long
        sentence would be large). X of a layer is :meth:`layer_input`. The layers are
        reported as progress, described as ``task`` (default: the model's name)."""
        ids = self.checked_ids(ids)
        layers = self._checked_count("layers", layers, 0, self.spec.layers)
        if rows is not None:
            rows = arguments.head_numbers(rows, "rows", what="query positions")
            for index, row in enumerate(rows):
                if not 0 <= row < len(ids):
                    raise InputError(
                        field=f"rows[{index}]",
                        expected=f"a query position from 0 to {len(ids) - 1}",
                        found=str(row),
                    )
        self.refuse_layers_past_budget(len(ids))
        hidden = self.embed(ids)
        probabilities = []
        with progress.task(task or f"{self.spec.name}: {layers} layers", layers, "layers") as run:
            for index in range(layers):
                hidden, weights = self.layer(index, hidden)
                probabilities.append(weights if rows is None else weights[:, list(rows)])
                run.advance()
        return probabilities


def layer_norm(x: Matrix, weight: Vector, bias: Vector, eps: float) -> Matrix:
    """Each row shifted to mean 0 and scaled to variance 1, then ``· weight + bias``."""
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    normed: Matrix = (x - mean) / np.sqrt(variance + eps) * weight + bias
    return normed


def gelu(x: Matrix) -> Matrix:
    """BERT's exact GELU: ``x · Φ(x) = x · (1 + erf(x / √2)) / 2`` (transformers'
    ``activations.GELUActivation``, torch's ``gelu``), with erf vectorized to
    float64's accuracy (:mod:`attntrace.real.erf`)."""
    result: Matrix = 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))
    return result


_TANH_SCALE = math.sqrt(2.0 / math.pi)


def gelu_tanh(x: Matrix) -> Matrix:
    """GELU's tanh approximation, ``x · (1 + tanh(√(2/π) · (x + 0.044715 x³))) / 2``:
    Gemma's ``hidden_activation`` ``gelu_pytorch_tanh`` (transformers'
    ``activations.PytorchGELUTanh``, i.e. torch's ``gelu(x, approximate="tanh")``, whose
    CPU kernel computes ``√2 · (2/√π) · 0.5`` for the scale; the same double). Not the
    exact GELU: the two differ by up to about 5e-4 (near |x| = 2.7)."""
    result: Matrix = 0.5 * x * (1.0 + np.tanh(_TANH_SCALE * (x + 0.044715 * (x * x * x))))
    return result


def silu(x: Matrix) -> Matrix:
    """LLaMA's gate activation: ``x · sigmoid(x)``."""
    with np.errstate(over="ignore"):  # exp(800) is inf, and x / inf is the right 0
        result: Matrix = x / (1.0 + np.exp(-x))
    return result


def attend(
    x: Matrix,
    learned: LayerAttention,
    heads: int,
    kv_heads: int,
    *,
    causal: bool = False,
    rope_base: float | None = None,
    variants: Variants | None = None,
    rope_frequencies: Vector | None = None,
) -> tuple[Matrix, npt.NDArray[np.float64]]:
    """Multi-head (or grouped-query) attention of every head at once, with the
    ``variants`` of docs/variants.md a real model has, in the trace's order: QK-norm
    before RoPE, then in :func:`attention` the cap, the mask by position (a sliding
    window) and the sink logit. (ALiBi is a kind of positions no catalogued model uses.)
    ``rope_frequencies``, where given, replace ``rope_base``'s: one per pair of the first
    ``2 · len(rope_frequencies)`` dimensions of each head
    (:func:`attntrace.kernel.ops.rope_frequencies`, as the trace's).

    Returns the projected output ``[n, d_model]`` (concat · WO + bO) and the attention
    probabilities ``[heads, n, n]``.
    """
    n, biases = x.shape[0], learned.biases
    v = variants or Variants()

    def split(rows: Matrix, count: int) -> Matrix:
        """``[n, count·width] -> [count, n, width]``: head i's columns as its matrix."""
        per_head: Matrix = rows.reshape(n, count, -1).transpose(1, 0, 2)
        return per_head

    def turned(per_head: Matrix) -> Matrix:
        """Under RoPE, every head's row p turned by position p; else as it is."""
        if rope_base is None and rope_frequencies is None:
            return per_head
        count, _, width = per_head.shape
        frequencies = rope_frequencies_of(width, rope_base or 10000.0, rope_frequencies)
        rows = rope(
            per_head.reshape(-1, width), np.tile(np.arange(n), count), frequencies, "half"
        )  # rotate_half, as Hugging Face's LLaMA computes it
        return rows.reshape(count, n, width)

    def normed(per_head: Matrix, weight: Vector | None) -> Matrix:
        """Under QK-norm, every row RMS-normed (before RoPE, as the trace); else as it is."""
        return rms_norm(per_head, weight, v.qk_norm_eps) if v.qk_norm else per_head

    # every head at once: [n, d_model] · [d_model, heads·d_k] + b -> [heads, n, d_k]
    Q = turned(normed(split(linear(x, learned.WQ, biases.get("bQ")), heads), v.q_norm))
    K = turned(normed(split(linear(x, learned.WK, biases.get("bK")), kv_heads), v.k_norm))
    V = split(linear(x, learned.WV, biases.get("bV")), kv_heads)
    group = heads // kv_heads  # query heads per K/V head: head h reads K/V head h // group
    K, V = np.repeat(K, group, axis=0), np.repeat(V, group, axis=0)  # [heads, n, d]
    where = np.arange(n)
    mask = (
        masks.hidden(where, where, causal=True, window=v.window, sinks=v.sinks) if causal else None
    )
    sinks = v.sink_logits(heads)
    attended = attention(
        Q,
        K,
        V,
        mask=mask,
        softcap=v.softcap,
        sink_logit=None if sinks is None else np.reshape(sinks, (heads, 1, 1)),
    )  # [heads, n, d_v]
    concat = attended.output.transpose(1, 0, 2).reshape(n, -1)  # [n, heads·d_v]
    return linear(concat, learned.WO, biases.get("bO")), attended.softmax
