"""The memory estimate is a bound: what a trace's computation really allocates
(tracemalloc: numpy's arrays and Python's objects) stays under what the command counted
before it began, for random models, variants and sentences; and past the budget the
command is refused before anything is computed."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Mapping
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from randoms import random_block
from variant_cases import variant_block

from attntrace.errors import InputError
from attntrace.forward.attention import trace_block
from attntrace.forward.dtype import trace_low
from attntrace.kernel import budget
from attntrace.kernel.casting import Cast
from attntrace.kernel.spec import ModelSpec
from attntrace.learning.grad_trace import grad_trace
from attntrace.learning.objective import Objective

# Python's own objects a trace makes besides its arrays (the Stage records, formulas,
# labels, a tuple per stage), which the estimate leaves to the import floor: a few
# hundred bytes a stage, and a label a token. Small against the arrays at these sizes,
# so that an estimate short by one n × m matrix a head is seen.
OBJECTS = 96 << 10


def objects(n: int, m: int) -> int:
    return OBJECTS + 64 * (n + m)


def counted_and_allocated(compute: Callable[[], object]) -> tuple[int, int]:
    """The largest estimate ``compute`` checked against the budget, and the peak of the
    bytes it allocated (above what was held before it began).

    ``compute`` runs once first, unmeasured: what a first call adds to the process's
    caches (a label cache's table grown past what hundreds of earlier tests put in it,
    once, on a fresh clone's first run) is not the computation's own peak."""
    estimates: list[int] = []

    def record(doing: str, parts: Mapping[str, int]) -> None:
        estimates.append(sum(parts.values()))

    with mock.patch.object(budget, "refuse_past_budget", record):
        compute()
        estimates.clear()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            kept = compute()
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
    del kept
    assert estimates, "the computation never counted its memory"
    return max(estimates), peak


def sentence(model: ModelSpec, length: int, seed: int) -> list[str]:
    words = sorted(model.embeddings)
    rng = np.random.default_rng(seed)
    return [words[int(i)] for i in rng.integers(0, len(words), size=length)]


lengths = st.integers(min_value=40, max_value=220)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), lengths, lengths)
def test_a_trace_allocates_less_than_its_estimate(seed: int, n: int, m: int) -> None:
    model, _, context = random_block(seed)
    tokens = sentence(model, n, seed)
    keys = None if context is None else sentence(model, m, seed + 1)
    counted, allocated = counted_and_allocated(lambda: trace_block(model, tokens, keys))
    assert allocated <= counted + objects(n, len(keys or tokens))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), lengths)
def test_a_variant_trace_allocates_less_than_its_estimate(seed: int, n: int) -> None:
    model, _ = variant_block(seed)
    tokens = sentence(model, n, seed)
    counted, allocated = counted_and_allocated(lambda: trace_block(model, tokens))
    assert allocated <= counted + objects(n, n)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), lengths, st.sampled_from(["float16", "float32"]))
def test_a_dtype_trace_and_its_float64_twin_stay_under_one_estimate(
    seed: int, n: int, dtype: str
) -> None:
    model, _ = variant_block(seed)
    tokens = sentence(model, n, seed)
    cast = Cast.of(dtype)
    counted, allocated = counted_and_allocated(lambda: trace_low(model, tokens, cast))
    assert allocated <= counted + 2 * objects(n, n)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), lengths)
def test_the_backward_pass_stays_under_its_estimate(seed: int, n: int) -> None:
    model, _ = variant_block(seed, window=False, sink=False)
    tokens = sentence(model, n, seed)
    objective = Objective("attend", from_token=str(n - 1), to_token="0")
    counted, allocated = counted_and_allocated(lambda: grad_trace(model, tokens, None, objective))
    assert allocated <= counted + 3 * objects(n, n)


def test_past_the_budget_nothing_is_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The refusal comes before the first stage: the trace's arithmetic never runs."""
    monkeypatch.setenv(budget.MEMORY_VARIABLE, "1")
    model, _, _ = random_block(7, cross=False)
    tokens = sentence(model, 400, 7)
    from attntrace.kernel import ops

    computed = mock.patch.object(ops, "attention", side_effect=AssertionError("computed"))
    with computed, pytest.raises(InputError, match="over the memory budget of 1 MiB"):
        trace_block(model, tokens)


def test_also_counted_parts_nest_and_end_with_their_block() -> None:
    model, _, _ = random_block(3, cross=False)
    base = budget.peak_bytes(model, 10, 10)

    def extra(size: int) -> Callable[[Any, int, int], dict[str, int]]:
        return lambda model, n, m: {f"part {size}": size}

    with budget.also_counted(extra(1000)):
        with budget.also_counted(extra(7)):
            assert budget.peak_bytes(model, 10, 10) == base + 1007
        assert budget.peak_bytes(model, 10, 10) == base + 1000
    assert budget.peak_bytes(model, 10, 10) == base


def test_the_json_is_counted_as_the_document_or_the_buffer() -> None:
    assert budget.json_bytes(10) == 10 * budget.JSON_NUMBER_BYTES
    assert budget.json_bytes(10**9) == budget.JSON_BUFFER_BYTES == 16 << 20


def test_the_json_buffer_counted_is_the_writers() -> None:
    """The budget counts the streamed JSON as the writer's piece bound (kernel/budget
    imports no numpy, so it spells the figure out rather than importing documents)."""
    from attntrace.kernel.documents import JSON_PIECE_BYTES

    assert budget.JSON_BUFFER_BYTES == JSON_PIECE_BYTES


def test_a_saved_trace_is_counted_by_its_numbers() -> None:
    """Each number is followed by a comma or a closing bracket: 4 numbers here."""
    parts = budget.saved_trace_parts('{"a": [[1.5, 2], [3, -4e5]]}')
    assert parts["the trace as read"] == (3 + 3) * budget.PARSED_NUMBER_BYTES
    assert parts["its text"] >= len('{"a": [[1.5, 2], [3, -4e5]]}')
