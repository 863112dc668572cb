"""Tiny random models of each decoder family, made by transformers and saved as Hugging
Face folders: the oracles of tests/families/ (and of the GGUF tests, which convert the
same folders).

``tiny_model(family, root, **overrides)`` returns ``(model, folder)``: transformers' model
(float64, eager attention, its RoPE, norms and softmax made float64: see
:func:`float64_oracle`) and the folder ``save_pretrained`` wrote under ``root``. The
overrides are config fields (``sliding_window=4``), and two options of the save:
``saved_dtype`` (``"float32"``, the default, or ``"bfloat16"``: the weights are rounded
to it first, so the float64 oracle holds the very numbers saved) and
``max_shard_size`` (e.g. ``"40KB"``: a sharded folder with its index). Made once per
process for each (family, root, overrides), with weights drawn from a seed made of the
family and the overrides: the same model in every run, whichever test asks first.

Weights are drawn with a spread (N(0, 0.25²), norms 1 ± 0.2, Gemma's 0 ± 0.2) that
makes attention far from uniform, so each head's probabilities test something.
"""

from __future__ import annotations

import copy
import importlib
import types
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from oracles import require

# Every family's tiny shape: 3 layers, d_model 64, 4 heads sharing 2 K/V heads of 16.
BASE: dict[str, Any] = {
    "vocab_size": 100,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 256,
}
FAMILY_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "llama": ("LlamaConfig", {}),
    "mistral": ("MistralConfig", {"sliding_window": 4}),
    "qwen2": ("Qwen2Config", {}),
    "qwen3": ("Qwen3Config", {}),
    "gemma": ("GemmaConfig", {}),
    "gemma2": (
        "Gemma2Config",
        {
            "sliding_window": 4,
            "query_pre_attn_scalar": 24,
            "attn_logit_softcapping": 5.0,
            "final_logit_softcapping": 30.0,
        },
    ),
    "gemma3": (
        "Gemma3TextConfig",
        {
            "sliding_window": 4,
            "query_pre_attn_scalar": 24,
            "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
        },
    ),
    "phi3": ("Phi3Config", {"pad_token_id": 0, "eos_token_id": 1, "bos_token_id": 2}),
}
MODULES = {
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gemma3": "gemma3",
    "phi3": "phi3",
}
SAVE_OPTIONS = ("saved_dtype", "max_shard_size")


_made: dict[tuple[str, Path, str], tuple[Any, Path]] = {}


class _Float64Torch(types.ModuleType):
    """torch, but float32 (``torch.float``, ``torch.float32``) is float64: what the
    modeling modules upcast to (RoPE's cos/sin, RMSNorm, the eager softmax) stays in
    float64, so the oracle's noise is float64's and not float32's."""

    def __init__(self, torch: Any) -> None:
        super().__init__("torch")
        self._torch = torch

    def __getattr__(self, name: str) -> Any:
        if name in ("float", "float32"):
            return self._torch.float64
        return getattr(self._torch, name)


@contextmanager
def float64_oracle() -> Iterator[None]:
    """Inside, transformers' decoders compute in float64 where they upcast to float32:
    each modeling module (and modeling_rope_utils) sees :class:`_Float64Torch`, and
    ``Tensor.float()`` leaves a float64 tensor as it is (Gemma's norms call it)."""
    torch = require("torch")
    modules: list[Any] = [importlib.import_module("transformers.modeling_rope_utils")] + [
        importlib.import_module(f"transformers.models.{m}.modeling_{m}") for m in MODULES.values()
    ]
    saved = [module.torch for module in modules]
    original_float = torch.Tensor.float

    def float64_kept(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.dtype == torch.float64:
            return self
        return original_float(self, *args, **kwargs)

    proxy = _Float64Torch(torch)
    try:
        for module in modules:
            module.torch = proxy
        torch.Tensor.float = float64_kept
        yield
    finally:
        torch.Tensor.float = original_float
        for module, before in zip(modules, saved, strict=True):
            module.torch = before


def _randomized(model: Any, family: str, seed: int) -> None:
    torch = require("torch")
    generator = torch.Generator().manual_seed(seed)
    gemma = family.startswith("gemma")
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator, dtype=torch.float64)
            if "norm" in name:
                parameter.copy_((0.0 if gemma else 1.0) + 0.2 * noise)
            else:
                parameter.copy_(0.25 * noise)


def tiny_model(family: str, root: Path, **overrides: Any) -> tuple[Any, Path]:
    """A tiny random ``family`` model (see the module's docstring) and its folder."""
    key = (family, root, repr(sorted(overrides.items())))
    if key in _made:
        return _made[key]
    torch = require("torch")
    transformers = require("transformers")
    options = {name: overrides.pop(name) for name in SAVE_OPTIONS if name in overrides}
    class_name, extra = FAMILY_CONFIGS[family]
    config = getattr(transformers, class_name)(**{**BASE, **extra, **overrides})
    seed = zlib.crc32(f"{family} {key[2]}".encode())  # the same weights in every run
    folder = root / f"{family}-{seed:08x}"
    torch.manual_seed(seed)
    with float64_oracle():
        model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
        _randomized(model, family, seed=seed)
        saved = options.get("saved_dtype", "float32")
        if saved == "bfloat16":
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.copy_(parameter.to(torch.bfloat16).to(parameter.dtype))
            copy.deepcopy(model).to(torch.bfloat16).save_pretrained(
                folder, max_shard_size=options.get("max_shard_size", "5GB")
            )
        else:
            model.save_pretrained(folder, max_shard_size=options.get("max_shard_size", "5GB"))
        model = model.double().eval()
    _made[key] = (model, folder)
    return model, folder


def oracle_run(model: Any, ids: list[int]) -> tuple[list[Any], list[Any]]:
    """transformers' float64 attention probabilities (``[heads, n, n]`` per layer) and
    hidden states (the embeddings, then each layer's output), as numpy arrays."""
    torch = require("torch")
    with float64_oracle(), torch.no_grad():
        out = model(
            torch.tensor([ids]), output_attentions=True, output_hidden_states=True, use_cache=False
        )
    attentions = [a[0].numpy() for a in out.attentions]
    hidden = [h[0].numpy() for h in out.hidden_states]
    return attentions, hidden
