"""The one error type for bad input, and how it reads on one line.

Everything a user can get wrong (a file, a field, a token, a flag's value, arithmetic
that overflows) is an :class:`InputError`. The CLI prints ``str(error)`` on stderr and
exits 2; nothing else in the package catches broadly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


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

    def with_source(self, source: str) -> InputError:
        """Return the same error, located in ``source`` (a file name) if it had none."""
        if self.source is not None:
            return self
        return InputError(
            self.message,
            source=source,
            field=self.field,
            expected=self.expected,
            found=self.found,
        )

    def __str__(self) -> str:
        # A file name with edge spaces is quoted, or the spaces would be invisible.
        source = self.source
        if source is not None and source != source.strip():
            source = repr(source)
        parts = [p for p in (source, self.field) if p]

        detail = self.message or ""
        if self.expected is not None:
            detail = f"{detail + ': ' if detail else ''}expected {self.expected}"
            if self.found is not None:
                detail += f", got {self.found}"
        elif self.found is not None:
            detail = f"{detail + ': ' if detail else ''}got {self.found}"
        return ": ".join([*parts, detail]) if detail else ": ".join(parts)


def describe(value: Any) -> str:
    """How a found value reads in an error message: ``a string 'abc'``, ``3 numbers``..."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits (too large for float64)"
    if isinstance(value, int | float):
        return repr(value) if math.isfinite(value) else f"a non-finite number ({value})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string {shown!r}"
    if isinstance(value, bytes):
        return "binary data (!!binary)"
    if isinstance(value, set):
        return "a set (!!set)"
    if isinstance(value, tuple):
        return "a key-value pair (!!pairs or !!omap)"
    if isinstance(value, Mapping):
        return f"a mapping with {len(value)} key{'s' if len(value) != 1 else ''}"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    return f"a {type(value).__name__}"
