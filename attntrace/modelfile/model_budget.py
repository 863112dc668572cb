"""What loading a model file takes, counted before the work: parsing, then converting.

A model file within the size limit (256 MiB) can still take far more memory than that:
parsed, each number of a matrix written as text is a Python float in a list (some 36
bytes where the text held 5), and a ``.npy`` file of int8 it names becomes float64
(8 times its bytes; a sparse file, far more). So the cost is counted from what is known
before each step, against the memory budget (:mod:`attntrace.kernel.budget`):

- before parsing, from the text alone (:func:`parsed_bytes`: its lists, numbers and
  mappings, counted by their punctuation, at what CPython takes for each);
- before any matrix is converted (:func:`check_matrices`): the parsed document, every
  ``.npy`` file's matrix by its header's shape, and the text matrices as float64 (with
  the list of numbers one of them takes while it is converted). The headers are checked
  against the embeddings' width first, so a ``WQ`` of 16,000 rows in a d_model-2 model
  is the shape error it is, at once, not after 2 GB of converting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from attntrace.errors import InputError
from attntrace.kernel.budget import FLOAT, refuse_past_budget
from attntrace.kernel.fields import shape_text
from attntrace.modelfile.npy_files import NpyHeader, NpyReader

# What CPython takes for what parsing makes of the text, in bytes, by the punctuation
# that marks it (measured with tracemalloc; tests/modelfile/test_model_budget.py holds
# the estimate above what parsing allocates, for the costliest shapes of text): a comma
# is one more value in a list (a float and its pointer, with the room a list grows
# by), a colon one more entry in a mapping, a quote half a string, a bracket a list (its
# header and room for a few items, appended one at a time), a brace a mapping (a dict
# that records duplicate keys). An upper bound: an int or a short string takes less than
# a float. YAML's parser holds a node for each value besides (its marks, its tag), some
# 500 bytes, and a mapping's are dearer still.
JSON_ITEM, JSON_ENTRY, JSON_QUOTE, JSON_LIST, JSON_MAPPING = 40, 80, 40, 104, 600
YAML_ITEM, YAML_MAPPING = 500, 400

# The matrix fields a model file may give as a .npy file (the embedding table's rows
# are d_model long; a weight's rows are d_model; positions' rows too).
_WEIGHTS = ("WQ", "WK", "WV", "WO")


def parsed_bytes(text: str, *, is_json: bool) -> int:
    """An upper bound of the memory parsing ``text`` takes, the text included."""
    if is_json:
        return (
            len(text)
            + JSON_ITEM * text.count(",")
            + JSON_ENTRY * text.count(":")
            + JSON_QUOTE * text.count('"')
            + JSON_LIST * text.count("[")
            + JSON_MAPPING * text.count("{")
        )
    # a YAML value is separated from the next by a comma (flow), a new line (block),
    # a dash (a block sequence's item) or a colon (a mapping's value)
    items = sum(text.count(mark) for mark in (",", "\n", "-", ":", "[", "{"))
    mappings = text.count(":") + text.count("{")
    return len(text) + YAML_ITEM * (items + 1) + YAML_MAPPING * mappings


def check_parse(text: str, *, is_json: bool) -> int:
    """Refuse to parse ``text`` past the budget; else the bytes it will take."""
    cost = parsed_bytes(text, is_json=is_json)
    refuse_past_budget("reading the model file", {"its parsed text": cost})
    return cost


def check_matrices(document: Mapping[str, Any], arrays: NpyReader, parsed: int) -> None:
    """Read the header of every ``.npy`` file ``document`` names, check each one's
    shape against the embeddings' width, then refuse past the budget what the model's
    matrices will take as float64 with the ``parsed`` document still held."""
    headers = _headers(document, arrays)
    _check_widths(document, headers)
    parts = {"the parsed file": parsed}
    largest_text = 0
    for field, value in _matrix_fields(document):
        header = headers.get(field)
        if header is not None:
            parts[field] = header.held_bytes
        else:
            numbers = _text_numbers(value)
            parts[field] = FLOAT * numbers
            largest_text = max(largest_text, numbers)
    biases = document.get("biases")
    if isinstance(biases, Mapping):
        parts["biases"] = FLOAT * _text_numbers(biases)
    parts["converting"] = FLOAT * largest_text  # the flat list of one while converted
    refuse_past_budget("loading the model", parts)


def _matrix_fields(document: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The fields that become float64 matrices, with the values the file gives them."""
    found: list[tuple[str, Any]] = [("embeddings", document.get("embeddings"))]
    weights = document.get("weights")
    if isinstance(weights, Mapping):
        found += [(f"weights.{key}", weights[key]) for key in _WEIGHTS if key in weights]
    for field in ("positions", "target"):
        if document.get(field) is not None:
            found.append((field, document[field]))
    return found


def _headers(document: Mapping[str, Any], arrays: NpyReader) -> dict[str, NpyHeader]:
    """The checked header of each ``.npy`` file named, by field (numbers unread)."""
    return {
        field: arrays.header(value, field)
        for field, value in _matrix_fields(document)
        if arrays.names_file(value)
    }


def _text_numbers(value: Any) -> int:
    """How many numbers a matrix (or a vector, or a mapping of vectors) written as text
    holds, by the lengths of its lists (what is no list holds none)."""
    if isinstance(value, Mapping):
        return sum(_text_numbers(row) for row in value.values())
    if isinstance(value, np.ndarray):  # a Python caller's, or a .npy matrix edited
        return int(value.size)
    if not isinstance(value, list):
        return 0
    return sum(len(row) if isinstance(row, list) else 1 for row in value)


def _check_widths(document: Mapping[str, Any], headers: Mapping[str, NpyHeader]) -> None:
    """A ``.npy`` weight whose rows, or learned positions whose columns, are not the
    embeddings' width: the error :class:`ModelSpec` would give once it was converted."""
    d_model = _embedding_width(document, headers)
    if d_model is None:
        return
    for key in ("WQ", "WK", "WV"):
        header = headers.get(f"weights.{key}")
        if header is not None and header.shape[0] != d_model:
            raise InputError(
                field=f"weights.{key}",
                expected=f"{d_model} rows (d_model, the embeddings' length)",
                found=shape_text(header.shape),
            )
    positions = headers.get("positions")
    if positions is not None and positions.shape[1] != d_model:
        raise InputError(
            field="positions",
            expected=f"vectors of {d_model} numbers (d_model)",
            found=shape_text(positions.shape),
        )


def _embedding_width(document: Mapping[str, Any], headers: Mapping[str, NpyHeader]) -> int | None:
    """d_model: the columns of a ``.npy`` table, or the length of the first vector."""
    if "embeddings" in headers:
        return headers["embeddings"].shape[1]
    embeddings = document.get("embeddings")
    if isinstance(embeddings, Mapping) and embeddings:
        first = next(iter(embeddings.values()))
        if isinstance(first, list) and first:
            return len(first)
    return None
