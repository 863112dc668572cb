"""The arrays a person's own implementation saved, as `attntrace check` receives them.

Read from a file by :mod:`attntrace.checking.user_arrays`, or handed over from Python to
:func:`attntrace.check`; compared with a trace by :mod:`attntrace.checking.compare`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from attntrace.kernel.budget import FLOAT, peak_parts, refuse_past_budget, trace_bytes
from attntrace.kernel.fields import counted
from attntrace.kernel.spec import ModelSpec

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


def refuse_check_past_budget(
    given: Mapping[str, GivenArray], model: ModelSpec, n: int, m: int
) -> None:
    """Refuse a check whose peak would pass the memory budget, before the trace is made.

    ``check`` holds the arrays given (float64), the trace, and while it diagnoses a
    difference the block recomputed with a mistake beside the trace it is compared with
    and the arrays placed on its stages (measured with tracemalloc: at most about five
    traces' worth beside the arrays, docs/check.md); its comparison holds a cell's
    verdict per given cell, and works on blocks of a quarter-million cells at a time.
    """
    from attntrace.checking.tolerance import BLOCK_CELLS

    cells = [array.data.size for array in given.values()]
    trace = trace_bytes(model, n, m)
    heads = f" × {model.heads} heads" if model.heads > 1 else ""
    refuse_past_budget(
        f"checking {counted(len(cells), 'array')} against a trace of {n:,} "
        f"token{'s' if n != 1 else ''} × {m:,} key{'s' if m != 1 else ''}{heads}",
        {
            **peak_parts(model, n, m),  # the model, the trace, its arithmetic, the page
            "your arrays": sum(cells) * FLOAT,
            "the diagnosis's recomputed blocks": 4 * trace,
            "the comparison": sum(cells) + 12 * FLOAT * min(max(cells, default=0), BLOCK_CELLS),
        },
    )
