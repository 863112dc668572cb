"""Hostile files: time and peak memory to refuse them (issues 6 and 12).

Run:  python benchmarks/hostile.py

A YAML "billion laughs" (9 levels of 9 aliases: 387 million strings if expanded), a
file over the size limit, and input that is not a regular file (issue 12): devices whose
size ``stat`` gives as 0 (/dev/zero, /dev/urandom), an endless pipe, a FIFO fed slowly
and one nobody writes to. Each runs as a fresh process; peak memory is the child's
maximum resident set size (GNU time), beside a plain `attntrace run` for scale.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

LEVELS = "abcdefghi"
SAMPLE = Path(__file__).resolve().parent.parent / "attntrace" / "samples" / "cat-eats-fish.yaml"


def bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in itertools.pairwise(LEVELS):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    lines.append("embeddings: {cat: [1, 2]}")
    lines.append("weights: {WQ: *i, WK: *i, WV: *i}")
    return "\n".join(lines) + "\n"


def measure(args: list[str], stdin: IO[Any] | int | None = None) -> tuple[float, int, int]:
    """Wall seconds, exit code and peak KB of one fresh attntrace process (GNU time)."""
    start = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "PEAK %M", sys.executable, "-m", "attntrace", *args],
        stdin=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    seconds = time.perf_counter() - start
    peak = int(done.stderr.rsplit("PEAK ", 1)[1].split()[0])
    return seconds, done.returncode, peak


def feed_slowly(fifo: Path) -> None:
    """Write the sample into ``fifo`` a line every 50 ms (opening waits for the reader)."""
    with fifo.open("w") as out:
        for line in SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True):
            out.write(line)
            out.flush()
            time.sleep(0.05)


def with_writer(writer: Callable[[], None], args: list[str]) -> tuple[float, int, int]:
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    result = measure(args)
    thread.join(timeout=10)
    return result


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
        slow, silent = Path(folder) / "slow.fifo", Path(folder) / "silent.fifo"
        os.mkfifo(slow)
        os.mkfifo(silent)
        cases: dict[str, Callable[[], tuple[float, int, int]]] = {
            "plain run (for scale)": lambda: measure(["run", "cat eats fish"]),
            "billion laughs": lambda: measure(["run", "cat", "-c", str(path)]),
            "300 MB file (limit 256)": lambda: measure(["run", "cat", "-c", str(big)]),
            "--config /dev/zero": lambda: measure(["run", "cat", "-c", "/dev/zero"]),
            "--config /dev/urandom": lambda: measure(["run", "cat", "-c", "/dev/urandom"]),
            "render /dev/zero": lambda: measure(["render", "/dev/zero"]),
            "render - < /dev/zero": lambda: measure(["render", "-"], stdin=zero_file()),
            "300 MB through a pipe": lambda: piped(["cat", str(big)], ["run", "cat", "-c", "-"]),
            "endless pipe (yes)": lambda: piped(["yes"], ["run", "cat", "-c", "-"]),
            "FIFO fed slowly": lambda: with_writer(
                lambda: feed_slowly(slow), ["run", "cat", "-c", str(slow)]
            ),
            "FIFO with no writer": lambda: measure(["run", "cat", "-c", str(silent)]),
        }
        for label, run in cases.items():
            seconds, code, peak = run()
            line = f"{label:<26} exit {code}  {1000 * seconds:6.0f} ms  peak {peak / 1024:6.1f} MB"
            print(line)


def zero_file() -> IO[bytes]:
    return Path("/dev/zero").open("rb")


def piped(writer: list[str], args: list[str]) -> tuple[float, int, int]:
    """``writer | attntrace ARGS``: the writer ends when attntrace stops reading."""
    with subprocess.Popen(writer, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as feed:
        assert feed.stdout is not None
        result = measure(args, stdin=feed.stdout)
        feed.stdout.close()
        feed.kill()
    return result


if __name__ == "__main__":
    main()
