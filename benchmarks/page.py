"""The explorer page of a GPT-2-sized layer (issue 18): its size, how long a browser takes
to open it, and how long the page takes to answer a hover, a step and a head switch.

Run:  python benchmarks/page.py        (needs chromium, chromium-driver and selenium, as
      the browser tests do; about half a minute)

The layer is benchmarks/gpt2_layer.py's: d_model 768, 12 heads, 512 tokens, random
weights. Measured, medians of 5 in one headless Chromium, the page loaded afresh each time
from file:// with the network off:

1. `attntrace run ... --export page.html` as a fresh process: the wall time, and the
   page's size (it holds the first heads within attntrace.page.build.PAGE_NUMBERS).
2. Opening (after one untimed opening: a browser already running): from the navigation's
   start to the explorer having drawn the page (the page's `document.body.dataset.ready`),
   by the browser's own clock (performance.now()). Target: within a second.
3. Responding, each by the page's clock around the work it does, synchronously: hovering a
   softmax cell (the arithmetic panel redrawn: a 512-term sum), → to the next stage
   (a summarized 512 × 512 table drawn), then "Show all" of that stage and "Later rows"
   (a page of 32 rows × 512 columns each), these two to the next frame painted.
   Target: each within a second.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser import open_browser
from gpt2_layer import make_model

REPEATS = 5

OPENED = """
return [performance.getEntriesByType("navigation")[0].startTime,
        Number(document.body.dataset.readyAt)];
"""

HOVER = """
const cell = document.querySelector('article.current td[data-explain]');
const start = performance.now();
cell.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
return performance.now() - start;
"""

STEP = """
const start = performance.now();
document.getElementById('next').click();
return performance.now() - start;
"""

# "Show all" and "Later rows": to the next frame painted, the layout of the cells included
EXPAND = """
const [selector, done] = arguments;
const start = performance.now();
document.querySelector(selector).click();
requestAnimationFrame(() => setTimeout(() => done(performance.now() - start), 0));
"""


def go_to_softmax(browser: Any) -> None:
    for _ in range(10):
        text = browser.execute_script("return document.getElementById('position').textContent")
        if text.endswith(": scaled"):
            return
        browser.execute_script("document.getElementById('next').click()")
    raise AssertionError("no scaled stage")


def opened_page(browser: Any, page: Path) -> tuple[float, float]:
    """Open ``page`` afresh: (the navigation's start, the page drawn), in ms."""
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get("about:blank")
    browser.get(page.as_uri())
    WebDriverWait(browser, 30).until(
        lambda b: b.execute_script("return document.body.dataset.ready === 'true'")
    )
    navigation, ready = browser.execute_script(OPENED)
    return float(navigation), float(ready)


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        path, sentence = make_model(folder)
        page = folder / "gpt2.html"
        start = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "attntrace",
                "run",
                sentence,
                "-c",
                str(path),
                "--export",
                str(page),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        export = time.perf_counter() - start
        size = page.stat().st_size
        print(
            f"run --export page.html: {export:.1f} s wall; the page is {size / 2**20:.1f} MB "
            f"({size:,} bytes)"
        )

        opened, hovers, steps, expands, pages = [], [], [], [], []
        for browser in open_browser():
            # opening alone first: a page torn down after "Show all" leaves the browser
            # collecting 262,144 cells' garbage into the next opening
            for repeat in range(REPEATS + 1):  # the first, untimed: a browser already running
                navigation, ready = opened_page(browser, page)
                if repeat > 0:
                    opened.append(ready - navigation)
            for _ in range(REPEATS):
                opened_page(browser, page)
                go_to_softmax(browser)  # scaled: the next stage is softmax
                steps.append(browser.execute_script(STEP))
                hovers.append(browser.execute_script(HOVER))
                expands.append(
                    browser.execute_async_script(EXPAND, "article.current button.expand")
                )
                pages.append(browser.execute_async_script(EXPAND, "article.current button.later"))
            left_out = browser.execute_script(
                "return document.getElementById('left-out').textContent"
            )
        print(
            f"open, navigation to drawn: {statistics.median(opened):.0f} ms "
            f"(of {', '.join(f'{x:.0f}' for x in opened)})"
        )
        print(f"→ to softmax (512 × 512, summarized): {statistics.median(steps):.0f} ms")
        print(f"hover a softmax cell (512 terms): {statistics.median(hovers):.1f} ms")
        print(
            f"Show all (512 × 512: its first 32 rows, 16,384 cells), to painted: "
            f"{statistics.median(expands):.0f} ms; the next 32 rows: "
            f"{statistics.median(pages):.0f} ms"
        )
        print(f"the page says: {left_out}")


if __name__ == "__main__":
    main()
