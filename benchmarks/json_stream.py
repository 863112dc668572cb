"""Peak memory and time of `run --json` (and `decode --json`), the JSON written as it is
serialized (issue 29) against a tree that held it whole.

Run:  python benchmarks/json_stream.py [--baseline TREE] [--tokens 1000,2000,4000]
                                       [--command run|decode] [--repeats 3]

Each run is a fresh process, ``python -m attntrace run "cat cat … cat" --json >
/dev/null``, the sentence N tokens long on the built-in model; its peak RSS (the
kernel's ``ru_maxrss`` of that process alone, from ``os.wait4``) and wall time are
measured. ``--baseline TREE`` runs the same commands from another checkout (made with
``git archive COMMIT | tar -x -C TREE``), interleaved with this one, so that the
machine's noise falls on both alike. Prints the medians of ``--repeats`` runs, in MiB and
seconds; takes about a minute with the defaults.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def measured(tree: Path, command: str, tokens: int) -> tuple[float, float]:
    """(peak RSS in MiB, seconds) of one fresh process."""
    sentence = " ".join(["cat"] * tokens)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    with Path(os.devnull).open("wb") as devnull:
        process = subprocess.Popen(
            [sys.executable, "-m", "attntrace", command, sentence, "--json"],
            stdout=devnull,
            env=env,
            cwd=tree,
        )
        _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"{tree}: {command} at {tokens} tokens exited {process.returncode}")
    return usage.ru_maxrss / 1024, seconds  # ru_maxrss is in KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--tokens", default="1000,2000,4000")
    parser.add_argument("--command", default="run", choices=["run", "decode"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    trees = {"streamed": HERE, **({"baseline": args.baseline} if args.baseline else {})}
    print(f"{args.command} --json | tokens | tree | peak MiB | seconds")
    for tokens in (int(n) for n in args.tokens.split(",")):
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for _ in range(args.repeats):
            for name, tree in trees.items():
                runs[name].append(measured(tree, args.command, tokens))
        for name, results in runs.items():
            peak = statistics.median(r[0] for r in results)
            seconds = statistics.median(r[1] for r in results)
            print(f"{tokens:>6,} | {name:<8} | {peak:>8,.0f} | {seconds:6.2f}")


if __name__ == "__main__":
    main()
