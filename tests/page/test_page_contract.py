"""What docs/page.md promises beyond the walk: the arithmetic behind every cell of every
sample (RoPE, QK-norm, ALiBi, the cap, GQA, cross-attention), --dtype pages that write
no float64 sums, labels as the terminal's, the big-trace note, the notebook's sandbox,
and the refusals. Each figure is held to Python's own computation from the trace."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser import by_css, load, one, severe_logs, walk_to
from helpers import invoke
from pages import SAMPLES, embedded

import attntrace.page.build
from attntrace import trace_attention
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Trace
from attntrace.page.build import trace_page
from attntrace.page.notebook import notebook_html
from attntrace.ui.numbers import format_number
from attntrace.visible import visible

# Every explained cell of the current stage, focused one after another in the page, and
# what the panel then said: the terms by their data-term, and the result.
PANELS = """
const out = [];
for (const td of document.querySelectorAll("article.current td[data-explain]")) {
  td.dispatchEvent(new FocusEvent("focusin", {bubbles: true}));
  const panel = document.getElementById("arithmetic");
  const terms = {};
  for (const t of panel.querySelectorAll(".term")) {
    (terms[t.dataset.term] ||= []).push(t.textContent);
  }
  out.push({row: Number(td.dataset.row), col: Number(td.dataset.col), terms,
            result: panel.querySelector(".result")?.textContent ?? null});
}
return out;
"""


def page_of(trace: Trace, folder: Path, name: str = "page.html") -> Path:
    target = folder / name
    target.write_text(trace_page(trace), encoding="utf-8")
    return target


def choose_head(browser: Any, head: int) -> None:
    from selenium.webdriver.support.ui import Select

    found = by_css(browser, "#head")
    if found:
        Select(found[0]).select_by_value(str(head))


def score_inputs(trace: Trace, head: int) -> tuple[Any, Any]:
    """The rows scores is the product of, chosen here by what the trace holds: RoPE's
    turned rows after QK-norm's, after the projections."""
    names = [s.name for s in trace.stages if s.head == head]
    q = next(n for n in ("Q_rope", "Q_norm", "Q") if n in names)
    k = next(n for n in ("K_rope", "K_norm", "K") if n in names)
    return trace.stage(q, head=head).data, trace.stage(k, head=head).data


def softmax_input(trace: Trace, head: int) -> Any:
    """The stage softmax reads: the last of scaled, biased, capped, masked the head has."""
    names = [s.name for s in trace.stages if s.head == head]
    last = [n for n in ("scaled", "biased", "capped", "masked") if n in names][-1]
    return trace.stage(last, head=head).data


def read(text: str) -> float:
    return -math.inf if text == "−∞" else float(text.replace("−", "-"))


@pytest.mark.parametrize("sample", SAMPLES)
def test_every_cell_is_explained_with_the_traces_own_numbers(
    browser: Any, tmp_path: Path, sample: str
) -> None:
    """For every head and every cell of scores, scaled, softmax and output: each product
    written is the same IEEE product Python makes (so its four decimals are equal to the
    letter), each exp and sum within a rounding of six decimals of math.exp and fsum, and
    the result the trace's own cell as the terminal writes it."""
    trace = trace_attention(sample=sample)
    load(browser, page_of(trace, tmp_path))
    sink_logits = trace.model.variants.sink_logit if trace.model.variants else None
    for head in trace.traced_heads:
        choose_head(browser, head)
        q, k = score_inputs(trace, head)
        x = softmax_input(trace, head)
        weights, values = trace.stage("softmax", head=head).data, trace.stage("V", head=head).data
        for name in ("scores", "scaled", "softmax", "output"):
            walk_to(browser, name)
            cell = trace.stage(name, head=head).data
            panels = browser.execute_script(PANELS)
            assert len(panels) == cell.size
            for panel in panels:
                r, c, terms = panel["row"], panel["col"], panel["terms"]
                assert panel["result"] == format_number(float(cell[r, c]), 4), (name, r, c)
                if name == "scores":
                    assert terms["product"] == [
                        format_number(a * b, 4) for a, b in zip(q[r], k[c], strict=True)
                    ]
                elif name == "scaled":
                    assert terms["root"] == [format_number(math.sqrt(trace.model.d_k), 4)]
                elif name == "softmax" and np.isfinite(x[r, c]):
                    sink = (
                        None
                        if sink_logits is None
                        else float(np.ravel(sink_logits)[0 if np.size(sink_logits) == 1 else head])
                    )
                    finite = x[r][np.isfinite(x[r])]
                    top = max(float(finite.max()), -math.inf if sink is None else sink)
                    exps = [math.exp(v - top) for v in finite]
                    total = math.fsum(exps) + (0.0 if sink is None else math.exp(sink - top))
                    assert set(terms["max"]) == {format_number(top, 4)}  # M, and x − M
                    assert abs(read(terms["exp"][0]) - math.exp(x[r, c] - top)) <= 5.1e-7
                    assert abs(read(terms["sum"][0]) - total) <= 5.1e-7 * max(1.0, total)
                elif name == "output":
                    assert terms["weight"] == [format_number(w, 6) for w in weights[r]]
                    products = [w * v for w, v in zip(weights[r], values[:, c], strict=True)]
                    assert terms["product"] == [format_number(p, 4) for p in products]
    assert severe_logs(browser) == []


def overflowing_model(folder: Path) -> Path:
    """Scores past float16's 65,504: 300 · 300 = 90,000."""
    model = folder / "overflow.json"
    model.write_text(
        json.dumps(
            {
                "sentence": "a b c",
                "embeddings": {"a": [300.0, 0.0], "b": [0.0, 300.0], "c": [300.0, 300.0]},
                "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[1, 0], [0, 1]]},
            }
        ),
        encoding="utf-8",
    )
    return model


def test_a_dtype_page_writes_no_float64_sums(browser: Any, tmp_path: Path) -> None:
    from attntrace.forward.views.dtype import error_text

    target = tmp_path / "low.html"
    model = overflowing_model(tmp_path)
    assert (
        invoke("run", "-c", str(model), "--dtype", "float16", "--export", str(target)).exit_code
        == 0
    )
    trace = trace_attention(config=model, dtype="float16")
    load(browser, target)
    assert trace.precision is not None
    first = trace.precision.overflow
    assert first is not None
    assert one(browser, "#overflow").text == f"First overflow: {first.sentence}"
    walk_to(browser, "softmax")
    for td in by_css(browser, "article.current td[data-explain]"):
        td.click()
        panel = one(browser, "#arithmetic")
        assert "not written out for a float16 trace" in panel.text
        assert by_css(browser, "#arithmetic .term") == []  # no sum that would not be equal
    note = one(browser, "article.current p.note").text
    assert note == error_text(trace.precision.error_of("softmax", 0), "float16")  # type: ignore[arg-type]
    assert severe_logs(browser) == []


def test_labels_read_as_the_terminals(browser: Any, tmp_path: Path) -> None:
    """A repeated token gets its position (the#4), a long one is cut at 40 with …, and
    the page does not scroll sideways on a phone."""
    long = "antidisestablishmentarianism" * 3
    model = tmp_path / "words.json"
    tokens = ["the", "cat", "the", long, "the"]
    model.write_text(
        json.dumps(
            {
                "sentence": " ".join(tokens),
                "embeddings": {t: [float(i), 1.0] for i, t in enumerate(dict.fromkeys(tokens))},
                "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[1, 0], [0, 1]]},
            }
        ),
        encoding="utf-8",
    )
    target = tmp_path / "words.html"
    assert invoke("run", "-c", str(model), "--export", str(target)).exit_code == 0
    expected = [visible(label, 40) for label in unique_labels(tokens)]
    assert expected[:3] == ["the#0", "cat", "the#2"]
    assert expected[3].endswith("…")
    assert len(expected[3]) == 40
    browser.set_window_size(390, 900)
    try:
        load(browser, target)
        walk_to(browser, "softmax")
        rows = [th.text for th in by_css(browser, "article.current tbody th")]
        cols = [th.text for th in by_css(browser, "article.current thead th")][1:]
        assert rows == cols == expected
        side = [t.text for t in by_css(browser, '#head-view .token-label[data-side="q"]')]
        assert side == expected  # the head view has room for them, whole
        assert browser.execute_script("return document.documentElement.scrollWidth") <= 391
    finally:
        browser.set_window_size(1280, 900)


def test_a_big_trace_says_which_heads_it_holds(browser: Any, tmp_path: Path) -> None:
    trace = trace_attention(sample="gqa")
    numbers = sum(s.data.size for s in trace.only_heads([0, 1]).stages) + sum(
        w.data.size for w in trace.only_heads([0, 1]).weights
    )
    target = tmp_path / "cut.html"
    target.write_text(trace_page(trace, limit=numbers), encoding="utf-8")
    load(browser, target)
    note = one(browser, "#left-out").text
    assert note.startswith("This page holds heads 0, 1 of 4: 2 more would make it too big")
    assert "--json --heads H | attntrace render - --export" in note
    options = [o.get_attribute("value") for o in by_css(browser, "#head option")]
    assert options == ["0", "1"]


def test_the_head_view_of_many_tokens_draws_one_tokens_lines(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    sentence = " ".join(["the", "cat", "sat", "on", "the", "mat"] * 10)  # 60 tokens
    trace = trace_attention(sentence, sample="causal")
    load(browser, page_of(trace, tmp_path))
    weights = trace.stage("softmax", head=0).data
    drawn = {line.get_attribute("data-q") for line in by_css(browser, "#head-view line")}
    assert drawn == {"0"}  # the first query's lines, until another token is picked
    key = one(browser, '#head-view .token-label[data-side="k"][data-at="3"]')
    ActionChains(browser).move_to_element(key).perform()
    lines = by_css(browser, "#head-view line")
    assert {line.get_attribute("data-k") for line in lines} == {"3"}
    assert len(lines) == int((weights[:, 3] > 0.001).sum())


def test_a_bad_focus_writes_no_page(tmp_path: Path) -> None:
    target = tmp_path / "f.html"
    result = invoke("run", "-s", "gqa", "--export", str(target), "--focus", "nosuchtoken")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1  # one line, and no "saved"
    assert "saved" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_end_of_the_walk_keeps_the_focus(browser: Any, tmp_path: Path) -> None:
    load(browser, page_of(trace_attention(), tmp_path))
    nxt = one(browser, "#next")
    for _ in range(10):
        if nxt.get_attribute("disabled") is not None:
            break
        nxt.click()
    assert nxt.get_attribute("disabled") is not None
    assert browser.execute_script("return document.activeElement.id") == "prev"


def test_the_notebook_frame_is_sandboxed_and_falls_back_to_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = trace_attention(sample="gqa")
    frame = notebook_html(trace)
    assert frame.startswith('<iframe title="attntrace explorer" sandbox="allow-scripts" srcdoc="')
    monkeypatch.setattr(attntrace.page.build, "PAGE_BYTES", 10)
    fallback = trace._repr_html_()
    assert fallback.startswith(
        "<p>attntrace: no explorer for this trace (--export: expected a page"
    )
    assert "softmax = exp(scaled − row max) / row sum" in fallback  # the tables, as text
    assert "<iframe" not in fallback


def test_diff_says_what_only_one_side_holds(browser: Any, tmp_path: Path) -> None:
    target = tmp_path / "d.html"
    result = invoke("diff", "-s", "cat-eats-fish", "--set", "causal=true", "--export", str(target))
    assert result.exit_code == 1
    load(browser, target)
    line = one(browser, '#report tr[data-stage="masked"]')
    assert line.find_element("css selector", "td:last-child").text == "only in B"
    assert "null" not in one(browser, "#report").text
    assert "with --set causal=true with" not in one(browser, "header").text  # said once


def test_check_and_render_pages_embed_their_json(tmp_path: Path) -> None:
    saved = tmp_path / "t.json"
    saved.write_text(invoke("run", "-s", "gqa", "--json").stdout, encoding="utf-8")
    target = tmp_path / "r.html"
    assert invoke("render", str(saved), "--export", str(target)).exit_code == 0
    assert embedded(target.read_text(encoding="utf-8")) == json.loads(saved.read_text())
    arrays = tmp_path / "mine.json"
    trace = trace_attention(sample="two-heads")
    arrays.write_text(json.dumps({"scores": trace.stage("scores", head=0).data.tolist()}))
    page = tmp_path / "c.html"
    args = ("check", str(arrays), "-s", "two-heads", "--head", "0")
    result = invoke(*args, "--export", str(page))
    assert result.exit_code == 0, result.output
    assert embedded(page.read_text(encoding="utf-8"), "check") == json.loads(
        invoke(*args, "--json").stdout
    )


def test_a_table_of_more_than_16384_cells_shows_its_rows_a_page_at_a_time(
    browser: Any, tmp_path: Path
) -> None:
    sentence = " ".join(["the", "cat", "sat", "on", "the", "mat"] * 22)[: -len(" the mat")]
    trace = trace_attention(sentence, sample="causal")  # 130 tokens: 16,900 weights
    n = len(trace.tokens)
    assert n == 130
    load(browser, page_of(trace, tmp_path))
    walk_to(browser, "softmax")
    one(browser, "article.current button.expand").click()
    per_page = 16384 // n  # 126 rows of 130 columns
    rows = [
        int(td.get_attribute("data-row"))
        for td in by_css(browser, 'article.current td[data-col="0"]')
    ]
    assert rows == list(range(per_page))
    assert len(by_css(browser, "article.current td[data-row]")) == per_page * n
    assert one(browser, "article.current .rows-shown").text == f"rows 1–{per_page} of {n}"
    assert one(browser, "article.current button.earlier").get_attribute("disabled") is not None
    one(browser, "article.current button.later").click()
    rows = [
        int(td.get_attribute("data-row"))
        for td in by_css(browser, 'article.current td[data-col="0"]')
    ]
    assert rows == list(range(per_page, n))
    assert browser.execute_script("return document.activeElement.className") == "earlier"
    weights = trace.stage("softmax", head=0).data
    last = by_css(browser, f'article.current td[data-row="{n - 1}"]')
    assert [td.text for td in last] == [format_number(w, 4) for w in weights[n - 1]]
    one(browser, "article.current button.expand").click()  # Summarize
    assert len(by_css(browser, "article.current tbody tr")) == 8 + 1 + 8
