"""Trace -> JSON (attntrace.forward.trace_json), read back by attntrace.forward.replay.

A saved trace must read back as the trace it was: every stage and weight with its
name, head, labels and every float64 exactly (masked cells −∞ as null). Both writers
(orjson, and the json fallback) write the same document, and it validates against the
shipped schema.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from helpers import load_valid_trace, whole_runs
from hypothesis import given
from hypothesis import strategies as st
from randoms import random_block

from attntrace import trace_attention
from attntrace.forward.attention import trace_block
from attntrace.forward.replay import load_trace
from attntrace.forward.trace_json import SCHEMA_ID, dump_bytes, stage_to_dict, trace_to_dict
from attntrace.kernel.documents import model_to_dict, plain_dumps
from attntrace.kernel.trace import Trace


def assert_same_trace(read: Trace, written: Trace) -> None:
    """The same trace, as far as a saved one holds it: the model's shape (its description
    is for the screen, and is not saved), tokens, and every stage and weight."""
    assert model_to_dict(read.model) == model_to_dict(written.model)
    assert read.tokens == written.tokens
    assert read.context_tokens == written.context_tokens
    for kind, got, want in (
        ("stage", read.stages, written.stages),
        ("weight", read.weights, written.weights),
    ):
        assert [(s.name, s.head, s.kv_head) for s in got] == [
            (s.name, s.head, s.kv_head) for s in want
        ], kind
        for a, b in zip(got, want, strict=True):
            assert (a.rows, a.cols) == (b.rows, b.cols), f"{kind} {b.name}"
            np.testing.assert_array_equal(a.data, b.data, err_msg=f"{kind} {b.name}")


@whole_runs
@given(st.integers(0, 2**32 - 1))
def test_every_block_reads_back_exactly(seed: int) -> None:
    """Any configuration (heads, GQA, causal, cross, RoPE, biases, WO): exactly equal."""
    model, tokens, context = random_block(seed)
    trace = trace_block(model, tokens, context)
    assert_same_trace(load_trace(dump_bytes(trace).decode(), "t.json"), trace)


@pytest.mark.parametrize("heads", [[0], [1, 3], [2]])
def test_a_cut_trace_reads_back_as_cut(heads: list[int]) -> None:
    trace = trace_attention(sample="gqa")
    cut = trace.only_heads(heads)
    read = load_trace(dump_bytes(trace, heads=heads).decode(), "t.json")
    assert read.traced_heads == heads
    assert_same_trace(read, cut)


@pytest.mark.parametrize("sample", ["cat-eats-fish", "causal", "rope", "gqa", "cross"])
def test_orjson_and_the_json_fallback_write_the_same_document(sample: str) -> None:
    """Byte for byte, and valid against the shipped schema."""
    trace = trace_attention(sample=sample)
    written = dump_bytes(trace)
    assert written == plain_dumps(trace_to_dict(trace)).encode()
    assert load_valid_trace(written.decode())["schema"] == "attntrace/trace/v1"


def test_a_masked_cell_is_null_and_every_other_number_is_full_precision() -> None:
    trace = trace_attention(sample="causal")
    masked = stage_to_dict(trace["masked"])
    assert masked["data"][0][1] is None
    assert all(cell is None or math.isfinite(cell) for row in masked["data"] for cell in row)
    third = 1 / 3
    assert json.loads(plain_dumps({"x": third}))["x"] == third  # repr(float) reads back


def test_the_document_names_its_schema_and_keeps_its_shape_and_labels() -> None:
    trace = trace_attention("cat eats fish")
    document = trace_to_dict(trace)
    assert document["schema"] == SCHEMA_ID
    assert [s["name"] for s in document["stages"]] == list(trace.names)
    x = document["stages"][0]
    assert (x["shape"], x["rows"], x["cols"]) == ([3, 2], ["cat", "eats", "fish"], ["d0", "d1"])
    only = trace_to_dict(trace, stages=["softmax"])
    assert [s["name"] for s in only["stages"]] == ["softmax"]
    assert only["weights"] == []
