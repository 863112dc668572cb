"""Hostile files: time and peak memory to refuse them (issue 6).

Run:  python benchmarks/hostile.py

A YAML "billion laughs" (9 levels of 9 aliases: 387 million strings if expanded) and a
file over the size limit, each refused as a fresh process; peak memory is the child's
maximum resident set size, beside a plain `attntrace run` for scale.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LEVELS = "abcdefghi"


def bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in itertools.pairwise(LEVELS):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    lines.append("embeddings: {cat: [1, 2]}")
    lines.append("weights: {WQ: *i, WK: *i, WV: *i}")
    return "\n".join(lines) + "\n"


def measure(args: list[str]) -> tuple[float, int, int]:
    """Wall seconds, exit code and peak KB of one fresh attntrace process (GNU time)."""
    start = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "PEAK %M", sys.executable, "-m", "attntrace", *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    peak = int(done.stderr.rsplit("PEAK ", 1)[1].split()[0])
    return seconds, done.returncode, peak


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bomb.yaml"
        path.write_text(bomb())
        big = Path(folder) / "big.json"
        with big.open("w") as out:  # written in pieces: the parent stays small
            out.write('{"description": "')
            for _ in range(300):
                out.write("x" * 2**20)
            out.write('"}')
        cases = {
            "plain run (for scale)": ["run", "cat eats fish"],
            "billion laughs": ["run", "cat", "-c", str(path)],
            "300 MB file (limit 256)": ["run", "cat", "-c", str(big)],
        }
        for label, args in cases.items():
            seconds, code, peak = measure(args)
            line = f"{label:<26} exit {code}  {1000 * seconds:6.0f} ms  peak {peak / 1024:6.1f} MB"
            print(line)


if __name__ == "__main__":
    main()
