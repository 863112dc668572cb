"""A model file's matrices and vectors: embeddings, weights, biases, learned positions.

:mod:`attntrace.modelfile.model_file` hands each of these fields here as parsed (lists of
lists of numbers, or the name of a ``.npy`` file); each comes back as a read-only float64
array, or an :class:`InputError` at its field path (``weights.WQ[0][1]``). How the
shapes fit together (WQ's rows are d_model) is :class:`ModelSpec`'s check, for Python
callers too; here a matrix only has to be one (rows of one length, finite numbers).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError, describe
from attntrace.kernel import fields
from attntrace.kernel.frozen import freeze
from attntrace.kernel.spec import BIAS_OF_WEIGHT, Matrix
from attntrace.modelfile.npy_files import NpyReader

KNOWN_WEIGHTS = ("WQ", "WK", "WV", "WO")
REQUIRED_WEIGHTS = ("WQ", "WK", "WV")


def refuse_duplicates(value: Mapping[str, Any], field: str | None) -> None:
    """Refuse a key the file gives twice (the parser records them, with the YAML line)."""
    for key, line in getattr(value, "duplicates", ()):
        at = f" (line {line})" if line is not None else ""
        raise InputError(f"duplicate key {key!r}{at}: each key may appear once", field=field)


def _mapping(value: Any, field: str, expected: str) -> Mapping[str, Any]:
    """``value`` as a non-empty mapping without duplicated keys, or an InputError."""
    checked = fields.mapping(value, field, expected, empty=False)
    refuse_duplicates(checked, field)
    return checked


def weight_matrices(value: Any, arrays: NpyReader) -> dict[str, Matrix]:
    """``weights: {WQ, WK, WV, WO}``: each a matrix, or a .npy file's."""
    value = _mapping(value, "weights", "a mapping with WQ, WK, WV")
    fields.known_keys(value, KNOWN_WEIGHTS, "weights", noun="weight matrix")
    fields.required_keys(value, REQUIRED_WEIGHTS, "weights", noun="matrix")
    return {
        key: arrays.load(given, f"weights.{key}")
        if arrays.names_file(given)
        else matrix(given, f"weights.{key}")
        for key, given in value.items()
    }


def bias_vectors(value: Any) -> dict[str, Matrix]:
    """``biases: {bQ, bK, bV, bO}``: optional vectors added after WQ, WK, WV and WO."""
    if value is None or (isinstance(value, Mapping) and not value):  # none, or {}
        return {}
    value = _mapping(value, "biases", "a mapping of bQ, bK, bV, bO to vectors")
    fields.known_keys(value, tuple(BIAS_OF_WEIGHT), "biases", noun="bias")
    return {key: vector(given, f"biases.{key}") for key, given in value.items()}


def embeddings_table(value: Any, vocabulary: Any, arrays: NpyReader) -> dict[str, Matrix]:
    """token -> vector: a mapping, or a .npy table whose rows the ``vocabulary`` names."""
    if arrays.names_file(value):
        return _named_rows(arrays.load(value, "embeddings"), vocabulary)
    if vocabulary is not None:
        raise InputError(
            field="vocabulary",
            expected="nothing, unless embeddings is a .npy file",
            found=describe(vocabulary),
        )
    value = _mapping(value, "embeddings", "a non-empty mapping of token -> vector")
    if all(type(token) is str and fields.is_token(token) for token in value):
        rows = _plain_rows(list(value.values()))  # one table, frozen once
        if rows is not None:
            return dict(zip(value, rows, strict=True))
    table: dict[str, Matrix] = {}
    first_token: str | None = None
    for token, given in value.items():
        if not fields.is_token(token):
            raise InputError(
                field="embeddings",
                found=describe(token),
                expected=(
                    "a non-empty token"
                    if not token
                    else "tokens without spaces (a sentence is split on whitespace)"
                ),
            )
        row = vector(given, f"embeddings.{token}")
        if first_token is None:
            first_token = token
        elif len(row) != len(table[first_token]):
            raise InputError(
                field=f"embeddings.{token}",
                expected=f"a vector of {len(table[first_token])} numbers "
                f"(d_model, the length of {first_token!r})",
                found=fields.counted(len(row), "number"),
            )
        table[token] = row
    return table


def _named_rows(rows: Matrix, vocabulary: Any) -> dict[str, Matrix]:
    """The rows of an embedding table, named by the vocabulary (a list of tokens)."""
    tokens = fields.texts(
        vocabulary,
        "vocabulary",
        empty=True,
        expected=f"a list of the {rows.shape[0]} tokens the table's rows stand for",
        item="a token (a string: quote numbers)",
    )
    if len(tokens) != rows.shape[0]:
        raise InputError(
            field="vocabulary",
            expected=f"{rows.shape[0]} tokens (one per row of embeddings)",
            found=describe(len(tokens)),
        )
    table: dict[str, Matrix] = {}
    for index, token in enumerate(tokens):
        if not fields.is_token(token) or token in table:
            raise InputError(
                field=f"vocabulary[{index}]",
                expected="a non-empty token without spaces, given once",
                found=describe(token),
            )
        table[token] = rows[index]
    return table


def vector(value: Any, field: str) -> Matrix:
    """A non-empty list of finite numbers (or, from Python, a numpy vector)."""
    if isinstance(value, np.ndarray):  # from Python: a model given as a mapping of arrays
        checked = _real_array(value, 1, field)
        if checked is not None:
            return checked
        value = value.tolist()
    row: Matrix = _stacked([value], field, row_fields=False)[0]
    return row


def matrix(value: Any, field: str) -> Matrix:
    """A non-empty list of rows of finite numbers, the rows of one length."""
    if isinstance(value, np.ndarray):
        checked = _real_array(value, 2, field)
        if checked is not None:
            return checked
        value = value.tolist()
    if (
        not isinstance(value, list)
        or not value
        or not all(map(isinstance, value, itertools.repeat(list)))
    ):
        raise InputError(
            field=field,
            expected="a matrix (a non-empty list of rows, each a list of numbers)",
            found=describe(value),
        )
    return _stacked(value, field, row_fields=True)


# What a parsed number is (a bool, a numpy scalar, a LongInteger are not: their rows go
# the slow way, which says what is wrong with them).
_PLAIN_NUMBERS = frozenset((float, int))


def _stacked(rows: list[Any], field: str, *, row_fields: bool) -> Matrix:
    """``rows`` (lists of numbers) as one frozen float64 matrix, in time linear in the
    numbers: one pass over their types, one conversion by numpy, one check of them all
    for NaN and infinity, one freeze. Anything else (a ragged row, a string, a bool, a
    NaN) goes the row-by-row way, which names the first wrong number at its field path.
    ``row_fields``: ``field[i]`` is row i's path (a matrix's), else ``field`` is (a
    vector's, given as the one row)."""
    fast = _plain_rows(rows)
    return fast if fast is not None else _stacked_slowly(rows, field, row_fields=row_fields)


def _plain_rows(rows: list[Any]) -> Matrix | None:
    """``rows`` as one frozen float64 matrix where they are non-empty lists of one
    length of plain finite numbers (the common case, checked at C speed); else None."""
    width = len(rows[0]) if rows and isinstance(rows[0], list) else 0
    if not width or set(map(type, rows)) != {list} or set(map(len, rows)) != {width}:
        return None
    flat = list(itertools.chain.from_iterable(rows))
    if not set(map(type, flat)) <= _PLAIN_NUMBERS:
        return None
    try:
        array = np.array(flat, dtype=np.float64)
    except OverflowError:  # an integer past float64: said the slow way
        return None
    del flat
    if not np.isfinite(array).all():
        return None
    return freeze(array.reshape(len(rows), width), finite=True)


def _stacked_slowly(rows: list[Any], field: str, *, row_fields: bool) -> Matrix:
    """:func:`_stacked` row by row: the first wrong number, then the first row of
    another length, an error; numbers of other types (numpy's) converted one by one."""
    paths = [f"{field}[{i}]" for i in range(len(rows))] if row_fields else [field]
    checked = [fields.numbers(row, path) for row, path in zip(rows, paths, strict=True)]
    for numbers, path in zip(checked, paths, strict=True):
        if len(numbers) != len(checked[0]):
            raise InputError(
                field=path,
                expected=f"{len(checked[0])} numbers like row 0 (rows of a matrix have one length)",
                found=describe(len(numbers)),
            )
    return freeze(np.array(checked, dtype=np.float64), finite=True)


# The dtypes whose numbers float64 holds exactly (a longdouble's may not: it goes by lists).
_REAL_DTYPES = frozenset(np.dtype(t) for t in ("float16", "float32", "float64"))


def _real_array(value: npt.NDArray[Any], ndim: int, field: str) -> Matrix | None:
    """A non-empty array of real numbers with ``ndim`` axes (a Python caller's, or a .npy
    matrix ``--set`` edited), checked at numpy's speed with the messages the lists get;
    None for any other array, which is checked as the lists it holds."""
    real = value.dtype.kind in "iu" or value.dtype in _REAL_DTYPES
    if not real or value.ndim != ndim or value.size == 0:
        return None
    array = np.array(value, dtype=np.float64)  # a copy: the caller's array stays theirs
    bad = ~np.isfinite(array)
    if bad.any():
        at = tuple(int(axis[0]) for axis in np.nonzero(bad))
        raise InputError(
            field=field + "".join(f"[{i}]" for i in at),
            expected="a finite number",
            found=describe(float(array[at])),
        )
    return freeze(array, finite=True)
