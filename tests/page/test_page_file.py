"""The explorer page as a file: self-contained, the trace's JSON embedded exactly, no text
from a model file able to become markup (docs/page.md). The browser tests are beside it."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers import invoke, raw_controls
from pages import HOSTILE, hostile_trace

from attntrace import Trace, trace_attention
from attntrace.files.serialize import dump_bytes
from attntrace.page.build import PAGE_NUMBERS, page_heads, trace_page


def embedded(page: str, name: str = "trace") -> object:
    """The JSON of the page's ``<script type="application/json" id=name>`` block."""
    block = re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', page,
                      re.DOTALL)  # fmt: skip
    assert block is not None, name
    return json.loads(block[1])


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


def test_a_big_trace_keeps_its_first_heads() -> None:
    trace = trace_attention("cat eats fish", sample="two-heads")
    assert page_heads(trace) is None  # small: every head
    numbers = sum(s.data.size for s in trace.stages) + sum(w.data.size for w in trace.weights)
    assert numbers < PAGE_NUMBERS
    assert page_heads(trace, limit=numbers) is None
    assert page_heads(trace, limit=numbers - 1) == [0]
    assert page_heads(trace, limit=1) == [0]  # at least one head, however small the limit
    page = trace_page(trace, limit=numbers - 1)
    document = embedded(page)
    assert isinstance(document, dict)
    assert document["heads_traced"] == [0]
    assert {s["head"] for s in document["stages"]} == {None, 0}
    assert 'data-heads-left-out="1"' in page
    assert len(embedded(page, "captions")) == len(document["stages"])  # type: ignore[arg-type]


@pytest.mark.parametrize("suffix", [".txt", ".svg"])
def test_the_text_exports_stay_the_terminal_view(suffix: str, tmp_path: Path) -> None:
    target = tmp_path / f"t{suffix}"
    result = invoke("run", "--export", str(target))
    assert result.exit_code == 0, result.output
    text = target.read_text(encoding="utf-8")
    assert "softmax = exp(scaled − row max) / row sum" in text or "softmax" in text
    assert "<script" not in text


def test_an_html_export_that_cannot_be_written_is_exit_1(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    target = folder / "t.html"
    target.mkdir()  # a folder where the file should go: the rename fails
    result = invoke("run", "--export", str(target))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"attntrace: error: {target}: cannot write the file:")
    assert list(folder.iterdir()) == [target]  # no partial file left behind
