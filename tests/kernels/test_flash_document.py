"""`attntrace flash --json` (attntrace/flash/v1): every document valid against the shipped
schema, and its numbers against softmax(Q·Kᵀ/√d_k)·V written here as loops over Python
floats, the causal rule written out, the tiles' order and counts by closed form, and the
HBM counts of arXiv 2205.14135's Theorem 2 written out — never attntrace's own output.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

import jsonschema
import numpy as np
import pytest
from helpers import invoke, schema, whole_runs
from hypothesis import given
from hypothesis import strategies as st
from tolerances import FLASH

FLASH_SCHEMA = schema("flash-v1.schema.json")

Rows = list[list[float]]
WORDS = ["the", "cat", "sat", "on", "the", "mat"]  # the causal sample's sentence


def flash_json(*args: str) -> dict[str, Any]:
    result = invoke("flash", *args, "--json")
    assert result.exit_code == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(document, FLASH_SCHEMA)
    return document


def trace_json(*args: str) -> dict[str, Any]:
    result = invoke("run", *args, "--json")
    assert result.exit_code == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def head_matrices(trace: dict[str, Any], head: int) -> tuple[Rows, Rows, Rows]:
    """Q, K, V of ``head`` as the ordinary trace holds them (the turned ones under RoPE)."""
    names = ("Q_rope", "K_rope") if trace["model"]["positions"] == "rope" else ("Q", "K")
    stages = {s["name"]: s["data"] for s in trace["stages"] if s["head"] == head}
    return stages[names[0]], stages[names[1]], stages["V"]


FLASH_ONLY = ("--block-q", "--block-k", "--head")


def model_flags(args: tuple[str, ...]) -> list[str]:
    """``args`` without flash's own flags (and their values): what `run` takes."""
    kept: list[str] = []
    for k, arg in enumerate(args):
        if arg not in FLASH_ONLY and not (k and args[k - 1] in FLASH_ONLY):
            kept.append(arg)
    return kept


def hidden(i: int, j: int, n: int, m: int, causal: bool) -> bool:
    return causal and j > i + (m - n)


def loop_attention(Q: Rows, K: Rows, V: Rows, causal: bool) -> tuple[Rows, list[float]]:
    """softmax(Q·Kᵀ/√d_k)·V by loops, and each row's max over its visible scores."""
    n, m, d = len(Q), len(K), len(Q[0])
    out, maxes = [], []
    for i in range(n):
        s = [sum(Q[i][t] * K[j][t] for t in range(d)) / math.sqrt(d) for j in range(m)]
        seen = [j for j in range(m) if not hidden(i, j, n, m, causal)]
        top = max(s[j] for j in seen)
        w = {j: math.exp(s[j] - top) for j in seen}
        total = sum(w.values())
        out.append([sum(w[j] * V[j][c] for j in seen) / total for c in range(len(V[0]))])
        maxes.append(top)
    return out, maxes


def order(q_blocks: int, k_blocks: int, variant: int) -> list[tuple[int, int]]:
    if variant == 2:
        return [(i, j) for i in range(q_blocks) for j in range(k_blocks)]
    return [(i, j) for j in range(k_blocks) for i in range(q_blocks)]


def causal_skipped(n: int, bq: int, bk: int) -> int:
    """Tiles wholly after the diagonal (n queries, n keys): in query block i, whose last
    row is r = min((i+1)·bq, n) − 1, the key blocks from ⌈(r+1)/bk⌉ on."""
    q_blocks, k_blocks = -(-n // bq), -(-n // bk)
    return sum(k_blocks - -(-min((i + 1) * bq, n) // bk) for i in range(q_blocks))


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(FLASH_SCHEMA)


CASES = [
    ("-s", "causal"),  # 6 tokens, causal
    ("-s", "causal", "--block-q", "4", "--block-k", "4"),  # blocks that do not divide n
    ("-s", "causal", "--block-q", "10", "--block-k", "7"),  # blocks larger than n
    ("-s", "causal", "the", "--block-q", "3"),  # n = 1
    ("-s", "it-animal", "--block-q", "3", "--block-k", "5"),  # not causal
    ("-s", "gqa", "--head", "3"),  # GQA: head 3 reads K/V head 1
    ("-s", "rope", "--block-k", "1"),  # RoPE: the turned Q and K
    ("-s", "cross", "--block-q", "2", "--block-k", "2"),  # cross-attention, keys ≠ queries
]


@pytest.mark.parametrize("args", CASES)
@pytest.mark.parametrize("variant", ["1", "2"])
def test_every_tile_and_the_output_against_loops(args: tuple[str, ...], variant: str) -> None:
    document = flash_json(*args, "--variant", variant)
    Q, K, V = head_matrices(trace_json(*model_flags(args)), document["head"])
    causal = document["causal"]
    expected, maxes = loop_attention(Q, K, V, causal)
    np.testing.assert_allclose(document["output"], expected, **FLASH)
    np.testing.assert_allclose(document["standard_output"], expected, **FLASH)
    np.testing.assert_allclose(document["m"], maxes, **FLASH)
    assert document["max_abs_difference"] <= FLASH["atol"]
    n, m, d = len(Q), len(K), len(Q[0])
    bq, bk = document["block_q"], document["block_k"]
    q_blocks, k_blocks = -(-n // bq), -(-m // bk)
    assert [(t["i"], t["j"]) for t in document["tiles"]] == order(q_blocks, k_blocks, int(variant))
    for tile in document["tiles"]:
        r0, r1 = tile["rows"]
        c0, c1 = tile["cols"]
        assert (r0, r1) == (tile["i"] * bq, min((tile["i"] + 1) * bq, n))
        assert (c0, c1) == (tile["j"] * bk, min((tile["j"] + 1) * bk, m))
        every_hidden = all(hidden(i, j, n, m, causal) for i in range(r0, r1) for j in range(c0, c1))
        assert tile["skipped"] == every_hidden
        if tile["skipped"]:
            assert tile["scores"] is None
            assert tile["weights"] is None
            assert tile["m_new"] == tile["m_old"]
            assert tile["l_new"] == tile["l_old"]
            continue
        for a, i in enumerate(range(r0, r1)):
            for b, j in enumerate(range(c0, c1)):
                cell = tile["scores"][a][b]
                if hidden(i, j, n, m, causal):
                    assert cell is None  # −∞ is null
                else:
                    s = sum(Q[i][t] * K[j][t] for t in range(d)) / math.sqrt(d)
                    assert cell == pytest.approx(s, rel=FLASH["rtol"], abs=FLASH["atol"])
        # after the tile, each row's m and ℓ are over the keys below c1 it can see
        for a, i in enumerate(range(r0, r1)):
            seen = [j for j in range(c1) if not hidden(i, j, n, m, causal)]
            row = [sum(Q[i][t] * K[j][t] for t in range(d)) / math.sqrt(d) for j in seen]
            top = max(row, default=-math.inf)
            if seen:
                assert tile["m_new"][a] == pytest.approx(top, rel=FLASH["rtol"], abs=FLASH["atol"])
                ell = sum(math.exp(x - top) for x in row)
                assert tile["l_new"][a] == pytest.approx(ell, rel=FLASH["rtol"])
            else:
                assert tile["m_new"][a] is None
                assert tile["l_new"][a] == 0


@pytest.mark.parametrize(
    ("n_words", "bq", "bk"),
    [(6, 2, 2), (6, 4, 4), (6, 1, 3), (6, 3, 1), (1, 3, 3), (6, 10, 10), (5, 2, 3)],
)
def test_causal_skipped_counts_by_closed_form(n_words: int, bq: int, bk: int) -> None:
    sentence = WORDS[:n_words]
    document = flash_json("-s", "causal", *sentence, "--block-q", str(bq), "--block-k", str(bk))
    skipped = sum(tile["skipped"] for tile in document["tiles"])
    assert skipped == causal_skipped(n_words, bq, bk)
    assert len(document["tiles"]) == -(-n_words // bq) * -(-n_words // bk)


def test_gqa_head_names_its_kv_head() -> None:
    # 4 query heads over 2 K/V heads: heads 0, 1 read K/V head 0, heads 2, 3 K/V head 1
    assert [flash_json("-s", "gqa", "--head", str(h))["kv_head"] for h in range(4)] == [0, 0, 1, 1]
    assert flash_json("-s", "two-heads", "--head", "1")["kv_head"] == 1


def test_variants_one_and_two_give_the_same_output() -> None:
    one, two = (
        flash_json("-s", "causal", "--block-q", "4", "--block-k", "3", "--variant", v)
        for v in ("1", "2")
    )
    np.testing.assert_allclose(one["output"], two["output"], **FLASH)
    np.testing.assert_allclose(one["l"], two["l"], **FLASH)
    # variant 1 keeps O normalised: its last tile of each row block is the output already
    for tile in one["tiles"]:
        if (
            tile["j"]
            == max(t["j"] for t in one["tiles"] if t["i"] == tile["i"] and not t["skipped"])
            and not tile["skipped"]
        ):
            r0, r1 = tile["rows"]
            np.testing.assert_allclose(tile["output"], one["output"][r0:r1], **FLASH)


def traffic(n: int, d: int, sram: int) -> dict[str, int]:
    """Theorem 2 of arXiv 2205.14135 with M = sram / 2 elements (fp16)."""
    M = sram // 2
    b_c = math.ceil(M / (4 * d))
    t_c = math.ceil(n / b_c)
    return {
        "n": n,
        "d": d,
        "standard": 4 * n * d + 4 * n * n,
        "tiled": 2 * n * d + t_c * (3 * n * d + 4 * n),
        "block_q": min(b_c, d),
        "block_k": b_c,
    }


@pytest.mark.parametrize("sram", [2, 1000, 196_608, 100 * 1024])
def test_memory_by_the_papers_formulas(sram: int) -> None:
    document = flash_json(
        "-s", "it-animal", "--block-q", "4", "--block-k", "3", "--sram", str(sram)
    )
    n, d_k = len(document["tokens"]), document["model"]["d_k"]
    memory = document["memory"]
    assert memory["standard_bytes"] == 2 * n * n * 8
    assert memory["tile_bytes"] == 4 * 3 * 8
    assert memory["sram_bytes"] == sram
    assert memory["traffic"]["this_input"] == traffic(n, d_k, sram)
    assert memory["traffic"]["gpt2_head"] == traffic(1024, 64, sram)


def test_a_block_larger_than_n_holds_a_tile_cut_to_n() -> None:
    memory = flash_json("-s", "causal", "--block-q", "10", "--block-k", "4")["memory"]
    assert memory["tile_bytes"] == 6 * 4 * 8


@functools.cache
def _causal_head(n: int) -> tuple[Any, Any, Any, Any]:
    """The causal sample's head over its first ``n`` words, and each row's max by the
    loop: the same for every block size, so traced once per n, not once per example."""
    Q, K, V = head_matrices(trace_json("-s", "causal", *WORDS[:n]), 0)
    _, maxes = loop_attention(Q, K, V, True)
    return Q, K, V, maxes


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@given(st.integers(1, 6), st.integers(1, 7), st.integers(1, 7), st.sampled_from(["1", "2"]))
@whole_runs
def test_the_final_state_is_every_rows_max_and_sum(n: int, bq: int, bk: int, variant: str) -> None:
    """Property: whatever the blocks, m ends as the row max and ℓ as Σ exp(s − m)."""
    words = WORDS[:n]
    document = flash_json(
        "-s", "causal", *words, "--block-q", str(bq), "--block-k", str(bk), "--variant", variant
    )
    Q, K, _, maxes = _causal_head(n)
    np.testing.assert_allclose(document["m"], maxes, **FLASH)
    d = len(Q[0])
    for i, (top, ell) in enumerate(zip(maxes, document["l"], strict=True)):
        s = [sum(Q[i][t] * K[j][t] for t in range(d)) / math.sqrt(d) for j in range(i + 1)]
        assert ell == pytest.approx(sum(math.exp(x - top) for x in s), rel=FLASH["rtol"])
