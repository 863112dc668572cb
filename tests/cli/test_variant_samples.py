"""The variant samples (window, alibi, gemma-like, sink-logit) end to end, by the CLI.

Each is listed by ``attntrace samples``; its ``run --json`` is valid against the shipped
schema and ``render -`` of it shows what ``run`` shows, at 80 and 160 columns; its
stages are those docs/variants.md's table lists, in that order; and the numbers a
learner is told to look at hold, computed here by loops from the docs' formulas.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from helpers import invoke, load_valid_trace
from tolerances import FLOAT64, FLOAT64_APPROX

from attntrace.forward.replay import load_trace
from attntrace.kernel.budget import trace_bytes
from attntrace.modelfile.model_file import load_model
from attntrace.modelfile.samples import sample_path

SAMPLES = ("window", "alibi", "gemma-like", "sink-logit")

# Head 0's stages, in order (docs/variants.md, "The order of a head's stages").
HEAD_STAGES = {
    "window": ["Q", "K", "V", "scores", "scaled", "masked", "softmax", "output"],
    "alibi": ["Q", "K", "V", "scores", "scaled", "alibi", "biased", "masked", "softmax", "output"],
    "gemma-like": [
        "Q",
        "K",
        "V",
        "Q_norm",
        "K_norm",
        "scores",
        "scaled",
        "capped",
        "masked",
        "softmax",
        "output",
    ],
    "sink-logit": ["Q", "K", "V", "scores", "scaled", "softmax", "sink", "output"],
}


def _json(name: str) -> str:
    result = invoke("run", "--sample", name, "--json")
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _cells(stage: dict[str, object]) -> npt.NDArray[np.float64]:
    rows = stage["data"]
    assert isinstance(rows, list)
    return np.array([[-math.inf if c is None else c for c in row] for row in rows])


def _stage(document: dict[str, object], name: str, head: int = 0) -> npt.NDArray[np.float64]:
    stages = document["stages"]
    assert isinstance(stages, list)
    return _cells(next(s for s in stages if s["name"] == name and s["head"] == head))


def test_each_sample_is_listed_with_a_description() -> None:
    listing = invoke("samples").stdout
    for name in SAMPLES:
        assert name in listing
        shown = invoke("samples", name)
        assert shown.exit_code == 0
        assert "description:" in shown.stdout


@pytest.mark.parametrize("name", SAMPLES)
def test_the_json_is_valid_and_holds_the_documented_stages(name: str) -> None:
    document = load_valid_trace(_json(name))
    stages = document["stages"]
    assert [s["name"] for s in stages if s["head"] == 0] == HEAD_STAGES[name]


@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.parametrize("columns", [80, 160])
def test_render_of_the_json_shows_what_run_shows(name: str, columns: int) -> None:
    text = _json(name)
    shown = invoke("run", "--sample", name, columns=columns)
    rendered = invoke("render", "-", input=text, columns=columns)
    assert rendered.exit_code == 0, rendered.stderr
    assert rendered.stdout == shown.stdout


@pytest.mark.parametrize("name", SAMPLES)
def test_focus_of_the_json_shows_what_run_shows(name: str) -> None:
    text = _json(name)
    shown = invoke("run", "--sample", name, "--focus", "1")
    rendered = invoke("render", "-", "--focus", "1", input=text)
    assert rendered.exit_code == 0, rendered.stderr
    assert rendered.stdout == shown.stdout


def test_the_window_hides_what_its_rule_hides() -> None:
    """window 3, sinks 1: query i sees j when j ≤ i and (i − j < 3 or j < 1)."""
    masked = _stage(load_valid_trace(_json("window")), "masked")
    n = masked.shape[0]
    for i in range(n):
        for j in range(n):
            assert np.isneginf(masked[i, j]) != (j <= i and (i - j < 3 or j < 1)), (i, j)


def test_window_focus_says_why_each_key_is_hidden() -> None:
    out = invoke("run", "--sample", "window", "--focus", "mat", columns=160).stdout
    assert "cat hidden: out of the window: 4 tokens back" in out
    assert "today hidden: the future" in out
    assert "the#0 kept: a sink" in out
    assert (
        "window 3 · sinks 1" in out.splitlines()[0]
        or "window 3 · sinks 1" in invoke("run", "--sample", "window").stdout.splitlines()[0]
    )


def test_alibi_adds_the_papers_bias() -> None:
    """H = 2: m = 2^(−8·1/2) = 1/16 and 2^(−8) = 1/256; bias −m · |i − j|."""
    document = load_valid_trace(_json("alibi"))
    assert document["model"]["alibi_slopes"] == [1 / 16, 1 / 256]
    for head, slope in enumerate((1 / 16, 1 / 256)):
        alibi = _stage(document, "alibi", head)
        scaled, biased = _stage(document, "scaled", head), _stage(document, "biased", head)
        for i in range(alibi.shape[0]):
            for j in range(alibi.shape[1]):
                assert alibi[i, j] == pytest.approx(-slope * abs(i - j), **FLOAT64_APPROX)
                assert biased[i, j] == pytest.approx(scaled[i, j] + alibi[i, j], **FLOAT64_APPROX)


def test_gemma_like_norms_then_caps() -> None:
    """Q_norm = Q / √(mean(Q²) + ε) · q_norm; capped = 2 · tanh(scaled / 2)."""
    document = load_valid_trace(_json("gemma-like"))
    q, q_norm = _stage(document, "Q"), _stage(document, "Q_norm")
    for i, row in enumerate(q):
        rms = math.sqrt(sum(x * x for x in row) / len(row) + 1e-6)
        expected = [x / rms * w for x, w in zip(row, (2.0, 1.0), strict=True)]
        np.testing.assert_allclose(q_norm[i], expected, **FLOAT64)
    scaled, capped = _stage(document, "scaled"), _stage(document, "capped")
    np.testing.assert_allclose(capped, 2 * np.tanh(scaled / 2), **FLOAT64)
    assert np.abs(capped).max() < 2


def test_sink_logit_rows_sum_to_one_with_the_sink() -> None:
    document = load_valid_trace(_json("sink-logit"))
    for head, logit in enumerate((1.0, -2.0)):
        scaled = _stage(document, "scaled", head)
        softmax, sink = _stage(document, "softmax", head), _stage(document, "sink", head)
        for i in range(scaled.shape[0]):
            total = sum(math.exp(x) for x in scaled[i]) + math.exp(logit)
            assert sink[i, 0] == pytest.approx(math.exp(logit) / total, **FLOAT64_APPROX)
            assert softmax[i].sum() + sink[i, 0] == pytest.approx(1.0, **FLOAT64_APPROX)
    # "eats", which matches nothing well, gives head 0's sink the most
    sink0 = _stage(document, "sink", 0)[:, 0]
    assert int(np.argmax(sink0)) == 1


@pytest.mark.parametrize("name", SAMPLES)
def test_trace_size_counts_every_per_head_stage(name: str) -> None:
    """trace_bytes' per-head part is the bytes of the per-head stages the trace holds."""
    model = load_model(sample_path(name))
    trace = load_trace(_json(name), name)
    n = m = len(trace.tokens)
    per_head = sum(s.data.nbytes for s in trace.stages if s.head is not None)
    shared = 8 * (n + m) * model.d_model * 3  # trace_bytes' estimate of X and the rest
    assert trace_bytes(model, n, m) - shared == per_head
