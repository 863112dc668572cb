"""The precision an output is held to: float32's at the loosest.

The inputs grade gives are float64, so an output returned in float16 or bfloat16 was
cast down by the student's own choice; check's table (docs/check.md) would give it
float16's slack (rtol 1e-2), wide enough to hide a bug of 1% (a softmax ÷ (sum + 1e-2)
cast to float16 passed every case). So grade holds every output and stage to the
tighter of its own dtype's tolerance and float32's: float64 keeps rtol 1e-6, float32
keeps 1e-4, float16 and bfloat16 get float32's 1e-4 and atol 1e-5, and the report says
where a lower precision was returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from attntrace.checking.given import GivenArray
from attntrace.checking.tolerance import TOLERANCES, Tolerance, tolerance_for

#: The dtype whose tolerance is the loosest grade gives.
HELD_AS = "float32"
#: The dtypes held to HELD_AS's tolerance instead of their own.
LOWER = ("float16", "bfloat16")


@dataclass(frozen=True)
class Precision:
    """A case whose arrays came back in ``dtype``, below float32, held to ``held_as``'s
    rtol and atol."""

    dtype: str
    held_as: str = HELD_AS

    @property
    def rtol(self) -> float:
        return TOLERANCES[self.held_as][0]

    @property
    def atol(self) -> float:
        return TOLERANCES[self.held_as][1]

    @property
    def rtol_own(self) -> float:
        """The rtol check's table gives ``dtype`` (the larger, the lower the precision)."""
        return TOLERANCES[self.dtype][0]

    def words(self) -> str:
        """``returned float16: held to float32's tolerance (rtol 1e-4, atol 1e-5), ...``."""
        return (
            f"returned {self.dtype}: held to {self.held_as}'s tolerance (rtol "
            f"{power(self.rtol)}, atol {power(self.atol)}), as the inputs are float64"
        )


def power(value: float) -> str:
    """``1e-4``, as docs/check.md's table writes a tolerance."""
    mantissa, _, exponent = f"{value:.0e}".partition("e")
    return f"{mantissa}e{int(exponent)}"


def held_tolerance(dtype: str) -> Tolerance:
    """The tolerance an array of ``dtype`` is held to: its own, or float32's if looser."""
    if dtype in LOWER:
        rtol, atol = TOLERANCES[HELD_AS]
        return tolerance_for(dtype, rtol, atol)
    return tolerance_for(dtype)


def lowered(arrays: Mapping[str, GivenArray]) -> Precision | None:
    """The precision note of a call's arrays: the lowest dtype below float32, if any."""
    found = [a.dtype for a in arrays.values() if a.dtype in LOWER]
    if not found:
        return None
    return Precision(max(found, key=lambda d: TOLERANCES[d][0]))


def held_arrays(
    arrays: Mapping[str, GivenArray],
) -> tuple[Mapping[str, GivenArray], float | None, float | None]:
    """The arrays and the ``rtol`` / ``atol`` overrides for check: float32's, where the
    arrays are all float32 or lower (so each keeps its dtype for check's diagnosis, an
    unstable softmax overflowing where float16 does); where a float64 array is among
    them, the lower ones are relabelled float32 instead, and the float64 one keeps its
    own tolerance."""
    if lowered(arrays) is None:
        return arrays, None, None
    if all(a.dtype != "float64" for a in arrays.values()):
        rtol, atol = TOLERANCES[HELD_AS]
        return arrays, rtol, atol
    relabelled = {
        name: GivenArray(a.name, a.data, HELD_AS) if a.dtype in LOWER else a
        for name, a in arrays.items()
    }
    return relabelled, None, None
