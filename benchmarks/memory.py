"""Memory: each command's estimate against its real peak (issue 29).

Run:  python benchmarks/memory.py          (a minute of CPU; 81 s on a shared 2-core machine)
      python benchmarks/memory.py --quick  (the smallest size of each, 20 s)

Every command counts its peak before any work (attntrace/kernel/budget.py) and refuses
past ATTNTRACE_MAX_MEMORY_MB. For each command and sentence length this runs the CLI
three times as a fresh process:

- with a budget of 1 MiB, to read the estimate from the refusal (``would take about
  N MiB``): the figure the command itself counts, not a second computation of it (a
  command that counts in two steps is run again just past the first step's figure);
- on three tokens, for the import floor (Python, numpy, typer, Rich and the command's
  modules: what the estimate leaves out);
- at the length, with the budget raised out of the way, for the real peak: the
  process's maximum resident set (``os.wait4``'s ``ru_maxrss``).

"within" holds where peak ≤ estimate + floor. The models are the worked example
(cat-eats-fish: one head, d_model 2) and gemma-like (two heads sharing one K/V head,
causal, RoPE, QK-norm, soft-capping), over their own words repeated.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ATTNTRACE = [sys.executable, "-m", "attntrace"]
WORDS = {"cat-eats-fish": "cat eats fish", "gemma-like": "the cat sat down", "minilm": "cat"}
REAL = {"minilm"}  # a trained model's layer (--model), where its weights are installed
# label, arguments before the sentence, the sample, the lengths
COMMANDS: list[tuple[str, list[str], str, tuple[int, ...]]] = [
    ("run", ["run", "--max-rows", "4"], "cat-eats-fish", (1000, 2000, 3000)),
    ("run", ["run", "--max-rows", "4"], "gemma-like", (500, 1000, 1500)),
    ("run --json", ["run", "--json"], "cat-eats-fish", (500, 1000, 1500)),
    ("run, every cell", ["run", "--max-rows", "0", "--max-cols", "0"], "cat-eats-fish", (400, 800)),
    ("run --map", ["run", "--map"], "cat-eats-fish", (1000, 2000, 3000)),
    ("run --map", ["run", "--map"], "gemma-like", (500, 1000, 1500)),
    ("run --export page", ["run", "--export", "{tmp}/page.html"], "cat-eats-fish", (300, 600)),
    (
        "run --dtype",
        ["run", "--dtype", "float16", "--max-rows", "4"],
        "cat-eats-fish",
        (1000, 2000),
    ),
    ("run --dtype", ["run", "--dtype", "bfloat16", "--max-rows", "4"], "gemma-like", (500, 1000)),
    ("render", ["render", "{saved}"], "cat-eats-fish", (300, 600)),
    ("diff --set", ["diff", "--set", "WQ[0][0]=2"], "cat-eats-fish", (1000, 2000)),
    ("diff --set", ["diff", "--set", "WQ[0][0]=2"], "gemma-like", (500, 1000)),
    (
        "grad",
        ["grad", "--from", "0", "--to", "1", "--max-rows", "4"],
        "cat-eats-fish",
        (1000, 2000),
    ),
    (
        "grad",
        ["grad", "--loss", "attend", "--from", "1", "--to", "0", "--max-rows", "4"],
        "gemma-like",
        (500, 1000),
    ),
    ("grad --json", ["grad", "--from", "0", "--to", "1", "--json"], "cat-eats-fish", (500, 1000)),
    (
        "grad --focus",
        ["grad", "--from", "5", "--to", "6", "--focus", "5"],
        "cat-eats-fish",
        (600, 1200),
    ),
    ("train", ["train", "--from", "0", "--to", "1", "--steps", "3"], "cat-eats-fish", (500, 1000)),
    ("flash", ["flash", "--max-rows", "4"], "cat-eats-fish", (1000, 2000)),
    ("flash --json", ["flash", "--json"], "cat-eats-fish", (500, 1000)),
    ("decode", ["decode", "--max-rows", "4"], "cat-eats-fish", (300, 600)),
    (
        "decode --dtype",
        ["decode", "--dtype", "float16", "--max-rows", "4"],
        "cat-eats-fish",
        (250, 500),
    ),
    ("decode --json", ["decode", "--json"], "cat-eats-fish", (250, 500)),
    ("check", ["check", "{arrays}"], "cat-eats-fish", (500, 1000)),
    ("run --model", ["run", "--max-rows", "4"], "minilm", (100, 500)),
    ("grad --model", ["grad", "--from", "1", "--to", "2", "--max-rows", "4"], "minilm", (100, 500)),
]
ESTIMATE = re.compile(r"would take about ([\d,]+) MiB|would take about under 1 MiB")


def sentence(sample: str, n: int) -> str:
    words = WORDS[sample].split()
    return " ".join((words * (n // len(words) + 1))[:n])


def peak_mib(command: list[str], budget_mb: int | None) -> tuple[float, int, str]:
    """The process's peak resident set in MiB, its exit code and its stderr."""
    env = dict(os.environ)
    env.pop("ATTNTRACE_MAX_TRACE_MB", None)
    env["ATTNTRACE_MAX_MEMORY_MB"] = str(budget_mb or 1 << 20)
    env["ATTNTRACE_PROGRESS_AFTER"] = "inf"
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    scale = 1024 if sys.platform != "darwin" else 1  # ru_maxrss: KiB on Linux, bytes on macOS
    return usage.ru_maxrss * scale / 2**20, process.returncode, text


def prepared(arguments: list[str], sample: str, n: int, tmp: Path) -> list[str]:
    """The command's arguments with its files made: a saved trace, a person's arrays."""
    words = sentence(sample, n)
    saved, arrays = tmp / f"trace-{n}.json", tmp / f"arrays-{n}.npz"
    if "{saved}" in " ".join(arguments) and not saved.exists():
        with saved.open("wb") as out:
            subprocess.run(
                [*ATTNTRACE, "run", "--json", "-s", sample, words], stdout=out, check=True
            )
    if "{arrays}" in " ".join(arguments) and not arrays.exists():
        import numpy as np

        import attntrace

        trace = attntrace.trace_attention(words, sample=sample)
        np.savez(arrays, scores=trace["scores"].data, softmax=trace["softmax"].data)
    filled = [a.format(tmp=tmp, saved=saved, arrays=arrays) for a in arguments]
    if filled[0] == "render":
        return [*ATTNTRACE, *filled]
    return [*ATTNTRACE, *filled, "-m" if sample in REAL else "-s", sample, words]


def row(label: str, arguments: list[str], sample: str, n: int, tmp: Path) -> str:
    command = prepared(arguments, sample, n, tmp)
    floor_command = (
        [*command[:-1], sentence(sample, 3)]
        if command[1] != "render"
        else [*ATTNTRACE, "render", str(_saved_small(sample, tmp))]
    )
    estimate = whole_estimate(command)
    if isinstance(estimate, str):
        return f"{label:<18} {sample:<14} {n:>6}  no refusal at 1 MiB: {estimate[:60]}"
    floor, _, _ = peak_mib(floor_command, None)
    peak, code, err = peak_mib(command, None)
    within = "yes" if peak <= estimate + floor else "NO"
    note = "" if code in (0, 1) else f"  (exit {code}: {err.strip()[-60:]})"
    return (
        f"{label:<18} {sample:<14} {n:>6} {estimate:>9,} {peak:>9,.0f} {floor:>6,.0f}"
        f"  {within}{note}"
    )


def whole_estimate(command: list[str]) -> int | str:
    """The command's whole estimate in MiB, or its stderr where it is not refused at
    1 MiB. A command that counts in two steps (check: the arrays from their headers,
    then the whole check; render and diff: the text, then the traces) is run again with
    the budget just past each figure it gave, until the last step's refusal."""
    budget, estimate = 1, None
    for _ in range(4):
        _, code, refusal = peak_mib(command, budget)
        found = ESTIMATE.search(refusal)
        if code != 2 or found is None:
            break
        estimate = int(found.group(1).replace(",", "")) if found.group(1) else 0
        budget = estimate + 2
    return refusal.strip() if estimate is None else estimate


def _saved_small(sample: str, tmp: Path) -> Path:
    small = tmp / "trace-3.json"
    if not small.exists():
        with small.open("wb") as out:
            subprocess.run(
                [*ATTNTRACE, "run", "--json", "-s", sample, sentence(sample, 3)],
                stdout=out,
                check=True,
            )
    return small


def main() -> None:
    quick = "--quick" in sys.argv[1:]
    print("MiB: the command's estimate, its measured peak (maximum RSS), the import floor")
    print(
        f"{'command':<18} {'model':<14} {'tokens':>6} {'estimate':>9} {'peak':>9} "
        f"{'floor':>6}  within"
    )
    with tempfile.TemporaryDirectory() as folder:
        for label, arguments, sample, sizes in COMMANDS:
            for n in sizes[:1] if quick else sizes:
                print(row(label, arguments, sample, n, Path(folder)), flush=True)


if __name__ == "__main__":
    main()
