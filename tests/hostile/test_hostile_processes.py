"""The hostile catalogue, each kind run as a real process with its memory measured.

Every kind of :mod:`hostile.kinds_*` runs as ``python -m attntrace ...`` in a folder of
its own, under ``ATTNTRACE_MAX_MEMORY_MB=256`` unless it says otherwise, and must keep
the contract (docs/cli.md#the-error-line) and its own expectation: one line and exit 2,
or a correct output, never a traceback, a signal or a hang, and a peak resident set
within the budget plus the import floor measured here (docs/development.md, "The hostile
catalogue"). The kinds run two at a time in a pool, each reaped by ``os.wait4`` for its
own peak; each test then judges one kind's result.
"""

from __future__ import annotations

import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hostile import (
    kinds_env,
    kinds_files,
    kinds_flags,
    kinds_issue,
    kinds_issue_text,
    kinds_saved,
    makers,
)
from hostile.runner import Kind, Ran, mib, run, violations

pytestmark = pytest.mark.long

# Three at a time on two cores: a third keeps them busy while a kind waits (a FIFO's
# writer, a hang). Each child's peak is its own all the same (wait4, in the spawner).
WORKERS = 3

KINDS: list[Kind] = [
    *kinds_issue.KINDS,
    *kinds_issue_text.KINDS,
    *kinds_env.KINDS,
    *kinds_files.KINDS,
    *kinds_flags.KINDS,
    *kinds_saved.KINDS,
]
BY_ID = {kind.id: kind for kind in KINDS}

# The runner's own checks: each of these breaks the contract in one way on purpose, and
# the runner must say so (a catalogue whose judge cannot fail would prove nothing).
CRASHES = "import os, signal; os.kill(os.getpid(), signal.SIGBUS)"
SELF_TESTS: dict[str, tuple[Kind, str]] = {
    "self-traceback": (Kind("self-traceback", (), python="1/0"), "traceback: ZeroDivisionError"),
    "self-signal": (Kind("self-signal", (), python=CRASHES), "signal: died by SIGBUS"),
    "self-two-lines": (
        Kind("self-two-lines", (), python="import sys; sys.stderr.write('a\\nb\\n'); exit(2)"),
        "lines: 2 lines",
    ),
    "self-exit": (
        Kind("self-exit", (), python="import sys; sys.stderr.write('attntrace: error: x\\n')"),
        "exit: 0, not 2",
    ),
    "self-memory": (
        Kind(
            "self-memory",
            (),
            python="b = bytearray(400 << 20); b[::4096] = b'x' * len(b[::4096]); exit(2)",
            budget_mb=64,
        ),
        "memory: ",
    ),
    "self-hang": (Kind("self-hang", (), python="import time; time.sleep(60)", timeout=2), "hang: "),
    "self-says": (
        Kind(
            "self-says",
            (),
            python="import sys; sys.stderr.write('attntrace: error: x\\n'); exit(2)",
            says=("budget",),
        ),
        "says: the line lacks 'budget'",
    ),
}

# The import floor: the peak resident set of the smallest complete runs, what Python,
# numpy, Rich and typer hold before any input counts. A kind's allowance is its budget
# plus this.
FLOOR_RUNS = (
    ("run", "-s", "the-cat-sat", "the cat sat"),
    ("run", "-s", "the-cat-sat", "the cat sat", "--json"),
    ("run", "-s", "the-cat-sat", "the cat sat", "--export", "page.html"),
)


@pytest.fixture(scope="session")
def floor_kib(tmp_path_factory: pytest.TempPathFactory) -> int:
    peaks = []
    for index, argv in enumerate(FLOOR_RUNS):
        folder = tmp_path_factory.mktemp(f"floor{index}")
        ran = run(Kind(f"floor{index}", argv, expect="ok"), folder, floor_kib=1 << 30)
        assert ran.returncode == 0, ran.stderr
        peaks.append(ran.peak_kib)
    return max(peaks)


@pytest.fixture(scope="session")
def outcomes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, floor_kib: int
) -> dict[str, Ran | Exception]:
    """Every selected kind, run two at a time (only those this session selected)."""
    wanted: list[Kind] = []
    for item in request.session.items:
        if item.path != Path(__file__):  # another module's ``name`` is none of ours
            continue
        callspec = getattr(item, "callspec", None)
        name = callspec.params.get("name") if callspec is not None else None
        if isinstance(name, str):
            wanted.append(BY_ID[name] if name in BY_ID else SELF_TESTS[name][0])
    makers.saved_trace()  # made once, before the threads need it

    def one(kind: Kind) -> Ran | Exception:
        folder = tmp_path_factory.mktemp(re.sub(r"[^\w.-]", "_", kind.id)[:60])
        try:
            return run(kind, folder, floor_kib)
        except Exception as error:  # a maker that failed: that kind's test says so
            return error

    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip([k.id for k in wanted], pool.map(one, wanted), strict=True))


def ran(outcome: Ran | Exception) -> Ran:
    if isinstance(outcome, Exception):
        raise AssertionError(f"the kind could not be run: {outcome!r}") from outcome
    return outcome


def what_runs(kind: Kind) -> tuple[object, ...]:
    """All that makes a run: two kinds alike in it would be one kind under two names."""
    files = tuple(
        (name, make if isinstance(make, str | bytes) else id(make))
        for name, make in sorted(kind.files.items())
    )
    env = tuple(sorted(kind.env.items()))
    return (kind.argv, env, kind.python, kind.stdin, kind.head, kind.redirect, files, kind.setup)


def test_the_catalogue_is_large_and_distinct() -> None:
    assert len(BY_ID) == len(KINDS), "two kinds share an id"
    alike = Counter(what_runs(kind) for kind in KINDS)
    assert [k.id for k in KINDS if alike[what_runs(k)] > 1] == [], "kinds that run alike"
    assert len(KINDS) >= 250


def test_the_import_floor_is_measured(floor_kib: int) -> None:
    """The floor is a real figure: more than an empty Python, less than the budget."""
    assert 20 * 1024 < floor_kib < 256 * 1024, mib(floor_kib)


@pytest.mark.parametrize("name", sorted(SELF_TESTS))
def test_the_runner_sees_each_breach(
    name: str, outcomes: dict[str, Ran | Exception], floor_kib: int
) -> None:
    kind, breach = SELF_TESTS[name]
    said = violations(kind, ran(outcomes[name]), floor_kib)
    assert any(breach in problem for problem in said), said


@pytest.mark.parametrize("name", [kind.id for kind in KINDS])
def test_kind(name: str, outcomes: dict[str, Ran | Exception], floor_kib: int) -> None:
    kind = BY_ID[name]
    said = violations(kind, ran(outcomes[name]), floor_kib)
    assert not said, f"{name}: " + "; ".join(said)
