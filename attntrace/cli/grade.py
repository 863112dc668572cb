"""`grade`: a student's attention function judged on samples and hidden models
(docs/teaching.md)."""

from __future__ import annotations

from typing import Annotated

import typer


def grade(
    target: Annotated[str, typer.Argument(metavar="FILE.py:FUNCTION", help="The function.")],
) -> None:
    """Grade a student's attention function on the samples and hidden models."""
    raise NotImplementedError(target)  # filled by issue 32's grading work
