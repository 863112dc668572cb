"""A student's function run in a child process (:mod:`attntrace.grading.runner`), watched.

The child's file, its exceptions, its loops and its crashes stay the child's: the parent
sends the calls' arrays in a ``.npz`` and reads back, for each call, the arrays it
returned (``.npz``, ``allow_pickle=False``) or what went wrong, from the JSON lines of a
pipe. Each call has ``timeout`` seconds, as has the import of the student's file;
a call past it (or a child that dies in a call) is that call's failure, the child is
killed with its process group, and the calls after it run in a new child; after
:data:`MAX_STOPS` such calls, the rest are not run. What the import
itself gets wrong (an exception, no such function, a hang) is bad input: an
:class:`InputError`, one line, exit 2.

This guards attntrace against a student's mistakes; it is no sandbox against malice
(the student's code runs as the user, with the user's files).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from attntrace.checking.given import DTYPES, GivenArray
from attntrace.errors import InputError
from attntrace.grading.cases import Call
from attntrace.grading.outcome import Failed, Outcome, Returned
from attntrace.kernel.budget import memory_budget
from attntrace.kernel.frozen import freeze

#: Seconds the child may take to start (Python, numpy, attntrace's reader) before the
#: student's file is imported: not the student's time.
STARTUP = 60.0
#: After this many calls that hang or end the process, the calls left are not run (each
#: stop costs a new child, and a hang the whole timeout).
MAX_STOPS = 3
#: The largest line of events kept: a longer one is not the runner's.
LINE_LIMIT = 1 << 16


@dataclass
class _Watch:
    """What the parent has heard so far."""

    function: str
    outcomes: dict[int, Outcome] = field(default_factory=dict)
    ready: bool = False
    imported: bool = False
    current: int | None = None
    buffer: bytes = b""
    stopped: bool = False  # a call hung or the process died in it


def run_in_child(file: Path, function: str, calls: list[Call], timeout: float) -> list[Outcome]:
    """Each call's outcome, in order (InputError where the file cannot be imported or
    has no such function)."""
    with tempfile.TemporaryDirectory(prefix="attntrace-grade-") as folder:
        arrays: dict[str, Any] = {
            "count": np.array(len(calls)),
            "causal": np.array([c.causal for c in calls]),
        }
        for i, call in enumerate(calls):
            arrays.update(
                {f"X{i}": call.X, f"WQ{i}": call.WQ, f"WK{i}": call.WK, f"WV{i}": call.WV}
            )
        np.savez(Path(folder) / "calls.npz", **arrays)
        watch = _Watch(function)
        first, stops = 0, 0
        while True:
            _run(file, Path(folder), timeout, len(calls), first, watch)
            missing = [i for i in range(len(calls)) if i not in watch.outcomes]
            stops += watch.stopped
            if not missing or not watch.stopped or stops == MAX_STOPS:
                break
            first = missing[0]  # past the call that stopped: the rest in a new child
        skipped = Failed(
            "not-run",
            f"not run: {stops} calls before it did not return"
            if stops == MAX_STOPS
            else "not run: the process ended before it",
        )
        outcomes: list[Outcome] = []
        for i in range(len(calls)):
            outcome = watch.outcomes.get(i)
            if isinstance(outcome, Returned):
                outcome = _read_arrays(Path(folder) / f"out-{i}.npz", outcome)
            outcomes.append(outcome or skipped)
        return outcomes


def _run(file: Path, folder: Path, timeout: float, count: int, first: int, watch: _Watch) -> None:
    """One child, running the calls from ``first`` on, heard into ``watch``."""
    watch.ready = watch.imported = watch.stopped = False
    watch.current, watch.buffer = None, b""
    read, write = os.pipe()
    printed = (folder / "printed.txt").open("wb")  # the student's prints: kept, never shown
    package_root = str(Path(__file__).resolve().parent.parent.parent)
    # PYTHONSAFEPATH (3.11+): the folder grade runs in is not put first on sys.path, so
    # a student's numpy.py there shadows nothing of the runner's
    env = {
        "PYTHONSAFEPATH": "1",
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    command = [
        sys.executable,
        "-m",
        "attntrace.grading.runner",
        str(write),
        str(folder),
        str(file),
        watch.function,
        str(max(1, memory_budget() >> 20)),
        str(first),
    ]
    try:
        child = subprocess.Popen(
            command,
            pass_fds=(write,),
            stdin=subprocess.DEVNULL,
            stdout=printed,
            stderr=printed,
            env=env,
            start_new_session=True,
        )
    finally:
        os.close(write)
        printed.close()
    try:
        _follow(child, read, watch, file, timeout, count)
    finally:
        os.close(read)
        _end(child)


def _follow(
    child: subprocess.Popen[bytes], read: int, watch: _Watch, file: Path, timeout: float, count: int
) -> None:
    """Read events until the child is done, dies, or overstays a deadline."""
    deadline = time.monotonic() + STARTUP
    while len(watch.outcomes) < count:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([read], [], [], max(0.0, left))
        if not ready:
            _overstayed(watch, file, timeout)
            return
        chunk = os.read(read, 1 << 16)
        if not chunk:  # the child is gone
            _died(child, watch, file)
            return
        watch.buffer += chunk
        *lines, watch.buffer = watch.buffer.split(b"\n")
        if len(watch.buffer) > LINE_LIMIT:
            watch.buffer = b""
        for line in lines:
            waiting = _heard(line, watch, file, count)
            if waiting is not None:
                deadline = time.monotonic() + (timeout if waiting else STARTUP)


def _heard(line: bytes, watch: _Watch, file: Path, count: int) -> bool | None:
    """Take one event in; True where the student's time now runs (the import, a
    call), False where attntrace's does, None where nothing changed."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    kind, call = event.get("event"), event.get("call")
    if kind == "ready":
        watch.ready = True
        return True
    if kind in ("import-failed", "no-function"):
        _refuse(kind, event, watch, file)
    if kind == "imported":
        watch.imported = True
        return False
    if kind == "cannot-call":  # every call fails alike: said once, by its signature
        failure = Failed("signature", _text(event.get("message")))
        watch.outcomes.update(dict.fromkeys(range(count), failure))
        return False
    if not isinstance(call, int) or not 0 <= call < count:
        return None
    if kind == "start":
        watch.current = call
        return True
    watch.current = None
    if kind == "done":
        names, dtypes = event.get("names"), event.get("dtypes")
        if (
            isinstance(names, list)
            and isinstance(dtypes, list)
            and len(names) == len(dtypes)
            and _texts(names + dtypes)
        ):
            watch.outcomes[call] = Returned(
                {n: GivenArray(n, np.zeros(1), d) for n, d in zip(names, dtypes, strict=True)}
            )
    elif kind in ("raised", "bad-return"):
        watch.outcomes[call] = Failed(
            str(kind),
            _text(event.get("message")),
            _optional(event.get("where")),
            _optional(event.get("code")),
            _optional(event.get("short")),
        )
    return False


def _refuse(kind: object, event: dict[str, Any], watch: _Watch, file: Path) -> None:
    """The file cannot be imported, or has no such function: bad input, exit 2."""
    if kind == "import-failed":
        where = event.get("where")
        raise InputError(
            f"importing it raised {_text(event.get('message'))}"
            + (f" (line {str(where).rpartition(':')[2]})" if where else ""),
            source=str(file),
        )
    raise InputError(
        source=str(file),
        field=watch.function,
        expected="a function (FUNCTION of FILE.py:FUNCTION)",
        found=_text(event.get("found")),
    )


def _overstayed(watch: _Watch, file: Path, timeout: float) -> None:
    if not watch.ready:
        raise InputError(f"the grading process did not start within {STARTUP:g} s")
    if not watch.imported:
        raise InputError(f"importing it did not finish within {timeout:g} s", source=str(file))
    if watch.current is not None:
        watch.outcomes[watch.current] = Failed(
            "timeout", f"did not return within {timeout:g} s (--timeout)"
        )
        watch.stopped = True


def _died(child: subprocess.Popen[bytes], watch: _Watch, file: Path) -> None:
    code = child.wait()
    how = _how(code)
    if not watch.imported:
        raise InputError(f"importing it ended the process ({how})", source=str(file))
    if watch.current is not None:
        watch.outcomes[watch.current] = Failed("crashed", f"the process ended in the call ({how})")
        watch.stopped = True


def _how(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _end(child: subprocess.Popen[bytes]) -> None:
    """The child and anything it started, killed (a no-op when it has ended)."""
    if child.poll() is None:
        try:
            os.killpg(child.pid, signal.SIGKILL)  # its own session: pid is the group's id
        except (ProcessLookupError, PermissionError, AttributeError):  # no killpg: Windows
            child.kill()
    child.wait()


def _read_arrays(path: Path, told: Returned) -> Outcome:
    """The arrays a call returned, as the child wrote them (float64, no pickle)."""
    from attntrace.grading.runner import MAX_WRITTEN

    try:
        if path.stat().st_size > MAX_WRITTEN:
            return Failed("bad-return", "returned arrays too large to judge")
        arrays: dict[str, GivenArray] = {}
        with np.load(path, allow_pickle=False) as saved:
            for k, (name, given) in enumerate(told.arrays.items()):
                data = saved[f"arr_{k}"]
                if data.dtype != np.float64 or given.dtype not in DTYPES:
                    return Failed("bad-return", "returned arrays that could not be read back")
                arrays[name] = GivenArray(name, freeze(np.array(data)), given.dtype)
        return Returned(arrays)
    except (OSError, ValueError, KeyError):
        return Failed("bad-return", "returned arrays that could not be read back")


def _text(value: object) -> str:
    return str(value)[:2000] if value is not None else "nothing"


def _optional(value: object) -> str | None:
    return None if value is None else str(value)[:2000]


def _texts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)
