"""A Python caller's arguments, checked: a wrong type is a one-line :class:`TypeError`.

``sentence must be a str or None, got int``: the parameter, what it accepts, what came.
numpy's scalars count as the Python numbers they stand for (``np.int64(2)`` is a whole
number, ``np.True_`` a bool); a bool is not a number here, as in the model file.

Which to use when: these checks are for a Python caller's argument of the wrong *type*
(``ModelSpec(heads="2")``), a TypeError, as Python's own are. Data read from a file or
the command line (a model file's field, a saved trace, a flag), and a value of the right
type that is wrong for the model (an unknown token, a head out of range), is checked by
:mod:`attntrace.kernel.fields` instead: an :class:`~attntrace.errors.InputError`, which
the CLI prints as one line. Both speak one vocabulary: the value first, then the name
it is reported under (``whole(value, "ModelSpec.heads")`` here, ``whole(value,
"heads", least=1)`` there), then what the check needs.
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


def wrong_type(value: object, name: str, accepts: str) -> TypeError:
    """``name must be accepts, got <type>``."""
    return TypeError(f"{name} must be {accepts}, got {type_name(value)}")


def text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise wrong_type(value, name, "a str")
    return value


def optional_text(value: object, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise wrong_type(value, name, "a str or None")
    return value


def flag(value: object, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise wrong_type(value, name, "a bool")
    return bool(value)


def optional_flag(value: object, name: str) -> bool | None:
    if value is None:
        return None
    if not isinstance(value, bool | np.bool_):
        raise wrong_type(value, name, "a bool or None")
    return bool(value)


def whole(value: object, name: str) -> int:
    """An int (or numpy integer), as a Python int."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise wrong_type(value, name, "an int")
    return int(value)


def optional_whole(value: object, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise wrong_type(value, name, "an int or None")
    return int(value)


def real(value: object, name: str) -> float:
    """An int or float (or numpy number), as a Python float."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.number):
        raise wrong_type(value, name, "a real number (int or float)")
    if isinstance(value, complex | np.complexfloating):
        raise wrong_type(value, name, "a real number (int or float)")
    try:
        return float(value)
    except OverflowError:  # an int beyond float64
        return float("inf")


def optional_real(value: object, name: str) -> float | None:
    """None, or :func:`real`'s float."""
    return None if value is None else real(value, name)


def path(value: object, name: str, accepts: str) -> str | Path:
    """A file name: a str or a path (``pathlib.Path``, any ``os.PathLike`` of str)."""
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike) and isinstance(os.fspath(value), str):
        return Path(value)
    raise wrong_type(value, name, accepts)


def labels(value: object, name: str) -> tuple[str, ...]:
    """A sequence of str (tokens, row or column labels), as a tuple: a record's labels
    cannot be appended to afterwards."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise wrong_type(value, name, "a tuple (or list) of str")
    try:
        "".join(value)  # every item a str, checked at C speed (a trace has many labels)
    except TypeError:
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise wrong_type(item, f"{name}[{index}]", "a str") from None
        raise
    return value if isinstance(value, tuple) else tuple(value)


def head_numbers(value: Any, name: str, what: str = "head numbers") -> list[int]:
    """A sequence of ints (head numbers, token ids...) as a list: ``[0, 3]``."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise wrong_type(value, name, f"a sequence of {what} (ints)")
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise wrong_type(value, name, f"a sequence of {what} (ints)")
    return [whole(item, f"{name}[{index}]") for index, item in enumerate(value)]
