"""The arrays a person's own implementation saved, as `attntrace check` receives them.

Read from a file by :mod:`attntrace.checking.user_arrays`, or handed over from Python to
:func:`attntrace.check`; compared with a trace by :mod:`attntrace.checking.compare`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: The dtypes an array may be saved in; each has its own tolerance (docs/check.md).
DTYPES = ("float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True, eq=False)
class GivenArray:
    """One saved array: its numbers widened to float64 (exactly: every float16,
    bfloat16 and float32 is a float64), the dtype it was saved in, and its name in the
    file (``attn``, before aliases are resolved to stage names)."""

    name: str
    data: npt.NDArray[np.float64]  # any shape, as saved
    dtype: str  # one of DTYPES
