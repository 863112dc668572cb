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


# The variables the BLAS libraries numpy is built with read for their thread count.
BLAS_THREAD_VARIABLES = (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "BLIS_NUM_THREADS",
)


def one_blas_thread() -> None:
    """Run numpy's BLAS on one thread, unless the user chose a count (any of
    :data:`BLAS_THREAD_VARIABLES` set): called by the CLI before numpy is imported.

    attntrace's products are small or many (a head's d_k columns, a real model's layers
    one after another), where a second thread mostly waits: measured on the 2-core
    development machine, ``run --model gemma3 --layer 17`` took 1.3 s on one thread and
    4.4 s on two, SmolLM2's 512-token layer 29 6 s against 15 s (docs/cli.md). Setting a
    variable gives the library's own default back.
    """
    if any(os.environ.get(name) for name in BLAS_THREAD_VARIABLES):
        return
    for name in BLAS_THREAD_VARIABLES:
        os.environ[name] = "1"
