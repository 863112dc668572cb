"""RoPE by per-pair frequencies (ModelSpec.rope_frequencies): scaled RoPE (Llama 3.1's
``rope_scaling``) and a partial rotary width (Phi-3's ``partial_rotary_factor``).

Two kinds of check. Frequencies equal to ``base^(−2i/d_k)`` must give what ``rope_base``
gives, bit for bit, on every path that turns Q and K (the trace, a ``--dtype`` trace,
decode's cache, the backward, check's recompute): the one function they share is the only
place angles are made. Arbitrary frequencies, fewer pairs than d_k/2 too, are held to
the loops of tests/naive_rope.py, and the backward to finite differences.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from finite_differences import assert_close_to, finite_difference
from helpers import load_valid_trace
from hypothesis import given, settings
from hypothesis import strategies as st
from naive_rope import naive_turned_block, rotate_by
from randoms import random_block
from tolerances import FLOAT64

from attntrace.checking.recompute import Recipe, recompute
from attntrace.decode.decoder import decode
from attntrace.errors import InputError
from attntrace.forward.attention import trace_block
from attntrace.forward.cell_story import cell_story
from attntrace.forward.dtype import trace_low
from attntrace.forward.replay import load_trace
from attntrace.forward.trace_json import dump_bytes
from attntrace.forward.words import paragraph
from attntrace.kernel.casting import Cast
from attntrace.kernel.ops import rope, rope_frequencies
from attntrace.kernel.spec import ModelSpec
from attntrace.learning.backward import grad_block
from attntrace.learning.grad_cell_story import grad_cell_story
from attntrace.learning.grad_trace import grad_trace
from attntrace.learning.objective import Objective
from attntrace.modelfile.model_writer import model_document
from attntrace.real.forward import LayerAttention, attend

Array = npt.NDArray[np.float64]


def rope_block(seed: int, pairing: str, **fixed: Any) -> tuple[ModelSpec, list[str]]:
    """A random causal block with RoPE, projected by WO, over 7 tokens (positions up to
    6: enough turning for a wrong angle to show)."""
    model, _, _ = random_block(
        seed, cross=False, wo=True, causal=True, rope=True, rope_pairing=pairing, **fixed
    )
    drawn = np.random.default_rng(seed).integers(0, 6, size=7)
    return model, [f"t{int(i)}" for i in drawn]


def test_the_bases_frequencies_are_its_powers() -> None:
    for width, base in ((2, 10000.0), (8, 10.0), (64, 500000.0)):
        by_loop = [base ** (-2 * i / width) for i in range(width // 2)]
        np.testing.assert_allclose(rope_frequencies(width, base), by_loop, rtol=1e-15, atol=0)


# ---- frequencies equal to the base's: bit for bit what rope_base gives -----------------


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 2**31 - 1),
    st.sampled_from(["half", "interleaved"]),
    st.sampled_from([1.5, 10.0, 10000.0, 500000.0]),
)
def test_the_bases_frequencies_given_change_no_bit_anywhere(
    seed: int, pairing: str, base: float
) -> None:
    by_base, tokens = rope_block(seed, pairing)
    by_base = replace(by_base, rope_base=base)
    by_pair = replace(by_base, rope_frequencies=rope_frequencies(by_base.d_k, base))
    np.testing.assert_array_equal(by_pair.turn_frequencies, by_base.turn_frequencies)
    # the trace, and the trace in bfloat16 (the casting rule's own RoPE)
    for cast in (Cast(), Cast.of("bfloat16")):
        a, b = trace_low(by_base, tokens, cast), trace_low(by_pair, tokens, cast)
        assert [s.name for s in a.stages] == [s.name for s in b.stages]
        for traced, other_traced in zip(a.stages, b.stages, strict=True):
            np.testing.assert_array_equal(traced.data, other_traced.data, err_msg=traced.name)
    # decode: each step's turned q and k, its weights and output
    for step, other_step in zip(
        decode(by_base, tokens).steps, decode(by_pair, tokens).steps, strict=True
    ):
        for name in ("q", "k", "weights", "output", "projected"):
            np.testing.assert_array_equal(
                getattr(step, name), getattr(other_step, name), err_msg=name
            )
    # the backward: every head's gradients, turned back
    d_output = np.random.default_rng(seed).normal(size=(len(tokens), by_base.d_model))
    a_grad = grad_block(by_base, tokens, d_output=d_output)
    b_grad = grad_block(by_pair, tokens, d_output=d_output)
    for name in ("d_X", "d_WQ", "d_WK", "d_WV"):
        np.testing.assert_array_equal(getattr(a_grad, name), getattr(b_grad, name), err_msg=name)
    for one_head, other_head in zip(a_grad.heads, b_grad.heads, strict=True):
        np.testing.assert_array_equal(one_head.d_Q, other_head.d_Q)
        np.testing.assert_array_equal(one_head.d_K, other_head.d_K)
    # check's recompute, the right recipe and a mistaken pairing
    inputs = {"X": trace_block(by_base, tokens)["X"].data}
    mistaken = "half" if pairing == "interleaved" else "interleaved"
    for recipe in (Recipe(), Recipe(pairing=mistaken)):
        one_run, other_run = recompute(by_base, inputs, recipe), recompute(by_pair, inputs, recipe)
        for name in ("Q_rope", "K_rope", "softmax"):
            for row, other_row in zip(one_run.heads[name], other_run.heads[name], strict=True):
                np.testing.assert_array_equal(row, other_row, err_msg=name)


# ---- arbitrary frequencies, partial widths: the loops ---------------------------------


def drawn_frequencies(seed: int, d_k: int, pairs: int | None = None) -> Array:
    """Some pairs (1 to d_k/2) of frequencies spread over many decades, as a scaled
    RoPE's are (fast pairs kept, slow ones slowed further)."""
    rng = np.random.default_rng(seed + 1)
    count = pairs if pairs is not None else int(rng.integers(1, d_k // 2 + 1))
    frequencies: Array = 10.0 ** rng.uniform(-5, 0.5, size=count)
    return frequencies


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("seed", range(12))
def test_turned_rows_and_softmax_are_the_loops(seed: int, pairing: str) -> None:
    model, tokens = rope_block(seed, pairing)
    frequencies = drawn_frequencies(seed, model.d_k)
    model = replace(model, rope_frequencies=frequencies)
    trace = trace_block(model, tokens)
    X = trace["X"].data
    bQ, bK = model.bias("bQ"), model.bias("bK")
    naive = naive_turned_block(
        (X).tolist(),
        (model.WQ).tolist(),
        (model.WK).tolist(),
        heads=model.heads,
        kv_heads=model.n_kv_heads,
        frequencies=frequencies.tolist(),
        pairing=pairing,
        causal=True,
        q_bias=None if bQ is None else bQ.tolist(),
        k_bias=None if bK is None else bK.tolist(),
    )
    for h in range(model.heads):
        for name in ("Q_rope", "K_rope", "softmax"):
            np.testing.assert_allclose(
                trace.stage(name, head=h).data, naive[name][h], **FLOAT64, err_msg=name
            )
    # decode's last step is the trace's last row; real.forward.attend turns as the trace
    last = decode(model, tokens).steps[-1]
    for h in range(model.heads):
        np.testing.assert_allclose(last.weights[h], naive["softmax"][h][-1], **FLOAT64)
    if pairing == "half":
        assert model.WO is not None
        weights = LayerAttention(model.WQ, model.WK, model.WV, model.WO, dict(model.biases))
        projected, probabilities = attend(
            X, weights, model.heads, model.n_kv_heads, causal=True, rope_frequencies=frequencies
        )
        np.testing.assert_allclose(probabilities, naive["softmax"], **FLOAT64)
        np.testing.assert_allclose(projected, trace["projected"].data, **FLOAT64)


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
def test_a_partial_width_turns_the_first_dimensions_as_a_narrower_head(pairing: str) -> None:
    """Turning the first r of d dimensions is turning an r-wide row, the rest as held:
    in float64 and by the casting rule alike."""
    rng = np.random.default_rng(7)
    rows, positions = rng.normal(size=(5, 8)), np.arange(5) * 37
    frequencies = np.array([1.0, 0.03])  # r = 4 of d = 8
    for cast in (None, Cast.of("bfloat16"), Cast.of("float16")):
        turn = rope if cast is None else cast.rope
        held = rows if cast is None else cast.round(rows)
        whole = turn(rows, positions, frequencies, pairing)
        np.testing.assert_array_equal(
            whole[:, :4], turn(rows[:, :4], positions, frequencies, pairing)
        )
        np.testing.assert_array_equal(whole[:, 4:], held[:, 4:])
    by_loop = [
        rotate_by(list(r), int(p), [1.0, 0.03], pairing)
        for r, p in zip(rows, positions, strict=True)
    ]
    np.testing.assert_allclose(rope(rows, positions, frequencies, pairing), by_loop, **FLOAT64)


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("seed", range(3))
def test_the_backward_through_partial_rope_is_the_finite_differences(
    seed: int, pairing: str
) -> None:
    model, tokens = rope_block(seed, pairing, heads=2, kv_heads=1)
    model = replace(model, rope_frequencies=drawn_frequencies(seed, model.d_k, pairs=1))
    d_output = np.random.default_rng(seed).normal(size=(len(tokens), model.d_model))

    def loss(WQ: Array, WK: Array) -> float:
        trace = trace_block(replace(model, WQ=WQ, WK=WK), tokens)
        return float((trace["projected"].data * d_output).sum())

    gradients = grad_block(model, tokens, d_output=d_output)
    at = loss(model.WQ, model.WK)
    by_q = finite_difference(model.WQ.shape, lambda step: loss(model.WQ + step, model.WK))
    by_k = finite_difference(model.WK.shape, lambda step: loss(model.WQ, model.WK + step))
    assert_close_to(by_q, gradients.d_WQ, at, "d_WQ")
    assert_close_to(by_k, gradients.d_WK, at, "d_WK")


# ---- what is refused ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("frequencies", "found"),
    [
        (np.ones(3), "got 3 numbers"),  # d_k 4: two pairs at most
        (np.array([1.0, 0.0]), "got 0"),
        (np.array([-0.5]), "got -0.5"),
        (np.array([np.nan]), "non-finite"),
        (np.array([1.0, np.inf]), "non-finite"),
    ],
)
def test_frequencies_that_do_not_fit_are_one_input_error(frequencies: Array, found: str) -> None:
    model, _ = rope_block(0, "half", heads=1)
    model = replace(model, WQ=np.ones((model.d_model, 4)), WK=np.ones((model.d_model, 4)))
    with pytest.raises(InputError, match="rope_frequencies") as error:
        replace(model, rope_frequencies=frequencies)
    assert found in str(error.value)
    assert len(str(error.value).splitlines()) == 1


def test_frequencies_not_in_an_array_are_a_type_error() -> None:
    model, _ = rope_block(0, "half")
    with pytest.raises(TypeError, match=r"ModelSpec\.rope_frequencies"):
        replace(model, rope_frequencies=[1.0])  # type: ignore[arg-type]


def test_a_model_file_does_not_drop_the_frequencies() -> None:
    model, _ = rope_block(0, "half")
    with pytest.raises(InputError, match="rope_base alone"):
        model_document(replace(model, rope_frequencies=np.array([0.5])))


# ---- the record: JSON, formulas, words, cell stories ---------------------------------


def partial_trace(pairing: str = "half") -> tuple[ModelSpec, Any]:
    """One head of d_k 6 turned on its first 4 dimensions by two given frequencies."""
    rng = np.random.default_rng(3)
    model = ModelSpec(
        {f"t{i}": rng.normal(size=3) for i in range(4)},
        rng.normal(size=(3, 6)),
        rng.normal(size=(3, 6)),
        rng.normal(size=(3, 6)),
        WO=rng.normal(size=(6, 3)),
        causal=True,
        positions="rope",
        rope_pairing=pairing,
        rope_frequencies=np.array([0.75, 0.0625]),
    )
    return model, trace_block(model, ["t0", "t1", "t2", "t3"])


def test_a_saved_trace_keeps_its_frequencies_and_reads_back_the_same() -> None:
    model, trace = partial_trace()
    text = dump_bytes(trace).decode()
    document = load_valid_trace(text)  # the schema admits rope_frequencies
    assert document["model"]["rope_frequencies"] == [0.75, 0.0625]
    back = load_trace(text, "saved.json")
    assert back.model == trace.model
    np.testing.assert_array_equal(back.model.turn_frequencies, model.turn_frequencies)
    assert "2 of 3 pairs by their own frequencies, the rest unturned" in trace["Q_rope"].formula
    bad = json.loads(text)
    bad["model"]["rope_frequencies"] = [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(InputError, match=r"model\.rope_frequencies.*3 numbers above 0"):
        load_trace(json.dumps(bad), "saved.json")


def test_words_and_stories_show_the_frequency_used() -> None:
    model, trace = partial_trace()
    assert "f_i the model's own frequency" in paragraph(trace["Q_rope"], trace)
    assert "the last 2 dimensions are not turned" in paragraph(trace["Q_rope"], trace)
    stage, row = trace["Q_rope"], 3
    story = cell_story(trace, stage, row, 1)  # pair 1: turned with column 3
    text = "\n".join(story.lines)
    assert f"θ = {row} · frequency[1] = {row} × 0.0625" in text
    q = trace["Q"].data
    angle = row * 0.0625
    assert story.value == pytest.approx(q[row, 1] * math.cos(angle) - q[row, 3] * math.sin(angle))
    passed = "\n".join(cell_story(trace, stage, row, 5).lines)
    assert "past the 4 turned dimensions of 6: not turned" in passed
    tokens = list(trace.tokens)
    grad = grad_trace(model, tokens, None, Objective("attend", tokens[-1], tokens[0]))
    d_q = grad.stage("d_Q", 0)
    last = len(tokens) - 1  # the row the loss reads: its gradient is not 0
    back = grad_cell_story(grad, d_q, last, 0)
    assert back.lines[0] == f"position {last}, θ = 2.25000: turned back by −θ, with d2"
    d_turned = grad.stage("d_Q_rope", 0).data[last]
    assert back.value == pytest.approx(d_turned[0] * math.cos(2.25) + d_turned[2] * math.sin(2.25))
    assert back.value != 0
    unturned = grad_cell_story(grad, d_q, last, 4)
    assert "passes unturned" in unturned.lines[0]
    assert unturned.value == d_turned[4] != 0
