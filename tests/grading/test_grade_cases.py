"""grade's cases: the right samples, the sizes the issue asks for, and the expected
outputs (attntrace's trace) held to tests/naive.py's loops, not to the code itself."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from naive import naive_block

from attntrace.api import prepared, traced
from attntrace.grading.cases import LATER_FROM, SAMPLES, Call, Case, build_cases
from attntrace.kernel.variants import Variants
from attntrace.modelfile.samples import list_samples


def _expected(case: Case) -> npt.NDArray[np.float64]:
    trace = traced(None, sample=case.sample, model=case.model, causal=case.causal)
    return np.array(trace["output"].data)


def _naive(call: Call, *, fill: float | None = None) -> npt.NDArray[np.float64]:
    """The output by loops; with ``fill``, the mask written as a finite constant."""
    x, wq, wk, wv = (a.tolist() for a in (call.X, call.WQ, call.WK, call.WV))
    if fill is None:
        return np.array(naive_block(x, wq, wk, wv, causal=call.causal)["output"][0])
    q, k, v = (np.array(x) @ np.array(w) for w in (wq, wk, wv))  # only for the fill's sake
    rows = []
    for i in range(len(x)):
        s = [
            sum(a * b for a, b in zip(q[i], k[j], strict=True)) / math.sqrt(len(wq[0]))
            for j in range(len(x))
        ]
        s = [fill if j > i else value for j, value in enumerate(s)]
        top = max(s)
        e = [math.exp(value - top) for value in s]
        w = [value / math.fsum(e) for value in e]
        rows.append([sum(w[j] * v[j][c] for j in range(len(x))) for c in range(len(v[0]))])
    return np.array(rows)


CALLS, CASES = build_cases()
MODEL_CASES = [c for c in CASES if c.kind != "property"]


def test_the_samples_are_every_single_head_sample_without_extras() -> None:
    plain = []
    for sample in list_samples():
        spec = prepared(None, sample=sample.name).spec
        if (
            spec.heads == 1
            and spec.context is None
            and spec.position_kind in ("none", "sinusoidal", "learned")
            and not spec.biases
            and spec.variants == Variants()
        ):
            plain.append(sample.name)
    assert sorted(plain) == sorted(SAMPLES)


@pytest.mark.parametrize("case", MODEL_CASES, ids=lambda c: c.name)
def test_the_expected_output_is_the_naive_one(case: Case) -> None:
    """What a student is held to is attention by loops, for every sample and hidden model."""
    call = CALLS[case.calls[0]]
    assert call.causal == case.causal
    naive = _naive(call)
    expected = _expected(case)
    assert expected.shape == (call.X.shape[0], call.WV.shape[1])
    np.testing.assert_allclose(
        expected, naive, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(naive).max())
    )


def test_a_sample_call_is_the_samples_x_and_weights() -> None:
    """positions adds its sinusoids to X: the student gets X, not the embeddings."""
    case = next(c for c in CASES if c.sample == "positions")
    call = CALLS[case.calls[0]]
    d_model = call.X.shape[1]
    p, i = 1, 0  # "bites", dimension 0: embedding 0 + sin(1)
    assert call.X[p, 2 * i] == pytest.approx(0 + math.sin(p / 10000 ** (2 * i / d_model)))
    assert call.X[0].tolist() == pytest.approx([1, 1, 0.5, 1])  # dog + (sin 0, cos 0, ...)


def test_the_sizes_reach_the_corners() -> None:
    """n = 1 and d_k = 1, d_model ≠ d_k, n ≠ d_k, causal and not, among the hidden models."""
    sizes = [
        (c.X.shape[0], c.X.shape[1], c.WQ.shape[1], c.causal)
        for c in (CALLS[k.calls[0]] for k in CASES if k.kind == "random")
    ]
    assert any(n == 1 for n, _, _, _ in sizes)
    assert any(d_k == 1 and n > 1 for n, _, d_k, _ in sizes)
    assert sum(d_model != d_k and n != d_k for n, d_model, d_k, _ in sizes) >= 8
    assert {causal for *_, causal in sizes} == {True, False}
    assert [c.kind for c in CASES].count("property") == 3


def test_a_too_small_mask_fill_shows_and_differs_from_a_zero_fill() -> None:
    """The large-score causal model: a mask filled with −1e4 (or 0) changes its output,
    and the two fills change it differently, so the catalogue can tell them apart."""
    low = next(
        CALLS[c.calls[0]]
        for c in CASES
        if c.kind == "random" and c.causal and abs(CALLS[c.calls[0]].X).max() > 100
    )
    right = _naive(low)
    too_small, zero, huge = _naive(low, fill=-1e4), _naive(low, fill=0.0), _naive(low, fill=-1e9)
    np.testing.assert_allclose(huge, right, rtol=1e-9, atol=1e-9)
    assert not np.allclose(too_small, right, rtol=1e-3)
    assert not np.allclose(too_small, zero, rtol=1e-3)


def test_a_softmax_without_its_max_overflows_on_a_hidden_model() -> None:
    scaled = [
        (c.X @ c.WQ) @ (c.X @ c.WK).T / math.sqrt(c.WQ.shape[1])
        for c in (CALLS[k.calls[0]] for k in CASES if k.kind == "random" and not k.causal)
    ]
    assert max(float(s.max()) for s in scaled) > 709.8  # exp(709.8) is past float64


def test_the_property_calls_change_what_they_say() -> None:
    permuted = next(c for c in CASES if c.name.startswith("permutation"))
    a, b = (CALLS[i] for i in permuted.calls)
    assert sorted(map(tuple, a.X.tolist())) == sorted(map(tuple, b.X.tolist()))
    assert not np.array_equal(a.X, b.X)
    later = next(c for c in CASES if c.kind == "property" and c.name.startswith("causal"))
    a, b = (CALLS[i] for i in later.calls)
    assert a.causal
    assert b.causal
    np.testing.assert_array_equal(a.X[:LATER_FROM], b.X[:LATER_FROM])
    assert not np.isclose(a.X[LATER_FROM:], b.X[LATER_FROM:]).any()


def test_the_cases_are_the_same_every_time() -> None:
    """A fixed seed: two builds give the same numbers (every machine grades alike)."""
    again, _ = build_cases()
    assert all(
        np.array_equal(x.X, y.X) and np.array_equal(x.WQ, y.WQ)
        for x, y in zip(CALLS, again, strict=True)
    )
