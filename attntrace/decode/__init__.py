"""Decoding one token at a time: `decode` (the KV cache growing) and `kv-cache` (its bytes).

`decoder.decode` runs each step through `cache.KVCache` against the full trace,
within the bound of `rounding`; `dtype` does it by a dtype's casting rule; `kv_memory`
sizes a published model's cache. Views in `views/`.
"""
