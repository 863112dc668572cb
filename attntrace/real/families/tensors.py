"""The one way a family's forward pass reads weights, whatever the file.

A forward pass asks for tensors by their Hugging Face names (``model.layers.0.self_attn
.q_proj.weight``), laid out as transformers holds them (``nn.Linear.weight``: ``[out,
in]``), in float64. A Hugging Face folder serves them as stored; a GGUF file maps its
names back and undoes what llama.cpp's converter did (Q and K rows permuted, Gemma's
``1 + w``, GPT-2's transposes), so the pass never knows which it read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

Tensor = npt.NDArray[np.float64]


class TensorSource(Protocol):
    """Tensors by Hugging Face name: read when asked, never all held at once."""

    @property
    def path(self) -> Path:
        """The file or folder, for messages."""
        ...

    def has(self, name: str) -> bool:
        """Whether tensor ``name`` is there."""
        ...

    def shape(self, name: str) -> tuple[int, ...]:
        """Tensor ``name``'s shape, as transformers holds it, without reading it."""
        ...

    def tensor(self, name: str) -> Tensor:
        """Tensor ``name`` in float64, as transformers holds it; an InputError naming the
        file and the tensor where it is missing or unreadable."""
        ...

    def rows(self, name: str, ids: Sequence[int]) -> Tensor:
        """Rows ``ids`` of an embedding table ``name``, without reading the rest."""
        ...
