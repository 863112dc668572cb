"""The decode and flash screens with the variants on: what a windowed cache dropped and
holds, why tiles were skipped, the sink's column; no line wider than the terminal."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from randoms import random_block
from rich.cells import cell_len
from rich.console import Console

from attntrace.decode.decoder import decode
from attntrace.decode.views.decode import screens
from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.variants import Variants
from attntrace.kernels.flash_report import flash_report
from attntrace.kernels.views.flash import header, summary, tiles_section
from attntrace.ui.view import DEFAULT_VIEW

WORDS = ["the", "cat", "sat", "on", "a", "mat"]


def _model(**options: Any) -> ModelSpec:
    base, _, _ = random_block(0, cross=False, heads=2, kv_heads=1)
    vocab = dict(zip(WORDS, base.embeddings.values(), strict=True))
    return replace(base, embeddings=vocab, causal=True, variants=Variants(**options))


def _shown(columns: int, draw: Callable[[Console], None]) -> str:
    out = io.StringIO()
    console = Console(file=out, width=columns, no_color=True, color_system=None)
    draw(console)
    return out.getvalue()


@pytest.mark.parametrize("columns", [80, 160])
def test_decode_says_which_row_left_and_where_the_cache_stopped(columns: int) -> None:
    run = decode(_model(window=2, sinks=1), WORDS)

    def draw(console: Console) -> None:
        for page in screens(run, DEFAULT_VIEW):
            page(console)

    text = _shown(columns, draw)
    assert "dropped 'cat' (position 1): out of the window" in text
    assert "dropped 'sat' (position 2): out of the window" in text
    assert "mat @5 ◀ new" in text
    assert "the @0" in text
    assert "stopped growing at 3 rows" in text
    assert "decode matches full causal attention" in text
    assert max(cell_len(line) for line in text.splitlines()) <= columns


@pytest.mark.parametrize("columns", [80, 160])
def test_flash_names_each_skipped_tiles_reason_and_the_sink(columns: int) -> None:
    trace = trace_block(_model(window=2, sink_logit=0.5), WORDS)
    report = flash_report(trace, 0, 1, 1)

    def draw(console: Console) -> None:
        for part in (
            *header(report),
            *tiles_section(report, DEFAULT_VIEW, None),
            *summary(report, DEFAULT_VIEW),
        ):
            console.print(part)

    text = _shown(columns, draw)
    assert "skipped: every key out of the window" in text
    assert "skipped: every key after every query" in text
    assert "15 every key after every query; 10 every key out of the window" in " ".join(
        text.split()
    )
    assert "window 2" in text
    assert "sink logit 0.5" in text
    assert "output = O ÷ (ℓ + exp(s − m))" in text
    assert max(cell_len(line) for line in text.splitlines()) <= columns
