"""A student's function graded: named as ``FILE.py:FUNCTION`` and run in a child process
(`attntrace grade`), or handed over as a function object and called here (the pytest
plugin). Either way the same cases, the same judge, the same report.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import signal
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

from attntrace.errors import InputError
from attntrace.grading.cases import Call, Case
from attntrace.grading.outcome import Failed, Outcome, raised, returned_arrays, unbindable
from attntrace.grading.report import GradeReport

#: Seconds each call (and the file's import) may take by default.
DEFAULT_TIMEOUT = 10.0
#: The longest time a call may be given: a day.
MAX_TIMEOUT = 86400.0
#: The largest student file read (its syntax checked before it runs).
MAX_SOURCE = 4 << 20


def parse_target(target: str) -> tuple[Path, str]:
    """``FILE.py:FUNCTION`` as (the file, the function's name), checked: the file
    exists, is a .py file, and parses; the name is an identifier. InputError otherwise."""
    file, colon, function = target.rpartition(":")
    if not colon or not file:
        raise InputError(
            field="FILE.py:FUNCTION",
            expected="a file and a function, e.g. hw1.py:attention",
            found=repr(target),
        )
    if not function.isidentifier():
        raise InputError(
            source=file, field="FUNCTION", expected="a Python name", found=repr(function)
        )
    path = Path(file)
    if path.suffix != ".py" and ".py:" in file:  # hw.py:attention:extra
        raise InputError(
            field="FILE.py:FUNCTION",
            expected="one FUNCTION after FILE.py:, e.g. hw1.py:attention",
            found=repr(target),
        )
    if path.suffix != ".py":
        raise InputError(
            source=file,
            expected="a .py file",
            found=f"a {path.suffix or 'file with no'} suffix".replace(
                "no suffix suffix", "no suffix"
            ),
        )
    try:
        if not path.is_file():
            raise InputError(
                source=file,
                expected="a Python file",
                found="no such file" if not path.exists() else "not a file",
            )
        if path.stat().st_size > MAX_SOURCE:
            raise InputError(
                source=file,
                expected=f"a Python file of at most {MAX_SOURCE >> 20} MiB",
                found=f"{path.stat().st_size:,} bytes",
            )
        source = path.read_bytes()
    except OSError as error:
        raise InputError(
            source=file, expected="a readable file", found=error.strerror or str(error)
        ) from None
    try:
        compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as error:
        raise InputError(
            f"line {error.lineno}: {error.msg}" if error.lineno else str(error.msg), source=file
        ) from None
    except ValueError as error:  # a NUL byte
        raise InputError(str(error), source=file) from None
    return path, function


def timeout_seconds(timeout: float | str) -> float:
    """``--timeout`` as seconds, > 0 and at most a day; InputError otherwise, echoing
    it as typed (``got '0'``, not ``got 0.0``)."""
    try:
        seconds = float(timeout)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= MAX_TIMEOUT:  # NaN fails both
        raise InputError(
            field="--timeout",
            expected=f"a number of seconds > 0 and at most {MAX_TIMEOUT:,.0f}",
            found=repr(timeout),
        )
    return seconds


def prepared_cases() -> tuple[list[Call], list[Case]]:
    """The calls and cases, reported as one task: the samples read and traced inside
    report to nobody (a terminal's display would keep a line for each)."""
    from attntrace.grading.cases import build_cases
    from attntrace.kernel import progress

    with progress.task("preparing the cases"), progress.reporting_to(None):
        return build_cases()


def grade_file(target: str, timeout: float | str = DEFAULT_TIMEOUT) -> GradeReport:
    """Grade ``FILE.py:FUNCTION``, each call in a child process under ``timeout``
    seconds (a number, or the text of ``--timeout``). InputError where the file cannot
    be imported or has no such function."""
    from attntrace.grading.child import run_in_child
    from attntrace.grading.judge import grade_outcomes
    from attntrace.kernel import progress

    seconds = timeout_seconds(timeout)
    file, function = parse_target(target)
    calls, cases = prepared_cases()
    with progress.task(f"running {file.name}:{function}"):
        outcomes = run_in_child(file, function, calls, seconds)
    return grade_outcomes(target, cases, calls, outcomes)


def grade_function(function: Callable[..., object]) -> GradeReport:
    """Grade a function object, calling it in this process (no time limit of its own).

    Whatever the function raises is its failure, said as `attntrace grade` says it: a
    ``SystemExit`` (``sys.exit(0)`` in a student's code would end pytest's process) or
    a BaseException of its own too. A ``KeyboardInterrupt`` is the student's failure
    when the student's code raised it, and stops the run when it came from Ctrl-C: a
    SIGINT handler set for the calls tells the two apart (off the main thread, where
    no handler can be set, every KeyboardInterrupt is taken for Ctrl-C)."""
    from attntrace.grading.judge import grade_outcomes

    if not callable(function):
        raise TypeError(f"expected a function, got {type(function).__name__}")
    try:
        file = inspect.getsourcefile(function)
    except TypeError:  # a builtin or a C function
        file = None
    calls, cases = prepared_cases()
    name = getattr(function, "__qualname__", None) or getattr(function, "__name__", "function")
    where = f"{Path(file).name}:{name}" if file else str(name)
    uncallable = unbindable(function, getattr(function, "__name__", None) or "function")
    if uncallable is not None:
        return grade_outcomes(where, cases, calls, [uncallable] * len(calls))
    outcomes: list[Outcome] = []
    with _ctrl_c() as pressed:
        for call in calls:
            # a warning is no failure, as in the child (where it goes to stderr, unseen):
            # a test run with filterwarnings = error would make numpy's overflow one
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    value = function(*call.arrays(), causal=call.causal)
                except KeyboardInterrupt as error:
                    if pressed:
                        raise
                    outcomes.append(raised(error, file))
                    continue
                except BaseException as error:  # SystemExit included: the student's
                    outcomes.append(raised(error, file))
                    continue
            outcomes.append(returned_arrays(value))
    return grade_outcomes(where, cases, calls, outcomes)


@contextlib.contextmanager
def _ctrl_c() -> Iterator[list[bool]]:
    """A list that holds True once SIGINT arrives while the calls run (Ctrl-C, as
    opposed to a KeyboardInterrupt the student's code raised); the handler then does
    what the one before it did (Python's raises KeyboardInterrupt)."""
    pressed: list[bool] = []
    if threading.current_thread() is not threading.main_thread():
        yield [True]  # no handler can be set here: any KeyboardInterrupt is Ctrl-C
        return
    previous = signal.getsignal(signal.SIGINT)

    def heard(signum: int, frame: FrameType | None) -> None:
        pressed.append(True)
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, heard)
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, previous)


__all__ = ["DEFAULT_TIMEOUT", "Failed", "grade_file", "grade_function", "parse_target"]
