"""decode --dtype D (docs/kernels.md): each step by the casting rule, a cache of D's values.

The contract's claim is checked two ways: the decode equals the full causal attention of
the sentence in the same dtype exactly (max |Δ| = 0, NaN matching NaN, wherever V is
finite), on random models with GQA, RoPE, biases and WO, and under hypothesis; and its
outputs equal an independent full causal attention written here in plain loops (float16
and float32 by struct, bfloat16 in exact fractions), to LOW_PRECISION_SPACINGS spacings
of D (numpy's exp and math's may part by an ulp beside a tie of D).
"""

from __future__ import annotations

import math
import struct
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from randoms import random_block
from tolerances import LOW_PRECISION_SPACINGS

from attntrace.decode.decoder import decode
from attntrace.decode.dtype import first_overflow
from attntrace.decode.kv_memory import Shape, kv_cache_bytes
from attntrace.kernel.casting import Cast
from attntrace.kernel.spec import ModelSpec

LOW = ("float32", "float16", "bfloat16")
# significant bits, smallest normal exponent, largest exponent (IEEE 754, Google's bfloat16)
PARAMETERS = {"float32": (24, -126, 127), "float16": (11, -14, 15), "bfloat16": (8, -126, 127)}


def rounded(value: float, dtype: str) -> float:
    """The nearest value of ``dtype``: struct's half and single packing, or for bfloat16
    exact rational rounding to nearest, ties to even; ±inf past the largest."""
    if math.isnan(value) or math.isinf(value) or dtype == "float64":
        return value
    if dtype in ("float16", "float32"):
        code = "<e" if dtype == "float16" else "<f"
        try:
            return float(struct.unpack(code, struct.pack(code, value))[0])
        except OverflowError:
            return math.copysign(math.inf, value)
    bits, emin, emax = PARAMETERS[dtype]
    size = abs(Fraction(value))
    if size == 0:
        return value
    e = math.floor(math.log2(size))
    while Fraction(2) ** e > size:
        e -= 1
    while Fraction(2) ** (e + 1) <= size:
        e += 1
    quantum = Fraction(2) ** (max(e, emin) - bits + 1)
    whole, rest = divmod(size, quantum)
    whole = int(whole) + (1 if rest > quantum / 2 or (rest == quantum / 2 and whole % 2) else 0)
    if whole * quantum > (2 - Fraction(2) ** (1 - bits)) * Fraction(2) ** emax:
        return math.copysign(math.inf, value)
    return math.copysign(float(whole * quantum), value)


def spacing_at(value: float, dtype: str) -> float:
    bits, emin, _ = PARAMETERS[dtype]
    e = math.frexp(value)[1] - 1 if value else emin
    return math.ldexp(1.0, max(e, emin) - bits + 1)


class Loops:
    """Attention in ``dtype`` by the rule, one scalar at a time: products and partial
    sums in float32, each sum rounded to D once; element-wise stages rounded once;
    softmax stable in float32; the weights rounded to D."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype

    def d(self, x: float) -> float:
        return rounded(x, self.dtype)

    def f32(self, x: float) -> float:
        return rounded(x, "float32")

    def linear(self, x: list[float], w: list[list[float]], b: list[float] | None) -> list[float]:
        out = []
        for j in range(len(w[0])):
            acc = 0.0
            for k in range(len(x)):
                acc = self.f32(acc + self.f32(self.d(x[k]) * self.d(w[k][j])))
            y = self.d(acc)
            out.append(y if b is None else self.d(y + self.d(b[j])))
        return out

    def rope(self, row: list[float], position: int, base: float, pairing: str) -> list[float]:
        width = len(row)
        half = width // 2
        pairs = (
            [(i, i + half) for i in range(half)]
            if pairing == "half"
            else [(2 * i, 2 * i + 1) for i in range(half)]
        )
        out = list(row)
        for i, (a, b) in enumerate(pairs):
            angle = position * float(base) ** (-(2 * i) / width)
            c, s = self.d(math.cos(angle)), self.d(math.sin(angle))
            out[a] = self.d(row[a] * c - row[b] * s)
            out[b] = self.d(row[b] * c + row[a] * s)
        return out

    def attend(
        self, q: list[float], keys: list[list[float]], values: list[list[float]]
    ) -> list[float]:
        scaled = []
        for key in keys:
            acc = 0.0
            for a, b in zip(q, key, strict=True):
                acc = self.f32(acc + self.f32(a * b))
            scaled.append(self.d(self.d(acc) / math.sqrt(len(q))))
        top = max(scaled)
        e = [self.f32(math.exp(self.f32(x - top))) for x in scaled]
        total = 0.0
        for value in e:
            total = self.f32(total + value)
        weights = [self.d(self.f32(value / total)) for value in e]
        out = []
        for j in range(len(values[0])):
            acc = 0.0
            for w, v in zip(weights, values, strict=True):
                acc = self.f32(acc + self.f32(w * v[j]))
            out.append(self.d(acc))
        return out


def loop_outputs(model: ModelSpec, tokens: list[str], dtype: str) -> list[list[list[float]]]:
    """The full causal attention of ``tokens`` in ``dtype``, by loops: ``[heads][t][d_v]``
    (row t attends over the first t+1 tokens: what the mask leaves)."""
    loops = Loops(dtype)
    X = [[loops.d(float(v)) for v in model.embeddings[t]] for t in tokens]
    group = model.heads // model.n_kv_heads
    rope = model.position_kind == "rope"

    def proj(name: str, bias: str, head: int) -> list[list[float]]:
        w = model.head_weight(name, head).tolist()
        b = model.head_bias(bias, head)
        rows = [loops.linear(x, w, None if b is None else b.tolist()) for x in X]
        if rope and name != "WV":
            rows = [
                loops.rope(r, t, model.rope_base, model.rope_pairing) for t, r in enumerate(rows)
            ]
        return rows

    heads = []
    for h in range(model.heads):
        Q, K, V = proj("WQ", "bQ", h), proj("WK", "bK", h // group), proj("WV", "bV", h // group)
        heads.append([loops.attend(Q[t], K[: t + 1], V[: t + 1]) for t in range(len(tokens))])
    return heads


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("seed", range(12))
def test_decode_equals_loops_by_the_rule(seed: int, dtype: str) -> None:
    model, tokens, _ = random_block(seed, cross=False)
    run = decode(model, tokens, Cast.of(dtype))
    expected = loop_outputs(model, tokens, dtype)
    for step in run.steps:
        for h in range(model.heads):
            for got, want in zip(step.output[h], expected[h][step.t], strict=True):
                assert abs(got - want) <= LOW_PRECISION_SPACINGS * spacing_at(want, dtype)


@pytest.mark.parametrize(
    "fixed",
    [
        {"heads": 1},
        {"heads": 4, "kv_heads": 2},
        {"heads": 4, "kv_heads": 1},
        {"heads": 2, "wo": True, "biases": True},
        {"heads": 4, "kv_heads": 2, "rope": True},
        {"heads": 2, "rope": True, "rope_pairing": "interleaved"},
    ],
    ids=["single", "GQA", "MQA", "WO+biases", "GQA+RoPE", "RoPE-interleaved"],
)
@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@pytest.mark.parametrize("accumulate", ["float32", "dtype"])
@pytest.mark.parametrize("dtype", LOW)
def test_decode_agrees_exactly_with_full_attention_in_the_dtype(
    fixed: dict[str, object], accumulate: str, dtype: str
) -> None:
    for seed in range(6):
        model, tokens, _ = random_block(seed, cross=False, **fixed)
        for soft in {"float32", dtype}:
            run = decode(model, tokens, Cast.of(dtype, soft, accumulate))
            assert run.matches
            assert run.differing == 0
            assert run.max_delta == 0.0


@given(
    seed=st.integers(0, 2**32 - 1),
    dtype=st.sampled_from(LOW),
    accumulate=st.sampled_from(["float32", "dtype"]),
    wide_softmax=st.booleans(),
    scale=st.sampled_from([1.0, 30.0, 300.0]),
)
# a float64 weight of 1e-314 that bfloat16 holds as 0.5: a relative error past float64's range
@example(seed=5546, dtype="bfloat16", accumulate="float32", wide_softmax=False, scale=300.0)
def test_exact_agreement_holds_through_overflow(
    seed: int, dtype: str, accumulate: str, wide_softmax: bool, scale: float
) -> None:
    """Scaled embeddings push float16's scores past 65,504: inf, then NaN rows. The
    decode still equals the full trace in the dtype cell for cell wherever every v is
    finite (a later token's ±inf v meets a masked weight 0 in the full product only)."""
    model, tokens, _ = random_block(seed, cross=False)
    model = replace(model, embeddings={t: v * scale for t, v in model.embeddings.items()})
    run = decode(model, tokens, Cast.of(dtype, "float32" if wide_softmax else dtype, accumulate))
    if all(np.isfinite(step.v).all() for step in run.steps):
        assert run.matches
        assert run.differing == 0
    assert run.max_delta == 0.0  # the cells both hold finite never differ


def test_a_score_past_65504_is_inf_and_its_row_nan_and_named() -> None:
    vocab = {"a": np.array([200.0, 0.0]), "b": np.array([0.0, 200.0])}
    eye = np.eye(2)
    model = ModelSpec(vocab, eye, eye, eye * 0.01)
    run = decode(model, ["a", "b", "a"], Cast.of("float16"))
    # float64's score at step 0: 200 · 200 = 40,000; at step 2 against "a": 40,000 again:
    # both under 65,504. Scale up: 300 · 300 = 90,000 > 65,504 -> inf.
    assert first_overflow(run) is None
    big = replace(model, embeddings={t: v * 1.5 for t, v in vocab.items()})
    run = decode(big, ["a", "b", "a"], Cast.of("float16"))
    assert run.steps[0].scores[0, 0] == math.inf
    assert np.isnan(run.steps[0].weights).all()
    assert np.isnan(run.steps[0].output).all()
    where = first_overflow(run)
    assert where is not None
    assert (where.t, where.stage, where.row, where.col) == (0, "scores", 0, 0)
    assert where.exact == pytest.approx(90_000.0)
    assert run.errors[0].output.nan == 2
    assert run.matches
    # bfloat16 holds 90,000 (its range is float32's)
    assert np.isfinite(decode(big, ["a", "b", "a"], Cast.of("bfloat16")).steps[0].output).all()


@pytest.mark.parametrize(
    ("dtype", "kv"), [("float32", "fp32"), ("float16", "fp16"), ("bfloat16", "bf16")]
)
@pytest.mark.parametrize("seed", range(6))
def test_cache_bytes_at_the_dtype_equal_kv_cache(seed: int, dtype: str, kv: str) -> None:
    model, tokens, _ = random_block(seed, cross=False)
    run = decode(model, tokens, Cast.of(dtype))
    size = {"float32": 4, "float16": 2, "bfloat16": 2}[dtype]
    for step in run.steps:  # (t+1) tokens × kv_heads × (d_k + d_v) values of D's size
        assert step.cache_bytes == (step.t + 1) * model.n_kv_heads * (model.d_k + model.d_v) * size
    assert run.kv_cache_dtype == kv
    if model.d_k == model.d_v:
        shape = Shape(1, model.heads, model.n_kv_heads, model.d_k)
        assert run.steps[-1].cache_bytes == kv_cache_bytes(
            shape, model.n_kv_heads, len(tokens), 1, kv
        )


@pytest.mark.parametrize("seed", range(10))
def test_float64_is_the_decode_it_always_was(seed: int) -> None:
    model, tokens, _ = random_block(seed, cross=False)
    plain, cast = decode(model, tokens), decode(model, tokens, Cast.of("float64"))
    assert cast.reference is None
    assert cast.errors == ()
    assert cast.error is None
    assert (cast.max_delta, cast.bound, cast.matches) == (
        plain.max_delta,
        plain.bound,
        plain.matches,
    )
    for a, b in zip(plain.steps, cast.steps, strict=True):
        assert np.array_equal(a.output, b.output)
        assert a.cache_bytes == b.cache_bytes
    assert (
        plain.steps[-1].cache_bytes == len(tokens) * model.n_kv_heads * (model.d_k + model.d_v) * 8
    )


def test_errors_against_float64_are_of_the_dtypes_size() -> None:
    """float16's outputs are within a few of its spacings of float64's (2**-10 relative);
    float32's within a few of its own (2**-23): the right dtype, not float64 throughout."""
    model, tokens, _ = random_block(3, cross=False, heads=2)
    exact = decode(model, tokens)
    for dtype, eps in (("float16", 2.0**-10), ("float32", 2.0**-23)):
        run = decode(model, tokens, Cast.of(dtype))
        error = run.error
        assert error is not None
        assert error.inf == 0
        assert error.nan == 0
        biggest = max(float(np.abs(s.output).max()) for s in exact.steps)
        assert error.max_abs is not None
        assert 0 < error.max_abs < 64 * eps * max(biggest, 1.0)
        for step in run.steps:  # held as the dtype's values
            assert all(rounded(float(v), dtype) == v for v in step.output.ravel())
            assert all(rounded(float(v), dtype) == v for k in step.keys for v in k.ravel())
