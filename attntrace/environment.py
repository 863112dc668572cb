"""Numbers from environment variables, checked: a bad one is an InputError naming it.

attntrace reads a few limits and delays from the environment (ATTNTRACE_MAX_FILE_MB,
ATTNTRACE_MAX_TRACE_MB, ATTNTRACE_PROGRESS_AFTER: docs/cli.md#environment). Each is read
the same way: unset or blank is the default, anything that is no number in range
(garbage, NaN, a negative) is refused with what was set. No numpy: the CLI reads these
before any heavy import.
"""

from __future__ import annotations

import os

from attntrace.errors import InputError


def env_number(name: str, default: float, lowest: float, highest: float, expected: str) -> float:
    """``$name`` as a float from ``lowest`` to ``highest`` (inclusive), or ``default`` where
    it is unset or blank; otherwise an :class:`InputError` saying ``expected``."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not lowest <= number <= highest:  # NaN fails both comparisons
        raise InputError(field=name, expected=expected, found=repr(value))
    return number
