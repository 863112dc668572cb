"""One headless Chromium per test module of the explorer page (tests/browser.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser import open_browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from open_browser()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that drives the browser is a long run (``pytest -m long``): headless
    Chromium takes about a minute for them all, the README's test command leaves them
    to .ci/run."""
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.long)
