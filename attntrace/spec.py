"""A validated model: what attention needs, with nothing left to check.

:mod:`attntrace.model_file` builds a :class:`ModelSpec` from a file and guarantees its
invariants (shapes agree, every number finite); :mod:`attntrace.attention` computes
from it. Tokens are looked up here, because the lookup rule (exact, then lower-case)
is part of the model's contract, not of the file format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError
from attntrace.tokenize import EDGE_PUNCTUATION

Matrix = npt.NDArray[np.float64]

# How many vocabulary entries an "unknown token" message lists before it abbreviates.
_VOCAB_SHOWN = 20


@dataclass(frozen=True)
class ModelSpec:
    """One attention head's parameters and vocabulary.

    ``embeddings`` maps a token to its vector of length ``d_model``; ``WQ``/``WK`` are
    ``d_model × d_k`` and ``WV`` is ``d_model × d_v``.
    """

    embeddings: Mapping[str, npt.NDArray[np.float64]]
    WQ: Matrix
    WK: Matrix
    WV: Matrix
    name: str = "model"
    description: str = ""
    sentence: str | None = None
    source: str | None = field(default=None, compare=False)

    @property
    def d_model(self) -> int:
        return int(self.WQ.shape[0])

    @property
    def d_k(self) -> int:
        return int(self.WQ.shape[1])

    @property
    def d_v(self) -> int:
        return int(self.WV.shape[1])

    def resolve(self, token: str) -> str | None:
        """The vocabulary key for ``token``: exact match first, then lower-case."""
        if token in self.embeddings:
            return token
        lower = token.lower()
        return lower if lower in self.embeddings else None

    def embed(self, tokens: Sequence[str]) -> Matrix:
        """Stack the embedding rows of ``tokens`` into ``X`` [n × d_model].

        Raises :class:`InputError` naming every unknown token and the vocabulary.
        """
        if not tokens:
            raise InputError("empty sentence", expected="at least one token", found="none")
        keys = [self.resolve(t) for t in tokens]
        unknown = list(dict.fromkeys(t for t, k in zip(tokens, keys, strict=True) if k is None))
        if unknown:
            punctuation = [t for t in unknown if t in EDGE_PUNCTUATION]
            hint = (
                f"; {', '.join(repr(t) for t in punctuation)}: punctuation at a word's edge "
                "is a token of its own, so the embeddings need it too"
                if punctuation
                else ""
            )
            raise InputError(
                f"unknown token{'s' if len(unknown) > 1 else ''} "
                + ", ".join(repr(t) for t in unknown)
                + f" (vocabulary: {_describe_vocabulary(list(self.embeddings))}){hint}",
                source=self.source,
                field="embeddings",
            )
        return np.stack([self.embeddings[k] for k in keys if k is not None])


def _describe_vocabulary(vocabulary: list[str]) -> str:
    shown = ", ".join(vocabulary[:_VOCAB_SHOWN])
    hidden = len(vocabulary) - _VOCAB_SHOWN
    return f"{shown}, … and {hidden} more" if hidden > 0 else shown
