"""Model file (YAML or JSON) -> validated :class:`ModelSpec`. Every check lives here.

:mod:`attntrace.files.parse` turns the text into plain data; this module checks that data
against SPEC.md section 3. Every failure is one :class:`InputError` naming the file, the
field path, what was expected and what was found.
"""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from attntrace import arguments
from attntrace.core.frozen import freeze
from attntrace.core.spec import BIAS_OF_WEIGHT, Matrix, ModelSpec
from attntrace.errors import InputError, describe
from attntrace.files.parse import parse_document
from attntrace.files.reading import check_size, open_regular, read_stdin, read_text

# The fields of SPEC.md section 3.
KNOWN_FIELDS = (
    "name",
    "description",
    "sentence",
    "embeddings",
    "weights",
    "heads",
    "kv_heads",
    "causal",
    "positions",
    "context",
    "vocabulary",
    "biases",
    "rope_base",
)
KNOWN_WEIGHTS = ("WQ", "WK", "WV", "WO")
REQUIRED_FIELDS = ("embeddings", "weights")
REQUIRED_WEIGHTS = ("WQ", "WK", "WV")


def load_model(path: str | Path, *, source: str | None = None) -> ModelSpec:
    """Read and validate the model file at ``path`` (YAML, or JSON by its ``.json`` suffix).

    ``source`` names the file in error messages (default: the path as given). ``path``
    is a str or a :class:`pathlib.Path` (else a TypeError); a file that cannot be read or
    does not hold a valid model is an :class:`InputError` naming the file and the field.
    The arrays of the spec are read-only.
    """
    path = arguments.path("path", path, "a file name (str or pathlib.Path)")
    arguments.optional_text("source", source)
    if not str(path).strip():
        raise InputError(field="path", expected="a file name", found=repr(str(path)))
    source = source or str(path)
    try:
        text = read_text(Path(path))
        document = parse_document(text, source, is_json=_is_json(Path(path)))
    except InputError as error:
        raise error.with_source(source) from None
    return model_from_document(document, source, folder=Path(path).parent)


def load_model_stdin() -> ModelSpec:
    """Read and validate the model file on stdin (``--config -``), named ``stdin``.

    It is JSON if its first non-blank character is ``{``, YAML otherwise (a YAML file
    that starts with a flow mapping ``{`` is read as JSON: give it as a file). A ``.npy``
    matrix is named relative to the current folder.
    """
    source = "stdin"
    try:
        text = read_stdin()
        document = parse_document(text, source, is_json=re.match(r"\s*\{", text) is not None)
    except InputError as error:
        raise error.with_source(source) from None
    return model_from_document(document, source, folder=Path())


def _is_json(path: Path) -> bool:
    return path.suffix.lower() == ".json"


# ---------------------------------------------------------------------- validation


def model_from_document(
    document: Any, source: str | None = None, *, folder: Path | None = None
) -> ModelSpec:
    """Check a parsed document against SPEC.md section 3 and build the :class:`ModelSpec`.

    A matrix (a weight, the embedding table, learned positions) may be given as the name
    of a ``.npy`` file, relative to ``folder`` (the model file's own folder).
    """
    arrays = _NpyReader(folder, source)
    if not isinstance(document, Mapping):
        raise InputError(
            expected="a mapping of model fields at the top level (embeddings, weights, ...)",
            found=describe(document),
            source=source,
        )
    _refuse_duplicates(document, None, source)
    unknown = [key for key in document if key not in KNOWN_FIELDS]
    if unknown:
        names = ", ".join(repr(key) + _did_you_mean(key, KNOWN_FIELDS) for key in unknown)
        raise InputError(
            f"unknown field{'s' if len(unknown) > 1 else ''} {names} "
            f"(known fields: {', '.join(KNOWN_FIELDS)})",
            source=source,
        )
    for key in REQUIRED_FIELDS:
        if key not in document:
            raise InputError(f"missing required field {key!r}", source=source)

    embeddings = _embeddings(document["embeddings"], document.get("vocabulary"), source, arrays)
    weights = _weights(document["weights"], source, arrays)
    # Types here; how the shapes fit together, ModelSpec checks (for Python callers too).
    return ModelSpec(
        embeddings=embeddings,
        WQ=weights["WQ"],
        WK=weights["WK"],
        WV=weights["WV"],
        WO=weights.get("WO"),
        heads=_count(document, "heads", source) or 1,
        kv_heads=_count(document, "kv_heads", source),
        causal=_flag(document, "causal", source),
        positions=_positions(document.get("positions"), source, arrays),
        rope_base=_rope_base(document, source),
        biases=_biases(document.get("biases"), source),
        context=_optional_text(document, "context", source),
        name=_optional_text(document, "name", source) or _default_name(source),
        description=_optional_text(document, "description", source) or "",
        sentence=_optional_text(document, "sentence", source),
        source=source,
    )


def _refuse_duplicates(mapping: Mapping[str, Any], field: str | None, source: str | None) -> None:
    for key, line in getattr(mapping, "duplicates", ()):
        at = f" (line {line})" if line is not None else ""
        raise InputError(
            f"duplicate key {key!r}{at}: each key may appear once", source=source, field=field
        )


def _did_you_mean(key: str, known: tuple[str, ...]) -> str:
    """`` (did you mean 'weights'?)`` for a near miss such as ``Weights`` or ``kv_head``."""
    folded = {name.lower(): name for name in known}
    close = difflib.get_close_matches(key.lower(), list(folded), n=1, cutoff=0.7)
    return f" (did you mean {folded[close[0]]!r}?)" if close else ""


def _default_name(source: str | None) -> str:
    return Path(source.removeprefix("sample ")).stem if source else "model"


def _count(document: Mapping[str, Any], key: str, source: str | None) -> int | None:
    """A whole number ≥ 1 (heads, kv_heads), or None where the field is absent."""
    value = document.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(
            source=source, field=key, expected="a whole number ≥ 1", found=describe(value)
        )
    return value


def _flag(document: Mapping[str, Any], key: str, source: str | None) -> bool:
    value = document.get(key, False)
    if not isinstance(value, bool):
        raise InputError(source=source, field=key, expected="true or false", found=describe(value))
    return value


def _positions(value: Any, source: str | None, arrays: _NpyReader) -> str | Matrix | None:
    """``none`` (or absent), ``sinusoidal``, or learned vectors (a list, or a .npy file)."""
    if value is None or value == "none":
        return None
    if value in ("sinusoidal", "rope"):
        return str(value)
    if isinstance(value, list):
        return _matrix(value, "positions", source)
    if arrays.names_file(value):
        return arrays.load(value, "positions")
    raise InputError(
        source=source,
        field="positions",
        expected="none, sinusoidal, rope, or a list of position vectors",
        found=describe(value),
    )


def _rope_base(document: Mapping[str, Any], source: str | None) -> float:
    """RoPE's base (default 10000, as in RoFormer); meaningful only with ``positions: rope``."""
    if "rope_base" not in document:
        return 10000.0
    if document.get("positions") != "rope":
        raise InputError("rope_base sets the angles of rotary positions", source=source,
                         field="rope_base", expected="positions: rope with rope_base",
                         found=f"positions: {document.get('positions', 'none')}")  # fmt: skip
    return _number(document["rope_base"], "rope_base", source)


def _biases(value: Any, source: str | None) -> dict[str, Matrix]:
    """``biases: {bQ, bK, bV, bO}``: optional vectors added after WQ, WK, WV and WO."""
    if value is None or (isinstance(value, Mapping) and not value):  # none, or {}
        return {}
    value = _mapping(value, "biases", "a mapping of bQ, bK, bV, bO to vectors", source)
    for key in value:
        if key not in BIAS_OF_WEIGHT:
            raise InputError(
                f"unknown bias {key!r}{_did_you_mean(key, tuple(BIAS_OF_WEIGHT))} "
                f"(known: {', '.join(BIAS_OF_WEIGHT)})",
                source=source,
                field="biases",
            )
    return {key: _vector(vector, f"biases.{key}", source) for key, vector in value.items()}


def _optional_text(document: Mapping[str, Any], key: str, source: str | None) -> str | None:
    if key not in document or document[key] is None:
        return None
    value = document[key]
    if not isinstance(value, str):
        raise InputError(source=source, field=key, expected="a string", found=describe(value))
    return value


def _mapping(value: Any, field: str, expected: str, source: str | None) -> Mapping[str, Any]:
    """``value`` as a non-empty mapping without duplicated keys, or an InputError."""
    if not isinstance(value, Mapping) or not value:
        raise InputError(source=source, field=field, expected=expected, found=describe(value))
    _refuse_duplicates(value, field, source)
    return value


def _embeddings(
    value: Any, vocabulary: Any, source: str | None, arrays: _NpyReader
) -> dict[str, Matrix]:
    """token -> vector: a mapping, or a .npy table whose rows the ``vocabulary`` names."""
    if arrays.names_file(value):
        return _table(arrays.load(value, "embeddings"), vocabulary, source)
    if vocabulary is not None:
        raise InputError(source=source, field="vocabulary",
                         expected="nothing, unless embeddings is a .npy file",
                         found=describe(vocabulary))  # fmt: skip
    value = _mapping(value, "embeddings", "a non-empty mapping of token -> vector", source)
    table: dict[str, Matrix] = {}
    first_token: str | None = None
    for token, vector in value.items():
        field = f"embeddings.{token}"
        if not token:
            raise InputError(
                source=source, field="embeddings", expected="a non-empty token", found="''"
            )
        if any(ch.isspace() for ch in token):
            raise InputError(
                source=source,
                field="embeddings",
                expected="tokens without spaces (a sentence is split on whitespace)",
                found=repr(token),
            )
        row = _vector(vector, field, source)
        if first_token is None:
            first_token = token
        elif len(row) != len(table[first_token]):
            raise InputError(
                source=source,
                field=field,
                expected=f"a vector of {len(table[first_token])} numbers "
                f"(d_model, the length of {first_token!r})",
                found=f"{len(row)} number{'s' if len(row) != 1 else ''}",
            )
        table[token] = row
    return table


def _table(rows: Matrix, vocabulary: Any, source: str | None) -> dict[str, Matrix]:
    """The rows of an embedding table, named by the vocabulary (a list of tokens)."""
    if not isinstance(vocabulary, list):
        raise InputError(
            source=source,
            field="vocabulary",
            expected=f"a list of the {rows.shape[0]} tokens the table's rows stand for",
            found=describe(vocabulary),
        )
    for index, token in enumerate(vocabulary):
        if not isinstance(token, str):
            raise InputError(source=source, field=f"vocabulary[{index}]",
                             expected="a token (a string: quote numbers)",
                             found=describe(token))  # fmt: skip
    if len(vocabulary) != rows.shape[0]:
        raise InputError(source=source, field="vocabulary",
                         expected=f"{rows.shape[0]} tokens (one per row of embeddings)",
                         found=f"{len(vocabulary)}")  # fmt: skip
    table: dict[str, Matrix] = {}
    for index, token in enumerate(vocabulary):
        if not token or any(ch.isspace() for ch in token) or token in table:
            raise InputError(source=source, field=f"vocabulary[{index}]",
                             expected="a non-empty token without spaces, given once",
                             found=repr(token))  # fmt: skip
        table[token] = rows[index]
    return table


class _NpyReader:
    """Matrices stored as .npy files beside the model file, loaded safely (no pickles)."""

    def __init__(self, folder: Path | None, source: str | None) -> None:
        self.folder = folder
        self.source = source

    @staticmethod
    def names_file(value: Any) -> bool:
        return isinstance(value, str) and value.lower().endswith(".npy")

    def load(self, name: str, field: str) -> Matrix:
        if self.folder is None:
            raise InputError(source=self.source, field=field,
                             expected="numbers (a .npy file needs a model file to be "
                             "relative to)", found=repr(name))  # fmt: skip
        path = self.folder / name
        try:
            # A regular file only (it is memory-mapped), opened without waiting: a FIFO
            # or a device is refused before a read that could block or never end.
            with self._open(path, field) as head:
                check_size(os.fstat(head.fileno()).st_size)
                if head.read(6) != b"\x93NUMPY":
                    raise ValueError("it does not start as a .npy file does")
            # Memory-mapped first: a header that claims more than the file holds fails
            # here, instead of allocating what it claims.
            array = np.load(path, allow_pickle=False, mmap_mode="r")
        except InputError as error:
            if error.source is not None:  # from _open: complete
                raise
            raise InputError(error.message, source=self.source, field=field) from None
        except FileNotFoundError:
            raise InputError(
                source=self.source,
                field=field,
                expected="a .npy file (relative to the model file)",
                found=f"no file {str(path)!r}",
            ) from None
        except (OSError, ValueError) as error:  # not .npy, truncated, or pickled objects
            raise InputError(source=self.source, field=field, expected="a .npy array file",
                             found=f"{str(path)!r}: {_npy_problem(error)}") from None  # fmt: skip
        if array.ndim != 2 or not (
            np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
        ):
            shape = " × ".join(map(str, array.shape)) or "a scalar"
            raise InputError(source=self.source, field=field,
                             expected="a 2-D array of real numbers",
                             found=f"{shape} of {array.dtype}")  # fmt: skip
        if 0 in array.shape:
            raise InputError(source=self.source, field=field, expected="a non-empty matrix",
                             found=" × ".join(map(str, array.shape)))  # fmt: skip
        matrix = np.array(array, dtype=np.float64)  # into memory; the file is let go
        if not np.all(np.isfinite(matrix)):
            i, j = (int(x[0]) for x in np.nonzero(~np.isfinite(matrix)))
            raise InputError(
                source=self.source,
                field=f"{field}[{i}][{j}]",
                expected="a finite number",
                found=repr(float(matrix[i, j])),
            )
        return freeze(matrix, finite=True)  # the spec keeps it as it is (attntrace.core.frozen)

    def _open(self, path: Path, field: str) -> BinaryIO:
        try:
            return open_regular(path, "a .npy array file")
        except InputError as error:  # a FIFO, a device, a directory
            raise InputError(source=self.source, field=field, expected="a .npy array file",
                             found=f"{str(path)!r}: {error.message} (.npy files are "
                             "memory-mapped)") from None  # fmt: skip


def _npy_problem(error: Exception) -> str:
    """numpy's reason a .npy file would not load, without the Python internals a garbled
    header brings up (``malformed node or string ...: <ast.Name object at 0x7fa7...>``)."""
    text = str(error)
    if "malformed node" in text or " object at 0x" in text:
        return "its header is not the Python dictionary a .npy header is"
    return text


def _weights(value: Any, source: str | None, arrays: _NpyReader) -> dict[str, Matrix]:
    value = _mapping(value, "weights", "a mapping with WQ, WK, WV", source)
    for key in value:
        if key not in KNOWN_WEIGHTS:
            raise InputError(
                f"unknown weight matrix {key!r}{_did_you_mean(key, KNOWN_WEIGHTS)} "
                f"(known: {', '.join(KNOWN_WEIGHTS)})",
                source=source,
                field="weights",
            )
    for key in REQUIRED_WEIGHTS:
        if key not in value:
            raise InputError(f"missing required matrix {key!r}", source=source, field="weights")
    return {
        key: arrays.load(matrix, f"weights.{key}") if arrays.names_file(matrix)
        else _matrix(matrix, f"weights.{key}", source)
        for key, matrix in value.items()
    }  # fmt: skip


def _number(value: Any, field: str, source: str | None) -> float:
    """A finite number: an int or float (or, from Python, a numpy one: np.float32(1)); a
    bool is no number here."""
    if isinstance(value, bool | np.bool_) or not isinstance(
        value, int | float | np.integer | np.floating
    ):
        raise InputError(source=source, field=field, expected="a number", found=describe(value))
    try:
        with np.errstate(over="ignore"):  # a longdouble past float64's range: inf, refused
            number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise InputError(
            source=source, field=field, expected="a finite number", found=describe(value)
        )
    return number


def _vector(value: Any, field: str, source: str | None) -> Matrix:
    if isinstance(value, np.ndarray):  # from Python: a model given as a mapping of arrays
        value = value.tolist()
    if not isinstance(value, list) or not value:
        raise InputError(
            source=source,
            field=field,
            expected="a non-empty list of numbers",
            found=describe(value),
        )
    numbers = [_number(x, f"{field}[{i}]", source) for i, x in enumerate(value)]
    return freeze(np.array(numbers, dtype=np.float64), finite=True)


def _matrix(value: Any, field: str, source: str | None) -> Matrix:
    if isinstance(value, np.ndarray):
        value = value.tolist()

    if not isinstance(value, list) or not value or not all(isinstance(r, list) for r in value):
        raise InputError(
            source=source,
            field=field,
            expected="a matrix (a non-empty list of rows, each a list of numbers)",
            found=describe(value),
        )
    rows = [_vector(row, f"{field}[{i}]", source) for i, row in enumerate(value)]
    for i, row in enumerate(rows):
        if len(row) != len(rows[0]):
            raise InputError(
                source=source,
                field=f"{field}[{i}]",
                expected=f"{len(rows[0])} numbers like row 0 (rows of a matrix have one length)",
                found=f"{len(row)}",
            )
    return freeze(np.stack(rows), finite=True)
