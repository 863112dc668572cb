"""The hostile catalogue's runner: each kind as a real process, its peak memory measured.

A :class:`Kind` is one hostile input: the files to make in an empty folder, the command
line, the environment and stdin, and what must come of it. :func:`run` starts
``python -m attntrace ARGV`` (``sys.executable``, this checkout's package first on
``PYTHONPATH``) in that folder, reaps it with ``os.wait4`` for its own peak resident set
(``ru_maxrss``, KiB on Linux), and :func:`violations` holds the result to the contract of
docs/cli.md#the-error-line: one line ``attntrace: error: ...`` on stderr, exit 2, nothing
on stdout, no traceback, no death by a signal, and a peak within the memory budget plus
the import floor (what Python, numpy, Rich and typer hold before any input is read).

A watchdog polls the child's resident set and kills it once it passes the allowance by
:data:`KILL_PAST_MIB`: a kind that would take gigabytes (as several did when the
catalogue was written) fails at once, naming what it reached, instead of taking the
shared machine's memory.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from paths import ROOT

PREFIX = b"attntrace: error: "
SAVED = b"attntrace: saved "
BUDGET_MB = 256  # ATTNTRACE_MAX_MEMORY_MB for every kind that does not set its own
KILL_PAST_MIB = 384  # the watchdog's margin past a kind's allowance
POLL_SECONDS = 0.005

# A file's content: bytes, text (UTF-8), or a function that makes whatever is at the path.
Make = str | bytes | Callable[[Path], None]
Expect = Literal["error", "ok", "either"]


@dataclass(frozen=True)
class Ran:
    """What one process did: its exit status, output, peak memory and time."""

    returncode: int  # negative: killed by that signal
    stdout: bytes
    stderr: bytes
    peak_kib: int
    seconds: float
    folder: Path
    timed_out: bool = False
    killed_at_kib: int = 0  # the watchdog's kill: the resident set it had reached


@dataclass(frozen=True)
class Kind:
    """One hostile input and what must come of it.

    ``expect``: ``error`` is the one line and exit ``exit`` (2 unless said), each of
    ``says`` in the line; ``ok`` is exit 0 with nothing on stderr; ``either`` is one of
    the two (an input the contract lets be refused or done, within the budget).
    ``check`` looks further at an ``ok`` run and returns what is wrong, or None.
    ``python`` runs that code with ``python -c`` instead of ``-m attntrace`` (the API).
    ``head`` reads that many bytes of stdout and closes the pipe, as ``| head -c N``.
    """

    id: str
    argv: tuple[str | bytes, ...]
    expect: Expect = "error"
    says: tuple[str, ...] = ()
    files: Mapping[str, Make] = field(default_factory=dict)
    env: Mapping[str, str | bytes] = field(default_factory=dict)
    stdin: bytes | None = None
    exit: int = 2
    verdicts: tuple[int, ...] = (0,)  # the exit codes of an answer (check, diff: 0 and 1)
    check: Callable[[Ran], str | None] | None = None
    budget_mb: int = BUDGET_MB
    timeout: float = 60.0
    head: int | None = None
    python: str | None = None
    setup: Callable[[Path], Mapping[str, str]] | None = None  # more env, made in the folder
    never: tuple[str, ...] = ()  # what the error line must not say
    redirect: str = ""  # a shell redirection of the child's own streams, as ">/dev/full"
    # an interactive walk (--step) refused on a bad key: the screens shown before it stay
    shown_first: bool = False


def kind(id: str, *argv: str | bytes, **options: Any) -> Kind:
    """A kind, its command line written out: ``kind("x", "run", "-c", "m.yaml", says=...)``."""
    return Kind(id, argv, **options)


def child_env(kind: Kind, folder: Path) -> dict[bytes, bytes]:
    """The environment of a run: this machine's, less anything that changes attntrace or
    Python's streams, plus a fixed terminal, the budget, and the kind's own."""
    env = {
        name: value
        for name, value in os.environb.items()
        if not name.startswith((b"ATTNTRACE_", b"PYTHON", b"LC_", b"COLUMNS", b"LINES"))
        and name not in (b"LANG", b"NO_COLOR", b"FORCE_COLOR", b"TERM")
    }
    env.update(
        {
            b"PYTHONPATH": os.fsencode(ROOT),
            b"COLUMNS": b"80",
            b"NO_COLOR": b"1",
            b"TERM": b"dumb",
            b"LANG": b"C.UTF-8",
            b"ATTNTRACE_MAX_MEMORY_MB": str(kind.budget_mb).encode(),
        }
    )
    more: dict[str, str | bytes] = dict(kind.env)
    if kind.setup is not None:
        more.update(kind.setup(folder))
    for name, value in more.items():
        env[name.encode()] = value if isinstance(value, bytes) else os.fsencode(value)
    return env


def materialize(files: Mapping[str, Make], folder: Path) -> None:
    for name, make in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(make, bytes):
            path.write_bytes(make)
        elif isinstance(make, str):
            path.write_text(make, encoding="utf-8")
        else:
            make(path)


def resident_kib(pid: int) -> int:
    """The child's resident set now (0 once it is gone)."""
    try:
        with Path(f"/proc/{pid}/statm").open("rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except (OSError, IndexError, ValueError):
        return 0


# The child is started by this small spawner, not by pytest: a process's ru_maxrss keeps
# the peak of the memory it had before exec, and a child forked from pytest (hundreds of
# MiB) would report pytest's size. The spawner (python -S, a few MiB) forks, execs the
# command, reaps it with wait4 and writes its status and peak to the report file.
SPAWNER = """
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execv(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as report:
    report.write(f"{status} {usage.ru_maxrss}")
"""


def run(kind: Kind, folder: Path, floor_kib: int) -> Ran:
    """Make the kind's files in ``folder`` and run it there, watched."""
    materialize(kind.files, folder)
    env = child_env(kind, folder)
    argv: list[str | bytes] = (
        [sys.executable, "-c", kind.python]
        if kind.python is not None
        else [sys.executable, "-m", "attntrace", *kind.argv]
    )
    if kind.redirect:  # the shell execs Python in its place: wait4 still measures Python
        argv = ["/bin/sh", "-c", f'exec "$0" "$@" {kind.redirect}', *argv]
    side = folder.parent / f"{folder.name}.run"
    side.mkdir()
    (side / "stdin").write_bytes(kind.stdin or b"")
    report = side / "report"
    limit_kib = floor_kib + kind.budget_mb * 1024 + KILL_PAST_MIB * 1024
    with (
        (side / "stdin").open("rb") as given,
        (side / "stdout").open("wb") as out,
        (side / "stderr").open("wb") as err,
    ):
        stdin = given if kind.stdin is not None else subprocess.DEVNULL
        stdout = subprocess.PIPE if kind.head is not None else out
        start = time.monotonic()
        spawner = subprocess.Popen(
            [sys.executable, "-S", "-c", SPAWNER, str(report), *argv],
            cwd=folder,
            env=env,
            stdin=stdin,
            stdout=stdout,
            stderr=err,
        )
        reader = threading.Thread(target=head, args=(spawner, kind.head), daemon=True)
        reader.start()
        timed_out, killed_at = watch(spawner, kind.timeout, limit_kib)
        seconds = time.monotonic() - start
        reader.join(timeout=5)
    status, peak = (int(figure) for figure in report.read_text().split())
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    output = (side / "stdout").read_bytes(), (side / "stderr").read_bytes()
    return Ran(code, *output, peak, seconds, folder, timed_out, killed_at)


def head(spawner: subprocess.Popen[bytes], count: int | None) -> None:
    """Read ``count`` bytes of stdout and close the pipe, as ``| head -c COUNT`` does."""
    if count is not None and spawner.stdout is not None:
        spawner.stdout.read(count)
        spawner.stdout.close()


def command_pid(spawner: int) -> int | None:
    """The spawner's one child: the command being measured."""
    try:
        children = Path(f"/proc/{spawner}/task/{spawner}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def watch(spawner: subprocess.Popen[bytes], timeout: float, limit_kib: int) -> tuple[bool, int]:
    """Wait for the spawner, killing its command past ``timeout`` seconds or past
    ``limit_kib`` resident: whether it ran out of time, and the resident set it was
    killed at (0: not killed for memory)."""
    deadline = time.monotonic() + timeout
    timed_out, killed_at = False, 0
    while spawner.poll() is None:
        pid = command_pid(spawner.pid)
        if pid is not None and not (timed_out or killed_at):
            now = resident_kib(pid)
            if now > limit_kib:
                killed_at = now
                os.kill(pid, signal.SIGKILL)
            elif time.monotonic() > deadline:
                timed_out = True
                os.kill(pid, signal.SIGKILL)
        time.sleep(POLL_SECONDS)
    return timed_out, killed_at


def mib(kib: int) -> str:
    return f"{kib / 1024:.0f} MiB"


def violations(kind: Kind, ran: Ran, floor_kib: int) -> list[str]:
    """Everything ``ran`` did against the contract and the kind's expectation, each named
    by what was broken (hang, memory, signal, traceback, lines, exit, stdout, says, ...)."""
    allowance = kind.budget_mb * 1024 + floor_kib
    found: list[str] = []
    if ran.timed_out:
        found.append(f"hang: still running after {kind.timeout:.0f} s; killed")
    if ran.killed_at_kib:
        found.append(
            f"memory: reached {mib(ran.killed_at_kib)} after {ran.seconds:.1f} s, past the "
            f"allowance of {mib(allowance)}; killed"
        )
    elif ran.peak_kib > allowance:
        found.append(
            f"memory: peak {mib(ran.peak_kib)} > allowance {mib(allowance)} (budget "
            f"{kind.budget_mb} MiB + import floor {mib(floor_kib)})"
        )
    if ran.timed_out or ran.killed_at_kib:
        return found
    if ran.returncode < 0 or ran.returncode >= 128:
        signum = -ran.returncode if ran.returncode < 0 else ran.returncode - 128
        found.append(f"signal: died by {signal.Signals(signum).name} (exit {ran.returncode})")
    if b"Traceback" in ran.stderr or b"Traceback" in ran.stdout:
        found.append(f"traceback: {last_line(ran.stderr)}")
    answered = ran.returncode in kind.verdicts
    wants_error = kind.expect == "error" or (kind.expect == "either" and not answered)
    found += error_violations(kind, ran) if wants_error else ok_violations(kind, ran)
    return found


def error_violations(kind: Kind, ran: Ran) -> list[str]:
    found = []
    if ran.returncode != kind.exit:
        found.append(f"exit: {ran.returncode}, not {kind.exit}: {first_line(ran.stderr)}")
    if ran.stdout and not kind.shown_first:
        found.append(f"stdout: not empty: {first_line(ran.stdout)}")
    lines = ran.stderr.splitlines()
    if len(lines) != 1 or not ran.stderr.endswith(b"\n"):
        found.append(f"lines: {len(lines)} lines on stderr, not one: {first_line(ran.stderr)}")
    if not lines:
        return found
    line = lines[0]
    if not line.startswith(PREFIX):
        found.append(f"prefix: not an attntrace error line: {line[:160]!r}")
    if b"\x1b" in line:
        found.append(f"escape: a raw ESC in the line: {line[:160]!r}")
    text = line.decode("utf-8", "replace")
    found += [
        f"says: the line lacks {want!r}: {text[:200]}" for want in kind.says if want not in text
    ]
    found += [f"says: the line holds {bad!r}: {text[:200]}" for bad in kind.never if bad in text]
    return found


def ok_violations(kind: Kind, ran: Ran) -> list[str]:
    found = []
    if ran.returncode not in kind.verdicts:
        found.append(f"exit: {ran.returncode}, not {kind.verdicts}: {first_line(ran.stderr)}")
        return found
    # A success says nothing on stderr but where it saved a file (docs/cli.md).
    said = [line for line in ran.stderr.splitlines() if not line.startswith(SAVED)]
    if said:
        found.append(f"stderr: not empty on success: {said[0].decode('utf-8', 'replace')[:200]}")
    if kind.check is not None:
        problem = kind.check(ran)
        if problem:
            found.append(f"output: {problem}")
    return found


def first_line(data: bytes) -> str:
    line = data.strip().split(b"\n", 1)[0] if data.strip() else b""
    return line.decode("utf-8", "replace")[:200] or "(nothing)"


def last_line(data: bytes) -> str:
    """A traceback's exception line (its last line that names an exception)."""
    lines = data.strip().splitlines()
    named = [line for line in lines if re.match(rb"^[\w.]+(Error|Exception|Exit)\b", line)]
    chosen = named[-1] if named else lines[-1] if lines else b"(nothing)"
    return chosen.decode("utf-8", "replace")[:200]
