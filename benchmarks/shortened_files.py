"""A file shortened while attntrace reads it (issue 29, part 2): exit codes, by delay.

Run:  python benchmarks/shortened_files.py        (about half a minute)

Writes a 200 MB ``.safetensors`` (one 5000 × 5000 float64 ``Q``), starts
``attntrace check`` on it, and after a delay of 0.3 to 1.0 s cuts the file to 1,000 bytes,
as a writer that truncates before it writes (``np.save``, ``save_file``) does; eight
delays, each with the file written anew. A reader that memory-maps the file dies by
SIGBUS (exit -7 here, 135 in a shell) when it touches a page past the new end; one that
reads says in one line that the file changed (exit 2). The delays bracket the read: too
early, the header already says more than the file holds; too late, the numbers are read
and the check runs (exit 1: this ``Q`` is not the default model's).

Figures (shared 2-core machine, 2026-12-07, two runs each): mapped (before issue 29)
4 × exit 2 then 4 × SIGBUS, both times; read, exit 2 or 1 at every delay (3 and 5 of the
eight "the file changed while it was read"), no signal.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DELAYS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
SIDE = 5000


def weights_file(path: Path) -> None:
    raw = np.ones((SIDE, SIDE), "<f8").tobytes()
    entry = {"dtype": "F64", "shape": [SIDE, SIDE], "data_offsets": [0, len(raw)]}
    header = json.dumps({"Q": entry}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + raw)


def run(path: Path, delay: float) -> tuple[int, str]:
    """``attntrace check`` on ``path``, the file cut after ``delay`` s: exit code and
    the end of its error line."""
    env = dict(os.environ, ATTNTRACE_MAX_MEMORY_MB="8192", ATTNTRACE_MAX_FILE_MB="1024")
    process = subprocess.Popen(
        [sys.executable, "-m", "attntrace", "check", str(path)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(delay)
    os.truncate(path, 1000)
    _, err = process.communicate()
    return process.returncode, err.strip()[-70:]


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "race.safetensors"
        for delay in DELAYS:
            weights_file(path)
            code, said = run(path, delay)
            print(f"cut after {delay:.1f} s: exit {code:>3}  {said}")


if __name__ == "__main__":
    main()
