"""How the views show the variants of docs/variants.md ("What a trace shows").

The header names what is on; each new stage has a caption, a step paragraph and a shape
equation; the masked caption says which mask; --focus says why each hidden key is
hidden and shows ALiBi's bias, the cap and the sink's share; --map ranks the sink beside
the keys; --overview draws the window's −∞ cells. The words are the docs'; the numbers
are recomputed here from the trace's own earlier stages by the docs' formulas.
"""

from __future__ import annotations

import math

import pytest
from helpers import invoke

from attntrace.forward.attention import trace_block
from attntrace.forward.words import one_line, paragraph, shape_equation
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Trace
from attntrace.modelfile.model_file import load_model
from attntrace.modelfile.samples import sample_path


def trace_attention(spec: ModelSpec) -> Trace:
    assert spec.sentence is not None
    return trace_block(spec, spec.sentence.split())


def _run(*args: str, columns: int = 80) -> str:
    result = invoke("run", *args, columns=columns)
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(
    ("sample", "words"),
    [
        ("window", "causal · window 3 · sinks 1"),
        ("alibi", "causal · ALiBi"),
        ("gemma-like", "QK-norm · softcap 2"),
        ("sink-logit", "· sink logit"),
    ],
)
def test_the_header_names_what_is_on(sample: str, words: str) -> None:
    header = " ".join(_run("--sample", sample, columns=160).splitlines()[:1])
    assert words in header


def test_a_model_without_variants_names_none() -> None:
    header = _run("--sample", "causal", columns=160).splitlines()[0]
    for word in ("window", "sinks", "ALiBi", "QK-norm", "softcap", "sink logit"):
        assert word not in header


@pytest.mark.parametrize(
    ("sample", "stages"),
    [
        ("alibi", ("alibi", "biased")),
        ("gemma-like", ("Q_norm", "K_norm", "capped")),
        ("sink-logit", ("sink",)),
    ],
)
def test_each_new_stage_has_a_caption_paragraph_and_equation(
    sample: str, stages: tuple[str, ...]
) -> None:
    trace = trace_attention(load_model(sample_path(sample)))
    n = len(trace.tokens)
    for name in stages:
        stage = trace.stage(name, head=0)
        assert one_line(stage, trace), name
        assert len(paragraph(stage, trace)) > 80, name
        rows, cols = stage.shape
        assert shape_equation(stage, trace).endswith(f"{name} [{rows} × {cols}]"), name
        assert rows == n


def test_the_window_changes_the_masked_caption_and_the_softmax_sink_its_own() -> None:
    window = trace_attention(load_model(sample_path("window")))
    masked = window.stage("masked")
    assert "3 or more keys back" in one_line(masked, window)
    assert "the first 1 kept" in one_line(masked, window)
    assert "sliding window of 3" in paragraph(masked, window)
    sinks = trace_attention(load_model(sample_path("sink-logit")))
    assert "1 − sink" in one_line(sinks.stage("softmax", head=0), sinks)


def test_focus_says_why_each_key_is_hidden_at_80_columns() -> None:
    out = _run("--sample", "window", "--focus", "today")
    # today is position 6: with window 3 it sees the#4, mat, itself, and the sink the#0
    for key, back in (("cat", 5), ("sat", 4), ("on", 3)):
        assert f"{key} hidden: out of the window: {back} tokens back" in out
    assert "the#0 kept: a sink" in out
    assert "(masked: out of the window)" in out
    for line in out.splitlines():
        assert len(line) <= 80
        assert line == line.rstrip()


def test_focus_shows_the_alibi_bias_and_the_cap() -> None:
    out = _run("--sample", "alibi", "--focus", "mat", "--set", "softcap=1")
    assert "biased = scaled + alibi; capped = 1 · tanh(biased / 1)" in out
    # mat (5) on the#0 (0), head 0: the bias is −(1/16)·5 = −0.3125
    assert "− 0.3125 = " in out


def test_focus_puts_the_sink_in_the_denominator() -> None:
    """eats, head 0: scaled row [0.375, 0.125, 0.375] / √2 and the sink logit 1."""
    out = _run("--sample", "sink-logit", "--focus", "eats")  # head 0 comes first
    scaled = [0.375 / math.sqrt(2), 0.125 / math.sqrt(2), 0.375 / math.sqrt(2)]
    top = max(*scaled, 1.0)
    total = sum(math.exp(x - top) for x in scaled) + math.exp(1.0 - top)
    assert f"{total:.6f}" in out  # the sum, sink included
    sink_line = next(line for line in out.splitlines() if line.startswith("sink "))
    assert f"{math.exp(1.0 - top) / total:.4f}" in sink_line
    assert "1 − sink" in out


def test_map_ranks_the_sink_beside_the_keys() -> None:
    out = _run("--sample", "sink-logit", "--map")
    eats = next(line for line in out.splitlines() if line.startswith("eats"))
    assert eats.split("→")[1].split()[0] == "sink"  # head 0's eats gives the sink the most


def test_overview_draws_the_windows_hidden_cells() -> None:
    out = _run("--sample", "window", "--overview", columns=160)
    assert "masked" in out
    today = [line for line in out.splitlines() if line.startswith("today")]
    assert any(line.count("−∞") == 3 for line in today)  # cat, sat, on: out of the window


def test_the_qk_norm_texts_say_the_length_is_before_the_weight() -> None:
    """RMS-norming gives a row length √d_k; the weight q_norm (here [2, 1]) then scales
    each dimension, so Q_norm's rows are not √d_k long: the texts must not say they are."""
    spec = load_model(sample_path("gemma-like"))
    trace = trace_attention(spec)
    q_norm = trace.stage("Q_norm", head=0)
    d_k = q_norm.data.shape[1]
    lengths = [math.sqrt(sum(float(x) ** 2 for x in row)) for row in q_norm.data]
    assert any(abs(length - math.sqrt(d_k)) > 0.1 for length in lengths)  # the premise
    for name in ("Q_norm", "K_norm"):
        caption = one_line(trace.stage(name, head=0), trace)
        assert "length √d_k, then times" in caption, caption
    text = paragraph(q_norm, trace)
    assert "length about √2 however large" in text
    assert "then it is multiplied" in text


def test_focus_on_a_long_windowed_row_counts_the_hidden_keys() -> None:
    """36 tokens, window 3, one sink, focus on position 30: only 20 weights are written
    out, so a line counts the rest by reason (27 far back, 5 later, the sink kept)."""
    sentence = " ".join(["the cat sat on the mat"] * 6)
    out = _run("--sample", "window", sentence, "--focus", "30")
    softmax = out[out.index("\nsoftmax") : out.index("\noutput")]
    assert "the 20 largest of 36 weights" in softmax
    said = " ".join(softmax.split())
    assert "27 keys hidden: out of the window (a query sees itself and the 2 before it)" in said
    assert "5 later keys hidden: the future" in said
    assert "1 key kept: a sink, visible however far back" in said


def _softmax_tables(out: str) -> list[list[list[str]]]:
    """Each focus softmax table's rows (key, its cells), one table per head shown."""
    tables: list[list[list[str]]] = []
    rows: list[list[str]] | None = None
    for line in out.splitlines():
        if line.startswith("softmax = exp("):
            rows = []
            tables.append(rows)
        elif rows is not None and line.startswith("sum "):
            rows = None
        elif rows is not None and line and not line.startswith(("key", "─")):
            rows.append(line.split())
    return tables


def test_the_focus_marks_the_sinks_row_when_its_logit_is_the_max() -> None:
    """M = max(max x, s): the ◀ marks the row whose − max is 0, the sink's where s wins
    (head 0: s = 1 above every scaled score), a key's where a key wins (head 1)."""
    spec = load_model(sample_path("sink-logit"))
    trace = trace_attention(spec)
    logits = spec.variants.sink_logits(spec.heads)
    assert logits is not None
    index = trace.tokens.index("eats")
    tables = _softmax_tables(_run("--sample", "sink-logit", "--focus", "eats", columns=160))
    assert len(tables) == spec.heads
    for head, rows in enumerate(tables):
        scaled = [float(x) for x in trace.stage("scaled", head=head).data[index]]
        top = max(*scaled, logits[head])
        marked = [row[0] for row in rows if "◀" in row]
        expected = [
            row[0] for row, x in zip(rows, [*scaled, logits[head]], strict=True) if x == top
        ]
        assert marked == expected, (head, rows)
        for row, x in zip(rows, [*scaled, logits[head]], strict=True):
            minus_max = float(row[3] if "◀" in row else row[2])
            assert minus_max == pytest.approx(x - top, abs=1e-4), (head, row)
    assert [row[0] for row in tables[0] if "◀" in row] == ["sink"]


def test_one_sink_is_the_first_token_not_the_first_1() -> None:
    spec = load_model(sample_path("window"))
    assert spec.variants.sinks == 1
    trace = trace_attention(spec)
    text = paragraph(trace.stage("masked"), trace)
    assert "The first token stays visible however far back" in text


def test_the_sink_logits_softmax_title_fits_one_line_of_80() -> None:
    """The title, its shape and its head on one line at 80 columns: M and s are the
    caption's to explain (docs/variants.md's table)."""
    lines = _run("--sample", "sink-logit").splitlines()
    titles = [line for line in lines if line.startswith("softmax = ")]
    assert len(titles) == 2
    for head, title in enumerate(titles):
        assert title.endswith(f"[3 × 3]  head {head}"), title
    assert any("M = max(row max, s)" in line for line in lines)
