"""The README's picture of the explorer page (docs/images/explorer.png), made again.

Run:  python tools/readme_screenshot.py && pngquant --quality 60-85 --speed 1 --force \\
          --output docs/images/explorer.png docs/images/explorer.png

It exports the it-animal sample's page, opens it in the headless Chromium the browser
tests use (tests/browser.py), walks to softmax, picks the cell ("it", "animal") and opens
the row's terms, then crops the window to 648 pixels: above the panel's last line, the
cell's every digit, which may differ in its last place on another machine (the README
shows no such figure). pngquant (Debian's package) brings it to some 60 KB.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser import load, open_browser  # noqa: E402  (tests/browser.py)

TARGET = ROOT / "docs" / "images" / "explorer.png"
HEIGHT = 648  # the window's first 648 pixels: the share, not the exact digits below it

CROP = """
const [png, height, done] = arguments;
const image = new Image();
image.onload = () => {
  const canvas = document.createElement("canvas");
  canvas.width = image.width;
  canvas.height = height;
  canvas.getContext("2d").drawImage(image, 0, 0);
  done(canvas.toDataURL("image/png").split(",")[1]);
};
image.src = "data:image/png;base64," + png;
"""


def main() -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "it.html"
        subprocess.run(
            [sys.executable, "-m", "attntrace", "run", "-s", "it-animal", "--export", str(page)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        for browser in open_browser(1280, 860):
            load(browser, page)
            for _ in range(6):  # X, Q, K, V, scores, scaled: then softmax
                ActionChains(browser).send_keys(Keys.ARROW_RIGHT).perform()
            it_animal = 'article.current td[data-row="7"][data-col="1"]'
            cell = browser.find_element(By.CSS_SELECTOR, it_animal)
            ActionChains(browser).move_to_element(cell).perform()
            browser.execute_script("document.querySelector('#arithmetic details').open = true")
            png = browser.execute_async_script(CROP, browser.get_screenshot_as_base64(), HEIGHT)
            TARGET.write_bytes(base64.b64decode(png))
    print(f"wrote {TARGET.relative_to(ROOT)} ({TARGET.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
