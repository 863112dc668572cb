"""The oracle of `attntrace check`'s tests is itself right (tests/students.py).

The correct student is checked against tests/naive.py's loops, stage by stage and head
by head, and against attntrace's own trace; each mistake is checked against its
definition in docs/check.md's catalogue, computed here from the loops' numbers, so a
test that says "check names this cause" hands over arrays that really have that cause.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import students
from naive import matmul, naive_block, naive_softmax_row
from saved_arrays import bfloat16_values
from students import MISTAKES, MODELS, OVERFLOWING, student_attention
from tolerances import CHECK_TOLERANCE, FLOAT64, OFFSET

from attntrace import trace_attention

ALL_MODELS = {**MODELS, **OVERFLOWING}


def loops(document: dict[str, Any]) -> dict[str, Any]:
    """tests/naive.py's block for ``document``, from the student's X (X checked apart)."""
    mine = student_attention(document, dtype="float64")
    s = students.sizes(document)
    biases = {k: [float(x) for x in v] for k, v in (document.get("biases") or {}).items()}
    return naive_block(
        mine["X"].tolist(),
        document["weights"]["WQ"],
        document["weights"]["WK"],
        document["weights"]["WV"],
        heads=s.heads,
        kv_heads=s.kv_heads,
        causal=s.causal,
        context=mine["X_context"].tolist() if "X_context" in mine else None,
        wo=document["weights"].get("WO"),
        biases=biases,
        rope_base=float(document.get("rope_base", 10000)) if s.rope else None,
        rope_pairing=document.get("rope_pairing", "half"),
    )


@pytest.mark.parametrize("name", ALL_MODELS)
def test_the_correct_student_matches_the_loops(name: str) -> None:
    document = ALL_MODELS[name]
    mine = student_attention(document, dtype="float64")
    naive = loops(document)
    tolerance = OFFSET if name in OVERFLOWING else FLOAT64  # scores in the thousands
    s = students.sizes(document)
    per_head = {
        "Q": "Q",
        "K": "K_rep",
        "V": "V_rep",
        "scores": "scores",
        "scaled": "scaled",
        "softmax": "softmax",
        "output": "output",
    }
    if s.rope:
        per_head |= {"Q_rope": "Q_rope", "K_rope": "K_rope_rep"}
    if s.causal:
        per_head["masked"] = "masked"
    for stage, native in per_head.items():
        for h in range(s.heads):
            np.testing.assert_allclose(
                mine[native][0, h], naive[stage][h], **tolerance, err_msg=f"{stage} head {h}"
            )
    if s.heads > 1:
        np.testing.assert_allclose(mine["concat"][0], naive["concat"], **tolerance)
    if s.wo:
        np.testing.assert_allclose(mine["projected"][0], naive["projected"], **tolerance)


@pytest.mark.parametrize("name", ALL_MODELS)
def test_the_students_x_is_the_embeddings_plus_the_positions(name: str) -> None:
    document = ALL_MODELS[name]
    mine = student_attention(document, dtype="float64")
    table = document["embeddings"]
    rows = [table[w.lower()] for w in document["sentence"].split()]
    positions = document.get("positions")
    d = len(rows[0])
    if positions == "sinusoidal":  # PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos
        pe = [
            [
                (math.sin if c % 2 == 0 else math.cos)(p / 10000 ** ((c - c % 2) / d))
                for c in range(d)
            ]
            for p in range(len(rows))
        ]
    elif isinstance(positions, list):
        pe = positions[: len(rows)]
    else:
        pe = [[0.0] * d for _ in rows]
    expected = [[e + q for e, q in zip(r, p, strict=True)] for r, p in zip(rows, pe, strict=True)]
    np.testing.assert_allclose(mine["X"], expected, **FLOAT64)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("name", MODELS)
def test_the_correct_student_is_within_checks_tolerance_of_the_trace(name: str, dtype: str) -> None:
    """In each dtype, the correct student's every stage is within the tolerance
    docs/check.md gives that dtype, by check's own rule: so `check` must say ✓."""
    document = MODELS[name]
    mine = student_attention(document, dtype=dtype)
    trace = trace_attention(model=document)
    tolerance = CHECK_TOLERANCE[dtype]
    for stage in trace:
        if stage.name.endswith("_context") and stage.name != "X_context":
            continue
        if stage.head is None:
            found = mine[stage.name].reshape(stage.data.shape)
        else:
            native = f"{stage.name}_rep" if stage.name in ("K", "V", "K_rope") else stage.name
            found = mine[native][0, stage.head]
        assert students.matches(found, stage.data, **tolerance), (stage.name, stage.head)


@pytest.mark.parametrize("name", MODELS)
def test_bfloat16_of_the_float32_student_is_within_its_tolerance(name: str) -> None:
    document = MODELS[name]
    mine = student_attention(document, dtype="float32")
    trace = trace_attention(model=document)
    for stage in trace:
        if stage.name in mine and stage.head is not None:
            native = f"{stage.name}_rep" if stage.name in ("K", "V", "K_rope") else stage.name
            found = bfloat16_values(mine[native][0, stage.head])
            assert students.matches(found, stage.data, **CHECK_TOLERANCE["bfloat16"])


def test_bfloat16_rounds_to_nearest_even() -> None:
    # 1 + 2^-8 is halfway between two bfloat16 numbers (1 and 1 + 2^-7): to the even, 1;
    # 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: to the even, 1 + 2^-6.
    values = np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, -np.inf, np.nan], "f4")
    got = bfloat16_values(values)
    assert got[:4].tolist() == [1.0, 1 + 2**-6, 1 + 2**-7, -np.inf]
    assert np.isnan(got[4])


# ------------------------------------------------- each mistake is what its name says


def native_pair(name: str, mistake: str, **options: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    document = {**ALL_MODELS, **students.VARIANT_MODELS}[name]
    wrong = student_attention(document, dtype="float64", mistake=mistake, **options)
    return wrong, student_attention(document, dtype="float64")


def test_the_scaling_mistakes_divide_the_loops_scores_by_what_they_say() -> None:
    naive = loops(MODELS["multi"])  # d_k 2, d_model 6
    for mistake, divisor in (
        ("no-scaling", 1),
        ("scaled-by-d_k", 2),
        ("scaled-by-d_model", math.sqrt(6)),
    ):
        wrong, _ = native_pair("multi", mistake)
        for h in range(3):
            expected = np.array(naive["scores"][h]) / divisor
            np.testing.assert_allclose(wrong["scaled"][0, h], expected, **FLOAT64)


def test_softmax_over_columns_normalises_each_column() -> None:
    wrong, right = native_pair("gqa-causal", "softmax-over-columns")
    np.testing.assert_allclose(wrong["softmax"].sum(axis=-2), 1.0, **FLOAT64)
    assert not np.allclose(wrong["softmax"], right["softmax"])


def test_scores_transposed_is_k_times_q_transposed() -> None:
    naive = loops(MODELS["single"])
    wrong, _ = native_pair("single", "scores-transposed")
    np.testing.assert_allclose(wrong["scores"][0, 0], np.array(naive["scores"][0]).T, **FLOAT64)


def test_unstable_softmax_overflows_where_the_stable_one_is_finite() -> None:
    for name, dtype, limit in (("big", "float32", 88.72), ("huge", "float64", 709.78)):
        document = OVERFLOWING[name]
        wrong = student_attention(document, dtype=dtype, mistake="unstable-softmax")
        right = student_attention(document, dtype=dtype)
        source = right.get("masked", right["scaled"])
        overflowing = (source > limit).any(axis=-1)
        assert overflowing.any(), name
        assert not overflowing.all(), name
        assert np.isnan(wrong["softmax"]).any(axis=-1).tolist() == overflowing.tolist()
        assert np.isfinite(right["softmax"]).all()


@pytest.mark.parametrize(
    ("mistake", "hidden"),
    [
        ("mask-hides-diagonal", lambda i, j: j >= i),
        ("mask-wrong-triangle", lambda i, j: j < i),
        ("mask-filled-with-zero", lambda i, j: j > i),
    ],
)
def test_the_mask_mistakes_hide_the_cells_they_say(mistake: str, hidden: Any) -> None:
    wrong, right = native_pair("gqa-causal", mistake)
    fill = 0.0 if mistake == "mask-filled-with-zero" else -np.inf
    for i in range(5):
        for j in range(5):
            expected = fill if hidden(i, j) else right["scaled"][0, :, i, j]
            np.testing.assert_array_equal(wrong["masked"][0, :, i, j], expected)


def test_no_mask_and_mask_after_softmax_have_no_masked_stage() -> None:
    naive = loops(MODELS["single-causal"])
    no_mask, _ = native_pair("single-causal", "no-mask")
    after, _ = native_pair("single-causal", "mask-after-softmax")
    assert "masked" not in no_mask
    assert "masked" not in after
    unmasked = [naive_softmax_row(row) for row in naive["scaled"][0]]
    np.testing.assert_allclose(no_mask["softmax"][0, 0], unmasked, **FLOAT64)
    zeroed = np.triu(np.ones((5, 5)), k=1) == 0
    np.testing.assert_allclose(after["softmax"][0, 0], np.where(zeroed, unmasked, 0), **FLOAT64)
    assert not np.allclose(after["softmax"].sum(-1)[0, 0, :-1], 1.0)


def test_kv_heads_tiled_reads_head_h_mod_kv_heads() -> None:
    naive = loops(MODELS["gqa-causal"])  # 4 heads, 2 K/V heads: group 2
    wrong, _ = native_pair("gqa-causal", "kv-heads-tiled")
    for h in range(4):
        reads = h % 2  # the K/V head, which naive's head 2·reads holds
        np.testing.assert_allclose(wrong["K_rep"][0, h], naive["K"][2 * reads], **FLOAT64)
        np.testing.assert_allclose(wrong["V_rep"][0, h], naive["V"][2 * reads], **FLOAT64)


def test_heads_split_wrong_gives_head_h_every_heads_th_column() -> None:
    document = MODELS["multi"]  # 3 heads of d_k 2
    wrong, right = native_pair("multi", "heads-split-wrong")
    projected = np.array(matmul(right["X"].tolist(), document["weights"]["WQ"]))
    projected += np.array(document["biases"]["bQ"])
    for h in range(3):
        np.testing.assert_allclose(wrong["Q"][0, h], projected[:, h::3], **FLOAT64)


def test_concat_without_transpose_reads_the_heads_rows_in_memory_order() -> None:
    wrong, right = native_pair("multi", "concat-without-transpose")
    flat = right["output"][0].reshape(-1)  # head 0's rows, then head 1's, ...
    np.testing.assert_array_equal(wrong["concat"][0], flat.reshape(5, 9))


def test_rope_interleaved_turns_neighbouring_pairs() -> None:
    document = MODELS["mqa-rope"]
    wrong, right = native_pair("mqa-rope", "rope-interleaved")
    base, d = document["rope_base"], 4
    for p in range(5):
        row = right["Q"][0, 0, p]
        turned = list(row)
        for i in range(d // 2):
            angle = p * base ** (-2 * i / d)
            a, b = row[2 * i], row[2 * i + 1]
            turned[2 * i] = a * math.cos(angle) - b * math.sin(angle)
            turned[2 * i + 1] = b * math.cos(angle) + a * math.sin(angle)
        np.testing.assert_allclose(wrong["Q_rope"][0, 0, p], turned, **FLOAT64)


def test_wrong_projection_and_missing_bias_use_the_weights_they_say() -> None:
    document = MODELS["gqa-causal"]
    x = student_attention(document, dtype="float64")["X"].tolist()
    swapped, _ = native_pair("gqa-causal", "wrong-projection", swap="K<-WV")
    expected = np.array(matmul(x, document["weights"]["WV"])) + document["biases"]["bV"]
    np.testing.assert_allclose(swapped["K_proj"], expected, **FLOAT64)
    forgot, _ = native_pair("gqa-causal", "missing-bias", forgot="bO")
    concat = forgot["concat"][0].tolist()
    np.testing.assert_allclose(
        forgot["projected"][0], matmul(concat, document["weights"]["WO"]), **FLOAT64
    )


@pytest.mark.parametrize("mistake", MISTAKES)
def test_every_mistake_changes_only_stages_it_affects(mistake: str) -> None:
    """In every model it applies to, the first stage the mistake changes is one the
    catalogue says it affects, and it changes something."""
    changed = []
    for name, document in {**ALL_MODELS, **students.VARIANT_MODELS}.items():
        if not students.applies(mistake, document):
            continue
        wrong, right = native_pair(name, mistake)
        stages = [s for s in students.ORDER if s in right]
        first = students.first_difference(wrong, right, [s for s in stages if s in wrong])
        if first is not None:
            assert students.affects(mistake, first), (name, first)
            changed.append(name)
    assert changed, f"{mistake} changed nothing in any model"


def test_positions_not_added_leaves_x_the_embeddings() -> None:
    for name in ("single-causal", "multi"):  # sinusoidal, learned
        wrong, right = native_pair(name, "positions-not-added")
        np.testing.assert_array_equal(wrong["X"], right["embeddings"])
        assert not np.allclose(right["X"], right["embeddings"])


def test_rope_half_turns_i_with_i_plus_half_on_an_interleaved_model() -> None:
    document = MODELS["interleaved-rope"]
    wrong, right = native_pair("interleaved-rope", "rope-half")
    base, d = document["rope_base"], 4
    for p in range(5):
        row = right["Q"][0, 1, p]
        turned = list(row)
        for i in range(d // 2):
            angle = p * base ** (-2 * i / d)
            a, b = row[i], row[i + d // 2]
            turned[i] = a * math.cos(angle) - b * math.sin(angle)
            turned[i + d // 2] = b * math.cos(angle) + a * math.sin(angle)
        np.testing.assert_allclose(wrong["Q_rope"][0, 1, p], turned, **FLOAT64)
