"""Published models' config.json fields (the Hub's files, as their fields read), shared
by the tests that read configs (facts, kv-cache): written once so the two cannot drift."""

from __future__ import annotations

from typing import Any

# Llama 3.2 1B's config.json, as published (meta-llama/Llama-3.2-1B, transformers 4.45).
LLAMA_32_1B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "head_dim": 64,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "max_position_embeddings": 131072,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 16,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "factor": 32.0,
        "high_freq_factor": 4.0,
        "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "rope_theta": 500000.0,
    "tie_word_embeddings": True,
    "vocab_size": 128256,
}
# Gemma 3 270M's (google/gemma-3-270m): every sixth layer global, the rest slide by 512
GEMMA3_270M: dict[str, Any] = {
    "model_type": "gemma3_text",
    "head_dim": 256,
    "hidden_size": 640,
    "intermediate_size": 2048,
    "num_attention_heads": 4,
    "num_hidden_layers": 18,
    "num_key_value_heads": 1,
    "max_position_embeddings": 32768,
    "query_pre_attn_scalar": 256,
    "rope_local_base_freq": 10000.0,
    "rope_scaling": None,
    "rope_theta": 1000000.0,
    "sliding_window": 512,
    "sliding_window_pattern": 6,
    "vocab_size": 262144,
}
# Mistral 7B v0.1's: a window of 4096 on every layer
MISTRAL_7B: dict[str, Any] = {
    "model_type": "mistral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0,
    "sliding_window": 4096,
    "vocab_size": 32000,
}
