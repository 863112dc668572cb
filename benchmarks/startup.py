"""Start-up: a whole attntrace command against Python importing what it uses (issue 6).

Run:  python benchmarks/startup.py        (about 20 s)

Each command runs as a fresh process, 21 times, interleaved so that machine noise
falls on both sides alike; the figures are medians, and the ratio is taken between
medians measured in the same run. Target: `run --json` within 1.2× of the bare
imports of the packages it uses (numpy and typer).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

RUNS = 21
ATTNTRACE = [sys.executable, "-m", "attntrace"]
PAIRS = {
    "run 'cat eats fish' --json": (
        [*ATTNTRACE, "run", "cat eats fish", "--json"],
        [sys.executable, "-c", "import numpy, typer"],
        "import numpy, typer",
    ),
    "--help": ([*ATTNTRACE, "--help"], [sys.executable, "-c", "import typer"], "import typer"),
    "samples": (
        [*ATTNTRACE, "samples"],
        [sys.executable, "-c", "import typer, rich.console"],
        "import typer, rich.console",
    ),
}


def seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    print(f"medians of {RUNS} fresh processes, interleaved")
    for label, (command, baseline, what) in PAIRS.items():
        ours, theirs = [], []
        for _ in range(RUNS):
            ours.append(seconds(command))
            theirs.append(seconds(baseline))
        a, b = statistics.median(ours), statistics.median(theirs)
        print(
            f"attntrace {label:<28} {1000 * a:6.0f} ms   python -c '{what}' "
            f"{1000 * b:6.0f} ms   ratio {a / b:.2f}"
        )


if __name__ == "__main__":
    main()
