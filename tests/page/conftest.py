"""One headless Chromium per test module of the explorer page (tests/browser.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser import open_browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from open_browser()
