"""Model file (YAML or JSON) -> validated :class:`ModelSpec`. Every check lives here.

:mod:`attntrace.parse` turns the text into plain data; this module checks that data
against SPEC.md section 3. Every failure is one :class:`InputError` naming the file, the
field path, what was expected and what was found.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from attntrace.errors import InputError, describe
from attntrace.parse import parse_document
from attntrace.spec import ModelSpec

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
)
KNOWN_WEIGHTS = ("WQ", "WK", "WV", "WO")
REQUIRED_FIELDS = ("embeddings", "weights")
REQUIRED_WEIGHTS = ("WQ", "WK", "WV")


def load_model(path: str | Path, *, source: str | None = None) -> ModelSpec:
    """Read and validate the model file at ``path`` (YAML, or JSON by its ``.json`` suffix).

    ``source`` names the file in error messages (default: the path as given).
    """
    source = source or str(path)
    try:
        text = read_text(Path(path))
        document = parse_document(text, source, is_json=_is_json(Path(path)))
    except InputError as error:
        raise error.with_source(source) from None
    return model_from_document(document, source)


def _is_json(path: Path) -> bool:
    return path.suffix.lower() == ".json"


DEFAULT_MAX_MB = 256
MAX_MB_VARIABLE = "ATTNTRACE_MAX_FILE_MB"


def max_file_bytes() -> int:
    """The largest model or trace file read: 256 MB, or ATTNTRACE_MAX_FILE_MB."""
    value = os.environ.get(MAX_MB_VARIABLE, str(DEFAULT_MAX_MB))
    try:
        megabytes = float(value)
    except ValueError:
        raise InputError(field=MAX_MB_VARIABLE, expected="a number of megabytes",
                         found=repr(value)) from None  # fmt: skip
    return int(megabytes * 1024 * 1024)


def check_size(size: int, *, stream: bool = False) -> None:
    """Refuse ``size`` bytes over the limit; a stream is only read to just past it."""
    limit = max_file_bytes()
    if size > limit:
        found = (
            f"more than {limit / 2**20:g} MB" if stream else f"the file is {size / 2**20:.1f} MB"
        )
        raise InputError(
            f"{found}, over the limit of {limit / 2**20:g} MB "
            f"(set {MAX_MB_VARIABLE} to read larger files)"
        )


def read_text(path: Path) -> str:
    """The file's text, or an :class:`InputError` that says why it cannot be had.

    The error names no file: the caller knows what to call it (``with_source``). A file
    over the size limit is refused before it is read.
    """
    try:
        if path.is_file():
            check_size(path.stat().st_size)
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file") from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a model file") from None
    except OSError as error:
        raise InputError(f"cannot read the file: {error.strerror}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(
            f"not UTF-8 text (byte {error.start}): expected a YAML or JSON model file"
        ) from None
    if not text.strip():
        raise InputError("the file is empty", expected="a model (embeddings and weights)")
    return text


# ---------------------------------------------------------------------- validation


def model_from_document(document: Any, source: str | None = None) -> ModelSpec:
    """Check a parsed document against SPEC.md section 3 and build the :class:`ModelSpec`."""
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

    embeddings = _embeddings(document["embeddings"], source)
    weights = _weights(document["weights"], source)
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
        positions=_positions(document.get("positions"), source),
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


def _positions(value: Any, source: str | None) -> str | np.ndarray | None:
    """``none`` (or absent), ``sinusoidal``, or learned vectors: a list of d_model numbers each."""
    if value is None or value == "none":
        return None
    if value == "sinusoidal":
        return "sinusoidal"
    if isinstance(value, list):
        return _matrix(value, "positions", source)
    raise InputError(
        source=source,
        field="positions",
        expected="none, sinusoidal, or a list of position vectors",
        found=describe(value),
    )


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


def _embeddings(value: Any, source: str | None) -> dict[str, np.ndarray]:
    value = _mapping(value, "embeddings", "a non-empty mapping of token -> vector", source)
    table: dict[str, np.ndarray] = {}
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
                found=f"{len(row)} numbers",
            )
        table[token] = row
    return table


def _weights(value: Any, source: str | None) -> dict[str, np.ndarray]:
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
    return {key: _matrix(matrix, f"weights.{key}", source) for key, matrix in value.items()}


def _number(value: Any, field: str, source: str | None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(source=source, field=field, expected="a number", found=describe(value))
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise InputError(
            source=source, field=field, expected="a finite number", found=describe(value)
        )
    return number


def _vector(value: Any, field: str, source: str | None) -> np.ndarray:
    if isinstance(value, np.ndarray):  # from Python: a model given as a mapping of arrays
        value = value.tolist()
    if not isinstance(value, list) or not value:
        raise InputError(
            source=source,
            field=field,
            expected="a non-empty list of numbers",
            found=describe(value),
        )
    return np.array(
        [_number(x, f"{field}[{i}]", source) for i, x in enumerate(value)], dtype=np.float64
    )


def _matrix(value: Any, field: str, source: str | None) -> np.ndarray:
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
    return np.stack(rows)
