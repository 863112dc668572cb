"""The casting rule of the variants' stages (docs/kernels.md, "The casting rule";
docs/variants.md, "--dtype") against the blind oracle tests/naive_lowp.py: QK-norm's
RMSNorm, ALiBi's bias, the cap's tanh, the window's mask and the sink logit's column,
computed by :class:`~attntrace.kernel.casting.Cast` and by the oracle's Python-scalar
loops, each stage from the product's stage before it (so one exp beside a tie does not
carry on), and the stage errors of ``run --dtype`` covering every new stage.
"""

from __future__ import annotations

import math
from typing import Any

import naive_lowp as naive
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import LOW_PRECISION_SPACINGS
from variant_cases import variant_block

from attntrace.forward.dtype import trace_low
from attntrace.kernel import masks
from attntrace.kernel.casting import Cast

LOW = ("float32", "float16", "bfloat16")
Rows = list[list[float]]
EXAMPLES = settings(max_examples=60, deadline=None)


def rows_of(array: Any) -> Rows:
    return [[float(x) for x in row] for row in np.atleast_2d(np.asarray(array, dtype=np.float64))]


def same(x: float, y: float) -> bool:
    return (math.isnan(x) and math.isnan(y)) or x == y


def assert_same(found: Any, expected: Rows, what: str) -> None:
    for i, (row, want) in enumerate(zip(rows_of(found), expected, strict=True)):
        for j, (x, y) in enumerate(zip(row, want, strict=True)):
            assert same(x, y), f"{what}[{i}][{j}]: product {x!r}, oracle {y!r}"


def assert_within_spacings(found: Any, expected: Rows, dtype: str, what: str) -> None:
    """Equal, or within LOW_PRECISION_SPACINGS of the dtype at the oracle's value (exp,
    sqrt and tanh are float64's: a value beside a tie of the dtype may round either way)."""
    for i, (row, want) in enumerate(zip(rows_of(found), expected, strict=True)):
        for j, (x, y) in enumerate(zip(row, want, strict=True)):
            if same(x, y):
                continue
            room = LOW_PRECISION_SPACINGS * naive.spacing(y, dtype)
            assert math.isfinite(x), f"{what}[{i}][{j}]: {x!r}, {y!r}"
            assert math.isfinite(y), f"{what}[{i}][{j}]: {x!r}, {y!r}"
            assert abs(x - y) <= room, f"{what}[{i}][{j}]: product {x!r}, oracle {y!r}"


def values(dtype: str, scale: float) -> st.SearchStrategy[float]:
    return st.floats(-scale, scale).map(lambda x: naive.round_to(x, dtype))


@st.composite
def matrix(draw: st.DrawFn, dtype: str, rows: int, cols: int, scale: float) -> Rows:
    return [[draw(values(dtype, scale)) for _ in range(cols)] for _ in range(rows)]


@EXAMPLES
@given(dtype=st.sampled_from(LOW), data=st.data())
def test_rms_norm(dtype: str, data: st.DataObject) -> None:
    n, d = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 6))
    scale = data.draw(st.sampled_from([1.0, 100.0, 1e4]))
    rows = data.draw(matrix(dtype, n, d, scale))
    weight = data.draw(st.none() | st.lists(st.floats(-3, 3), min_size=d, max_size=d))
    eps = data.draw(st.sampled_from([1e-6, 1e-2]))
    got = Cast.of(dtype).rms_norm(np.array(rows), None if weight is None else np.array(weight), eps)
    assert_same(got, naive.rms_norm(rows, weight, eps, dtype), f"rms_norm {dtype}")


@EXAMPLES
@given(dtype=st.sampled_from(LOW), accumulate=st.sampled_from(["float32", "dtype"]), data=st.data())
def test_attention_with_every_variant(dtype: str, accumulate: str, data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 5))
    d = data.draw(st.sampled_from([1, 2, 4]))
    scale = data.draw(st.sampled_from([1.0, 4.0, 60.0]))
    Q, K = data.draw(matrix(dtype, n, d, scale)), data.draw(matrix(dtype, n, d, scale))
    V = data.draw(matrix(dtype, n, 2, scale))
    window = data.draw(st.none() | st.integers(1, 4))
    sinks = data.draw(st.integers(0, 2)) if window is not None else 0
    causal = window is not None or data.draw(st.booleans())
    slope = data.draw(st.none() | st.sampled_from([0.5, 0.0625, 2.0**-0.5]))
    softcap = data.draw(st.none() | st.floats(0.5, 60.0))
    sink_logit = data.draw(st.none() | st.floats(-20, 20))
    softmax_dtype = data.draw(st.sampled_from(["float32", dtype]))
    cast = Cast.of(dtype, softmax_dtype, accumulate)
    positions = np.arange(n)
    shut = masks.hidden(positions, positions, causal=True, window=window, sinks=sinks)
    bias = None if slope is None else masks.alibi_bias(positions, positions, slope)
    got = cast.attention(
        np.array(Q),
        np.array(K),
        np.array(V),
        mask=shut if causal else None,
        bias=None if bias is None else cast.round(bias),
        softcap=softcap,
        sink_logit=sink_logit,
    )
    what = f"{dtype} softmax {softmax_dtype} accumulate {accumulate}"

    def oracle() -> dict[str, Rows]:  # the oracle end to end, from the same inputs
        return naive.variant_attention(
            Q,
            K,
            V,
            dtype,
            softmax_dtype,
            accumulate,
            hidden=shut.tolist() if causal else None,
            bias=None if bias is None else rows_of(bias),
            softcap=softcap,
            sink_logit=sink_logit,
        )

    want = oracle()
    assert_same(got.scores, want["scores"], f"scores {what}")
    assert_same(got.scaled, want["scaled"], f"scaled {what}")
    if bias is not None:
        assert got.biased is not None
        assert_same(
            got.biased,
            naive.add(rows_of(got.scaled), rows_of(cast.round(bias)), dtype),
            f"biased {what}",
        )
    else:
        assert got.biased is None
    before = rows_of(got.biased if got.biased is not None else got.scaled)
    if softcap is not None:
        assert got.capped is not None
        capped = [
            [naive.round_to(softcap * math.tanh(x / softcap), dtype) for x in r] for r in before
        ]
        assert_same(got.capped, capped, f"capped {what}")  # one rounding of C·tanh(x/C)
        before = rows_of(got.capped)
    if causal:
        assert got.masked is not None
        masked = [
            [-math.inf if shut[i, j] else x for j, x in enumerate(r)] for i, r in enumerate(before)
        ]
        assert_same(got.masked, masked, f"masked {what}")
        before = masked
    if sink_logit is None:
        assert got.sink is None
        weights = [naive.softmax_row(r, dtype, softmax_dtype) for r in before]
        assert_within_spacings(got.softmax, weights, dtype, f"softmax {what}")
    else:
        s = naive.round_to(sink_logit, dtype)
        rows = [naive.softmax_row([*r, s], dtype, softmax_dtype) for r in before]
        assert got.sink is not None
        assert_within_spacings(got.softmax, [r[:-1] for r in rows], dtype, f"softmax {what}")
        assert_within_spacings(got.sink, [r[-1:] for r in rows], dtype, f"sink {what}")
    assert_same(
        got.output, naive.matmul(rows_of(got.softmax), V, dtype, accumulate), f"output {what}"
    )


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("positions", ["rope", "alibi"])
def test_run_dtype_measures_every_new_stage(dtype: str, positions: str) -> None:
    """The stage errors of run --dtype hold a line for each stage the variants add,
    each stage no farther from float64 than the dtype's rounding allows there."""
    model, tokens = variant_block(
        3,
        positions=positions,
        causal=True,
        window=True,
        qk_norm=True,
        weighted=True,
        softcap=True,
        sink=True,
    )
    tokens = [*tokens, "t1", "t2"]
    low = trace_low(model, tokens, Cast.of(dtype))
    assert low.precision is not None
    names = {name for name, _ in low.precision.errors}
    expected = {"Q_norm", "K_norm", "capped", "masked", "sink"}
    expected |= {"Q_rope", "K_rope"} if positions == "rope" else {"alibi", "biased"}
    assert expected <= names
    for (name, _), error in low.precision.errors.items():
        assert not error.overflowed, name


def test_the_sink_logit_is_rounded_to_the_dtype_first() -> None:
    """A stored parameter, as the weights are: 300.6 is 300 in bfloat16 (its spacing is 2
    there), so the sink ties the row's top logit of 300 and takes as much weight."""
    cast = Cast.of("bfloat16")
    Q, K, V = np.array([[300.0]]), np.array([[1.0], [0.5]]), np.eye(2)  # d_k = 1
    got = cast.attention(Q, K, V, sink_logit=300.6)
    scaled = rows_of(got.scaled)[0]
    assert scaled == [300.0, 150.0]
    want = naive.softmax_row([*scaled, 300.0], "bfloat16", "float32")
    assert_within_spacings(got.sink, [want[-1:]], "bfloat16", "sink")
    unrounded = math.exp(0.6) / (1 + math.exp(-150) + math.exp(0.6))  # 0.646, not 0.5
    assert abs(unrounded - want[-1]) > 4 * naive.spacing(want[-1], "bfloat16")
