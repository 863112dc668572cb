"""What a model is, in one record, whichever file it came from.

A Hugging Face ``config.json`` and a GGUF file's metadata say the same things in
different words and with different gaps (GGUF keeps no ``query_pre_attn_scalar``, a
Mistral GGUF no window). Both are read into :class:`ModelFacts`, and the forward passes
read only that: a family is a row of the mapping table plus what is truly new, not a
new forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from attntrace.errors import InputError
from attntrace.real.catalog import RealModel

#: The families attntrace traces: the ``model_type`` of config.json (the names
#: transformers gives them). GGUF's ``general.architecture`` maps onto these.
FAMILIES = (
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "gemma",
    "gemma2",
    "gemma3",
    "phi3",
    "gpt2",
    "bert",
)


#: The most layers a model's config may claim. The deepest published models have about
#: 128 (Llama 3.1 405B: 126); a claim past this is refused before anything is built per
#: layer, so a config saying 10¹² layers is one line, not a hang that fills the memory.
MAX_LAYERS = 1024


def checked_layers(layers: int, source: str, field: str) -> int:
    """``layers`` (a whole number ≥ 1, read already) within :data:`MAX_LAYERS`."""
    if layers > MAX_LAYERS:
        raise InputError(
            source=source,
            field=field,
            expected=f"at most {MAX_LAYERS:,} layers",
            found=f"{layers:,}",
        )
    return layers


@dataclass(frozen=True)
class RopeScaling:
    """Llama 3.1's ``rope_scaling`` of type ``llama3`` (transformers'
    ``_compute_llama3_parameters``): long wavelengths slowed by ``factor``, short kept,
    the band between blended; or of type ``linear``, every frequency divided by
    ``factor`` (only ``factor`` is read)."""

    factor: float
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_positions: int = 8192
    # "llama3", or "linear" (every frequency divided by factor: Gemma 3's global layers
    # in its 4B and larger models, transformers' _compute_linear_scaling_rope_parameters)
    kind: str = "llama3"


@dataclass(frozen=True)
class ModelFacts:
    """A model's shape and wiring: everything a forward pass needs besides weights."""

    family: str  # one of FAMILIES
    layers: int
    heads: int
    kv_heads: int
    d_model: int
    head_dim: int
    d_ff: int
    vocabulary: int
    norm_eps: float
    max_positions: int
    causal: bool = True
    norm: str = "rms"  # "rms" or "layer"
    # Gemma's RMSNorm multiplies by (1 + w): the 1 added here, the weight as its file has it
    norm_offset: float = 0.0
    activation: str = "silu"  # "silu", "gelu_tanh", "gelu" (exact) or "relu"
    positions: str = "rope"  # "rope" or "learned"
    rope_base: float | None = 10_000.0
    rope_local_base: float | None = None  # Gemma 3's sliding layers
    rope_scaling: RopeScaling | None = None  # on every layer but Gemma 3's sliding ones
    # partial rotary (partial_rotary_factor < 1): only the first rotary_dim of each head's
    # dimensions are turned; None: all head_dim of them
    rotary_dim: int | None = None
    # GGUF's rope_freqs.weight (llama.cpp's converter writes Llama 3's rope_scaling only
    # so): one divisor per rotated pair, the angle of pair i is pos·base^(−2i/d)/factor_i
    rope_factors: tuple[float, ...] | None = None
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False  # Llama's mlp_bias: gate, up and down with biases
    qk_norm: bool = False
    sliding_window: int | None = None
    # per layer, "full" or "sliding"; empty: every layer full (or every one sliding
    # where sliding_window is set and the family slides everywhere, as Mistral)
    layer_types: tuple[str, ...] = ()
    attn_softcap: float | None = None
    final_softcap: float | None = None
    query_pre_attn_scalar: float | None = None  # the scale is its −½ power, not d_k's
    embed_scale: float = 1.0  # Gemma: √d_model
    post_norms: bool = False  # Gemma 2 and 3: norms after attention and after the MLP
    tied_embeddings: bool = True
    token_types: int = 0  # BERT: rows of token_type_embeddings (type_vocab_size)
    notes: tuple[str, ...] = field(default_factory=tuple)

    def layer_type(self, layer: int) -> str:
        """``full`` or ``sliding``: how layer ``layer`` masks."""
        if self.layer_types:
            return self.layer_types[layer]
        return "sliding" if self.sliding_window is not None else "full"

    def as_real_model(self, name: str, title: str, path: Path, *, max_tokens: int) -> RealModel:
        """The record the tracer reads (:class:`RealModel`), for a model found on disk:
        no package to install and no pinned hash, since the user's file is the model."""
        return RealModel(
            name=name,
            title=title,
            architecture=self.family,
            layers=self.layers,
            heads=self.heads,
            kv_heads=self.kv_heads,
            d_model=self.d_model,
            head_dim=self.head_dim,
            vocabulary=self.vocabulary,
            positions=self.positions,
            causal=self.causal,
            license="as its files say",
            package="",
            version="",
            module="",
            weights=str(path),
            sha256="",
            max_tokens=max_tokens,
        )
