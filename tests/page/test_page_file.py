"""The explorer page as a file: self-contained, the trace's JSON embedded exactly, no text
from a model file able to become markup (docs/page.md). The browser tests are beside it."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from helpers import invoke, raw_controls
from pages import HOSTILE, embedded, hostile_trace

from attntrace import Trace, trace_attention
from attntrace.forward.trace_json import dump_bytes
from attntrace.page.build import page_heads, trace_page


class Elements(HTMLParser):
    """Every start tag of a page, with its attributes, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def elements(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(page)
    return parser.tags


def tokens_of(trace: Trace) -> list[str]:
    return list(trace.tokens)


def test_the_page_embeds_exactly_the_json_document(tmp_path: Path) -> None:
    target = tmp_path / "it.html"
    result = invoke("run", "-s", "it-animal", "--export", str(target))
    assert result.exit_code == 0, result.output
    assert result.stderr == f"attntrace: saved {target}\n"
    assert "softmax = exp(scaled − row max) / row sum" in result.stdout  # the view still prints
    page = target.read_text(encoding="utf-8")
    document = json.loads(invoke("run", "-s", "it-animal", "--json").stdout)
    assert embedded(page) == document
    captions = embedded(page, "captions")
    assert isinstance(captions, list)
    assert len(captions) == len(document["stages"])
    assert (
        captions[0]["one_line"]
        == "One row per token: its embedding vector, the input to attention."
    )


def test_the_page_needs_nothing_from_outside() -> None:
    """No script, style, font, image or link from anywhere: it opens offline."""
    page = trace_page(trace_attention("cat eats fish"))
    for tag, attrs in elements(page):
        assert "src" not in attrs, (tag, attrs)
        assert "href" not in attrs, (tag, attrs)
        assert tag not in ("link", "img", "iframe", "object", "embed"), tag
    assert re.search(r"https?://(?!www\.w3\.org/2000/svg)", page) is None
    assert "@import" not in page
    assert "url(" not in page


def test_no_text_from_a_model_becomes_markup() -> None:
    """Tokens and a name made of markup stay text: the page has only its own elements,
    and the JSON reads back to the exact strings."""
    trace = hostile_trace()
    page = trace_page(trace)
    assert tokens_of(trace) == list(HOSTILE)
    assert [tag for tag, _ in elements(page)].count("script") == 3  # trace, captions, the script
    assert not any(tag == "img" for tag, _ in elements(page))
    assert page.count("</script>") == 3
    assert embedded(page) == json.loads(dump_bytes(trace))
    assert "&quot;&gt;&lt;script&gt;alert(2)" in page.split("</title>")[0]  # the title, escaped
    assert raw_controls(page) == []  # \x1b and U+202E written as JSON escapes


def numbers_in(document: dict[str, Any]) -> int:
    """How many numbers a trace document holds, counted from the JSON itself."""
    matrices = document["stages"] + document["weights"]
    return sum(len(row) for matrix in matrices for row in matrix["data"])


@pytest.mark.parametrize("sample", ["two-heads", "gqa", "gemma-like"])
def test_a_big_trace_keeps_the_first_heads_that_fit(sample: str) -> None:
    """The cut is counted on the document it writes (GQA's shared WK and WV once), so a
    page holds no more numbers than its limit; where it would keep every head anyway,
    the whole trace is written instead."""
    trace = trace_attention(sample=sample)
    whole = numbers_in(json.loads(dump_bytes(trace)))
    assert page_heads(trace) is None  # small: every head
    assert page_heads(trace, limit=whole) is None
    heads = trace.traced_heads
    sizes = [
        numbers_in(json.loads(dump_bytes(trace, heads=heads[:k]))) for k in range(1, len(heads))
    ]
    assert sizes == sorted(sizes)
    assert page_heads(trace, limit=1) == [0]  # at least one head, however small the limit
    for k, size in enumerate(sizes, start=1):
        assert page_heads(trace, limit=size) == list(heads[:k])
        page = trace_page(trace, limit=size)
        document = embedded(page)
        assert isinstance(document, dict)
        assert document["heads_traced"] == list(heads[:k])
        assert numbers_in(document) == size
        assert f'data-heads-left-out="{len(heads) - k}"' in page
        assert len(embedded(page, "captions")) == len(document["stages"])
    # every head fits once concat and WO are left out: then the whole trace, not a cut
    all_heads = numbers_in(json.loads(dump_bytes(trace.only_heads(heads))))
    assert page_heads(trace, limit=all_heads) is None


@pytest.mark.parametrize("suffix", [".txt", ".svg"])
def test_the_text_exports_stay_the_terminal_view(suffix: str, tmp_path: Path) -> None:
    target = tmp_path / f"t{suffix}"
    result = invoke("run", "--export", str(target))
    assert result.exit_code == 0, result.output
    text = target.read_text(encoding="utf-8")
    assert "softmax = exp(scaled − row max) / row sum" in text or "softmax" in text
    assert "<script" not in text


def test_an_html_export_onto_a_folder_is_refused_before_any_work(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    target = folder / "t.html"
    target.mkdir()  # a folder where the file should go: refused as what it is (issue 29)
    result = invoke("run", "--export", str(target))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"attntrace: error: {target}: is a folder: give a file name\n"
    assert list(folder.iterdir()) == [target]  # no partial file left behind
