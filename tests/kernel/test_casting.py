"""The casting rule's pieces (kernel/casting): the choices a user may name, the error of a
stage against float64, and overflow carried as IEEE arithmetic carries it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attntrace.errors import InputError
from attntrace.kernel.casting import Cast, stage_error
from attntrace.kernel.ops import attention


def test_defaults_are_the_frameworks() -> None:
    assert Cast.of("float16") == Cast("float16", "float32", "float32")
    assert Cast.of("bfloat16", "bfloat16", "dtype") == Cast("bfloat16", "bfloat16", "dtype")
    assert Cast.of("float64") == Cast("float64", "float64", "float32")
    assert Cast.of("fp16", "fp32") == Cast.of("float16")
    assert Cast.of("bf16") == Cast.of("bfloat16")
    assert Cast.of("float64").exact
    assert not Cast.of("float32").exact
    assert Cast.of("float16").storage_bytes == 2
    assert Cast.of("float32").storage_bytes == 4


@pytest.mark.parametrize(
    ("dtype", "softmax_dtype", "accumulate", "field"),
    [
        ("float8", None, None, "dtype"),
        ("", None, None, "dtype"),
        ("float16", "", None, "softmax_dtype"),
        ("float16", None, "", "accumulate"),
        ("float16", "bfloat16", None, "softmax_dtype"),
        ("float16", "float64", None, "softmax_dtype"),
        ("float64", "float32", None, "softmax_dtype"),
        ("float16", None, "float64", "accumulate"),
    ],
)
def test_refused_choices_name_the_field(
    dtype: str, softmax_dtype: str | None, accumulate: str | None, field: str
) -> None:
    with pytest.raises(InputError) as caught:
        Cast.of(dtype, softmax_dtype, accumulate)
    assert caught.value.field == field


def test_a_refused_softmax_dtype_names_each_choice_once() -> None:
    with pytest.raises(InputError) as caught:
        Cast.of("float32", "float16")
    assert caught.value.expected == "float32 (with dtype float32)"
    assert Cast.of("float16", accumulate="fp32").accumulate == "float32"


def test_float64_cast_is_the_ordinary_attention() -> None:
    rng = np.random.default_rng(5)
    Q, K, V = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    low, plain = Cast.of("float64").attention(Q, K, V, causal=True), attention(Q, K, V, causal=True)
    for a, b in zip(low, plain, strict=True):
        assert (a is None) == (b is None)  # the variants' stages, off in both
        if a is not None and b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)


def test_scores_past_65504_overflow_to_inf_and_the_row_to_nan() -> None:
    # q·k = 300·300 = 90,000 > 65,504: inf in float16, and its row's softmax inf − inf = NaN
    Q = np.array([[300.0], [1.0]])
    K = np.array([[300.0], [1.0]])
    V = np.array([[1.0], [2.0]])
    head = Cast.of("float16").attention(Q, K, V)
    assert head.scores[0, 0] == math.inf
    assert head.scores[1, 1] == 1.0
    assert np.isnan(head.softmax[0]).all()
    assert np.isfinite(head.softmax[1]).all()
    error = stage_error(head.scores, Q @ K.T)
    assert (error.inf, error.nan, error.overflowed) == (1, 0, True)
    assert stage_error(head.softmax, attention(Q, K, V).softmax).nan == 2


def test_stage_error_absolute_and_relative() -> None:
    exact = np.array([[1.0, -2.0, 0.0, -math.inf]])
    low = np.array([[1.5, -2.0, 0.25, -math.inf]])
    error = stage_error(low, exact)
    assert error.max_abs == 0.5
    assert error.max_rel == 0.5
    assert (error.inf, error.nan) == (0, 0)
    nothing = stage_error(np.array([[math.nan]]), np.array([[math.nan]]))
    assert nothing == type(nothing)(None, None, 0, 0)


def test_linear_rounds_the_product_then_the_bias_once() -> None:
    cast = Cast.of("float16")
    x, w, b = np.array([[1.0]]), np.array([[2049.0]]), np.array([1.0])
    # 2049 rounds to 2048 in float16 (spacing 2 there); 2048 + 1 is a tie, to even: 2048
    assert cast.linear(x, w, b)[0, 0] == 2048.0


def test_what_counts_as_a_fresh_overflow() -> None:
    """±inf or NaN in the dtype where float64 holds anything else; the same value in
    both (a mask's −∞, a NaN float64 made too, the same infinity) is none."""
    from attntrace.kernel.casting import fresh_cells

    inf, nan = math.inf, math.nan
    low = np.array([[inf, nan, -inf, inf, nan, nan, -inf, 1.0]])
    exact = np.array([[1.0, 2.0, -inf, -inf, inf, nan, inf, 1.0]])
    assert fresh_cells(low, exact).tolist() == [[True, True, False, True, True, False, True, False]]
    error = stage_error(low, exact)
    assert (error.inf, error.nan) == (3, 2)
    assert (error.max_abs, error.max_rel) == (0.0, 0.0)  # the one cell both hold finite
