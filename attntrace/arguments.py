"""A Python caller's arguments, checked: a wrong type is a one-line :class:`TypeError`.

``sentence must be a str or None, got int``: the parameter, what it accepts, what came.
A value of the right type that is wrong for the model (an unknown token, a head out of
range) is an :class:`~attntrace.errors.InputError`, as in the CLI. numpy's scalars count
as the Python numbers they stand for (``np.int64(2)`` is a whole number, ``np.True_`` a
bool); a bool is not a number here, as in the model file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def type_name(value: object) -> str:
    """``int``, ``list``, ``ndarray of complex128``: what a message says was given."""
    if isinstance(value, np.ndarray):
        return f"ndarray of {value.dtype}"
    return type(value).__name__


def wrong_type(name: str, accepts: str, value: object) -> TypeError:
    """``name must be accepts, got <type>``."""
    return TypeError(f"{name} must be {accepts}, got {type_name(value)}")


def text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise wrong_type(name, "a str", value)
    return value


def optional_text(name: str, value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise wrong_type(name, "a str or None", value)
    return value


def flag(name: str, value: object) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise wrong_type(name, "a bool", value)
    return bool(value)


def optional_flag(name: str, value: object) -> bool | None:
    if value is None:
        return None
    if not isinstance(value, bool | np.bool_):
        raise wrong_type(name, "a bool or None", value)
    return bool(value)


def whole(name: str, value: object) -> int:
    """An int (or numpy integer), as a Python int."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise wrong_type(name, "an int", value)
    return int(value)


def optional_whole(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise wrong_type(name, "an int or None", value)
    return int(value)


def real(name: str, value: object) -> float:
    """An int or float (or numpy number), as a Python float."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.number):
        raise wrong_type(name, "a real number (int or float)", value)
    if isinstance(value, complex | np.complexfloating):
        raise wrong_type(name, "a real number (int or float)", value)
    try:
        return float(value)
    except OverflowError:  # an int beyond float64
        return float("inf")


def optional_real(name: str, value: object) -> float | None:
    """None, or :func:`real`'s float."""
    return None if value is None else real(name, value)


def path(name: str, value: object, accepts: str) -> str | Path:
    """A file name: a str or a path (``pathlib.Path``, any ``os.PathLike`` of str)."""
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike) and isinstance(os.fspath(value), str):
        return Path(value)
    raise wrong_type(name, accepts, value)


def labels(name: str, value: object) -> tuple[str, ...]:
    """A sequence of str (tokens, row or column labels), as a tuple: a record's labels
    cannot be appended to afterwards."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise wrong_type(name, "a tuple (or list) of str", value)
    try:
        "".join(value)  # every item a str, checked at C speed (a trace has many labels)
    except TypeError:
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise wrong_type(f"{name}[{index}]", "a str", item) from None
        raise
    return value if isinstance(value, tuple) else tuple(value)


def head_numbers(name: str, value: Any, what: str = "head numbers") -> list[int]:
    """A sequence of ints (head numbers, token ids...) as a list: ``[0, 3]``."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise wrong_type(name, f"a sequence of {what} (ints)", value)
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise wrong_type(name, f"a sequence of {what} (ints)", value)
    return [whole(f"{name}[{index}]", item) for index, item in enumerate(value)]
