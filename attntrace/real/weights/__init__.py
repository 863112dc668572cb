"""Weight files read with numpy alone: .safetensors and GGUF (and its ggml tensor types).

Memory-mapped where possible, every length and offset checked before it is trusted.
"""
