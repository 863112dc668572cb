"""Real trained models: file readers, tokenizers and forward passes in numpy.

Nothing here imports torch, transformers, safetensors or tokenizers: the weights are read
with numpy (a tensor at a time, never memory-mapped) and the tokenizers are pure Python,
so a real model's layer can be traced offline with the run-time dependencies alone.
"""
