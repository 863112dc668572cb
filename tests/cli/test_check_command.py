"""`attntrace check` as a script sees it: its exit codes through pipes and full disks,
and its usage errors. The catalogue of mistakes is tests/cli/test_check_catalogue.py's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import invoke

import attntrace


@pytest.fixture
def arrays(tmp_path: Path) -> tuple[Path, Path]:
    """A right and a wrong softmax of two-heads (the wrong one not scaled), as .npz."""
    trace = attntrace.trace_attention(sample="two-heads")
    scores = np.stack([trace["scores", h].data for h in range(2)])
    unscaled = np.exp(scores - scores.max(axis=-1, keepdims=True))
    right, wrong = tmp_path / "right.npz", tmp_path / "wrong.npz"
    np.savez(right, attn=np.stack([trace["softmax", h].data for h in range(2)]))
    np.savez(wrong, attn=unscaled / unscaled.sum(axis=-1, keepdims=True))
    return right, wrong


def _shell(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=60, check=False
    )


def test_the_answer_survives_a_reader_that_leaves_early(arrays: tuple[Path, Path]) -> None:
    right, wrong = arrays
    for path, code in ((right, 0), (wrong, 1)):
        done = _shell(
            f"{sys.executable} -m attntrace check {path} --sample two-heads | head -c 0;"
            " exit ${PIPESTATUS[0]}"
        )
        assert done.returncode == code, done.stderr
        assert done.stderr == ""


def test_output_that_cannot_be_written_is_trouble_not_an_answer(arrays: tuple[Path, Path]) -> None:
    right, _ = arrays
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    done = _shell(f"{sys.executable} -m attntrace check {right} --sample two-heads > /dev/full")
    assert done.returncode == 2
    assert done.stderr.startswith("attntrace: error: cannot write the output")


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--rtol", "-1"], "--rtol: expected a finite number ≥ 0, got -1.0"),
        (["--atol", "nan"], "--atol: expected a finite number ≥ 0"),
        (["--layout", "rows"], "--layout: expected heads-first or tokens-first, got 'rows'"),
        (["--head", "2"], "--head: expected a head from 0 to 1 (two-heads has 2), got 2"),
        (["--layer", "1"], "--layer chooses part of a real model: add --model MODEL"),
    ],
)
def test_a_bad_flag_is_one_line_and_exit_2(
    arrays: tuple[Path, Path], flags: list[str], said: str
) -> None:
    right, _ = arrays
    result = invoke("check", str(right), "--sample", "two-heads", *flags)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert said in result.stderr


def test_python_names_its_own_arguments(arrays: tuple[Path, Path]) -> None:
    right, _ = arrays
    with pytest.raises(attntrace.InputError, match=r"^layout: expected heads-first"):
        attntrace.check(right, sample="two-heads", layout="rows")
