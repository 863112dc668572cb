"""For test suites: a person's attention checked against attntrace, as an assertion.

A course puts ``assert_attention_matches(student_arrays, sample="two-heads")`` in its
homework tests; a failure's message is `attntrace check`'s report, the first stage that
differs and the mistake that reproduces it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attntrace.checking.report import CheckReport

#: How wide the report in an AssertionError is drawn (no terminal to fit).
REPORT_WIDTH = 100


def assert_attention_matches(arrays: Mapping[str, Any] | str | Path, **model: Any) -> CheckReport:
    """Raise an :class:`AssertionError` whose message is the check report unless every
    given stage matches; return the report when they do. ``model`` takes the keywords
    of :func:`attntrace.check` (``sample=``, ``config=``, ``sentence=``, ``head=``, ...)."""
    from attntrace.api import check

    __tracebackhide__ = True  # pytest shows the caller's line, not attntrace's frames
    report = check(arrays, **model)
    if not report.ok:
        source = str(arrays) if isinstance(arrays, str | Path) else None
        raise AssertionError(report_text(report, source))
    return report


def report_text(report: CheckReport, source: str | None = None) -> str:
    """The report as `attntrace check` prints it (of the file ``source``), no colour."""
    from attntrace.checking.views.report import check_text

    return check_text(report, width=REPORT_WIDTH, source=source)
