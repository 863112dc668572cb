"""A validated model: what attention needs, with nothing left to check.

:mod:`attntrace.model_file` turns a file into typed values (matrices, numbers, strings);
:class:`ModelSpec` checks that they fit together (the shapes of SPEC.md section 3) in
``__post_init__``, so a spec built from Python is held to the same rules as one from a
file. Tokens are looked up here, because the lookup rule (exact, then lower-case) is
part of the model's contract, not of the file format.
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
POSITION_KINDS = ("none", "sinusoidal", "learned")


@dataclass(frozen=True)
class ModelSpec:
    """One attention block's parameters and vocabulary.

    ``embeddings`` maps a token to its vector of length ``d_model``. ``WQ`` is
    ``d_model × heads·d_k``, ``WK`` ``d_model × kv_heads·d_k``, ``WV``
    ``d_model × kv_heads·d_v``, and the optional ``WO`` ``heads·d_v × d_model``.
    ``positions`` is None, the string ``"sinusoidal"``, or learned vectors
    ``[max_len × d_model]``. ``context`` makes it cross-attention (K, V from it).
    """

    embeddings: Mapping[str, npt.NDArray[np.float64]]
    WQ: Matrix
    WK: Matrix
    WV: Matrix
    WO: Matrix | None = None
    heads: int = 1
    kv_heads: int | None = None
    causal: bool = False
    positions: str | Matrix | None = None
    context: str | None = None
    name: str = "model"
    description: str = ""
    sentence: str | None = None
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        """The shape rules of SPEC.md section 3; the first broken one is an InputError."""
        self._check_heads()
        d_model, heads, kv_heads = self.d_model, self.heads, self.n_kv_heads
        rows_of = {"WQ": self.WQ, "WK": self.WK, "WV": self.WV}
        for name, matrix in rows_of.items():
            if matrix.ndim != 2 or matrix.shape[0] != d_model:
                self._shape_error(
                    f"weights.{name}", f"{d_model} rows (d_model, the embeddings' length)", matrix
                )
        if self.WQ.shape[1] % heads:
            self._shape_error(
                "weights.WQ", f"a number of columns divisible by heads ({heads})", self.WQ
            )
        if self.WK.shape[1] != kv_heads * self.d_k:
            groups = self.WK.shape[1] // self.d_k if self.d_k else 0
            hint = (
                f"; for grouped-query attention with {groups} K/V head{'s' if groups > 1 else ''}, "
                f"set kv_heads: {groups}"
                if self.kv_heads is None
                and groups
                and self.WK.shape[1] % self.d_k == 0
                and heads % groups == 0
                else ""
            )
            self._shape_error(
                "weights.WK",
                f"{d_model} × {kv_heads * self.d_k} (d_model × kv_heads·d_k = {d_model} × "
                f"{kv_heads}·{self.d_k}, d_k from WQ){hint}",
                self.WK,
            )
        if self.WV.shape[1] % kv_heads:
            self._shape_error(
                "weights.WV", f"a number of columns divisible by kv_heads ({kv_heads})", self.WV
            )
        if self.WO is not None and self.WO.shape != (heads * self.d_v, d_model):
            self._shape_error(
                "weights.WO",
                f"{heads * self.d_v} × {d_model} (heads·d_v × d_model = {heads}·{self.d_v} × "
                f"{d_model})",
                self.WO,
            )
        if isinstance(self.positions, np.ndarray) and (
            self.positions.ndim != 2 or self.positions.shape[1] != d_model
        ):
            self._shape_error(
                "positions", f"vectors of {d_model} numbers (d_model)", self.positions
            )
        if isinstance(self.positions, str) and self.positions != "sinusoidal":
            raise InputError(source=self.source, field="positions",
                             expected="none, sinusoidal or a list of vectors",
                             found=repr(self.positions))  # fmt: skip
        if self.causal and self.context is not None:
            raise InputError(
                "a causal mask hides later tokens of the same sequence; with a context "
                "(cross-attention) every query sees every context token",
                source=self.source,
                field="causal",
                expected="false with context",
                found="true",
            )

    def _check_heads(self) -> None:
        for name, value in (("heads", self.heads), ("kv_heads", self.n_kv_heads)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(source=self.source, field=name, expected="a whole number ≥ 1",
                                 found=repr(value))  # fmt: skip
        if self.heads % self.n_kv_heads:
            divisors = [k for k in range(1, self.heads + 1) if self.heads % k == 0]
            raise InputError(
                "each K/V head serves the same number of query heads",
                source=self.source,
                field="kv_heads",
                expected=f"a divisor of heads ({self.heads}): "
                + ", ".join(str(k) for k in divisors),
                found=str(self.n_kv_heads),
            )

    def _shape_error(self, field_name: str, expected: str, matrix: Matrix) -> None:
        found = " × ".join(str(n) for n in matrix.shape)
        raise InputError(source=self.source, field=field_name, expected=expected, found=found)

    @property
    def n_kv_heads(self) -> int:
        """K/V heads: ``kv_heads``, or ``heads`` (plain multi-head) where not given."""
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def group(self) -> int:
        """How many query heads share each K/V head: 1 (MHA) up to heads (MQA)."""
        return self.heads // self.n_kv_heads

    @property
    def d_model(self) -> int:
        return int(next(iter(self.embeddings.values())).shape[0])

    @property
    def d_k(self) -> int:
        """Width of one head's queries and keys (what √d_k scales by)."""
        return int(self.WQ.shape[1]) // self.heads

    @property
    def d_v(self) -> int:
        """Width of one head's values."""
        return int(self.WV.shape[1]) // self.n_kv_heads

    @property
    def position_kind(self) -> str:
        if self.positions is None:
            return "none"
        return "sinusoidal" if isinstance(self.positions, str) else "learned"

    def resolve(self, token: str) -> str | None:
        """The vocabulary key for ``token``: exact match first, then lower-case."""
        if token in self.embeddings:
            return token
        lower = token.lower()
        return lower if lower in self.embeddings else None

    def embed(self, tokens: Sequence[str], field_name: str = "embeddings") -> Matrix:
        """Stack the embedding rows of ``tokens`` into ``[n × d_model]``.

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
                field=field_name,
            )
        return np.stack([self.embeddings[k] for k in keys if k is not None])


def _describe_vocabulary(vocabulary: list[str]) -> str:
    shown = ", ".join(vocabulary[:_VOCAB_SHOWN])
    hidden = len(vocabulary) - _VOCAB_SHOWN
    return f"{shown}, … and {hidden} more" if hidden > 0 else shown
