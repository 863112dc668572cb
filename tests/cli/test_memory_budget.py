"""Every command counts its memory before any work and refuses past the budget in one
line (docs/cli.md, "What a command counts"); --dtype's two traces share one budget."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import invoke, one_line_error

import attntrace

N = 400  # tokens: one trace of the worked example is 3 · 8 · N² bytes, 3.7 MiB
WORDS = " ".join((["cat", "eats", "fish"] * N)[:N])
TRACE_MIB = 3 * 8 * N * N / 2**20  # scores, scaled, softmax: one head, no mask


@pytest.mark.parametrize(
    "args",
    [
        ("run",),
        ("run", "--json"),
        ("run", "--map"),
        ("run", "--dtype", "float16"),
        ("decode",),
        ("decode", "--dtype", "float16"),
        ("diff", "-s", "cat-eats-fish", "--set", "WQ[0][0]=2"),
        ("grad", "--from", "0", "--to", "1"),
        ("train", "--from", "0", "--to", "1", "--steps", "2"),
        ("flash",),
    ],
    ids=" ".join,
)
def test_past_the_budget_each_command_is_refused_in_one_line(
    args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "1")
    line = one_line_error(invoke(*args, WORDS), f"a trace of {N:,} tokens × {N:,} keys")
    assert line.endswith(
        "over the memory budget of 1 MiB (shorten the input, or set ATTNTRACE_MAX_MEMORY_MB)"
    )


def test_the_dtype_and_float64_traces_count_against_one_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A budget of twice one trace holds float64's trace and its arithmetic, not the
    dtype's trace beside float64's (and its arithmetic): --dtype is refused."""
    budget = int(2.5 * TRACE_MIB)
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", str(budget))
    assert invoke("run", WORDS, "--max-rows", "2").exit_code == 0
    line = one_line_error(invoke("run", WORDS, "--dtype", "float16"))
    assert f"over the memory budget of {budget} MiB" in line


def test_a_saved_trace_is_counted_before_it_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """48 bytes a number as read: 3 · N² numbers of N = 400 are some 22 MiB, beside the
    text (the 6.9 MiB file's 21 MiB as read pass a budget of 25 MiB alone)."""
    saved = tmp_path / "trace.json"
    saved.write_bytes(invoke("run", WORDS, "--json").stdout_bytes)
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "25")
    line = one_line_error(invoke("render", str(saved)), "reading the saved trace")
    assert "over the memory budget of 25 MiB" in line
    line = one_line_error(invoke("diff", str(saved), str(saved)), f"{saved}: reading the")
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "2048")
    assert invoke("render", str(saved), "--max-rows", "2").exit_code == 0


def test_check_counts_your_arrays_with_the_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Besides the trace: the arrays, a trace recomputed with a mistake, the comparison."""
    trace = attntrace.trace_attention(WORDS)
    arrays = tmp_path / "mine.npz"
    np.savez(arrays, scores=trace["scores"].data, softmax=trace["softmax"].data)
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "12")
    assert invoke("run", WORDS, "--max-rows", "2").exit_code == 0  # the trace alone fits
    line = one_line_error(invoke("check", str(arrays), WORDS), "the comparison")
    assert "over the memory budget of 12 MiB" in line
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "2048")
    assert invoke("check", str(arrays), WORDS).exit_code == 0


def test_tables_of_every_cell_are_counted_as_rich_lays_them_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--max-rows 0 --max-cols 0 draws a table of N × N cells at once (Rich took some
    380 bytes a cell at 400 tokens): refused where the default view fits; by render
    too, once the saved trace is read."""
    every = ("--max-rows", "0", "--max-cols", "0")
    saved = tmp_path / "trace.json"
    saved.write_bytes(invoke("run", WORDS, "--json").stdout_bytes)
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "20")
    assert invoke("run", WORDS, "--max-rows", "2").exit_code == 0
    one_line_error(invoke("run", WORDS, *every), "the tables")
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "60")
    assert invoke("render", str(saved), "--max-rows", "2").exit_code == 0
    one_line_error(invoke("render", str(saved), *every), "showing the saved", "the tables")


@pytest.mark.parametrize("online", [(), ("--online",)], ids=["walked", "online"])
def test_softmax_counts_its_walkthrough_before_any_work(
    online: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """30,000 values took 13 s and 200 MiB whatever the budget (a fresh-eyes run): each
    value is a line of every step's table, 12 KiB of it counted."""
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "1")
    values = [str(v) for v in range(50)]
    assert invoke("softmax", *online, "--", *values).exit_code == 0  # 0.6 MiB: within
    line = one_line_error(invoke("softmax", *online, "--", *values * 600))
    assert line == (
        "attntrace: error: the softmax of 30,000 values would take about 352 MiB (its "
        "walkthrough 352 MiB), "
        "over the memory budget of 1 MiB (shorten the input, or set ATTNTRACE_MAX_MEMORY_MB)"
    )
