"""A headless Chromium driven by Selenium, for the explorer page's tests.

Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them; so can
``apt-get install chromium chromium-driver``) and the ``selenium`` test extra. Where either
is missing the browser tests skip, saying which, except under ``.ci/run``, which sets
``ATTNTRACE_BROWSER_TESTS=required`` so that CI cannot pass them by skipping. Pages open
from ``file://``, as a person opens a saved page, with the network switched off in the
browser, so a page that needed one would fail.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
DRIVER = ("chromedriver",)


def _found(names: tuple[str, ...]) -> str | None:
    for name in names:
        path = shutil.which(name)
        if path is not None:
            return path
    return None


def _no_browser(why: str) -> NoReturn:
    """Skip, saying why, or fail where CI requires the browser tests."""
    if os.environ.get("ATTNTRACE_BROWSER_TESTS") == "required":
        pytest.fail(f"ATTNTRACE_BROWSER_TESTS=required, but {why}")
    pytest.skip(f"no browser test: {why}")


def open_browser(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Chromium (skips the test where none can be had), closed afterwards."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _no_browser("selenium is not installed (pip install -e '.[test]')")
    binary, driver = _found(CHROMIUM), _found(DRIVER)
    if binary is None or driver is None:
        _no_browser(
            "no chromium and chromedriver on PATH (apt-get install chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(driver), options=options)
    try:
        browser.set_network_conditions(offline=True, latency=0, throughput=0)
        yield browser
    finally:
        browser.quit()


def load(browser: Any, page: Path) -> None:
    """Open ``page`` from file:// and wait until the explorer has drawn it."""
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(page.resolve().as_uri())
    WebDriverWait(browser, 10).until(
        lambda b: (
            b.execute_script("return document.body.dataset.ready === 'true'") or severe_logs(b)
        )
    )


def by_css(browser: Any, selector: str) -> list[Any]:
    """Every element ``selector`` finds (of the page, or of an element)."""
    from selenium.webdriver.common.by import By

    return list(browser.find_elements(By.CSS_SELECTOR, selector))


def one(browser: Any, selector: str) -> Any:
    """The one element ``selector`` finds: none or two is a failure, naming how many."""
    found = by_css(browser, selector)
    assert len(found) == 1, (selector, len(found))
    return found[0]


def press(browser: Any, key: str, times: int = 1) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    for _ in range(times):
        ActionChains(browser).send_keys(key).perform()


def forward(browser: Any) -> None:
    """→: the page's next stage, step or tile."""
    from selenium.webdriver.common.keys import Keys

    press(browser, Keys.ARROW_RIGHT)


def hover(browser: Any, element: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).move_to_element(element).perform()


def walk_to(browser: Any, name: str) -> None:
    """Walk with the keys, from the current head's first stage, to its stage ``name``
    (the keys go to the page: whatever had the focus lets it go)."""
    from selenium.webdriver.common.keys import Keys

    browser.execute_script("document.activeElement.blur()")
    for _ in range(40):
        if one(browser, "#prev").get_attribute("disabled") is not None:
            break
        press(browser, Keys.ARROW_LEFT)
    for _ in range(40):
        if one(browser, "article.stage.current").get_attribute("data-stage") == name:
            return
        if one(browser, "#next").get_attribute("disabled") is not None:
            break
        press(browser, Keys.ARROW_RIGHT)
    raise AssertionError(f"no stage {name}")


def severe_logs(browser: Any) -> list[str]:
    """The console's errors since the last call (an uncaught exception is one)."""
    return [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


_INK = """
const [png, done] = arguments;
const image = new Image();
image.onload = () => {
  const canvas = document.createElement("canvas");
  canvas.width = image.width; canvas.height = image.height;
  const context = canvas.getContext("2d");
  context.drawImage(image, 0, 0);
  const data = context.getImageData(0, 0, image.width, image.height).data;
  const colours = new Set();
  let inked = 0, seen = 0;
  for (let at = 0; at < data.length; at += 4 * 7) {  // every 7th pixel is plenty
    const colour = (data[at] << 16) | (data[at + 1] << 8) | data[at + 2];
    colours.add(colour);
    inked += colour !== ((data[0] << 16) | (data[1] << 8) | data[2]);
    seen += 1;
  }
  done([image.width, image.height, inked / seen, colours.size]);
};
image.onerror = () => done(null);
image.src = "data:image/png;base64," + png;
"""


def screenshot_ink(browser: Any) -> tuple[int, int, float, int]:
    """A screenshot of the window, and what it holds: (width, height, the share of its
    pixels that are not the top-left pixel's colour, how many colours it has). The PNG is
    decoded by the browser's own image decoder, into a canvas (no imaging library)."""
    png = browser.get_screenshot_as_base64()
    measured = browser.execute_async_script(_INK, png)
    assert measured is not None, "the screenshot did not decode as a PNG"
    width, height, share, colours = measured
    return int(width), int(height), float(share), int(colours)
