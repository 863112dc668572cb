"""``--set PATH=VALUE``: edits to a parsed model document, made before it is validated.

An edit names a place in the model file's structure (``weights.WQ[0][1]``,
``embeddings.cat``, ``causal``) and a value written as YAML (``0.5``, ``[1, 0]``,
``true``). :func:`parse_edit` reads one; :func:`apply_edits` makes them, in order, on
the plain data a model file parses to, and the result is validated as the file itself
is (:func:`attntrace.modelfile.model_file.model_from_document`): a bad value reads as a bad
value of the file would. A path that does not fit the document (an index out of range,
a path through a number) is refused here, naming the ``--set``; how PATH=VALUE is
written, :mod:`attntrace.modelfile.edit_syntax`. The rules are
docs/check.md's "``run --set PATH=VALUE``".

The document given is never changed: each container on an edit's path is copied before
it is changed (only those, so a large matrix elsewhere is not copied). A matrix held as
a ``.npy`` file is loaded when an edit goes into it; an edit that fits its shape (a
number into a cell, a row of numbers into a row) is written into the loaded array, so a
large matrix is not turned into lists to change one number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attntrace.errors import InputError, describe
from attntrace.kernel.budget import refuse_past_budget
from attntrace.kernel.fields import counted, did_you_mean
from attntrace.modelfile.edit_syntax import Step, path_end, path_steps, spelled, yaml_value
from attntrace.modelfile.model_matrices import embeddings_table
from attntrace.modelfile.npy_files import NpyReader
from attntrace.modelfile.parse import ParsedMapping

#: A path that starts with a weight's or a bias's name means the one under weights or biases.
SHORTHAND = {
    **dict.fromkeys(("WQ", "WK", "WV", "WO"), "weights"),
    **dict.fromkeys(("bQ", "bK", "bV", "bO"), "biases"),
}


@dataclass(frozen=True)
class Edit:
    """One ``PATH=VALUE``: the path as written, its steps (keys and indices, the
    shorthand spelled out) and the value as YAML read it."""

    text: str  # PATH=VALUE as given
    path: str  # PATH as written: WQ[0][1]
    steps: tuple[Step, ...]  # ("weights", "WQ", 0, 1)
    value: Any
    flag: str = "--set"  # how messages name where it came from (edits= from Python)

    @property
    def field(self) -> str:
        """The field of its errors: ``--set WQ[0][1]``."""
        return f"{self.flag} {self.path}"


def parse_edit(text: str, *, flag: str = "--set") -> Edit:
    """``PATH=VALUE`` read into an :class:`Edit`, or an :class:`InputError` naming ``flag``.

    PATH ends at the first ``=`` (one inside a quoted key, ``embeddings["a=b"]``, is the
    key's); VALUE is one YAML value, read by the model file's YAML 1.2 rules.
    """
    end = path_end(text)
    if end < 0:
        raise InputError(
            field=flag, expected="PATH=VALUE, as in WQ[0][1]=0.5", found=f"{text!r} (no '=')"
        )
    path = text[:end].strip()
    steps = path_steps(path, text, flag)
    if steps[0] in SHORTHAND:
        steps = (SHORTHAND[str(steps[0])], *steps)
    field = f"{flag} {path}"
    return Edit(text, path, steps, yaml_value(text[end + 1 :], field), flag)


# ------------------------------------------------------------------------ applying


def apply_edits(document: Any, edits: Sequence[Edit], arrays: NpyReader | None = None) -> Any:
    """``document`` with ``edits`` made in order (the one given is left as it was).

    ``arrays`` loads a ``.npy`` matrix an edit goes into (relative to the model file).
    A document that is no mapping is returned as it is: its validation says what it is.
    """
    if not edits or not isinstance(document, Mapping):
        return document
    editor = _Editor(document, arrays or NpyReader(None, None))
    for edit in edits:
        editor.apply(edit)
    return editor.root


class _Editor:
    """Makes edits on one copy of a document, copying a container the first time an
    edit goes through it (the copies are its own: later edits change them in place)."""

    def __init__(self, document: Mapping[str, Any], arrays: NpyReader) -> None:
        self.arrays = arrays
        self.owned: dict[int, Any] = {}  # id -> a container copied here (kept alive)
        self.root: Any = self._own(document)

    def _own(self, value: Any) -> Any:
        if id(value) in self.owned:
            return value
        copy: Any
        if isinstance(value, ParsedMapping):  # keeps the duplicated keys it records
            copy = ParsedMapping()
            copy.update(value)
            copy.duplicates = list(value.duplicates)
        elif isinstance(value, Mapping):
            copy = dict(value)
        elif isinstance(value, np.ndarray):
            copy = np.array(value, dtype=np.float64)
        else:
            copy = list(value)
        self.owned[id(copy)] = copy
        return copy

    def apply(self, edit: Edit) -> None:
        holder = self.root
        steps = edit.steps
        missing: tuple[int, list[str]] | None = None  # the first new key, and its neighbours
        for k, step in enumerate(steps):
            self._check_step(holder, step, edit, k)
            if k == len(steps) - 1:
                holder[step] = edit.value
                return
            child = holder.get(step) if isinstance(holder, Mapping) else holder[step]
            if child is None and isinstance(holder, Mapping):  # missing (or null)
                missing = missing or (k, [str(key) for key in holder])
                if isinstance(steps[k + 1], int):  # nothing to index: name what is missing
                    raise _nothing_there(edit, *missing)
                child = {}  # a new mapping for the keys that follow (biases.bQ)
            elif isinstance(child, str) and NpyReader.names_file(child):
                child = self._loaded(holder, step, child, edit, k)
            if isinstance(child, np.ndarray):
                if self._into_array(holder, step, child, edit, k + 1):
                    return
                child = holder[step]  # the array, as lists
            elif isinstance(child, Mapping | list):
                child = self._own(child)
            else:
                raise InputError(
                    f"{spelled(steps[: k + 1])} is {describe(child)}, not a "
                    "mapping or a list: the path ends there",
                    field=edit.field,
                )
            self.owned[id(child)] = child
            holder[step] = child
            holder = child

    def _check_step(self, holder: Any, step: Step, edit: Edit, k: int) -> None:
        """``step`` fits ``holder`` (a mapping or a list): a key, or an index in range."""
        where = spelled(edit.steps[:k])
        if isinstance(holder, Mapping) and isinstance(step, int):
            keys = [str(key) for key in holder][:8]
            listed = (
                f" (keys: {', '.join(keys)}{', ...' if len(holder) > 8 else ''})" if keys else ""
            )
            raise InputError(
                f"{where} is a mapping: name a key ({where}.KEY), not [{step}]{listed}",
                field=edit.field,
            )
        if isinstance(holder, list):
            if isinstance(step, str):
                raise InputError(
                    f"{where} is a list: name an item by its index ({where}[0]), not .{step}",
                    field=edit.field,
                )
            _in_range(step, len(holder), _noun(holder), where, edit)

    def _loaded(self, holder: Any, step: Step, name: str, edit: Edit, k: int) -> Any:
        """The ``.npy`` file an edit goes into, loaded: the embedding table as a mapping
        of token -> row (its vocabulary folded in), any other matrix as an array."""
        where = spelled(edit.steps[: k + 1])
        if holder is self.root and step == "embeddings":
            try:
                table = embeddings_table(name, holder.get("vocabulary"), self.arrays)
            except InputError as error:
                raise error.with_source(self.arrays.source) from None
            holder.pop("vocabulary", None)
            return dict(table)
        # the matrix and the copy the edit is written into, counted by the file's header
        held = 2 * self.arrays.header(name, where).held_bytes
        try:
            refuse_past_budget(f"editing {where}", {f"{where} and its edited copy": held})
        except InputError as error:
            raise error.with_source(self.arrays.source) from None
        return self.arrays.load(name, where)

    def _into_array(self, holder: Any, key: Step, array: Any, edit: Edit, first: int) -> bool:
        """An edit that goes on into a numpy array (a loaded .npy matrix, or a Python
        caller's): written into a copy where it fits, True; else the array becomes lists
        (a model file's, validated as such) for the walk to go on in, False."""
        steps = edit.steps[first:]
        if array.dtype.kind not in "iuf" or array.ndim == 0:
            holder[key] = self._own(array.tolist())
            return False
        index: list[int] = []
        for offset, step in enumerate(steps):
            where = spelled(edit.steps[: first + offset])
            if len(index) == array.ndim:
                found = describe(array[tuple(index)].item())
                raise InputError(
                    f"{where} is {found}, not a mapping or a list: the path ends there",
                    field=edit.field,
                )
            if isinstance(step, str):
                raise InputError(
                    f"{where} is a list: name an item by its index ({where}[0]), not .{step}",
                    field=edit.field,
                )
            noun = "number" if len(index) == array.ndim - 1 else "row"
            _in_range(step, array.shape[len(index)], noun, where, edit)
            index.append(step)
        if not _fits(edit.value, array.shape[len(index) :]):
            holder[key] = self._own(array.tolist())
            return False
        copy = self._own(array)
        copy[tuple(index)] = np.array(edit.value, dtype=np.float64)
        holder[key] = copy
        return True


def _nothing_there(edit: Edit, k: int, keys: list[str]) -> InputError:
    """An index into something the model does not have: step ``k`` (beside ``keys``) is
    the first of the path the model lacks."""
    hint = did_you_mean(str(edit.steps[k]), keys)
    return InputError(
        f"the model has no {spelled(edit.steps[: k + 1])}{hint}: a new entry "
        "is set whole, not indexed into",
        field=edit.field,
    )


def _in_range(index: int, size: int, noun: str, where: str, edit: Edit) -> None:
    if size == 0:
        raise InputError(f"{where} is an empty list: it has no [{index}]", field=edit.field)
    if index >= size:
        raise InputError(
            field=edit.field,
            expected=f"an index from 0 to {size - 1} ({where} has {counted(size, noun)})",
            found=str(index),
        )


def _noun(items: list[Any]) -> str:
    if items and all(isinstance(item, list) for item in items):
        return "row"
    if items and all(_real(item) for item in items):
        return "number"
    return "item"


def _real(value: Any) -> bool:
    """A Python number float64 holds (finite or not): what a cell of an array can take."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _fits(value: Any, shape: tuple[int, ...]) -> bool:
    """``value`` is numbers in exactly ``shape`` (a number for ``()``, a row for ``(n,)``)."""
    if not shape:
        return _real(value)
    return (
        isinstance(value, list)
        and len(value) == shape[0]
        and all(_fits(item, shape[1:]) for item in value)
    )
