"""The explorer's speed: how soon `explore -m smollm2 --layer 3` shows its first screen
at 80 × 24, and how soon the keys h (another head), 1 (X, a 12 × 576 stage) and l (the
next layer, recomputed in a worker) are drawn.

Run:  python benchmarks/explore.py        (about 20 s)

The first screen is measured as a person sees it: `python -m attntrace explore` started
in a tmux pane of 80 × 24, polled every 20 ms until "Stage 10 of 13" is on it (process
start, imports, the layer's forward pass, Textual's start). The keys are timed in
Textual's test harness (Pilot): from the key pressed until the screen has settled (the
worker done, for l). Medians of five runs; needs tmux and SmolLM2's weights.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's attntrace

from attntrace.explore.app import ExploreApp  # noqa: E402
from attntrace.explore.sources import Layers  # noqa: E402
from attntrace.real.layer import layer_trace  # noqa: E402

RUNS = 5
SESSION = "attntrace-explore-benchmark"


def first_screen() -> float:
    """Seconds from `explore` typed to its first screen, in tmux at 80 × 24."""
    tmux = ["tmux", "send-keys", "-t", SESSION]
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", SESSION, "-x", "80", "-y", "24", "-c", str(ROOT)],
        check=True,
    )
    try:
        time.sleep(0.5)
        start = time.perf_counter()
        command = f"{sys.executable} -m attntrace explore -m smollm2 --layer 3"
        subprocess.run([*tmux, command, "Enter"], check=True)
        while (
            "Stage 10 of 13"
            not in subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", SESSION], capture_output=True, text=True
            ).stdout
        ):
            time.sleep(0.02)
        return time.perf_counter() - start
    finally:
        subprocess.run(["tmux", "kill-session", "-t", SESSION], check=False)


async def keys() -> dict[str, float]:
    """Seconds each key takes to be drawn, in Textual's harness at 80 × 24."""
    layers = Layers("smollm2", 30, 3, lambda layer: layer_trace("smollm2", None, layer, None))
    app = ExploreApp(layer_trace("smollm2", None, 3, None), layers)
    took: dict[str, float] = {}
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        for key in ("h", "1", "l"):
            start = time.perf_counter()
            await pilot.press(key)
            await settled(app, pilot)
            took[{"h": "h", "1": "X", "l": "l"}[key]] = time.perf_counter() - start
    return took


async def settled(app: ExploreApp, pilot: Any) -> None:
    await pilot.pause()
    while app.busy:
        await pilot.pause(0.01)


def main() -> None:
    screens = [first_screen() for _ in range(RUNS)]
    timings = [asyncio.run(keys()) for _ in range(RUNS)]
    print(f"first screen (tmux, 80 × 24): {statistics.median(screens):.2f} s")
    for key in timings[0]:
        print(f"{key}: {statistics.median(t[key] for t in timings):.3f} s")


if __name__ == "__main__":
    main()
