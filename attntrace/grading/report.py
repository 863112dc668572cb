"""What `grade` found, as a record: each case passed or failed, why, and the score.

:mod:`attntrace.grading.judge` makes it; the view, the JSON writer and the pytest
plugin's assertion read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from attntrace.checking.report import CheckReport, Spot
from attntrace.grading.outcome import Failed
from attntrace.grading.precision import Precision


@dataclass(frozen=True)
class Cell(Spot):
    """A differing cell: check's :class:`Spot` (where, expected and found) and the
    stage it is in."""

    stage: str


@dataclass(frozen=True, eq=False)
class CaseResult:
    """One case judged. ``cause`` is the catalogue id that reproduces the student's
    outputs (None: none does, or the case is a property, or the call failed);
    ``check`` is check's report on the case's arrays where they were compared;
    ``failure`` the call's failure where it raised, hung, crashed or returned no array;
    ``precision`` says where the arrays came back below float32 (held to float32's
    tolerance, :mod:`attntrace.grading.precision`); ``across`` is the verdict across
    the cases where it differs from check's on this case (``check`` names the mistake
    its numbers alone reproduce, tied with others; ``cause`` the one that reproduces
    every failing case): said after check's report, so the two never contradict.
    ``alone`` marks a cause that reproduces this case only, where other failing cases
    compared are reproduced by no mistake of the catalogue (so no one mistake explains
    the student). ``notes`` are what a passing case still says: a dict of stages whose
    output matches, its other stages differing (check's first differing stage and its
    diagnosis)."""

    name: str
    kind: str  # sample, random, property
    passed: bool
    cause: str | None
    message: str
    cell: Cell | None = None
    check: CheckReport | None = None
    failure: Failed | None = None
    precision: Precision | None = None
    across: str | None = None
    alone: bool = False
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class GradeReport:
    """Every case of one function, in the order they were judged."""

    target: str  # FILE.py:FUNCTION, or the function's name in pytest
    cases: tuple[CaseResult, ...]

    @property
    def passed(self) -> bool:
        return all(case.passed for case in self.cases)

    @property
    def score(self) -> tuple[int, int]:
        """(cases passed, cases)."""
        return sum(case.passed for case in self.cases), len(self.cases)

    @property
    def first_failure(self) -> CaseResult | None:
        return next((case for case in self.cases if not case.passed), None)

    @property
    def exit_code(self) -> int:
        """0 when every case passes, 1 when one fails."""
        return 0 if self.passed else 1
