"""A student's multi-head attention in numpy, with one mistake in it, for `attntrace check`.

    attntrace samples two-heads > model.yaml
    python3 docs/examples/student.py model.yaml       # writes student.npz
    attntrace check student.npz --config model.yaml   # names the mistake: no-scaling

It computes in float32 and saves each stage under the names people use (q, attn, out),
heads first, as PyTorch code does after its transpose.
"""

import sys
from pathlib import Path

import numpy as np
import yaml  # noqa: TID251 (a student's script, not attntrace: it reads YAML its own way)

model = yaml.safe_load(Path(sys.argv[1]).read_text(encoding="utf-8"))
tokens = model["sentence"].split()
X = np.array([model["embeddings"][t] for t in tokens], dtype=np.float32)
W = {name: np.array(rows, dtype=np.float32) for name, rows in model["weights"].items()}
heads, n = model.get("heads", 1), len(tokens)


def split(M: np.ndarray) -> np.ndarray:
    """[n, heads·d] -> [heads, n, d]"""
    return M.reshape(n, heads, -1).transpose(1, 0, 2)


q, k, v = split(X @ W["WQ"]), split(X @ W["WK"]), split(X @ W["WV"])
scores = q @ k.transpose(0, 2, 1)
scaled = scores  # the mistake: the scores should be divided by np.sqrt(d_k)
weights = np.exp(scaled - scaled.max(axis=-1, keepdims=True))
weights /= weights.sum(axis=-1, keepdims=True)
out = weights @ v
np.savez("student.npz", q=q, k=k, v=v, scores=scores, scaled=scaled, attn=weights, out=out)
