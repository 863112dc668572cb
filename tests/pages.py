"""Traces made for the explorer page's tests (tests/page/): text that would be markup."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from attntrace import ModelSpec, Trace, trace_attention
from attntrace.modelfile.samples import list_samples
from attntrace.page.packing import page_documents

# Every shipped sample: each page test that walks samples walks a new one too.
SAMPLES = tuple(sample.name for sample in list_samples())

# Tokens that would end the page's script block, open an element or a comment, clear a
# terminal or turn a line around, if any reached the page as markup or raw.
HOSTILE = (
    "</script><script>alert(1)</script>",
    "'><img/src=x/onerror=alert(1)>",
    "\x1b[2J",
    "\u202e",
    "<!--",
)


def embedded(page: str, name: str = "trace") -> Any:
    """The JSON of a page's ``<script type="application/json" id=name>`` block (the
    document itself, unpacked where the page packed it)."""
    block = re.search(
        rf'<script type="application/json" id="{name}">(.*?)</script>', page, re.DOTALL
    )
    assert block is not None, name
    return json.loads(page_documents(page)[name])


def hostile_trace() -> Trace:
    vectors = {token: np.eye(5)[i] for i, token in enumerate(HOSTILE)}
    spec = ModelSpec(
        vectors,
        np.eye(5)[:, :2],
        np.eye(5)[:, :2],
        np.eye(5)[:, :2],
        name='evil"><script>alert(2)</script>',
    )
    return trace_attention(" ".join(HOSTILE), model=spec)
