"""Nested lists of numbers -> a float64 array, checked: JSON's, and Python's.

``json.dump({"Q": q.tolist()})`` writes an array as lists in lists; so does a person who
types one in Python. numpy would take ragged lists, strings (``"1.5"``), booleans and
``None`` (as NaN) without a word, so each is checked first, and what is wrong is one
:class:`InputError` at its place: ``Q[1][0]: expected a number, got a string 'x'``.
NaN and infinity are numbers (an unstable softmax writes them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError, LongInteger, describe
from attntrace.kernel.fields import MAX_AXES, counted


def nested_numbers(value: Any, name: str, *, python: bool) -> npt.NDArray[np.float64]:
    """Nested lists of numbers (JSON's lists; from ``python``, lists and tuples, and
    numpy's scalars among the numbers) as a float64 array, checked first: the same
    length at every level (not ragged), no list empty, and every leaf a number (NaN and
    infinity included)."""
    sequences: tuple[type[Sequence[Any]], ...] = (list, tuple) if python else (list,)
    shape: list[int] = []
    probe: Any = value
    while isinstance(probe, sequences):  # the shape, from the first item of each level
        if len(shape) == MAX_AXES:
            raise InputError(
                f"lists nested more than {MAX_AXES} deep",
                field=name,
                expected=f"an array of at most {MAX_AXES} axes",
            )
        shape.append(len(probe))
        if not probe:
            raise InputError(
                field=name + "[0]" * (len(shape) - 1),
                expected="a non-empty list",
                found=describe(probe),
            )
        probe = probe[0]
    if not shape:
        raise InputError(
            field=name,
            expected="an array (a list, or nested lists, of numbers)",
            found=describe(value),
        )
    _Level(name, tuple(shape), sequences, python).check(value, 0, name)
    return np.array(value, dtype=np.float64)


class _Level:
    """The checks of one nested list, level by level, against the shape its first
    items have."""

    def __init__(
        self,
        name: str,
        shape: tuple[int, ...],
        sequences: tuple[type[Sequence[Any]], ...],
        python: bool,
    ) -> None:
        self.name = name
        self.shape = shape
        self.sequences = sequences
        self.numbers: tuple[type, ...] = (
            (int, float, np.integer, np.floating) if python else (int, float)
        )

    def check(self, rows: Any, depth: int, field: str) -> None:
        """``rows`` (a list of ``shape[depth]`` items, at ``field``) holds what the shape
        says below it."""
        if depth == len(self.shape) - 1:
            if not {float}.issuperset(map(type, rows)):  # the common case, at C speed
                for index, item in enumerate(rows):
                    self.number(item, f"{field}[{index}]")
            return
        length = self.shape[depth + 1]
        noun = "number" if depth + 2 == len(self.shape) else "list"
        for index, row in enumerate(rows):
            where = f"{field}[{index}]"
            if not isinstance(row, self.sequences) or len(row) != length:
                first = self.name + "[0]" * (depth + 1)
                raise InputError(
                    "ragged lists",
                    field=where,
                    expected=f"a list of {counted(length, noun)}, as {first} is",
                    found=describe(row),
                )
            self.check(row, depth + 1, where)

    def number(self, item: Any, field: str) -> None:
        """A number: a bool, a string, null, a list where a number belongs, or an
        integer past float64's range is not."""
        if isinstance(item, bool | np.bool_ | LongInteger) or not isinstance(item, self.numbers):
            raise InputError(field=field, expected="a number", found=describe(item))
        if isinstance(item, int):
            try:
                float(item)
            except OverflowError:
                raise InputError(
                    field=field, expected="a number within float64's range", found=describe(item)
                ) from None
