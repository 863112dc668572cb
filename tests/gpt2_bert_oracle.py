"""Tiny random GPT-2 and BERT models in transformers, float64, and what they compute: the
oracle tests/families/test_gpt2_bert_families.py holds attntrace's forward passes to.

Every parameter is drawn anew from a seeded generator (not transformers' init, whose
zero biases and unit LayerNorm weights would leave the biases and norm weights
untested), the model is made ``.double()`` with eager attention, and its attention
probabilities and hidden states are taken with ``output_attentions`` and
``output_hidden_states``. Models are made once per session (:func:`functools.cache`):
importing torch and building one takes about a second.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from oracles import require

from attntrace.errors import InputError

Array = npt.NDArray[np.float64]

# ~10 tokens, repeats included, the last id the vocabulary's last
IDS = (3, 17, 42, 5, 17, 99, 0, 64, 8, 31, 99)


class DictTensors:
    """A :class:`attntrace.real.families.tensors.TensorSource` over a state dict held
    in float64: the folder reader's stand-in, so these tests read no file."""

    def __init__(self, tensors: Mapping[str, Array], path: Path = Path("tiny")) -> None:
        self.tensors = dict(tensors)
        self._path = path

    @property
    def path(self) -> Path:
        return self._path

    def has(self, name: str) -> bool:
        return name in self.tensors

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.tensors[name].shape)

    def tensor(self, name: str) -> Array:
        if name not in self.tensors:
            raise InputError("a tensor is missing", source=str(self._path), field=name)
        return np.array(self.tensors[name], dtype=np.float64)

    def rows(self, name: str, ids: Sequence[int]) -> Array:
        return np.array(self.tensors[name][list(ids)], dtype=np.float64)


class Spelled:
    """A tokenizer stand-in: these tests feed token ids; labels spell them ``t<id>``."""

    def encode(self, text: str) -> list[int]:
        return [int(word) for word in text.split()]

    def vocab_strings(self, ids: Iterable[int]) -> list[str]:
        return [f"t{i}" for i in ids]


@dataclass(frozen=True)
class Tiny:
    """A tiny model: its config.json as save_pretrained writes it, its state dict in
    float64, and transformers' attention probabilities ``[layers][heads, n, n]`` and
    hidden states ``[layers + 1][n, d]`` over :data:`IDS`."""

    config: dict[str, Any]
    state: dict[str, Array]
    attentions: list[Array]
    hidden: list[Array]


def _randomized(model: Any, seed: int) -> None:
    """Every parameter drawn anew: matrices N(0, 0.15²), LayerNorm weights 1 + N(0, 0.2²),
    biases N(0, 0.2²); embeddings N(0, 1)."""
    torch = require("torch")
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator, dtype=torch.float64)
            if "LayerNorm" in name or ".ln_" in name or name.startswith("ln_"):
                value = 1 + 0.2 * noise if name.endswith("weight") else 0.2 * noise
            elif parameter.ndim == 1:
                value = 0.2 * noise
            elif "wte" in name or "wpe" in name or "embeddings" in name:
                value = noise
            else:
                value = 0.15 * noise
            parameter.copy_(value)


def _run(model: Any, prefix: str = "") -> Tiny:
    torch = require("torch")
    model = model.double().eval()
    with torch.no_grad():
        out = model(torch.tensor([IDS]), output_attentions=True, output_hidden_states=True)
    config = json.loads(model.config.to_json_string(use_diff=True))
    state = {
        prefix + k: v.detach().numpy().astype(np.float64) for k, v in model.state_dict().items()
    }
    return Tiny(
        config,
        state,
        [a[0].numpy() for a in out.attentions],
        [h[0].numpy() for h in out.hidden_states],
    )


@cache
def tiny_gpt2(layers: int = 3, seed: int = 31, head_model: bool = True, **extra: Any) -> Tiny:
    """A GPT-2 of n_embd 64, 4 heads, in float64 (``GPT2LMHeadModel``: tensors named
    ``transformer.…``; else ``GPT2Model``'s ``h.0.…``)."""
    transformers = require("transformers")
    torch = require("torch")
    torch.manual_seed(seed)
    config = transformers.GPT2Config(
        n_embd=64,
        n_layer=layers,
        n_head=4,
        n_positions=24,
        vocab_size=100,
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation="eager",
        **extra,
    )
    kind = transformers.GPT2LMHeadModel if head_model else transformers.GPT2Model
    model = kind(config)
    _randomized(model, seed)
    return _run(model)


@cache
def tiny_bert(layers: int = 3, seed: int = 31, prefix: str = "", **extra: Any) -> Tiny:
    """A BERT of hidden 64, 4 heads, intermediate 96, in float64 (``BertModel``; its
    tensors given ``prefix``, as ``BertForMaskedLM`` saves them with ``bert.``)."""
    transformers = require("transformers")
    torch = require("torch")
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        hidden_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=96,
        max_position_embeddings=20,
        vocab_size=100,
        type_vocab_size=3,
        attn_implementation="eager",
        **extra,
    )
    model = transformers.BertModel(config, add_pooling_layer=False)
    _randomized(model, seed)
    return _run(model, prefix)


def gpt2_in_float32(tiny: Tiny, **extra: Any) -> tuple[dict[str, Array], list[Array]]:
    """``tiny``'s weights rounded to float32, in a float32 GPT2LMHeadModel whose config
    adds ``extra``: the rounded weights (as float64) and its attention probabilities.
    For settings transformers runs only in float32 (``reorder_and_upcast_attn``: its
    ``_upcast_and_reordered_attn`` raises on a float64 model)."""
    transformers = require("transformers")
    torch = require("torch")
    fields = {
        k: v for k, v in tiny.config.items() if k not in ("model_type", "transformers_version")
    }
    config = transformers.GPT2Config(**{**fields, **extra, "attn_implementation": "eager"})
    model = transformers.GPT2LMHeadModel(config).eval()
    rounded = {name: torch.tensor(array, dtype=torch.float32) for name, array in tiny.state.items()}
    model.load_state_dict(rounded)
    with torch.no_grad():
        out = model(torch.tensor([IDS]), output_attentions=True)
    state = {name: tensor.numpy().astype(np.float64) for name, tensor in rounded.items()}
    return state, [a[0].numpy().astype(np.float64) for a in out.attentions]
