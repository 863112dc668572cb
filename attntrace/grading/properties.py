"""The properties attention's output has whatever the numbers, checked from the
student's outputs alone (no trace):

- **permutation equivariance**: without a mask, f(P·X) = P·f(X) for a reordering P of
  X's rows;
- **later tokens change nothing before them**: with the mask, rows 0 … k−1 of the output
  are the same when X's rows from k on are replaced;
- **the hull**: each output row is Σ_j w_j·v_j with w_j ≥ 0 and Σ w_j = 1 over the rows
  v_j of V = X·WV it may see (every row, or rows 0 … i under the mask), so it lies in
  their convex hull. Checked without a linear program by separating directions: along
  each direction u, u·o must lie between the least and the largest u·v_j. The directions
  are V's columns (each output column within that column's min and max over the visible
  rows) and 8 fixed random ones. A point outside the hull is caught along some
  direction, not necessarily these: a row that passes is inside the box of the
  columns' ranges and within those 8 slabs, which a wrong mask or missing softmax
  normalisation of this model already leaves.

Each comparison uses check's tolerance for the output's dtype (docs/check.md), never
looser than float32's (:mod:`attntrace.grading.precision`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from attntrace.checking.tolerance import compare
from attntrace.grading.cases import LATER_FROM, Call, Case, permutation
from attntrace.grading.outcome import Failed, Outcome
from attntrace.grading.precision import held_tolerance
from attntrace.grading.report import CaseResult, Cell
from attntrace.grading.words import UNCHECKED

Matrix = npt.NDArray[np.float64]
OUTPUT_NAMES = ("output", "O", "out")
#: The random directions of the hull's test, from a fixed seed.
DIRECTIONS = 8


def judge_property(case: Case, calls: Sequence[Call], outcomes: Sequence[Outcome]) -> CaseResult:
    outputs: list[tuple[Matrix, str]] = []
    for index in case.calls:
        found = _output(calls[index], outcomes[index])
        if isinstance(found, str):
            return CaseResult(case.name, case.kind, False, None, f"{UNCHECKED}: {found}")
        outputs.append(found)
    if case.name.startswith("permutation"):
        problem = _permutation(calls[case.calls[0]], outputs)
    elif case.name.startswith("causal"):
        problem = _later(outputs)
    else:
        problem = _hull([calls[i] for i in case.calls], outputs)
    if problem is None:
        return CaseResult(case.name, case.kind, True, None, "holds")
    words, cell = problem
    return CaseResult(case.name, case.kind, False, None, f"{case.describe}; {words}", cell)


def _output(call: Call, outcome: Outcome) -> tuple[Matrix, str] | str:
    """The call's output as ``[n, d_v]`` and its dtype, or why there is none."""
    if isinstance(outcome, Failed):
        return "a call it needs failed"
    given = next((outcome.arrays[n] for n in OUTPUT_NAMES if n in outcome.arrays), None)
    if given is None:
        return "the function returned no output"
    data = given.data
    while data.ndim > 2 and data.shape[0] == 1:
        data = data[0]
    n, d_v = call.X.shape[0], call.WV.shape[1]
    if data.shape != (n, d_v):
        return f"the output's shape is {list(given.data.shape)}, not [{n}, {d_v}]"
    return data, given.dtype


def _cell(row: int, column: int, expected: float, found: float) -> Cell:
    return Cell(row, column, f"t{row}", f"d{column}", expected, found, stage="output")


def _differs(expected: Matrix, found: Matrix, dtype: str) -> Cell | None:
    result = compare(expected, found, held_tolerance(dtype))
    if result.matches:
        return None
    rows, cols = np.nonzero(result.wrong)
    i, j = int(rows[0]), int(cols[0])
    return _cell(i, j, float(expected[i, j]), float(found[i, j]))


def _permutation(call: Call, outputs: list[tuple[Matrix, str]]) -> tuple[str, Cell | None] | None:
    (plain, dtype), (permuted, _) = outputs
    order = permutation(call.X.shape[0])
    cell = _differs(plain[order], permuted, dtype)
    if cell is None:
        return None
    return (
        f"X's rows moved 2 places down: its output row {cell.row} should be row "
        f"{int(order[cell.row])} of the first output; column {cell.column} is "
        f"{cell.found:.6g}, not {cell.expected:.6g}",
        cell,
    )


def _later(outputs: list[tuple[Matrix, str]]) -> tuple[str, Cell | None] | None:
    (before, dtype), (after, _) = outputs
    cell = _differs(before[:LATER_FROM], after[:LATER_FROM], dtype)
    if cell is None:
        return None
    return (
        f"row {cell.row}, column {cell.column} went from {cell.expected:.6g} to "
        f"{cell.found:.6g}: it sees later tokens",
        cell,
    )


def _hull(calls: list[Call], outputs: list[tuple[Matrix, str]]) -> tuple[str, Cell | None] | None:
    for call, (output, dtype) in zip(calls, outputs, strict=True):
        problem = _outside(call, output, dtype)
        if problem is not None:
            return problem
    return None


def _outside(call: Call, output: Matrix, dtype: str) -> tuple[str, Cell | None] | None:
    V = call.X @ call.WV
    d_v = V.shape[1]
    directions = np.vstack(
        [np.eye(d_v), np.random.default_rng(7).standard_normal((DIRECTIONS, d_v))]
    )
    tolerance = held_tolerance(dtype)
    for i, row in enumerate(output):
        seen = V[: i + 1] if call.causal else V
        along = seen @ directions.T  # [rows seen, directions]
        low, high = along.min(axis=0), along.max(axis=0)
        scale = max(1.0, float(np.abs(along).max()))
        with np.errstate(invalid="ignore"):
            at = directions @ row
            slack = tolerance.atol * scale + tolerance.rtol * np.maximum(np.abs(low), np.abs(high))
            outside = ~((at >= low - slack) & (at <= high + slack))
        if not outside.any():
            continue
        k = int(np.argmax(outside))
        side = high[k] if not at[k] < low[k] else low[k]
        rows = f"rows 0 to {i}" if call.causal else "rows"
        if k < d_v:
            words = (
                f"output row {i}, column {k} is {at[k]:.6g}, outside that column's range over "
                f"V's {rows}, {low[k]:.6g} to {high[k]:.6g}"
            )
            return words, _cell(i, k, float(side), float(at[k]))
        return (
            f"output row {i} lies outside the hull of V's {rows} (along a direction where "
            f"they reach {low[k]:.6g} to {high[k]:.6g}, it is at {at[k]:.6g})",
            None,
        )
    return None
