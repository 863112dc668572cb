"""Field validators: the checks every reader of user data shares, and how they say what was found.

A model file (:mod:`attntrace.modelfile.model_file`), a saved trace
(:mod:`attntrace.forward.replay`) and a :class:`~attntrace.kernel.spec.ModelSpec` built from
Python check the same kinds of field: a whole number in a range, true or false, a string,
a list of strings, a mapping with known keys, a finite number, a token. Each check here
returns the value typed, or raises one :class:`InputError` naming the field, what was
expected and what was found.

What was found is spelled one way, by :func:`~attntrace.errors.describe`: the kind of
value, and the value itself where it is short (``a string 'x'``, ``0``, ``a list of 2
items``, ``a non-finite number (inf)``). Where a check is about a size rather than a
value, what was found is the size: a count (``3``), :func:`counted` (``3 numbers``) or
:func:`shape_text` (``2 × 3``). Two spellings follow what they are compared with: a
number over a limit is written as the limit is (``at most 4,096, got 100,000,000``), and
a list compared item by item with an expected list is shown as written (``[2, 3]``).

Which to use when: these checks are for data read from a file or the command line (a
model file, a saved trace, a flag), and for a value of the right type that is wrong for
the model: an :class:`InputError`, which the CLI prints as one line. A Python caller's
argument of the wrong *type* (``ModelSpec(heads="2")``) is a TypeError, checked by
:mod:`attntrace.arguments`. Both speak one vocabulary: the value first, then the field
it is reported under (``whole(value, "heads", least=1)`` here, ``whole(value,
"ModelSpec.heads")`` there), then what the check needs.

This module is in the kernel because ModelSpec checks its fields with it. Nothing here
reads a file or knows a format.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

import numpy as np
import numpy.typing as npt

from attntrace import arguments
from attntrace.errors import InputError, describe
from attntrace.kernel.frozen import Matrix, freeze, known_finite, read_only

# What counts as a number: Python's, and numpy's scalars (a model dict built by numpy
# code holds np.float32 and np.int64); a bool is no number here.
_NUMBERS = (int, float, np.integer, np.floating)
_BOOLS = (bool, np.bool_)


def whole(value: Any, field: str, *, least: int = 1, most: int | None = None) -> int:
    """A whole number ≥ ``least`` (and ≤ ``most``, where given): heads, d_k, a count."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InputError(field=field, expected=f"a whole number ≥ {least}", found=describe(value))
    if most is not None and value > most:
        raise InputError(field=field, expected=f"at most {most:,}", found=f"{value:,}")
    return value


def optional_whole(value: Any, field: str, *, least: int = 0) -> int | None:
    """``null``, or a whole number ≥ ``least`` (a stage's head: null for a shared stage)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InputError(
            field=field, expected=f"null or a whole number ≥ {least}", found=describe(value)
        )
    return value


def index(value: object, field: str, count: int, what: str) -> int:
    """A 0-based position among ``count`` (a row, a column, a head) from a Python caller:
    an int (numpy's too, not a bool) from 0 to ``count`` − 1, else one InputError naming
    the range and ``what`` the position is of."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InputError(field=field, expected=f"a whole number ({what})", found=repr(value))
    if not 0 <= int(value) < count:
        raise InputError(field=field, expected=f"0 … {count - 1} ({what})", found=str(value))
    return int(value)


def flag(value: Any, field: str) -> bool:
    """``true`` or ``false``: no ``yes``, no 1 (YAML 1.2 reads ``yes`` as a string)."""
    if not isinstance(value, bool):
        raise InputError(field=field, expected="true or false", found=describe(value))
    return value


def text(value: Any, field: str, *, expected: str = "a string") -> str:
    """A string (a name, a formula, a label, a token)."""
    if not isinstance(value, str):
        raise InputError(field=field, expected=expected, found=describe(value))
    return value


def items(
    value: Any,
    field: str,
    *,
    expected: str = "a non-empty list",
    empty: bool = False,
) -> list[Any]:
    """A list (non-empty unless ``empty``): the rows of a matrix, the stages of a trace."""
    if not isinstance(value, list) or (not value and not empty):
        raise InputError(field=field, expected=expected, found=describe(value))
    return value


def texts(
    value: Any,
    field: str,
    *,
    expected: str = "a non-empty list",
    item: str = "a string",
    empty: bool = False,
) -> tuple[str, ...]:
    """A list of strings (tokens, labels), each checked at ``field[i]``."""
    listed = items(value, field, expected=expected, empty=empty)
    return tuple(
        text(entry, f"{field}[{index}]", expected=item) for index, entry in enumerate(listed)
    )


def mapping(
    value: Any, field: str | None, expected: str, *, empty: bool = True
) -> Mapping[str, Any]:
    """A mapping (non-empty unless ``empty``): the top level, ``weights``, a stage."""
    if not isinstance(value, Mapping) or (not value and not empty):
        raise InputError(field=field, expected=expected, found=describe(value))
    return value


def known_keys(
    value: Mapping[str, Any],
    known: Sequence[str],
    field: str | None,
    *,
    noun: str,
    listing: str = "known",
    every: bool = False,
) -> None:
    """Refuse a key not in ``known``: ``unknown weight matrix 'WX' (known: WQ, WK, WV,
    WO)``, with a near miss suggested (``'Weights' (did you mean 'weights'?)``).

    ``every`` names every unknown key (``unknown fields 'a', 'b'``, the plural made by
    adding s to ``noun``); otherwise the first one only.
    """
    unknown = [key for key in value if key not in known]
    if not unknown:
        return
    named = unknown if every else unknown[:1]
    names = ", ".join(repr(key) + did_you_mean(key, known) for key in named)
    nouns = noun + ("s" if len(named) > 1 else "")
    raise InputError(f"unknown {nouns} {names} ({listing}: {', '.join(known)})", field=field)


def required_keys(
    value: Mapping[str, Any],
    required: Sequence[str],
    field: str | None,
    *,
    noun: str,
) -> None:
    """Refuse a mapping without one of ``required``: ``missing required matrix 'WQ'``."""
    for key in required:
        if key not in value:
            raise InputError(f"missing required {noun} {key!r}", field=field)


def did_you_mean(key: str, known: Sequence[str]) -> str:
    """`` (did you mean 'weights'?)`` for a near miss such as ``Weights`` or ``kv_head``."""
    folded = {name.lower(): name for name in known}
    close = difflib.get_close_matches(key.lower(), list(folded), n=1, cutoff=0.7)
    return f" (did you mean {folded[close[0]]!r}?)" if close else ""


def choice(value: Any, field: str, choices: Sequence[str], expected: str) -> str:
    """One of the strings ``choices`` (a kind of positions)."""
    if not isinstance(value, str) or value not in choices:
        raise InputError(field=field, expected=expected, found=describe(value))
    return value


def number(value: Any, field: str, *, expected: str = "a number") -> float:
    """A finite number, as a float: an int or a float, or numpy's (np.float32(1)).

    Not a number (a bool, a string, null) is ``expected`` (``a number``); a number that
    is not finite in float64 (NaN, ±inf, 10**400, a longdouble past float64's range) is
    ``a finite number``.
    """
    if type(value) is float and math.isfinite(value):  # the common case, checked at once
        return value
    if isinstance(value, _BOOLS) or not isinstance(value, _NUMBERS):
        raise InputError(field=field, expected=expected, found=describe(value))
    try:
        with np.errstate(over="ignore"):  # a longdouble past float64's range: inf, refused
            converted = float(value)
    except OverflowError:  # an integer beyond float64
        converted = math.inf
    if not math.isfinite(converted):
        raise InputError(field=field, expected="a finite number", found=describe(value))
    return converted


def numbers(value: Any, field: str) -> list[float]:
    """A non-empty list of finite numbers (a vector), each checked at ``field[i]``."""
    listed = items(value, field, expected="a non-empty list of numbers")
    return [number(entry, f"{field}[{index}]") for index, entry in enumerate(listed)]


def is_token(key: str) -> bool:
    """A token of a vocabulary: not empty, and no whitespace (a sentence is split on it)."""
    return key.split() == [key]


#: The most axes an array from outside may have (a nested JSON list, a .safetensors
#: tensor): numpy's limit once was 32, now 64, and no stage or weight has more than a
#: handful (leading 1s included).
MAX_AXES = 32


def counted(count: int, noun: str) -> str:
    """``1 number``, ``3 numbers``: a count of things found (the plural adds s)."""
    return f"{count} {noun}{'s' if count != 1 else ''}"


def shape_text(shape: Sequence[int]) -> str:
    """``2 × 3``: an array's shape as a message writes it (empty for a scalar's)."""
    return " × ".join(str(n) for n in shape)


def checked_array(
    value: object, name: str, field_path: str, ndim: int, *, finite: bool = True
) -> Matrix:
    """A caller's array for ``name`` (``ModelSpec.WQ``), as a read-only float64 copy.

    Not a numpy array of real numbers is a TypeError; the wrong number of dimensions,
    no numbers at all or a non-finite one is an InputError at ``field_path`` (the model
    file's name for it: ``weights.WQ``), as a model file's would be. ``finite=False``
    leaves the NaN check to the caller (:func:`require_finite`, for many vectors at once).
    """
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fiu":
        kind = "a matrix" if ndim == 2 else "a vector"
        raise arguments.wrong_type(value, name, f"a numpy array of real numbers ({kind})")
    if value.ndim != ndim:
        expected = "a matrix (2-D array)" if ndim == 2 else "a vector (1-D array)"
        shape = shape_text(value.shape)
        found = f"a {value.ndim}-D array" + (f" of {shape}" if shape else "")
        raise InputError(field=field_path, expected=expected, found=found)
    if value.size == 0:
        raise InputError(
            field=field_path, expected="at least one number", found=shape_text(value.shape)
        )
    with np.errstate(over="ignore"):  # a longdouble past float64's range becomes inf
        converted = read_only(value)
    if finite and not known_finite(converted):
        require_finite(converted, field_path)  # the float64 numbers the trace will use
        freeze(converted, finite=True)
    return converted


def require_finite(array: npt.NDArray[np.floating[Any] | np.integer[Any]], field_path: str) -> None:
    """An InputError at the first NaN or infinity of ``array``: ``weights.WQ[0][1]``."""
    if not np.isfinite(array).all():
        where = tuple(int(i[0]) for i in np.nonzero(~np.isfinite(array)))
        found = describe(float(array[where]))
        raise InputError(
            field=field_path + "".join(f"[{i}]" for i in where),
            expected="a finite number",
            found=found,
        )


def rope_frequencies_fit(frequencies: npt.NDArray[np.float64], d_k: int, field: str) -> None:
    """RoPE's frequencies, one per turned pair: 1 to d_k/2 of them (fewer turn only the
    first dimensions of each head), each finite and above 0; else one InputError."""
    pairs = d_k // 2
    count = int(frequencies.size)
    fine = frequencies.ndim == 1 and 1 <= count <= pairs
    if fine and bool(np.isfinite(frequencies).all() and (frequencies > 0).all()):
        return
    if frequencies.ndim != 1:
        found = f"a {frequencies.ndim}-D array of {shape_text(frequencies.shape)}"
    elif not fine:
        found = counted(count, "number")
    else:
        bad = next(float(f) for f in frequencies if not (math.isfinite(f) and f > 0))
        found = describe(bad)
    raise InputError(
        field=field,
        expected=f"1 to {pairs} numbers above 0 (one per turned pair of d_k = {d_k})",
        found=found,
    )


def is_rope_base(value: object) -> TypeGuard[int | float]:
    """A usable RoPE base: a finite real number above 1 (a bool is no number here)."""
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and value > 1
        and math.isfinite(value)
    )


def check_rope(base: object, d_k: int) -> None:
    """RoPE's base a usable one; a head's width even, since RoPE rotates pairs of Q's and
    K's columns."""
    if not is_rope_base(base):
        raise InputError(
            field="rope_base",
            expected="a number > 1 (10000 in RoFormer and LLaMA)",
            found=describe(base),
        )
    if d_k % 2:
        raise InputError(
            "RoPE rotates pairs of dimensions",
            field="positions",
            expected="an even d_k with rope",
            found=f"d_k = {d_k}",
        )
