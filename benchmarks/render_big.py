"""How long the views take on a big input: 200 tokens, d_model 256 (issue 3: under 1 s).

Run:  python benchmarks/render_big.py            (prints medians of 7 runs, in ms)

Each view is rendered into an in-memory console at 80 and 200 columns, after the trace
is computed once; the end-to-end line runs the real command on the same model file.
"""

from __future__ import annotations

import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rich.console import Console

from attntrace import trace_attention
from attntrace.forward.focus import focus_row
from attntrace.forward.views.present import Presentation, renderables
from attntrace.ui.stage_table import cached_column_widths
from attntrace.ui.view import View

TOKENS, D_MODEL, D_HEAD, REPEATS = 200, 256, 64, 7


def model_file(folder: Path) -> tuple[Path, str]:
    rng = np.random.default_rng(0)
    vocab = {f"w{i}": rng.normal(size=D_MODEL).round(4).tolist() for i in range(TOKENS)}
    weights = {
        name: (rng.normal(size=(D_MODEL, D_HEAD)) / 16).round(4).tolist()
        for name in ("WQ", "WK", "WV")
    }
    path = folder / "big.json"
    path.write_text(json.dumps({"embeddings": vocab, "weights": weights}))
    return path, " ".join(vocab)


def median_ms(action: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path, sentence = model_file(Path(folder))
        trace = trace_attention(sentence, config=path)
        views = {
            "tables": Presentation(),
            "focus": Presentation(focus="w100"),
            "map": Presentation(map=True),
            "overview": Presentation(overview=True),
            "tables, all rows": Presentation(view=View(max_rows=10**9)),
        }
        print(f"{TOKENS} tokens, d_model {D_MODEL}, d_k = d_v = {D_HEAD}; median of {REPEATS}")
        compute = median_ms(lambda: trace_attention(sentence, config=path))
        print(f"{'compute (load + trace)':<28}{compute:8.1f} ms")
        for width in (80, 200):
            for name, how in views.items():

                def draw(how: Presentation = how, width: int = width) -> None:
                    # as a fresh process would: no layout remembered from the last run
                    cached_column_widths.cache_clear()
                    console = Console(file=io.StringIO(), width=width, color_system="truecolor")
                    focus = None if how.focus is None else (focus_row(trace, how.focus),)
                    for renderable in renderables(trace, how, focus):
                        console.print(renderable, crop=False)

                print(f"{f'render {name} @ {width}':<28}{median_ms(draw):8.1f} ms")
        command = [sys.executable, "-m", "attntrace", "run", sentence, "-c", str(path)]
        end_to_end = median_ms(lambda: subprocess.run(command, capture_output=True, check=True))
        print(f"{'attntrace run (process)':<28}{end_to_end:8.1f} ms")


if __name__ == "__main__":
    main()
