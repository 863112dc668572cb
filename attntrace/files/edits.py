"""``--set PATH=VALUE``: edits to a parsed model document, made before it is validated.

An edit names a place in the model file's structure (``weights.WQ[0][1]``,
``embeddings.cat``, ``causal``) and a value written as YAML (``0.5``, ``[1, 0]``,
``true``). :func:`parse_edit` reads one; :func:`apply_edits` makes them, in order, on
the plain data a model file parses to, and the result is validated as the file itself
is (:func:`attntrace.files.model_file.model_from_document`): a bad value reads as a bad
value of the file would. A path that does not fit the document (an index out of range,
a path through a number) is refused here, naming the ``--set``. The rules are
docs/check.md's "``run --set PATH=VALUE``".

The document given is never changed: each container on an edit's path is copied before
it is changed (only those, so a large matrix elsewhere is not copied). A matrix held as
a ``.npy`` file is loaded when an edit goes into it; an edit that fits its shape (a
number into a cell, a row of numbers into a row) is written into the loaded array, so a
large matrix is not turned into lists to change one number.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attntrace.core.fields import counted, did_you_mean
from attntrace.errors import InputError, describe
from attntrace.files.model_matrices import embeddings_table
from attntrace.files.npy_files import NpyReader
from attntrace.files.parse import ParsedMapping

Step = str | int

#: A path that starts with a weight's or a bias's name means the one under weights or biases.
SHORTHAND = {**dict.fromkeys(("WQ", "WK", "WV", "WO"), "weights"),
             **dict.fromkeys(("bQ", "bK", "bV", "bO"), "biases")}  # fmt: skip

PATH_FORM = "a PATH of keys and [index] parts, as in weights.WQ[0][1] or embeddings.cat"
_KEY = r"[^.\[\]=]+"
_BARE = re.compile(_KEY)
_PART = re.compile(
    rf"""\.(?P<key>{_KEY})|\[(?P<index>[^\]"']*)\]|\[(?P<q>["'])(?P<quoted>.*?)(?P=q)\]"""
)
_HEAD = re.compile(rf"""(?P<key>{_KEY})|\[(?P<q>["'])(?P<quoted>.*?)(?P=q)\]""")
_MAX_INDEX_DIGITS = 18  # more than any list holds, and no int conversion of 10,000 digits


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
    end = _path_end(text)
    if end < 0:
        raise InputError(field=flag, expected="PATH=VALUE, as in WQ[0][1]=0.5",
                         found=f"{text!r} (no '=')")  # fmt: skip
    path = text[:end].strip()
    steps = _steps(path, text, flag)
    if steps[0] in SHORTHAND:
        steps = (SHORTHAND[str(steps[0])], *steps)
    field = f"{flag} {path}"
    return Edit(text, path, steps, _value(text[end + 1 :], field), flag)


def spelled(steps: Sequence[Step]) -> str:
    """A path as messages write it: ``weights.WQ[0][1]``, ``embeddings['.']``."""
    written = ""
    for step in steps:
        if isinstance(step, int):
            written += f"[{step}]"
        elif _BARE.fullmatch(step) and step.strip() == step:
            written += f".{step}" if written else step
        else:
            written += f"[{step!r}]"
    return written or "the model"


# ------------------------------------------------------------------------- parsing


def _path_end(text: str) -> int:
    """Where PATH ends: the first ``=`` outside a quoted ``["key"]``; -1 if none."""
    at = 0
    while at < len(text):
        if text[at] == "=":
            return at
        if text.startswith(("['", '["'), at):
            close = text.find(text[at + 1] + "]", at + 2)
            if close < 0:  # unclosed: the path's parser says so
                return text.find("=", at)
            at = close + 2
            continue
        at += 1
    return -1


def _steps(path: str, text: str, flag: str) -> tuple[Step, ...]:
    """The keys and indices of ``path``, or an InputError saying what is wrong where."""

    def bad(problem: str) -> InputError:
        return InputError(field=flag, expected=PATH_FORM, found=f"{path!r}: {problem}")

    if not path:
        raise InputError(field=flag, expected=PATH_FORM,
                         found=f"nothing before the '=' of {text!r}")  # fmt: skip
    head = _HEAD.match(path)
    if head is None:
        raise bad("a path starts with a key")
    steps: list[Step] = [head["key"] if head["key"] is not None else head["quoted"]]
    at = head.end()
    while at < len(path):
        part = _PART.match(path, at)
        if part is None:
            raise bad(_problem(path, at))
        if part["key"] is not None:
            steps.append(part["key"])
        elif part["quoted"] is not None:
            steps.append(part["quoted"])
        else:
            steps.append(_index(part["index"], bad))
        at = part.end()
    return tuple(steps)


def _problem(path: str, at: int) -> str:
    """What is wrong at ``path[at]``, a character no part starts with as written."""
    rest = path[at:]
    if rest.startswith("."):
        return f"a key is missing after the '.' at character {at + 1}"
    if rest.startswith("["):
        return f"a '[' at character {at + 1} without its ']'"
    return f"{rest[0]!r} at character {at + 1}: a key follows a '.', an index is in [ ]"


def _index(digits: str, bad: Any) -> int:
    """``[3]``'s 3: a whole number from 0 (a quoted key is ``["3"]``)."""
    digits = digits.strip()
    if not digits.isdecimal() or not digits.isascii():
        shown = f"[{digits}]"
        if digits.startswith("-") and digits[1:].isdecimal():
            raise bad(f"{shown}: an index counts from 0 (no negative indices)")
        raise bad(f"{shown} is neither an index [0] nor a quoted key [{digits!r}]")
    if len(digits.lstrip("0")) > _MAX_INDEX_DIGITS:
        raise bad(f"an index of {len(digits)} digits")
    return int(digits)


def _value(written: str, field: str) -> Any:
    """VALUE read as one YAML value on one line (the model file's YAML 1.2 rules)."""
    from attntrace.files.yaml_file import parse_yaml  # PyYAML only when there is an edit

    if not written.strip():
        raise InputError(field=field, expected="a value after '=' (null for nothing)",
                         found="nothing")  # fmt: skip
    if "\n" in written or "\r" in written:
        raise InputError(field=field, expected="a value on one line ([1, 0], {a: 1})",
                         found="a line break")  # fmt: skip
    try:
        return parse_yaml(written, "VALUE")
    except InputError as error:  # the place in one line: its column, or the end
        at = re.match(r"line (\d+), column \d+: ", error.message or "")
        message = error.message or ""
        if at is not None and at[1] != "1":
            message = "at its end: " + message[at.end() :]
        raise InputError(f"the value {written.strip()!r}: {message.removeprefix('line 1, ')}",
                         field=field) from None  # fmt: skip


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
                raise InputError(f"{spelled(steps[: k + 1])} is {describe(child)}, not a "
                                 "mapping or a list: the path ends there",
                                 field=edit.field)  # fmt: skip
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
            raise InputError(f"{where} is a mapping: name a key ({where}.KEY), not "
                             f"[{step}]{listed}", field=edit.field)  # fmt: skip
        if isinstance(holder, list):
            if isinstance(step, str):
                raise InputError(f"{where} is a list: name an item by its index "
                                 f"({where}[0]), not .{step}", field=edit.field)  # fmt: skip
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
                raise InputError(f"{where} is {found}, not a mapping or a list: the path "
                                 "ends there", field=edit.field)  # fmt: skip
            if isinstance(step, str):
                raise InputError(f"{where} is a list: name an item by its index "
                                 f"({where}[0]), not .{step}", field=edit.field)  # fmt: skip
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
    return InputError(f"the model has no {spelled(edit.steps[: k + 1])}{hint}: a new entry "
                      "is set whole, not indexed into", field=edit.field)  # fmt: skip


def _in_range(index: int, size: int, noun: str, where: str, edit: Edit) -> None:
    if size == 0:
        raise InputError(f"{where} is an empty list: it has no [{index}]", field=edit.field)
    if index >= size:
        raise InputError(field=edit.field,
                         expected=f"an index from 0 to {size - 1} ({where} has "
                         f"{counted(size, noun)})", found=str(index))  # fmt: skip


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
    return (isinstance(value, list) and len(value) == shape[0]
            and all(_fits(item, shape[1:]) for item in value))  # fmt: skip
