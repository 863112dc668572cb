"""The explorer's cell stories: any cell of any stage, as hand arithmetic that adds up.

Every stage of every sample gets a story (hypothesis picks the cells); the terms a story
writes are held to tests/naive.py's and tests/naive_variants.py's loops over the model's
own matrices, and the figures to one rule of significant digits, read off the text.
"""

from __future__ import annotations

import math
import re
from functools import cache
from typing import Any

import numpy as np
import pytest
from helpers import needs_weights
from hypothesis import given
from hypothesis import strategies as st
from naive import naive_block
from naive_variants import naive_block_of, visible
from randoms import random_block
from tolerances import FLOAT64_APPROX, significant

from attntrace import trace_attention
from attntrace.errors import InputError
from attntrace.forward.attention import trace_block
from attntrace.forward.cell_story import cell_story
from attntrace.forward.cell_terms import DIGITS, figure
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Stage, Trace
from attntrace.modelfile.model_file import load_model
from attntrace.modelfile.samples import list_samples, sample_path

SAMPLES = sorted(sample.name for sample in list_samples())
MOST_LINES = 20  # a story fits a pane: never more than this many lines
SIX = significant(DIGITS)  # a figure written to DIGITS significant digits


@cache
def sample_trace(name: str) -> Trace:
    return trace_attention(sample=name)


def every_stage(trace: Trace) -> list[Stage]:
    return [*trace.stages, *trace.weights]


@given(data=st.data())
@pytest.mark.parametrize("name", SAMPLES)
def test_every_cell_of_every_stage_of_every_sample_has_a_story(name: str, data: Any) -> None:
    trace = sample_trace(name)
    stage = data.draw(st.sampled_from(every_stage(trace)), label="stage")
    row = data.draw(st.integers(0, stage.shape[0] - 1), label="row")
    col = data.draw(st.integers(0, stage.shape[1] - 1), label="col")
    story = cell_story(trace, stage, row, col)
    value = float(stage.data[row, col])
    assert story.stage == stage.name
    assert story.head == stage.head
    assert story.heading.startswith(f"{stage.name}[")
    assert 2 <= len(story.lines) <= MOST_LINES
    # the value once, exactly: the text reads back to the trace's own number
    exact = story.lines[-1].split()[1]
    assert float(exact.replace("−∞", "-inf")) == value or math.isnan(value)
    worked = worked_result(trace, stage, story.lines, story.hidden)
    if worked is not None:
        # the last line of arithmetic gives the trace's own number, to its digits
        assert worked == pytest.approx(value, rel=10.0 ** (1 - DIGITS), abs=1e-12)
    if story.terms and not math.isinf(value):
        # the terms written (and those a long sum cuts) add up to the cell
        assert math.fsum(story.terms) == pytest.approx(value, **FLOAT64_APPROX) or (
            stage.name in ("softmax", "sink")
        )


UNWORKED = {"embeddings", "WQ", "WK", "WV", "WO", "bQ", "bK", "bV", "bO"}


def worked_result(
    trace: Trace, stage: Stage, lines: tuple[str, ...], hidden: str | None
) -> float | None:
    """The figure the story's arithmetic ends on (the line before the value's), where
    the cell is computed: not a learned number, a given X or the embedding alone."""
    positions = any(s.name.startswith("positions") for s in trace.stages)
    plain_x = stage.name in ("X", "X_context") and not positions
    if stage.name in UNWORKED or plain_x or hidden is not None:
        return None
    if stage.name == "positions" and "sinusoidal" not in stage.formula:
        return None
    written = re.search(r"= (\S+)$", lines[-2])
    assert written is not None, lines[-2]
    return float(written.group(1).replace("−∞", "-inf"))


def test_it_animal_is_told_from_the_trace_of_the_sample() -> None:
    """The README's example: 'it' on 'animal', each step of the softmax visible."""
    trace = sample_trace("it-animal")
    weights = trace["softmax"]
    it, animal = weights.rows.index("it"), weights.cols.index("animal")
    story = cell_story(trace, weights, it, animal)
    text = "\n".join(story.lines)
    assert story.heading == "softmax[it, animal]"
    assert "M = the row's max" in text
    assert "share = exp / sum = " in text
    exps = np.array(story.terms)
    assert exps[animal] / exps.sum() == pytest.approx(weights.data[it, animal], **FLOAT64_APPROX)


# ---- the terms against the loops ----


def loops(model: ModelSpec, x: list[list[float]]) -> dict[str, Any]:
    """tests/naive_variants.py's block over the model's own matrices, from X."""
    return naive_block_of(model, x)


def sinusoid(p: int, c: int, d_model: int) -> float:
    """Vaswani et al. 2017, section 3.5, written out: sin for even columns, cos for odd."""
    angle = p / 10000 ** ((c - c % 2) / d_model)
    return math.sin(angle) if c % 2 == 0 else math.cos(angle)


def inputs(model: ModelSpec, tokens: tuple[str, ...]) -> list[list[float]]:
    # the vocabulary's row: the token as written, else in lower case (The → the)
    vocabulary = model.embeddings
    rows = [list(vocabulary[t if t in vocabulary else t.lower()]) for t in tokens]
    if model.position_kind in ("sinusoidal",):
        return [
            [e + sinusoid(p, c, len(row)) for c, e in enumerate(row)] for p, row in enumerate(rows)
        ]
    return rows


SELF_SAMPLES = [name for name in SAMPLES if name != "cross"]


@pytest.mark.parametrize("name", SELF_SAMPLES)
def test_the_terms_are_the_loops_terms(name: str) -> None:
    model = load_model(sample_path(name))
    trace = sample_trace(name)
    x = inputs(model, trace.tokens)
    naive = loops(model, x)
    for stage in trace.stages:
        h = stage.head
        for i in range(stage.shape[0]):
            for j in range(stage.shape[1]):
                story = cell_story(trace, stage, i, j)
                check_terms(model, naive, x, stage.name, h, i, j, story.terms, story.hidden)


def check_terms(
    model: ModelSpec,
    naive: dict[str, Any],
    x: list[list[float]],
    name: str,
    h: int | None,
    i: int,
    j: int,
    terms: tuple[float, ...],
    hidden: str | None,
) -> None:
    close = FLOAT64_APPROX
    if name == "X" and model.position_kind == "sinusoidal":
        assert sum(terms) == pytest.approx(x[i][j], **close)
    if name in ("Q", "K", "V"):
        w = {"Q": model.WQ, "K": model.WK, "V": model.WV}[name]
        width = w.shape[1] // (model.heads if name == "Q" else model.n_kv_heads)
        assert h is not None
        g = h if name == "Q" else h // (model.heads // model.n_kv_heads)
        column = g * width + j
        expected = [x[i][r] * w[r][column] for r in range(len(x[i]))]
        bias = model.biases.get(f"b{name}")
        if bias is not None:
            expected.append(bias[column])
        assert list(terms) == pytest.approx(expected, **close)
    if name == "scores":
        q_in, k_in = (
            ("Q_rope", "K_rope")
            if model.position_kind == "rope"
            else (("Q_norm", "K_norm") if model.variants.qk_norm else ("Q", "K"))
        )
        q, k = naive[q_in][h][i], naive[k_in][h][j]
        assert list(terms) == pytest.approx([a * b for a, b in zip(q, k, strict=True)], **close)
    if name == "output":
        weights, v = naive["softmax"][h][i], naive["V"][h]
        expected = [weights[key] * v[key][j] for key in range(len(weights))]
        assert list(terms) == pytest.approx(expected, **close)
    if name == "softmax" and hidden is None:
        # the exps' ratio is the loops' weight, for every key of the row
        shares = [e / math.fsum(terms) for e in terms][: len(naive["softmax"][h][i])]
        assert shares == pytest.approx(naive["softmax"][h][i], **close)
    if name in ("masked", "softmax"):
        v = model.variants
        seen = visible(i, j, causal=model.causal, window=v.window, sinks=v.sinks)
        assert (hidden is None) == seen


@pytest.mark.parametrize("seed", range(12))
def test_random_blocks_terms_are_the_loops_terms(seed: int) -> None:
    """Cross-attention, biases, GQA, WO and both RoPE pairings, against tests/naive.py."""
    model, tokens, context = random_block(seed)
    trace = trace_block(model, tokens, context)
    keys = [list(model.embeddings[t]) for t in (context or tokens)]
    x = [list(model.embeddings[t]) for t in tokens]
    naive = naive_block(
        x,
        model.WQ.tolist(),
        model.WK.tolist(),
        model.WV.tolist(),
        heads=model.heads,
        kv_heads=model.n_kv_heads,
        causal=model.causal,
        context=keys if context is not None else None,
        wo=None if model.WO is None else model.WO.tolist(),
        biases={name: list(b) for name, b in model.biases.items()},
        rope_base=model.rope_base if model.position_kind == "rope" else None,
        rope_pairing=model.rope_pairing,
    )
    for stage in trace.stages:
        h = stage.head
        for i in range(stage.shape[0]):
            for j in range(stage.shape[1]):
                story = cell_story(trace, stage, i, j)
                value = float(stage.data[i, j])
                terms = story.terms
                if stage.name == "scores":
                    q_in = "Q_rope" if model.position_kind == "rope" else "Q"
                    k_in = "K_rope" if model.position_kind == "rope" else "K"
                    q, k = naive[q_in][h][i], naive[k_in][h][j]
                    assert list(terms) == pytest.approx([a * b for a, b in zip(q, k, strict=True)])
                if stage.name == "output":
                    w, v = naive["softmax"][h][i], naive["V"][h]
                    assert list(terms) == pytest.approx(
                        [w[key] * v[key][j] for key in range(len(w))]
                    )
                if stage.name == "projected":
                    assert math.fsum(terms) == pytest.approx(naive["projected"][i][j])
                if stage.name in ("Q_rope", "K_rope"):
                    # the story's last worked line gives the loops' turned value
                    worked = story.lines[-2].rsplit(" = ", 1)[1]
                    assert float(worked) == pytest.approx(naive[stage.name][h][i][j], **SIX)
                if stage.name == "concat":
                    assert story.lines[-2].endswith(figure(naive["concat"][i][j]))
                if terms and stage.name not in ("softmax", "sink"):
                    assert math.fsum(terms) == pytest.approx(value, **FLOAT64_APPROX)


# ---- what the text says ----

PRODUCT = re.compile(r"^\s+\S+\s+(\S+) × \(?([^)\s]+)\)? = (\S+)$")


def test_the_written_products_hold_to_their_digits() -> None:
    """Each written line ``a × b = c``, redone from its own figures, gives its c."""
    trace = sample_trace("it-animal")
    checked = 0
    for name in ("Q", "K", "V", "scores", "output"):
        stage = trace[name]
        for i in range(stage.shape[0]):
            for j in range(stage.shape[1]):
                for line in cell_story(trace, stage, i, j).lines:
                    match = PRODUCT.match(line)
                    if match:
                        a, b, c = (float(g) for g in match.groups())
                        assert a * b == pytest.approx(c, rel=2 * 10.0 ** (1 - DIGITS), abs=1e-300)
                        checked += 1
    assert checked > 500


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (22.08100001, "22.0810"),  # beside 11.4827: as many digits, the zero kept
        (11.48271, "11.4827"),
        (-0.009100249, "-0.00910025"),  # never -0.0091
        (-3.9e-5, "-3.90000e-5"),  # never 0.0000
        (2.0, "2"),  # whole: exact, nothing stripped
        (-math.inf, "−∞"),
        (1234567.5, "1.23457e6"),
    ],
)
def test_one_rule_for_every_figure(value: float, written: str) -> None:
    assert figure(value) == written


@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x != math.floor(x)))
def test_every_figure_that_is_not_whole_has_the_same_significant_digits(x: float) -> None:
    text = figure(x)
    mantissa = text.split("e")[0].lstrip("-").replace(".", "").lstrip("0")
    assert len(mantissa) == DIGITS
    assert float(text) == pytest.approx(x, **SIX)


def test_a_masked_cell_says_why() -> None:
    trace = sample_trace("causal")
    masked, weights = trace["masked"], trace["softmax"]
    story = cell_story(trace, masked, 1, 3)
    assert story.value == -math.inf
    assert story.hidden is not None
    assert "the future" in " ".join(story.lines)
    assert story.lines[-1].startswith("= −∞")
    story = cell_story(trace, weights, 1, 3)
    assert story.value == 0.0
    assert "exp(−∞) = 0" in " ".join(story.lines)
    seen = cell_story(trace, masked, 3, 1)
    assert seen.hidden is None
    assert seen.lines[1].startswith("visible: j ≤ i")


def test_a_window_and_its_sink_say_which_hides_and_which_keeps() -> None:
    trace = sample_trace("window")
    masked = trace["masked"]
    n = masked.shape[0]
    far = cell_story(trace, masked, n - 1, 1)
    assert far.hidden is not None
    assert "out of the window" in far.hidden
    sink = cell_story(trace, masked, n - 1, 0)
    assert sink.hidden is None
    assert sink.lines[1].startswith("kept: a sink")


def test_a_sink_logit_joins_the_sum() -> None:
    trace = sample_trace("sink-logit")
    for head in trace.traced_heads:
        weights, sink = trace["softmax", head], trace["sink", head]
        story = cell_story(trace, sink, 2, 0)
        exps = story.terms  # the keys' exps, then the sink's
        assert exps[-1] / math.fsum(exps) == pytest.approx(sink.data[2, 0], **FLOAT64_APPROX)
        story = cell_story(trace, weights, 2, 1)
        assert story.terms[1] / math.fsum(story.terms) == pytest.approx(
            weights.data[2, 1], **FLOAT64_APPROX
        )


def long_trace() -> Trace:
    rng = np.random.default_rng(7)
    d_model = 40
    model = ModelSpec(
        {f"t{i}": rng.normal(size=d_model) for i in range(20)},
        rng.normal(size=(d_model, 24)),
        rng.normal(size=(d_model, 24)),
        rng.normal(size=(d_model, 24)),
        causal=True,
    )
    return trace_block(model, [f"t{i}" for i in range(20)])


def test_a_long_sum_is_cut_and_says_how_many_terms() -> None:
    trace = long_trace()
    story = cell_story(trace, trace["Q"], 5, 3)
    text = "\n".join(story.lines)
    assert len(story.lines) <= MOST_LINES
    assert "40 products" in text
    assert "… 35 more terms …" in text
    assert "sum of the 40 terms = " in text
    assert len(story.terms) == 40  # all of them, though five are written
    assert math.fsum(story.terms) == pytest.approx(trace["Q"].data[5, 3], **FLOAT64_APPROX)
    story = cell_story(trace, trace["softmax"], 5, 2)
    text = "\n".join(story.lines)
    assert len(story.lines) <= MOST_LINES
    assert "14 of the 20 keys are hidden" in text


def test_a_learned_weight_is_read_as_given() -> None:
    trace = sample_trace("two-heads")
    wq = trace.weight("WQ", head=1)
    assert wq is not None
    story = cell_story(trace, wq, 0, 1)
    assert story.lines[0].startswith("learned")
    assert "head 1's columns" in story.lines[1]


def test_positions_are_worked_out() -> None:
    trace = sample_trace("positions")
    story = cell_story(trace, trace["positions"], 2, 1)
    assert "cos(2) = " + figure(math.cos(2)) in story.lines


def test_a_cell_out_of_range_is_one_input_error() -> None:
    trace = sample_trace("cat-eats-fish")
    with pytest.raises(InputError, match="0 … 2"):
        cell_story(trace, trace["softmax"], 3, 0)


def test_a_low_precision_trace_says_its_arithmetic_is_not_by_hand() -> None:
    trace = trace_attention(sample="cat-eats-fish", dtype="bfloat16")
    story = cell_story(trace, trace["scores"], 0, 0)
    assert "bfloat16" in story.lines[0]
    assert not story.terms


@needs_weights
@pytest.mark.long
def test_a_real_layer_s_long_products_are_cut_and_add_up() -> None:
    """SmolLM2's layer 3: Q over d_model 576, a GQA head's scores over d_k 64."""
    from attntrace.real.layer import trace_layer

    trace = trace_layer("smollm2", None, 3)
    q = trace.stage("Q", head=4)
    x, wq = trace.stage("X").data, trace.weight("WQ", head=4)
    assert wq is not None
    story = cell_story(trace, q, 8, 9)
    text = "\n".join(story.lines)
    assert story.heading == "Q[Ġit, d265], head 4 (reads K/V head 1)"
    assert "576 products" in text
    assert "… 571 more terms …" in text
    assert len(story.lines) <= MOST_LINES
    assert list(story.terms) == pytest.approx(list(x[8] * wq.data[:, 9]), **FLOAT64_APPROX)
    assert math.fsum(story.terms) == pytest.approx(q.data[8, 9], rel=1e-9, abs=1e-9)
    scores = trace.stage("scores", head=4)
    story = cell_story(trace, scores, 8, 1)
    assert "64 products" in story.lines[0]
    assert math.fsum(story.terms) == pytest.approx(scores.data[8, 1], rel=1e-9, abs=1e-9)
