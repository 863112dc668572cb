"""The README's picture of the full-screen explorer (docs/images/explore.svg), made again.

Run:  python tools/explore_screenshot.py

It opens `attntrace explore -s it-animal` in Textual's test harness at 96 × 30, moves
the cursor to the cell ("it", "street") of the softmax stage, and saves Textual's SVG
screenshot of what a terminal of that size would show (the same screen as in tmux; the
cell pane is forward/cell_story.py's, so the picture follows it when made again).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's attntrace, not an installed one

from attntrace import trace_attention  # noqa: E402
from attntrace.explore.app import ExploreApp  # noqa: E402

TARGET = ROOT / "docs" / "images" / "explore.svg"
SIZE = (96, 30)


async def screenshot() -> str:
    app = ExploreApp(trace_attention(sample="it-animal"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press(*["down"] * 7, *["right"] * 5)  # it, street
        await pilot.pause()
        return app.export_screenshot(title="attntrace explore -s it-animal")


def main() -> None:
    svg = asyncio.run(screenshot())
    TARGET.write_text(svg, encoding="utf-8")
    print(f"{TARGET.relative_to(ROOT)}: {len(svg):,} bytes")


if __name__ == "__main__":
    main()
