"""The table of decoder families: one row per ``model_type``, read from its config class.

Each row holds what transformers 5.25's config class (``models/<family>/configuration_
<family>.py``) calls a fact and defaults it to, and the switches its modeling file adds
(``modeling_<family>.py``): Gemma's (1 + w) norms and √d_model embedding scale, Qwen 2's
q/k/v biases, Qwen 3's and Gemma 3's QK-norm, Gemma 2's and 3's post-norms, query
scalar and softcaps, which layers slide. :mod:`attntrace.real.families.hf_config`
reads a config by its row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Row:
    """One family's row: its config class's defaults and what it adds.

    ``defaults`` maps a config field to the value its class gives it (None: computed, as
    ``head_dim`` = hidden_size // num_attention_heads); ``slides`` says how its layers use
    ``sliding_window`` (see the module's docstring).
    """

    family: str
    source: str  # the config class, for messages and docs
    defaults: Mapping[str, Any]
    activation_field: str = "hidden_act"
    norm_offset: float = 0.0  # Gemma's (1 + w)
    embed_scale: bool = False  # Gemma's √d_model
    qkv_bias: bool | None = None  # None: the attention_bias field says (with o_proj's)
    qk_norm: bool = False
    post_norms: bool = False
    slides: str = "never"  # never, always, qwen, alternate, pattern
    query_scalar: bool = False  # query_pre_attn_scalar replaces head_dim in the scale
    softcaps: bool = False
    rotary_factor: bool = False  # partial_rotary_factor read


# The fields every decoder config has, with LlamaConfig's defaults; each row overrides.
_LLAMA = {
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": None,  # = num_attention_heads
    "head_dim": None,  # = hidden_size // num_attention_heads
    "hidden_act": "silu",
    "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
    "rope_theta": 10_000.0,  # RotaryEmbeddingConfigMixin.default_theta
}
_QWEN = {
    "vocab_size": 151936,
    "intermediate_size": 22016,
    "num_key_value_heads": 32,
    "max_position_embeddings": 32768,
    "use_sliding_window": False,
    "sliding_window": 4096,
    "max_window_layers": 28,
}
_GEMMA = {
    "num_key_value_heads": 16,
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "hidden_act": "gelu_pytorch_tanh",
    "max_position_embeddings": 8192,
    "tie_word_embeddings": True,
}

ROWS: dict[str, Row] = {
    "llama": Row("llama", "LlamaConfig", _LLAMA),
    "mistral": Row(
        "mistral",
        "MistralConfig",
        {
            **_LLAMA,
            "intermediate_size": 14336,
            "num_key_value_heads": 8,
            "max_position_embeddings": 4096 * 32,
            "sliding_window": 4096,
            "attention_bias": False,
        },
        qkv_bias=False,
        slides="always",
    ),
    "qwen2": Row(
        "qwen2",
        "Qwen2Config",
        {**_LLAMA, **_QWEN, "head_dim": None},
        qkv_bias=True,  # Qwen2Attention: q, k, v with biases, o without
        slides="qwen",
    ),
    "qwen3": Row(
        "qwen3",
        "Qwen3Config",
        {**_LLAMA, **_QWEN, "head_dim": 128},
        qk_norm=True,
        slides="qwen",
    ),
    "gemma": Row(
        "gemma",
        "GemmaConfig",
        {
            **_LLAMA,
            **_GEMMA,
            "vocab_size": 256000,
            "hidden_size": 3072,
            "intermediate_size": 24576,
            "num_hidden_layers": 28,
            "num_attention_heads": 16,
        },
        norm_offset=1.0,
        embed_scale=True,
    ),
    "gemma2": Row(
        "gemma2",
        "Gemma2Config",
        {
            **_LLAMA,
            **_GEMMA,
            "vocab_size": 256000,
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "num_hidden_layers": 26,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
            "query_pre_attn_scalar": 256,
            "sliding_window": 4096,
            "final_logit_softcapping": 30.0,
            "attn_logit_softcapping": 50.0,
        },
        activation_field="hidden_activation",
        norm_offset=1.0,
        embed_scale=True,
        post_norms=True,
        slides="alternate",
        query_scalar=True,
        softcaps=True,
    ),
    "gemma3_text": Row(
        "gemma3",
        "Gemma3TextConfig",
        {
            **_LLAMA,
            **_GEMMA,
            "vocab_size": 262_208,
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "num_hidden_layers": 26,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
            "max_position_embeddings": 131_072,
            "query_pre_attn_scalar": 256,
            "sliding_window": 4096,
            "sliding_window_pattern": 6,
            "final_logit_softcapping": None,
            "attn_logit_softcapping": None,
            "rope_theta": 1_000_000.0,  # default_theta["global"]
            "rope_local_base_freq": 10_000.0,  # default_theta["local"]
        },
        activation_field="hidden_activation",
        norm_offset=1.0,
        embed_scale=True,
        qk_norm=True,
        post_norms=True,
        slides="pattern",
        query_scalar=True,
        softcaps=True,
    ),
    "phi3": Row(
        "phi3",
        "Phi3Config",
        {
            **_LLAMA,
            "vocab_size": 32064,
            "hidden_size": 3072,
            "intermediate_size": 8192,
            "max_position_embeddings": 4096,
            "rms_norm_eps": 1e-5,
            "sliding_window": None,
            "partial_rotary_factor": 1.0,
        },
        qkv_bias=False,
        slides="always",
        rotary_factor=True,
    ),
}
# A multimodal Gemma 3 keeps its language model's config under text_config.
NESTED = {"gemma3": "text_config"}
