"""How much memory a KV cache takes, for real models' shapes (docs/real-models.md).

    KV cache bytes = 2 (K and V) × layers × kv_heads × head_dim × bytes per value
                     × tokens × batch

The same model is also priced as plain multi-head attention (kv_heads = heads) and as
multi-query attention (kv_heads = 1), so what grouped-query attention saves is visible.
With one query head the two are the same model.

**A sliding window** of N keys (Mistral's ``sliding_window``, Gemma 3's local layers)
lets a cache keep only the last N tokens of a windowed layer, as transformers'
``SlidingWindowCache`` does: such a layer holds ``min(tokens, N)``, a global layer
``tokens``, so

    KV cache bytes = 2 × kv_heads × head_dim × bytes per value × batch
                     × (local layers × min(tokens, N) + global layers × tokens)

and the local and global parts are priced apart (:func:`window_parts`).

Sizes are named up to YiB (2^80 bytes), the largest binary prefix of IEC 80000-13; a
cache of 1024 YiB or more is refused, as far past any machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from attntrace.errors import InputError

BYTES_PER_VALUE = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}
# kv-cache's name for each of run's and decode's --dtype names (docs/kernels.md): one
# table for kv-cache taking the long names and decode naming the kv-cache command.
KV_CACHE_NAME = {"float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16"}
UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")
MAX_CACHE_BYTES = 1024 * 1024 ** (len(UNITS) - 1)  # 1024 YiB = 2^90: refused from here on


@dataclass(frozen=True)
class Shape:
    """A model's attention shape, from its published configuration."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    d_model: int | None = None
    context: int | None = None
    window: int | None = None  # a sliding window of N keys on the local layers
    local_layers: int | None = None  # how many layers slide (None: all, with a window)

    @property
    def windowed_layers(self) -> int:
        """The layers whose cache keeps at most ``window`` tokens (0 without a window)."""
        if self.window is None:
            return 0
        return self.layers if self.local_layers is None else self.local_layers

    def cached_tokens(self, tokens: int) -> int:
        """Tokens summed over the layers: min(tokens, N) on each local layer, tokens on
        each global one (layers × tokens without a window)."""
        local = self.windowed_layers
        held = min(tokens, self.window) if self.window is not None else tokens
        return local * held + (self.layers - local) * tokens

    @property
    def attention(self) -> str:
        if self.kv_heads == self.heads:
            return "MHA"
        return "MQA" if self.kv_heads == 1 else "GQA"


# From the models' Hugging Face config.json: num_hidden_layers, num_attention_heads,
# num_key_value_heads, head_dim, hidden_size, context length.
PRESETS: dict[str, Shape] = {
    "gpt2": Shape(12, 12, 12, 64, 768, 1024),
    "gpt3-175b": Shape(96, 96, 96, 128, 12288, 2048),
    "llama2-7b": Shape(32, 32, 32, 128, 4096, 4096),
    "llama2-70b": Shape(80, 64, 8, 128, 8192, 4096),
    "llama3-8b": Shape(32, 32, 8, 128, 4096, 8192),
    # sliding_window 4096 on every layer (Mistral-7B-v0.1's config.json)
    "mistral-7b": Shape(32, 32, 8, 128, 4096, 32768, window=4096),
    "gemma-2b": Shape(18, 8, 1, 256, 2048, 8192),
    "gemma-7b": Shape(28, 16, 16, 256, 3072, 8192),
    # SmolLM2-135M-Instruct (the catalogued smollm2: its GGUF's llama.* metadata)
    "smollm2-135m": Shape(30, 9, 3, 64, 576, 8192),
    # Gemma 3 270M (its GGUF's gemma3.* metadata, as transformers reads it): layers 5,
    # 11 and 17 global, the other 15 local with sliding_window 512
    "gemma3-270m": Shape(18, 4, 1, 256, 640, 32768, window=512, local_layers=15),
}
#: The catalogued decoders (``kv-cache --model smollm2``) and their presets: the same
#: checkpoints. The catalogued encoder, minilm, keeps no cache.
CATALOGUED = {"smollm2": "smollm2-135m", "gemma3": "gemma3-270m"}


def kv_cache_bytes(shape: Shape, kv_heads: int, tokens: int, batch: int, dtype: str) -> int:
    """2 × layers × kv_heads × head_dim × bytes per value × tokens × batch (with a window:
    the layers' tokens as :meth:`Shape.cached_tokens` sums them)."""
    per_token_layer = 2 * kv_heads * shape.head_dim * BYTES_PER_VALUE[dtype] * batch
    return per_token_layer * shape.cached_tokens(tokens)


@dataclass(frozen=True)
class WindowParts:
    """A windowed model's cache (its own K/V heads) in its two parts: the local layers'
    (each ``held`` = min(tokens, window) tokens) and the global layers' (each every token)."""

    local_layers: int
    held: int
    local_bytes: int
    global_layers: int
    global_bytes: int

    @property
    def total(self) -> int:
        return self.local_bytes + self.global_bytes


def window_parts(shape: Shape, tokens: int, batch: int, dtype: str) -> WindowParts | None:
    """The local and global parts of the model's cache, or None without a window."""
    if shape.window is None:
        return None
    per = 2 * shape.kv_heads * shape.head_dim * BYTES_PER_VALUE[dtype] * batch
    local, held = shape.windowed_layers, min(tokens, shape.window)
    rest = shape.layers - local
    return WindowParts(local, held, per * local * held, rest, per * rest * tokens)


@dataclass(frozen=True)
class Variant:
    """The cache of one attention variant of the model: MHA, its own, or MQA."""

    label: str
    kv_heads: int
    bytes: int
    is_model: bool = False  # the model as it is, not a what-if (with 1 head, MHA and MQA both)


def variants(shape: Shape, tokens: int, batch: int, dtype: str) -> list[Variant]:
    """The model as MHA, as it is (if GQA or MQA), and as MQA: the saving side by side.

    With one query head, MHA and MQA are the same model (one K/V head): both are it.
    """
    mha = kv_cache_bytes(shape, shape.heads, tokens, batch, dtype)
    if mha >= MAX_CACHE_BYTES:
        raise InputError(
            f"the KV cache as MHA would take {Decimal(mha):.3g} bytes, and kv-cache sizes "
            "caches under 1024 YiB (2^90 bytes): lower --tokens, --batch or the model's shape"
        )
    kinds = [("MHA", shape.heads)]
    if shape.attention == "GQA":
        kinds.append(("GQA", shape.kv_heads))
    kinds.append(("MQA", 1))
    return [
        Variant(
            f"{kind} (this model)" if kv == shape.kv_heads else kind,
            kv,
            kv_cache_bytes(shape, kv, tokens, batch, dtype),
            kv == shape.kv_heads,
        )
        for kind, kv in kinds
    ]


def human_bytes(count: int) -> str:
    """``2.00 GiB``: binary units, as memory is sold and reported by tools.

    Whole bytes under a KiB; above, two decimals in the first unit that brings the
    rounded value under 1024 (``1.00 MiB``, not ``1024.00 KiB``), up to YiB. Exact for
    any size: the count is divided as a fraction, rounded half to even.
    """
    if count < 1024:
        return f"{count} B"
    for power, unit in enumerate(UNITS[1:], start=1):
        hundredths = round(Fraction(count * 100, 1024**power))
        if hundredths < 1024 * 100 or unit == UNITS[-1]:
            return f"{hundredths // 100}.{hundredths % 100:02d} {unit}"
    raise AssertionError("unreachable")
