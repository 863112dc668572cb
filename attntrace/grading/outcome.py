"""What one call of a student's function came to: arrays returned, or a failure.

Shared by the two ways a function is called: in a child process (`grade`, the runner)
and in pytest's own process (the plugin). Either way what the function returned is read
by check's own reader (a numpy array, a torch tensor or nested lists, each keeping its
dtype and so its tolerance), and an exception is located at the line of the student's
file it went through last, as a student looks for it.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from attntrace.checking.given import GivenArray
from attntrace.errors import InputError

#: How much of a student's exception message is kept: a message is the student's text.
MESSAGE_LIMIT = 500


@dataclass(frozen=True)
class Returned:
    """The call returned: its arrays by stage name (``output`` alone unless the function
    returned a dict of stages)."""

    arrays: Mapping[str, GivenArray]


@dataclass(frozen=True)
class Failed:
    """The call failed: ``kind`` is raised, timeout, crashed, bad-return or not-run;
    ``message`` says it in words; ``where`` is ``file:line`` of the student's code for
    an exception, with ``code`` that line's text."""

    kind: str
    message: str
    where: str | None = None
    code: str | None = None


Outcome = Returned | Failed


def returned_arrays(value: object) -> Returned | Failed:
    """What the function returned, read as `check` reads arrays from Python."""
    from attntrace.checking.user_arrays import given_arrays

    if isinstance(value, tuple) and value and all(_array_like(v) for v in value):
        return Failed(
            "bad-return",
            f"returned a tuple of {len(value)} arrays: return the output alone, or a dict "
            "of stages ({'Q': ..., 'softmax': ..., 'output': ...})",
        )
    if isinstance(value, Mapping) and value:
        named: Mapping[object, object] = value
    else:
        named = {"output": value}
    try:
        return Returned(given_arrays({str(k): v for k, v in named.items()}))
    except (InputError, TypeError) as error:
        return Failed("bad-return", f"returned {_what(error)}")


def _array_like(value: object) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _what(error: Exception) -> str:
    """The reader's complaint, named as the return value: ``output: expected ..``."""
    text = str(error)
    if isinstance(error, TypeError):
        text = text.replace("arrays['output']", "output")
    if text.startswith("output") and "None" in text:
        return "None: return the output (a numpy array, a torch tensor or nested lists)"
    return text[:MESSAGE_LIMIT]


def raised(error: BaseException, student_file: str | None) -> Failed:
    """An exception of the student's code, at the last line of ``student_file`` it went
    through (else the last line of any file: a helper module of the student's)."""
    frames = traceback.extract_tb(error.__traceback__)
    mine = [f for f in frames if student_file is not None and _same(f.filename, student_file)]
    message = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    if not frames:
        return Failed("raised", message[:MESSAGE_LIMIT])
    frame = (mine or frames)[-1]
    where = f"{Path(frame.filename).name}:{frame.lineno}"
    code = (frame.line or "").strip()[:MESSAGE_LIMIT] or None
    return Failed("raised", message[:MESSAGE_LIMIT], where, code)


def _same(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b
