"""check's core: the tolerance rule, shapes read as heads, the recipes of the catalogue,
and whole comparisons. Each is held to a hand computation or a closed form; the students'
implementations in tests/students.py are the second, blind oracle (tests/cli/)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_block
from paths import ROOT
from randoms import random_block

from attntrace.api import prepared
from attntrace.checking.compare import check_arrays
from attntrace.checking.given import GivenArray
from attntrace.checking.layout import readings
from attntrace.checking.mistakes import catalogue
from attntrace.checking.recompute import Recipe, recompute
from attntrace.checking.tolerance import Tolerance, compare, tolerance_for
from attntrace.errors import InputError
from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Trace

F64 = Tolerance(1e-6, 1e-8, "float64")


def given64(**arrays: npt.NDArray[np.float64]) -> dict[str, GivenArray]:
    return {k: GivenArray(k, np.asarray(v, dtype=np.float64), "float64") for k, v in arrays.items()}


def inputs_of(trace: Trace) -> dict[str, npt.NDArray[np.float64]]:
    found = {"X": trace.stage("X").data}
    if trace.context_tokens is not None:
        found["X_keys"] = trace.stage("X_context").data
    if "embeddings" in trace.names:
        found["embeddings"] = trace.stage("embeddings").data
    return found


# --- the tolerance rule -------------------------------------------------------------


def test_a_cell_matches_within_atol_times_scale_plus_rtol_times_its_size() -> None:
    expected = np.array([[100.0, 1.0]])
    # scale = 100: the bound is 1e-8·100 + 1e-6·|e|, 1.0001e-4 for 100 and 1.01e-6 for 1
    near = compare(expected, expected + np.array([[1.0e-4, 1.0e-6]]), F64)
    assert near.matches
    far = compare(expected, expected + np.array([[1.1e-4, 0.0]]), F64)
    assert not far.matches
    assert far.worst == (0, 0)
    assert far.max_abs_delta == pytest.approx(1.1e-4)


def test_non_finite_cells_match_only_their_own_kind() -> None:
    expected = np.array([[np.nan, np.inf, 1.0]])
    assert compare(expected, expected.copy(), F64).matches
    swapped = compare(expected, np.array([[np.inf, np.nan, 1.0]]), F64)
    assert swapped.wrong.tolist() == [[True, True, False]]
    assert swapped.max_abs_delta == 0.0  # only the finite pair counts


def test_a_masked_cell_matches_any_fill_of_minus_ten_thousand_or_below() -> None:
    expected = np.array([[1.0, -np.inf]])
    for fill in (-np.inf, -1e9, -1e4, float(np.finfo(np.float16).min)):
        assert compare(expected, np.array([[1.0, fill]]), F64, masked=True).matches
    assert not compare(expected, np.array([[1.0, -9999.0]]), F64, masked=True).matches
    assert not compare(expected, np.array([[1.0, -1e9]]), F64).matches  # only in masked


def test_the_worst_cell_is_a_non_finite_mismatch_before_any_finite_one() -> None:
    result = compare(np.array([[1.0, 2.0]]), np.array([[50.0, np.nan]]), F64)
    assert result.worst == (0, 1)


def test_the_tolerance_follows_the_dtype_and_the_flags_replace_it() -> None:
    assert tolerance_for("float32") == Tolerance(1e-4, 1e-5, "float32")
    assert tolerance_for("bfloat16", atol=0.5) == Tolerance(3e-2, 0.5, "bfloat16")
    assert tolerance_for("float16").rtol > tolerance_for("float32").rtol


# --- shapes read as heads -------------------------------------------------------------


def test_each_layout_puts_the_same_numbers_in_each_head() -> None:
    heads = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)  # [H, n, d]
    layouts = {
        "heads-first": heads,
        "batch of one": heads[None],
        "tokens-first": heads.transpose(1, 0, 2),
        "side-by-side": np.concatenate(list(heads), axis=1),
    }
    for name, array in layouts.items():
        found = readings(array, [2], 3, 4, side_by_side=True)
        assert len(found) == 1, name
        for h in range(2):
            np.testing.assert_array_equal(found[0].matrices[h], heads[h], err_msg=name)


def test_a_shape_with_rows_equal_to_heads_reads_two_ways_unless_a_layout_is_named() -> None:
    array = np.arange(2 * 2 * 3, dtype=np.float64).reshape(2, 2, 3)
    assert {r.form for r in readings(array, [2], 2, 3, side_by_side=True)} == {
        "heads-first",
        "tokens-first",
    }
    only = readings(array, [2], 2, 3, side_by_side=True, layout="tokens-first")
    assert [r.form for r in only] == ["tokens-first"]
    np.testing.assert_array_equal(only[0].matrices[1], array[:, 1, :])


def test_scores_never_read_tokens_first_and_one_head_reads_one_way() -> None:
    scores = np.zeros((2, 2, 2))
    assert [r.form for r in readings(scores, [2], 2, 2, side_by_side=False)] == ["heads-first"]
    one = np.arange(6.0).reshape(1, 2, 3)
    assert len(readings(one, [1], 2, 3, side_by_side=True)) == 1


# --- the recipes ----------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31))
def test_the_correct_recipe_recomputes_the_trace(seed: int) -> None:
    model, tokens, context = random_block(seed)
    trace = trace_block(model, tokens, context)
    computed = recompute(model, inputs_of(trace), Recipe())
    for stage in trace.stages:
        if stage.head is None:
            if stage.name in computed.shared:
                np.testing.assert_allclose(computed.shared[stage.name], stage.data, 1e-12, 1e-12)
        else:
            np.testing.assert_allclose(
                computed.heads[stage.name][stage.head], stage.data, 1e-12, 1e-12
            )


def _causal_model() -> tuple[ModelSpec, Trace]:
    inputs = prepared(None, sample="causal")
    return inputs.spec, inputs.trace()


def _computed(
    model: ModelSpec, trace: Trace, cause: str, index: int = 0
) -> dict[str, list[npt.NDArray[np.float64]]]:
    n = len(trace.tokens)
    mistakes = [m for m in catalogue(model, n, n) if m.cause == cause]
    return recompute(model, inputs_of(trace), mistakes[index].recipe).heads


def test_the_scaling_mistakes_divide_by_what_they_say() -> None:
    model, trace = _causal_model()
    scores = trace.stage("scores").data
    assert model.d_k > 1
    np.testing.assert_allclose(_computed(model, trace, "no-scaling")["scaled"][0], scores)
    np.testing.assert_allclose(
        _computed(model, trace, "scaled-by-d_k")["scaled"][0], scores / model.d_k
    )


def test_the_mask_mistakes_hide_the_cells_they_say() -> None:
    model, trace = _causal_model()
    n = len(trace.tokens)
    i, j = np.indices((n, n))
    weights = {
        cause: _computed(model, trace, cause)["softmax"][0]
        for cause in (
            "no-mask",
            "mask-wrong-triangle",
            "mask-after-softmax",
            "mask-filled-with-zero",
        )
    }
    assert (weights["no-mask"] > 0).all()
    assert (weights["mask-wrong-triangle"][j < i] == 0).all()
    assert (weights["mask-wrong-triangle"][j >= i] > 0).all()
    after = weights["mask-after-softmax"]
    assert (after[j > i] == 0).all()
    assert after[0].sum() < 1
    assert (weights["mask-filled-with-zero"][j > i] > 0).all()  # exp(0 − max) is no zero
    hidden = _computed(model, trace, "mask-hides-diagonal")["softmax"][0]
    assert np.isnan(hidden[0]).all()  # the first token sees nothing at all: 0/0
    assert (hidden[1:][(j <= i)[1:] & (j != i)[1:]] > 0).all()
    assert (hidden[1:][(j == i)[1:]] == 0).all()
    uniform = _computed(model, trace, "mask-hides-diagonal", 1)["softmax"][0]  # fill −1e9
    np.testing.assert_allclose(uniform[0], np.full(n, 1 / n))


def test_the_newer_recipes_compute_what_they_say() -> None:
    """Each against its closed form from the trace's own stages (docs/check.md)."""
    model, trace = _causal_model()
    n = len(trace.tokens)
    i, j = np.indices((n, n))
    scores, weights = trace.stage("scores").data, trace.stage("softmax").data
    V = trace.stage("V").data
    np.testing.assert_allclose(
        _computed(model, trace, "scaled-by-length")["scaled"][0], scores / math.sqrt(n)
    )
    np.testing.assert_allclose(
        _computed(model, trace, "weights-transposed")["output"][0], weights.T @ V
    )
    inverted = _computed(model, trace, "mask-inverted")["softmax"][0]
    assert (inverted[:-1][(j <= i)[:-1]] == 0).all()  # only the later tokens are seen
    assert (inverted[:-1][(j > i)[:-1]] > 0).all()
    assert np.isnan(inverted[-1]).all()  # the last sees nothing: 0/0 with −∞
    np.testing.assert_allclose(
        _computed(model, trace, "mask-inverted", 1)["softmax"][0][-1], np.full(n, 1 / n)
    )
    zeros = _computed(model, trace, "mask-inverted", 2)  # SDPA's empty row
    assert (zeros["softmax"][0][-1] == 0).all()
    assert (zeros["output"][0][-1] == 0).all()
    diagonal = _computed(model, trace, "mask-hides-diagonal", 2)
    assert (diagonal["output"][0][0] == 0).all()
    # masked_fill(-1e4) hides a cell only from scores above −1e4 + 745 or so
    filled = _computed(model, trace, "mask-fill-too-small")
    np.testing.assert_array_equal(filled["masked"][0][j > i], -1e4)
    np.testing.assert_allclose(filled["softmax"][0], weights, atol=1e-300)


@pytest.mark.parametrize("sentence", ["the cat", "the cat eats the"])  # the context: 3
def test_a_causal_mask_on_cross_attention_hides_the_later_context_tokens(sentence: str) -> None:
    inputs = prepared(sentence, sample="cross")
    model, trace = inputs.spec, inputs.trace()
    n, m = len(trace.tokens), len(trace.context_tokens or ())
    assert n != m
    ways = [x for x in catalogue(model, n, m, cross=True) if x.cause == "cross-attention-causal"]
    computed = recompute(model, inputs_of(trace), ways[0].recipe)
    i, j = np.indices((n, m))
    weights = computed.heads["softmax"][0]
    assert (weights[j > i] == 0).all()  # torch's is_causal: the first i + 1 keys
    assert (weights[j <= i] > 0).all()
    # aligned last: query i sees keys up to i + m − n; the first n − m see none (n > m)
    last = recompute(model, inputs_of(trace), ways[1].recipe).heads["softmax"][0]
    seen = j <= i + m - n
    assert (last[~seen & seen.any(axis=1, keepdims=True)] == 0).all()
    assert np.isnan(last[~seen.any(axis=1)]).all()
    assert len(ways) == (4 if n > m else 2)  # NaN, uniform and SDPA's zeros for an empty row


def test_the_newer_mistakes_are_tried_only_where_they_change_a_number() -> None:
    model, _ = _causal_model()
    causes = {x.cause for x in catalogue(model, 3, 3, largest_logit=10.0)}
    assert "mask-fill-too-small" not in causes  # scores near 1: −1e4 hides as −∞ does
    assert "cross-attention-causal" not in causes  # no context
    assert {"weights-transposed", "mask-inverted", "scaled-by-length"} <= causes
    assert "weights-transposed" not in {x.cause for x in catalogue(model, 3, 4)}
    assert "scaled-by-length" not in {x.cause for x in catalogue(model, model.d_k, model.d_k)}
    assert "mask-fill-too-small" in {x.cause for x in catalogue(model, 3, 3, largest_logit=1e5)}


def test_softmax_over_columns_makes_each_column_sum_to_one() -> None:
    model, trace = _causal_model()
    weights = _computed(model, trace, "softmax-over-columns")["softmax"][0]
    np.testing.assert_allclose(np.nansum(weights, axis=0), np.ones(weights.shape[1]))


def test_tiled_kv_heads_give_query_head_h_the_kv_head_h_mod_kv_heads() -> None:
    inputs = prepared(None, sample="gqa")
    model, trace = inputs.spec, inputs.trace()
    assert model.heads == 4
    assert model.n_kv_heads == 2
    tiled = _computed(model, trace, "kv-heads-tiled")
    for h in range(4):
        want = next(s for s in trace.stages if s.name == "K" and s.kv_head == h % 2).data
        np.testing.assert_allclose(tiled["K"][h], want)


def test_the_unstable_softmax_overflows_in_the_dtype_it_was_computed_in() -> None:
    scaled = np.array([[100.0, 0.0]])  # exp(100) > float32's max (3.4e38), < float64's
    from attntrace.checking.recompute import _softmax

    assert np.isnan(_softmax(scaled, "unstable", "float32")[0, 0])
    np.testing.assert_allclose(_softmax(scaled, "unstable", "float64"), [[1.0, math.exp(-100)]])


def test_no_mistake_in_the_catalogue_for_a_model_that_cannot_show_it() -> None:
    inputs = prepared(None)  # cat-eats-fish: one head, no mask, no RoPE, no biases
    causes = {m.cause for m in catalogue(inputs.spec, 3, 3)}
    assert not causes & {
        "no-mask",
        "kv-heads-tiled",
        "heads-split-wrong",
        "rope-interleaved",
        "missing-bias",
        "concat-without-transpose",
    }
    assert {"no-scaling", "softmax-over-columns", "unstable-softmax"} <= causes


# --- whole comparisons --------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31))
def test_a_trace_checked_against_itself_matches(seed: int) -> None:
    model, tokens, context = random_block(seed)
    trace = trace_block(model, tokens, context)
    arrays = {}
    for name in dict.fromkeys(trace.names):
        stages = [s for s in trace.stages if s.name == name]
        arrays[name] = (
            stages[0].data if stages[0].head is None else np.stack([s.data for s in stages])
        )
    report = check_arrays(model, trace, given64(**arrays), layout="heads-first")
    assert report.exit_code == 0, [r for r in report.results if r.status != "match"]
    assert all(r.status == "match" for r in report.results)


def test_one_wrong_cell_is_the_first_divergence_with_its_labels() -> None:
    inputs = prepared(None, sample="two-heads")
    trace = inputs.trace()
    softmax = np.stack([trace.stage("softmax", head=h).data for h in range(2)])
    softmax[1, 2, 0] += 0.25
    report = check_arrays(
        inputs.spec,
        trace,
        given64(attn=softmax, out=np.stack([trace.stage("output", head=h).data for h in range(2)])),
    )
    first = report.first_divergent
    assert report.exit_code == 1
    assert first is not None
    assert (first.stage, first.head, first.row, first.column) == ("softmax", 1, 2, 0)
    assert first.row_label == trace.tokens[2]
    assert first.column_label == trace.tokens[0]
    assert first.expected is not None
    assert first.found == pytest.approx(first.expected + 0.25)
    assert first.given_as == "attn"
    assert first.region is not None
    assert first.region.wrong.sum() == 1
    assert report.diagnosis is None  # no mistake of the catalogue moves one cell
    statuses = {(r.name, r.head): r.status for r in report.results}
    assert statuses[("softmax", 0)] == "match"
    assert statuses[("softmax", 1)] == "differs"
    assert statuses[("Q", 0)] == "missing"


def test_a_shape_that_fits_no_reading_differs_and_says_what_was_expected() -> None:
    inputs = prepared(None)
    report = check_arrays(inputs.spec, inputs.trace(), given64(scores=np.zeros((2, 3))))
    first = report.first_divergent
    assert first is not None
    assert first.shape_found == (2, 3)
    assert first.row is None
    assert first.shape_expected == "[3, 3]"


def test_names_are_refused_when_unknown_doubled_or_not_in_the_trace() -> None:
    inputs = prepared(None)
    trace = inputs.trace()
    scores = trace.stage("scores").data
    for arrays, words in (
        (given64(sofmax=scores), "'sofmax'"),
        (given64(softmax=scores, attn=scores), "both name the stage softmax"),
        (given64(masked=scores), "does not have"),
        ({}, "at least one"),
    ):
        with pytest.raises(InputError, match=words):
            check_arrays(inputs.spec, trace, arrays)


def test_an_ambiguous_shape_that_matches_neither_way_names_both_readings() -> None:
    inputs = prepared(None, sample="gqa")  # 4 heads over 4 tokens: [4, 4, d] reads two ways
    trace = inputs.trace()
    wrong = np.ones((4, 4, trace.model.d_k))
    with pytest.raises(InputError, match=r"heads first.*tokens first"):
        check_arrays(inputs.spec, trace, given64(Q=wrong))
    right = np.stack([trace.stage("Q", head=h).data for h in range(4)])
    assert check_arrays(inputs.spec, trace, given64(Q=right)).ok  # the reading that fits


def test_kv_given_per_kv_head_or_repeated_per_query_head_both_match() -> None:
    inputs = prepared(None, sample="gqa")
    trace = inputs.trace()
    per_kv = np.stack(
        [next(s for s in trace.stages if s.name == "K" and s.kv_head == g).data for g in range(2)]
    )
    repeated = np.repeat(per_kv, 2, axis=0)
    for K in (per_kv, repeated):
        report = check_arrays(inputs.spec, trace, given64(K=K[None]))
        assert report.ok
    results = check_arrays(inputs.spec, trace, given64(K=per_kv)).results
    kinds = {(r.head, r.kv_head) for r in results if r.name == "K"}
    assert kinds == {(None, 0), (None, 1)}


def test_head_compares_one_head_given_alone_or_among_all() -> None:
    inputs = prepared(None, sample="two-heads")
    trace = inputs.trace()
    alone = trace.stage("softmax", head=1).data
    report = check_arrays(inputs.spec, trace, given64(softmax=alone), head=1)
    assert report.ok
    assert [r.head for r in report.results if r.name == "softmax"] == [1]
    both = np.stack([trace.stage("softmax", head=h).data for h in range(2)])
    both[0] += 1  # head 0 is wrong, but only head 1 is asked about
    assert check_arrays(inputs.spec, trace, given64(softmax=both), head=1).ok


def test_a_student_who_forgot_the_scaling_is_told_so() -> None:
    inputs = prepared(None)  # cat-eats-fish
    trace, model = inputs.trace(), inputs.spec
    x = trace.stage("X").data.tolist()
    naive = naive_block(x, model.WQ.tolist(), model.WK.tolist(), model.WV.tolist())
    raw = np.array(naive["scores"][0])  # the loops' scores; softmax of them, unscaled
    exps = np.exp(raw - raw.max(axis=1, keepdims=True))
    report = check_arrays(model, trace, given64(weights=exps / exps.sum(axis=1, keepdims=True)))
    assert report.diagnosis is not None
    assert report.diagnosis.cause == "no-scaling"
    assert report.first_divergent is not None
    assert report.first_divergent.stage == "softmax"


def test_an_ambiguous_shape_is_read_the_way_the_other_arrays_were_saved() -> None:
    """gqa: 4 heads over 4 tokens. Its wrong output [4, 4, 1] matches neither reading, but
    Q [4, 4, 1] fits the trace heads first, and K per K/V head [2, 4, 1] reads one way."""
    inputs = prepared(None, sample="gqa")
    model, trace = inputs.spec, inputs.trace()
    tiled = next(m for m in catalogue(model, 4, 4) if m.cause == "kv-heads-tiled")
    wrong = recompute(model, inputs_of(trace), tiled.recipe)
    for arrays in (
        {"Q": np.stack(wrong.heads["Q"]), "out": np.stack(wrong.heads["output"])},
        {"K": np.stack(wrong.kv["K"]), "out": np.stack(wrong.heads["output"])},
    ):
        report = check_arrays(model, trace, given64(**arrays))
        assert report.exit_code == 1
        assert report.diagnosis is not None
        assert report.diagnosis.cause == "kv-heads-tiled"


def test_embeddings_are_x_in_a_model_without_positions() -> None:
    inputs = prepared(None)
    trace = inputs.trace()
    report = check_arrays(inputs.spec, trace, given64(embeddings=trace.stage("X").data))
    assert report.ok
    assert [r.given_as for r in report.results if r.name == "X"] == ["embeddings"]


def test_a_stage_the_model_lacks_names_the_model_the_trace_is_of() -> None:
    inputs = prepared(None)  # the worked example, one head: no concat
    with pytest.raises(InputError, match=r"the trace of cat-eats-fish .*the model you meant"):
        check_arrays(inputs.spec, inputs.trace(), given64(concat=np.zeros((3, 4))))


def test_one_mistake_by_two_recipes_says_both() -> None:
    """two-heads: WQ = WK, so V made with WQ is V made with WK."""
    inputs = prepared(None, sample="two-heads")
    model, trace = inputs.spec, inputs.trace()
    np.testing.assert_array_equal(model.WQ, model.WK)
    made = next(
        m
        for m in catalogue(model, 3, 3)
        if m.cause == "wrong-projection" and m.recipe.weights[2] == "WK"
    )
    V = recompute(model, inputs_of(trace), made.recipe).kv["V"]
    report = check_arrays(model, trace, given64(V=np.stack(V)))
    assert report.diagnosis is not None
    assert "V was made with WQ or WK instead of WV" in report.diagnosis.message


def test_the_schema_lists_every_cause_the_catalogue_can_name() -> None:
    from helpers import schema

    from attntrace.checking.diagnosis import SAVED_AS_ANOTHER, SAVED_TRANSPOSED
    from attntrace.checking.mistakes import CAUSES

    diagnosis = schema("check-v1.schema.json")["properties"]["diagnosis"]["oneOf"][1]
    ids = [*CAUSES, SAVED_TRANSPOSED, SAVED_AS_ANOTHER]
    assert diagnosis["properties"]["cause"]["enum"] == ids
    assert diagnosis["properties"]["also"]["items"]["enum"] == ids
    documented = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    assert [i for i in ids if f"`{i}`" not in documented] == []


def test_softmax_across_the_heads_axis_is_named() -> None:
    inputs = prepared(None, sample="two-heads")
    trace = inputs.trace()
    scaled = np.stack([trace.stage("scaled", head=h).data for h in range(2)])
    exps = np.exp(scaled - scaled.max(axis=0))  # a numpy student's axis=0
    report = check_arrays(inputs.spec, trace, given64(attn=exps / exps.sum(axis=0)))
    assert report.diagnosis is not None
    assert report.diagnosis.cause == "softmax-over-heads"


def test_a_right_stage_saved_transposed_is_named_as_such() -> None:
    inputs = prepared(None, sample="two-heads")
    trace = inputs.trace()
    K = np.stack([trace.stage("K", head=h).data for h in range(2)])  # [2, 3, 2]
    report = check_arrays(inputs.spec, trace, given64(k=K.transpose(0, 2, 1)))
    assert report.first_divergent is not None
    assert report.first_divergent.shape_found == (2, 2, 3)
    assert report.diagnosis is not None
    assert report.diagnosis.cause == "saved-transposed"


def test_positions_forgotten_under_cross_attention_are_forgotten_on_both_sides() -> None:
    inputs = prepared(None, sample="cross", edits=["positions=sinusoidal"])
    model, trace = inputs.spec, inputs.trace()
    assert trace.context_tokens is not None
    # by hand: the queries' and the context's rows are their embeddings alone
    queries = np.stack([model.embeddings[model.resolve(t) or t] for t in trace.tokens])
    keys = np.stack([model.embeddings[model.resolve(t) or t] for t in trace.context_tokens])
    scores = (queries @ model.WQ) @ (keys @ model.WK).T / np.sqrt(model.d_k)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    report = check_arrays(model, trace, given64(attn=weights / weights.sum(axis=1, keepdims=True)))
    assert report.diagnosis is not None
    assert report.diagnosis.cause == "positions-not-added"


def test_head_leaves_out_the_stages_that_need_every_head() -> None:
    inputs = prepared(None, sample="two-heads")
    trace = inputs.trace()
    report = check_arrays(
        inputs.spec, trace, given64(softmax=trace.stage("softmax", 0).data), head=0
    )
    assert {r.name for r in report.results} & {"concat", "projected"} == set()
    with pytest.raises(InputError, match="--head compares one head"):
        check_arrays(inputs.spec, trace, given64(concat=trace.stage("concat").data), head=0)
