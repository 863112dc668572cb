"""What one call of a student's function came to: arrays returned, or a failure.

Shared by the two ways a function is called: in a child process (`grade`, the runner)
and in pytest's own process (the plugin). Either way what the function returned is read
by check's own reader (a numpy array, a torch tensor or nested lists, each keeping its
dtype and so its tolerance), and an exception is located at the line of the student's
file it went through last, as a student looks for it.
"""

from __future__ import annotations

import inspect
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
    """The call failed: ``kind`` is raised, signature (the function cannot be called as
    ``FUNCTION(X, WQ, WK, WV, causal=False)``), timeout, crashed, bad-return or not-run;
    ``message`` says it in words; ``where`` is ``file:line`` of the student's code for
    an exception, with ``code`` that line's text."""

    kind: str
    message: str
    where: str | None = None
    code: str | None = None
    short: str | None = None  # a few words for the case's line (``returned int64, ...``)


Outcome = Returned | Failed


def returned_arrays(value: object) -> Returned | Failed:
    """What the function returned, read as `check` reads arrays from Python. Where the
    reading itself fails (a MemoryError widening a huge result to float64), that is the
    call's failure too, placed at no line: none of the student's raised it."""
    try:
        return _read(value)
    except Exception as error:  # the reader's own error (MemoryError), said in words
        return Failed(
            "bad-return", f"{_named(error)} (while its result was read)", short="unreadable result"
        )


def _read(value: object) -> Returned | Failed:
    from attntrace.checking.user_arrays import given_arrays

    if isinstance(value, tuple) and value and all(_array_like(v) for v in value):
        return Failed(
            "bad-return",
            f"returned a tuple of {len(value)} arrays: return the output alone, or a dict "
            "of stages ({'Q': ..., 'softmax': ..., 'output': ...})",
            short="returned a tuple",
        )
    if isinstance(value, Mapping) and value:
        named: Mapping[object, object] = value
    else:
        named = {"output": value}
    try:
        return Returned(given_arrays({str(k): v for k, v in named.items()}))
    except (InputError, TypeError) as error:
        return Failed("bad-return", f"returned {_what(error)}", short=_short(error))


def _short(error: Exception) -> str | None:
    """``int64, not floats``, ``returned None``: the case line's words."""
    from attntrace.checking.user_arrays import FLOAT_ARRAY

    if isinstance(error, InputError) and error.expected == FLOAT_ARRAY and error.found:
        return f"{error.found[:40]}, not floats"  # fits the case line at 80 columns
    if "None" in str(error):
        return "returned None"
    return None


def unbindable(function: object, name: str) -> Failed | None:
    """The failure of every call where ``function`` cannot be called as
    ``FUNCTION(X, WQ, WK, WV, causal=False)`` (no ``causal``, too few parameters): said
    once, with its signature, not as a TypeError at attntrace's line that calls it.
    None where it can, or where its signature cannot be read (a builtin: then called)."""
    try:
        signature = inspect.signature(function)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    try:
        signature.bind("X", "WQ", "WK", "WV", causal=False)
    except TypeError:
        shown = signature.replace(return_annotation=inspect.Signature.empty)
        return Failed(
            "signature",
            f"{name} cannot be called as {name}(X, WQ, WK, WV, causal=False): its "
            f"signature is {str(shown)[:MESSAGE_LIMIT]}",
        )
    return None


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
    through (a helper module's error at the student's line that called it); with no
    such line (raised where attntrace calls the function), at none: a line is only
    ever the student's."""
    frames = traceback.extract_tb(error.__traceback__)
    mine = [f for f in frames if student_file is not None and _same(f.filename, student_file)]
    message = _named(error)
    if not mine:
        return Failed("raised", message)
    frame = mine[-1]
    where = f"{Path(frame.filename).name}:{frame.lineno}"
    code = (frame.line or "").strip()[:MESSAGE_LIMIT] or None
    return Failed("raised", message, where, code)


def _named(error: BaseException) -> str:
    """``ValueError: matmul: ...``, cut at MESSAGE_LIMIT."""
    message = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return message[:MESSAGE_LIMIT]


def _same(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b
