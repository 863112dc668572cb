"""The CLI runs numpy's BLAS on one thread unless the user chose a count (docs/cli.md,
environment): checked in a fresh process, where the variables are read as numpy loads."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from attntrace.environment import BLAS_THREAD_VARIABLES

# main() as the console script runs it, its command replaced by one that says what the
# variables are when a command would import numpy
PROBE = (
    "import os, sys\n"
    "import attntrace.cli as cli\n"
    "assert 'numpy' not in sys.modules, 'numpy loaded before the threads were chosen'\n"
    "def command(app):\n"
    "    print('|', os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('OMP_NUM_THREADS'),"
    " file=sys.stderr, flush=True)\n"
    "    return 0\n"
    "cli.run_app = command\n"
    "cli.main()\n"
)
BLAS = BLAS_THREAD_VARIABLES


def _threads(env: dict[str, str]) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in BLAS}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stderr.rsplit("|", 1)[-1].strip()


def test_one_thread_where_none_is_set() -> None:
    from attntrace.environment import one_blas_thread

    saved = {k: os.environ.pop(k, None) for k in BLAS}
    try:
        one_blas_thread()
        assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
        assert os.environ["OMP_NUM_THREADS"] == "1"
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None)
            if value is not None:
                os.environ[key] = value


@pytest.mark.parametrize(("env", "expected"), [({}, "1 1"), ({"OMP_NUM_THREADS": "4"}, "None 4")])
def test_a_count_the_user_set_is_kept(env: dict[str, str], expected: str) -> None:
    assert _threads(env) == expected
