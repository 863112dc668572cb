"""How long a large model file takes to load, and its peak memory (issue 29).

Run:  PYTHONPATH=$PWD python benchmarks/model_file.py        (about a minute on a 2-core machine)

Three JSON model files, written to a temporary folder:

- *tall 10⁶* (26 MiB, the issue's "31 MB"): d_model 1,000,000, one head of d_k = d_v
  = 1, so WQ, WK and WV are 1,000,000 rows of one number each (a list per row), one
  token;
- *tall 4·10⁶* (105 MiB, the issue's "124 MB"): the same at d_model 4,000,000;
- *square 512* (21 MiB): d_model 512, 4 matrices 512 × 512 and 2,000 tokens, numbers
  of 6 digits.

Each is loaded by ``attntrace.load_model`` in a fresh process, timed (wall and CPU:
on a shared machine the CPU time is the steadier) from before the read to the
validated ModelSpec; peak memory is the process's maximum resident set size (GNU
time), beside the "import floor" of a process that only imports it. Then the estimate
the load counted against the memory budget (:mod:`attntrace.modelfile.model_budget`:
the parsed text, the matrices as float64) is printed for comparison: the peak should
be within it plus the import floor. The 4·10⁶ file's estimate is over the default
budget of 2 GiB, so it is loaded with ATTNTRACE_MAX_MEMORY_MB=4096.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

LOAD = (
    "import sys, time\n"
    "from attntrace import load_model\n"
    "start, cpu = time.perf_counter(), time.process_time()\n"
    "model = load_model(sys.argv[1])\n"
    "print(f'{time.perf_counter() - start:.2f} {time.process_time() - cpu:.2f}')\n"
)
IMPORT = "import numpy\nfrom attntrace.modelfile.model_file import load_model\n"


def tall(path: Path, d_model: int) -> None:
    rng = np.random.default_rng(0)

    def column() -> list[list[float]]:
        return [[round(float(x), 2)] for x in rng.uniform(-1, 1, d_model)]

    document = {
        "embeddings": {"a": [round(float(x), 2) for x in rng.uniform(-1, 1, d_model)]},
        "weights": {"WQ": column(), "WK": column(), "WV": column()},
    }
    path.write_text(json.dumps(document, separators=(",", ":")), encoding="utf-8")


def square(path: Path, d_model: int = 512, tokens: int = 2000) -> None:
    rng = np.random.default_rng(0)
    document = {
        "embeddings": {
            f"t{i}": np.round(rng.normal(size=d_model), 6).tolist() for i in range(tokens)
        },
        "weights": {
            name: np.round(rng.normal(size=(d_model, d_model)), 6).tolist()
            for name in ("WQ", "WK", "WV", "WO")
        },
    }
    path.write_text(json.dumps(document), encoding="utf-8")


def measure(code: str, *args: str, env: dict[str, str] | None = None) -> tuple[str, int]:
    """What the process printed, and its peak resident set in KiB (GNU time)."""
    done = subprocess.run(
        ["/usr/bin/time", "-f", "PEAK %M", sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
        timeout=1800,
    )
    return done.stdout.strip(), int(done.stderr.rsplit("PEAK ", 1)[1].split()[0])


def estimate(path: Path) -> int:
    """The bytes the load counts against the budget: parsed text and float64 matrices."""
    from attntrace.modelfile.model_budget import _matrix_fields, _text_numbers, parsed_bytes
    from attntrace.modelfile.parse import parse_document

    text = path.read_text(encoding="utf-8")
    parsed = parsed_bytes(text, is_json=True)
    document = parse_document(text, str(path), is_json=True)
    numbers = [_text_numbers(value) for _, value in _matrix_fields(document)]
    return parsed + 8 * (sum(numbers) + max(numbers))


def main() -> None:
    _, floor = measure(IMPORT)
    print(f"import floor: {floor / 1024:,.0f} MiB")
    print(f"{'file':>14} {'size':>9} {'wall':>7} {'CPU':>7} {'peak':>10} {'estimate':>10}")
    with tempfile.TemporaryDirectory() as folder:
        cases: list[tuple[str, Callable[[Path], None], dict[str, str]]] = [
            ("tall 10⁶", lambda p: tall(p, 1_000_000), {}),
            ("tall 4·10⁶", lambda p: tall(p, 4_000_000), {"ATTNTRACE_MAX_MEMORY_MB": "4096"}),
            ("square 512", square, {}),
        ]
        for name, make, env in cases:
            path = Path(folder) / "model.json"
            make(path)
            size = path.stat().st_size
            printed, peak = measure(LOAD, str(path), env=env)
            wall, cpu = printed.split()
            print(
                f"{name:>14} {size / 2**20:>5.1f} MiB {wall:>6}s {cpu:>6}s "
                f"{peak / 1024:>6,.0f} MiB {estimate(path) / 2**20:>6,.0f} MiB"
            )


if __name__ == "__main__":
    main()
