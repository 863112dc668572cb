"""The one error type for bad input, and how it reads on one line.

Everything a user can get wrong (a file, a field, a token, a flag's value, arithmetic
that overflows) is an :class:`InputError`. The CLI prints ``str(error)`` on stderr and
exits 2; nothing else in the package catches broadly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from attntrace.visible import visible


class InputError(Exception):
    """Bad input: where it is (file, field path), what was expected, what was found.

    ``str()`` gives the one line the user sees, e.g.
    ``model.yaml: weights.WK: expected 2 × 2 (d_model × d_k), got 2 × 3``.
    """

    def __init__(
        self,
        message: str | None = None,
        *,
        source: str | None = None,
        field: str | None = None,
        expected: str | None = None,
        found: str | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.field = field
        self.expected = expected
        self.found = found
        super().__init__(str(self))

    def with_source(self, source: str | None) -> InputError:
        """Return the same error, located in ``source`` (a file name) if it had none;
        ``None`` (no file: a model made in Python) leaves it as it is."""
        if self.source is not None or source is None:
            return self
        return InputError(
            self.message,
            source=source,
            field=self.field,
            expected=self.expected,
            found=self.found,
        )

    def __str__(self) -> str:
        """One line, safe to print: what came from the user (a file name, a token in a
        field path, a value found) is shown through :func:`visible`, cut where absurdly
        long, so no message carries a control character or a 5 MB name."""
        # A file name with edge spaces is quoted, or the spaces would be invisible.
        source = self.source
        if source is not None and source != source.strip():
            source = repr(source)
        parts = [visible(p, _PART_LIMIT) for p in (source, self.field) if p]
        expected = None if self.expected is None else visible(self.expected, _PART_LIMIT)
        found = None if self.found is None else visible(self.found, _PART_LIMIT)

        detail = visible(self.message or "", _MESSAGE_LIMIT)
        if expected is not None:
            detail = f"{detail + ': ' if detail else ''}expected {expected}"
            if found is not None:
                detail += f", got {found}"
        elif found is not None:
            detail = f"{detail + ': ' if detail else ''}got {found}"
        return ": ".join([*parts, detail]) if detail else ": ".join(parts)


# How much of each part of a message is shown: enough for any real file name, field
# path or value, never a whole 5 MB string.
_PART_LIMIT = 300
_MESSAGE_LIMIT = 2000


class LongInteger:
    """An integer written with more digits than Python turns into an int (4,300: its
    guard against slow conversions), kept as its length: no model holds such a number,
    and the parser must not fail on it (a ValueError) before validation can say so."""

    MAX_DIGITS = 4000

    def __init__(self, digits: str) -> None:
        self.digits = len(digits.lstrip("+-"))


def parsed_integer(digits: str) -> int | LongInteger:
    """``int(digits)``, or a :class:`LongInteger` where that has too many digits."""
    return int(digits) if len(digits) <= LongInteger.MAX_DIGITS else LongInteger(digits)


def _numpy_bool(value: Any) -> bool:
    """numpy's bool (``bool_`` before numpy 2, ``bool`` since), known without importing
    numpy: this module is on every command's start-up path."""
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ in ("bool_", "bool")


def describe(value: Any) -> str:
    """How a found value reads in an error message: ``a string 'abc'``, ``3 numbers``..."""
    return _describe_number(value) or _describe_other(value)


def _describe_number(value: Any) -> str | None:
    """A Python number (or a bool, which is no number here) as a message shows it: the
    number itself where float64 holds it, else its size; None for anything else."""
    if isinstance(value, LongInteger):
        return f"an integer of {value.digits:,} digits (too large for float64)"
    if isinstance(value, bool) or _numpy_bool(value):
        return f"a boolean ({str(bool(value)).lower()})"
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits (too large for float64)"
    if isinstance(value, int | float):
        return repr(value) if math.isfinite(value) else f"a non-finite number ({value})"
    return None


def _describe_other(value: Any) -> str:
    """Anything but a Python number: null, a string (cut short), what else YAML or JSON
    can hold, a numpy scalar; else the type's name."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string {shown!r}"
    if isinstance(value, bytes):
        return "binary data (!!binary)"
    if isinstance(value, set):
        return "a set (!!set)"
    if isinstance(value, tuple):  # from YAML, a !!pairs or !!omap entry
        return "a tuple (a key-value pair, in YAML: !!pairs or !!omap)"
    if isinstance(value, Mapping):
        return f"a mapping with {len(value)} key{'s' if len(value) != 1 else ''}"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    dtype = getattr(value, "dtype", None)
    if dtype is not None and getattr(value, "ndim", None) == 0 and dtype.kind in "iuf":
        # a numpy number that is no Python int or float (np.float32, np.longdouble): its
        # dtype's name, which every numpy spells the same (type names changed in 2.0)
        return f"a {dtype.name} ({value!s})"  # str, not format(): that goes via float
    return f"a {type(value).__name__}"
