"""A validated model: what attention needs, with nothing left to check.

:mod:`attntrace.modelfile.model_file` turns a file into typed values (matrices, numbers, strings);
:class:`ModelSpec` checks that they fit together (the shapes of docs/model-file.md#shapes) in
``__post_init__``, so a spec built from Python is held to the same rules as one from a
file. Tokens are looked up here, because the lookup rule (exact, then lower-case) is
part of the model's contract, not of the file format; what an unknown token's error
says is :mod:`attntrace.kernel.vocabulary`'s. How the block computes with these fields
(the projections, RoPE, attention) is :mod:`attntrace.forward.attention`'s: a spec only
hands out each head's columns (:meth:`ModelSpec.head_weight`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace import arguments
from attntrace.errors import InputError, describe
from attntrace.kernel.fields import (
    check_rope,
    checked_array,
    counted,
    is_token,
    require_finite,
    rope_frequencies_fit,
    shape_text,
    whole,
)
from attntrace.kernel.frozen import is_frozen, known_finite
from attntrace.kernel.ops import head_columns, rope_frequencies
from attntrace.kernel.variants import Variants, check_variants
from attntrace.kernel.vocabulary import unknown_tokens

Matrix = npt.NDArray[np.float64]

POSITION_KINDS = ("none", "sinusoidal", "learned", "rope", "alibi")
# How RoPE pairs a head's dimensions (core.ops.rope): i with i + d/2 (Hugging Face's
# rotate_half), or neighbours 2i and 2i+1 (RoFormer, GPT-J, Meta's LLaMA code).
ROPE_PAIRINGS = ("half", "interleaved")
# Each bias vector and the matrix whose columns it adds to.
BIAS_OF_WEIGHT = {"bQ": "WQ", "bK": "WK", "bV": "WV", "bO": "WO"}


def _check_key(key: object, name: str) -> None:
    """A key of ``embeddings`` or ``biases``: a str (TypeError), and for embeddings a
    token a sentence can hold (InputError: a sentence is split on whitespace)."""
    if not isinstance(key, str):
        raise arguments.wrong_type(key, f"ModelSpec.{name} keys", "str")
    if name == "embeddings" and not is_token(key):
        raise InputError(
            field="embeddings",
            expected="non-empty tokens without spaces (a sentence is split on whitespace)",
            found=describe(key),
        )


@dataclass(frozen=True)
class GivenInputs:
    """X given row by row instead of looked up: a real model's hidden state at a layer.

    ``X`` is ``[n × d_model]``, one row per token of the sentence in order (a repeated
    token has its own row: in a trained model its hidden state depends on its context).
    ``formula`` is how the X stage reads, e.g. ``X = hidden state entering layer 3``.
    """

    X: Matrix
    formula: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "X", checked_array(self.X, "GivenInputs.X", "X", 2))
        arguments.text(self.formula, "GivenInputs.formula")


@dataclass(frozen=True, eq=False)
class ModelSpec:
    """One attention block's parameters and vocabulary.

    ``embeddings`` maps a token to its vector of length ``d_model``. ``WQ`` is
    ``d_model × heads·d_k``, ``WK`` ``d_model × kv_heads·d_k``, ``WV``
    ``d_model × kv_heads·d_v``, and the optional ``WO`` ``heads·d_v × d_model``.
    ``positions`` is None, ``"sinusoidal"``, ``"rope"`` (rotary, applied to Q and K with
    ``rope_base`` and ``rope_pairing``: ``"half"``, i with i + d_k/2, or ``"interleaved"``,
    2i with 2i+1; ``rope_frequencies``, where given, replace the base's: a real model's
    scaled or partial RoPE), or learned vectors ``[max_len × d_model]``. ``context`` makes it
    cross-attention (K, V from it). ``biases`` holds optional vectors ``bQ``, ``bK``,
    ``bV`` (one number per column of WQ, WK, WV) and ``bO`` (d_model, with WO). ``given``
    replaces the embeddings lookup for a real model's layer (see :class:`GivenInputs`).

    Every field is checked when the spec is made: a wrong Python type (a list where an
    array goes, a str for heads) is a TypeError naming the field, a value that does not
    fit (shapes, a NaN, heads 0) an :class:`InputError` as for a model file. Arrays are
    kept as read-only float64 copies (integer arrays become floats): changing the arrays
    given afterwards changes nothing here. Equality is identity, as for a Trace.
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
    rope_base: float = 10000.0
    biases: Mapping[str, npt.NDArray[np.float64]] = field(default_factory=dict)
    given: GivenInputs | None = None
    context: str | None = None
    name: str = "model"
    description: str = ""
    sentence: str | None = None
    source: str | None = field(default=None, compare=False)
    # Last, so that every earlier field keeps its place for positional callers. Checked
    # always, used with positions "rope" only (as rope_base is).
    rope_pairing: str = "half"
    # What `grad --loss mse` and `train --loss mse` pull the block's output toward: one
    # row per token, as wide as the block's output (its rows are checked against the
    # sentence when a loss is computed: the model does not know the sentence's length).
    target: Matrix | None = None
    # The options of today's models beyond the paper's (docs/variants.md): a sliding
    # window and sinks, ALiBi's slopes, QK-norm, soft-capping, a sink logit. None by default.
    variants: Variants = field(default_factory=Variants)
    # RoPE's frequency per turned pair where a base does not say them (Llama 3.1's scaled
    # RoPE; fewer than d_k/2 turn the first dimensions only): see turn_frequencies.
    rope_frequencies: npt.NDArray[np.float64] | None = None

    def __post_init__(self) -> None:
        """The shape rules of docs/model-file.md#shapes; the first broken one is an
        InputError, located in the model's ``source`` (its file) here, once."""
        try:
            self._check()
        except InputError as error:
            raise error.with_source(self.source) from None

    def _check(self) -> None:
        """Each rule in turn, one helper a group of fields: the first broken is the error."""
        self._check_types()
        self._check_heads()
        self._check_weights()
        self._check_positions()
        self._check_rope()
        self._check_biases()
        check_variants(
            self.variants,
            heads=self.heads,
            d_k=self.d_k,
            causal=self.causal,
            alibi=self.position_kind == "alibi",
            context=self.context is not None,
        )
        self._check_rows()
        self._check_context()

    def _check_weights(self) -> None:
        """WQ, WK, WV and WO fit the embeddings and the heads (docs/model-file.md#shapes)."""
        d_model, heads, kv_heads = self.d_model, self.heads, self.n_kv_heads
        rows_of = {"WQ": self.WQ, "WK": self.WK, "WV": self.WV}
        for name, matrix in rows_of.items():
            if matrix.shape[0] != d_model:  # 2-D: _check_types made them matrices
                self._shape_error(
                    f"weights.{name}", f"{d_model} rows (d_model, the embeddings' length)", matrix
                )
        if self.WQ.shape[1] % heads:
            self._shape_error(
                "weights.WQ", f"a number of columns divisible by heads ({heads})", self.WQ
            )
        if self.WK.shape[1] != kv_heads * self.d_k:
            self._shape_error(
                "weights.WK",
                f"{d_model} × {kv_heads * self.d_k} (d_model × kv_heads·d_k = {d_model} × "
                f"{kv_heads}·{self.d_k}, d_k from WQ){self._gqa_hint()}",
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

    def _gqa_hint(self) -> str:
        """``; for grouped-query attention with 2 K/V heads, set kv_heads: 2`` where WK's
        columns make K/V heads that divide heads and kv_heads was not given; else empty."""
        groups = self.WK.shape[1] // self.d_k if self.d_k else 0
        return (
            f"; for grouped-query attention with {groups} K/V head{'s' if groups > 1 else ''}, "
            f"set kv_heads: {groups}"
            if self.kv_heads is None
            and groups
            and self.WK.shape[1] % self.d_k == 0
            and self.heads % groups == 0
            else ""
        )

    def _check_positions(self) -> None:
        """Learned positions as wide as the embeddings; a named kind one of those known."""
        if isinstance(self.positions, np.ndarray) and self.positions.shape[1] != self.d_model:
            self._shape_error(
                "positions", f"vectors of {self.d_model} numbers (d_model)", self.positions
            )
        named = ("sinusoidal", "rope", "alibi")
        if isinstance(self.positions, str) and self.positions not in named:
            raise InputError(
                field="positions",
                expected="none, sinusoidal, rope, alibi or a list of vectors",
                found=describe(self.positions),
            )

    def _check_rows(self) -> None:
        """The target's rows as wide as the block's output; a given X's as the embeddings'."""
        heads, d_model = self.heads, self.d_model
        width = d_model if self.WO is not None else heads * self.d_v
        if self.target is not None and self.target.shape[1] != width:
            what = "d_model, with WO" if self.WO is not None else f"heads·d_v = {heads}·{self.d_v}"
            self._shape_error(
                "target", f"rows of {width} numbers (the block output's width: {what})", self.target
            )
        if self.given is not None and self.given.X.shape[1] != d_model:
            self._shape_error("X", f"rows of {d_model} numbers (d_model)", self.given.X)

    def _check_context(self) -> None:
        """What cross-attention rules out: RoPE and a causal mask are about one sequence."""
        if self.position_kind == "rope" and self.context is not None:
            raise InputError(
                "RoPE turns queries and keys by their positions in one sequence; a context "
                "is another sequence, and offsets between the two mean nothing",
                field="positions",
                expected="none, sinusoidal or learned with a context",
                found="rope",
            )
        if self.causal and self.context is not None:
            raise InputError(
                "a causal mask hides later tokens of the same sequence; with a context "
                "(cross-attention) every query sees every context token",
                field="causal",
                expected="false with context",
                found="true",
            )

    def _check_types(self) -> None:
        """Each field of the right Python type (TypeError), its arrays copied read-only."""
        set_field = object.__setattr__  # frozen: the checked values replace the given ones
        arguments.optional_text(self.source, "ModelSpec.source")
        for name in ("name", "description"):
            arguments.text(getattr(self, name), f"ModelSpec.{name}")
        for name in ("sentence", "context"):
            arguments.optional_text(getattr(self, name), f"ModelSpec.{name}")
        set_field(self, "heads", arguments.whole(self.heads, "ModelSpec.heads"))
        set_field(self, "kv_heads", arguments.optional_whole(self.kv_heads, "ModelSpec.kv_heads"))
        set_field(self, "causal", arguments.flag(self.causal, "ModelSpec.causal"))
        set_field(self, "rope_base", arguments.real(self.rope_base, "ModelSpec.rope_base"))
        arguments.text(self.rope_pairing, "ModelSpec.rope_pairing")
        for name in ("WQ", "WK", "WV", "WO", "target", "rope_frequencies"):
            array = getattr(self, name)
            if array is not None or name in ("WQ", "WK", "WV"):  # the others are optional
                path = f"weights.{name}" if name[0] == "W" else name
                ndim = 1 if name == "rope_frequencies" else 2
                set_field(self, name, checked_array(array, f"ModelSpec.{name}", path, ndim))
        positions: Any = self.positions
        if isinstance(positions, str) and positions == "none":
            positions = None
        elif isinstance(positions, np.ndarray) or not isinstance(positions, str | None):
            if not isinstance(positions, np.ndarray):
                raise arguments.wrong_type(
                    positions,
                    "ModelSpec.positions",
                    "None, 'sinusoidal', 'rope', 'alibi' or a numpy array of position vectors",
                )
            positions = checked_array(positions, "ModelSpec.positions", "positions", 2)
        set_field(self, "positions", positions)
        if not isinstance(self.variants, Variants):
            raise arguments.wrong_type(self.variants, "ModelSpec.variants", "a Variants")
        if self.given is not None and not isinstance(self.given, GivenInputs):
            raise arguments.wrong_type(self.given, "ModelSpec.given", "a GivenInputs or None")
        set_field(self, "embeddings", self._vectors("embeddings", self.embeddings))
        set_field(self, "biases", self._vectors("biases", self.biases))
        if not self.embeddings and self.given is None:
            raise InputError(
                field="embeddings",
                expected="a non-empty mapping of token -> vector",
                found="an empty mapping",
            )

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (and copied) through the constructor, so a copy is checked and frozen
        as the original was."""
        values = [getattr(self, f.name) for f in fields(self)]
        return (ModelSpec, tuple(dict(v) if isinstance(v, Mapping) else v for v in values))

    def _vectors(self, name: str, given: object) -> Mapping[str, Matrix]:
        """``embeddings`` or ``biases``: str keys to vectors, copied read-only, the
        mapping too (a token added to the caller's dict afterwards is not added here)."""
        if not isinstance(given, Mapping):
            raise arguments.wrong_type(
                given, f"ModelSpec.{name}", "a mapping of str to numpy vectors (a dict)"
            )
        vectors: dict[str, Matrix] = {}
        width = None
        shared: object = ()  # a frozen table whose rows are the vectors (none yet)
        shared_finite = False
        unchecked: list[Matrix] = []  # the vectors whose numbers are still to be checked
        for key, vector in given.items():
            _check_key(key, name)
            if (
                isinstance(vector, np.ndarray)
                and vector.dtype == np.float64
                and vector.ndim == 1
                and vector.size
                and not vector.flags.writeable
                and (vector.base is shared or is_frozen(vector))
            ):
                row = vector  # the package's own (a model file's): kept as it is
                if vector.base is not shared:  # the rows of one table are checked at once
                    shared, shared_finite = vector.base, known_finite(vector)
                if not shared_finite:
                    unchecked.append(row)
            else:
                row = checked_array(
                    vector, f"ModelSpec.{name}[{key!r}]", f"{name}.{key}", 1, finite=False
                )
                unchecked.append(row)
            vectors[key] = row
            if name != "embeddings":
                continue
            if width is None:
                width = len(row)
            elif len(row) != width:
                raise InputError(
                    field=f"embeddings.{key}",
                    expected=f"a vector of {width} numbers "
                    f"(d_model, the length of {next(iter(vectors))!r})",
                    found=counted(len(row), "number"),
                )
        # one NaN check for all: a vocabulary of thousands costs one pass, not thousands
        if unchecked and not np.isfinite(np.concatenate(unchecked)).all():
            for key, row in vectors.items():
                require_finite(row, f"{name}.{key}")
        return MappingProxyType(vectors)

    def _check_heads(self) -> None:
        for name, value in (("heads", self.heads), ("kv_heads", self.n_kv_heads)):
            whole(value, name)
        if self.heads % self.n_kv_heads:
            divisors = [k for k in range(1, self.heads + 1) if self.heads % k == 0]
            raise InputError(
                "each K/V head serves the same number of query heads",
                field="kv_heads",
                expected=f"a divisor of heads ({self.heads}): "
                + ", ".join(str(k) for k in divisors),
                found=str(self.n_kv_heads),
            )

    def _check_rope(self) -> None:
        """A known pairing; with rope a usable base and an even d_k; frequencies that fit."""
        if self.rope_pairing not in ROPE_PAIRINGS:  # a typo is an error with or without rope
            raise InputError(
                field="rope_pairing",
                expected="half or interleaved",
                found=describe(self.rope_pairing),
            )
        if self.rope_frequencies is not None:  # checked always, as the pairing is
            rope_frequencies_fit(self.rope_frequencies, self.d_k, "rope_frequencies")
        if self.position_kind == "rope":
            check_rope(self.rope_base, self.d_k)

    def _check_biases(self) -> None:
        for name, vector in self.biases.items():
            weight = BIAS_OF_WEIGHT.get(name)
            if weight is None:
                raise InputError(
                    field=f"biases.{name}", expected="one of bQ, bK, bV, bO", found=describe(name)
                )
            matrix = getattr(self, weight)
            if matrix is None:
                raise InputError(
                    f"{name} is added after {weight}",
                    field=f"biases.{name}",
                    expected=f"weights.{weight} with {name}",
                    found=f"no {weight}",
                )
            width = int(matrix.shape[1])
            if vector.shape[0] != width:  # a vector: _vectors admits no other shape
                raise InputError(
                    field=f"biases.{name}",
                    expected=f"{width} numbers (one per column of {weight})",
                    found=counted(int(vector.shape[0]), "number"),
                )

    def _shape_error(self, field_name: str, expected: str, matrix: Matrix) -> None:
        raise InputError(field=field_name, expected=expected, found=shape_text(matrix.shape))

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
        """Width of a token's vector: the embeddings', or WQ's rows where X is given."""
        if self.given is not None or not self.embeddings:
            return int(self.WQ.shape[0])
        return int(next(iter(self.embeddings.values())).shape[0])

    def bias(self, name: str) -> npt.NDArray[np.float64] | None:
        """The bias vector ``bQ``, ``bK``, ``bV`` or ``bO``, or None where there is none."""
        return self.biases.get(name)

    def head_weight(self, name: str, index: int) -> Matrix:
        """Head ``index``'s block of columns of ``name``, WQ, WK or WV: ``[d_model, d_k]``
        (``d_v`` for WV). ``index`` is the query head for WQ, the K/V head for WK and WV."""
        return head_columns(getattr(self, name), index, self._head_width(name))

    def head_bias(self, name: str, index: int) -> Matrix | None:
        """The same block of the bias ``name``, bQ, bK or bV; None where there is none."""
        bias = self.bias(name)
        return None if bias is None else head_columns(bias, index, self._head_width(name))

    def _head_width(self, name: str) -> int:
        return self.d_v if name in ("WV", "bV") else self.d_k

    @property
    def d_k(self) -> int:
        """Width of one head's queries and keys (what √d_k scales by)."""
        return int(self.WQ.shape[1]) // self.heads

    @property
    def d_v(self) -> int:
        """Width of one head's values."""
        return int(self.WV.shape[1]) // self.n_kv_heads

    @property
    def turn_frequencies(self) -> npt.NDArray[np.float64]:
        """The frequency RoPE turns each pair by (:func:`attntrace.kernel.ops.rope_frequencies`:
        ``rope_frequencies`` where given, else ``rope_base^(−2i/d_k)``): every path that
        turns Q or K reads its angles from here."""
        return rope_frequencies(self.d_k, self.rope_base, self.rope_frequencies)

    @property
    def position_kind(self) -> str:
        if self.positions is None:
            return "none"
        return self.positions if isinstance(self.positions, str) else "learned"

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
            raise InputError(
                unknown_tokens(unknown, tuple(self.embeddings)),
                source=self.source,
                field=field_name,
            )
        return np.stack([self.embeddings[k] for k in keys if k is not None])
