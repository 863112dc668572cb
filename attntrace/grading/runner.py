"""The child process `grade` runs a student's function in:
``python -m attntrace.grading.runner STATUS_FD FOLDER FILE FUNCTION MEMORY_MB FIRST``
(the calls from FIRST on).

Whatever the student's code does (loops forever, calls ``os._exit``, crashes the
interpreter, prints a flood) happens here, not in attntrace: the parent
(:mod:`attntrace.grading.child`) watches the time and reads only what this process
reports. The calls' arrays come in ``FOLDER/calls.npz``; each call's arrays go back in
``FOLDER/out-I.npz`` (float64, numbers only: nothing is pickled either way), and one
JSON line per event goes to the pipe ``STATUS_FD``: ready, imported (or why not), then
cannot-call where the function's signature does not take ``(X, WQ, WK, WV,
causal=False)``, else for each call start and done, raised or bad-return. The
student's prints go to the files the parent gave as stdout and stderr, never to its
terminal.

Limits set before the student's file is imported: the address space (``RLIMIT_AS``,
MEMORY_MB: ATTNTRACE_MAX_MEMORY_MB), a written file's size (``RLIMIT_FSIZE``: a flood of
prints ends the process instead of filling the disk), no core file.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

#: The largest file the child may write (its prints, each call's arrays), in bytes.
MAX_WRITTEN = 64 << 20


def main(argv: list[str]) -> int:
    fd, folder, file, function, memory_mb, first = argv
    status = int(fd)
    _limits(int(memory_mb))
    sys.dont_write_bytecode = True  # no __pycache__ beside the student's file

    import numpy as np

    from attntrace.grading.outcome import Failed, raised, returned_arrays, unbindable

    _send(status, {"event": "ready"})
    try:
        module = _load(file)
    except BaseException as error:
        failure = raised(error, file)
        _send(status, {"event": "import-failed", **_failure(failure)})
        return 0
    target = getattr(module, function, None)
    if target is None or not callable(target):
        found = "nothing" if target is None else f"a {type(target).__name__}, not callable"
        _send(status, {"event": "no-function", "found": found})
        return 0
    _send(status, {"event": "imported"})
    uncallable = unbindable(target, function)
    if uncallable is not None:
        _send(status, {"event": "cannot-call", **_failure(uncallable)})
        return 0
    with np.load(Path(folder) / "calls.npz", allow_pickle=False) as saved:
        calls = int(saved["count"])
        causal = saved["causal"]
        for i in range(int(first), calls):
            arrays = [np.array(saved[f"{name}{i}"]) for name in ("X", "WQ", "WK", "WV")]
            _send(status, {"event": "start", "call": i})
            try:
                value = target(*arrays, causal=bool(causal[i]))
            except BaseException as error:
                _send(status, {"event": "raised", "call": i, **_failure(raised(error, file))})
                continue
            outcome = returned_arrays(value)  # its own errors are said, never raised
            if isinstance(outcome, Failed):
                _send(status, {"event": "bad-return", "call": i, **_failure(outcome)})
                continue
            given = list(outcome.arrays.values())
            try:
                np.savez(Path(folder) / f"out-{i}.npz", *(g.data for g in given))
            except (OSError, MemoryError) as error:
                too_large = Failed(
                    "bad-return", f"returned arrays that could not be passed on ({error})"
                )
                _send(status, {"event": "bad-return", "call": i, **_failure(too_large)})
                continue
            names = [g.name for g in given]
            dtypes = [g.dtype for g in given]
            _send(status, {"event": "done", "call": i, "names": names, "dtypes": dtypes})
    return 0


def _limits(memory_mb: int) -> None:
    try:
        import resource
    except ImportError:  # Windows: no limits but the time
        return
    import signal

    if hasattr(signal, "SIGXFSZ"):  # past RLIMIT_FSIZE a write fails, not the process
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    cap = memory_mb << 20
    for limit, value in (
        (resource.RLIMIT_AS, cap),
        (resource.RLIMIT_FSIZE, MAX_WRITTEN),
        (resource.RLIMIT_CORE, 0),
    ):
        with contextlib.suppress(ValueError, OSError):  # a lower hard limit stays
            resource.setrlimit(limit, (value, value))


def _load(file: str) -> ModuleType:
    """The student's file imported as a module (its folder first on sys.path, as when
    it runs as a script, so its own helper modules import)."""
    path = Path(file).resolve()
    sys.path.insert(0, str(path.parent))
    name = path.stem if path.stem.isidentifier() and path.stem not in sys.modules else "student"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path.name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _failure(failure: Any) -> dict[str, Any]:
    return {
        "kind": failure.kind,
        "message": failure.message,
        "where": failure.where,
        "code": failure.code,
        "short": failure.short,
    }


def _send(fd: int, event: dict[str, Any]) -> None:
    line = (json.dumps(event, ensure_ascii=True) + "\n").encode("ascii")
    while line:
        line = line[os.write(fd, line) :]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
