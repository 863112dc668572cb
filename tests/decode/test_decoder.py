"""Decoding through a KV cache equals full causal attention; the costs and the calculator."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import jsonschema
import numpy as np
import pytest
from helpers import invoke, schema
from naive import naive_block
from randoms import random_block
from rich.console import Console
from rich.text import Text
from tolerances import FLOAT64, UNIT_SCALE_BOUND, significant

from attntrace import InputError
from attntrace.api import prepared
from attntrace.decode.cache import KVCache
from attntrace.decode.decoder import decode, step_costs
from attntrace.decode.kv_memory import PRESETS, kv_cache_bytes, variants
from attntrace.decode.views.summary import CostTable
from attntrace.modelfile.model_file import model_from_document


@pytest.mark.parametrize("seed", range(30))
def test_decode_matches_full_causal_attention_on_random_models(seed: int) -> None:
    model, tokens, _ = random_block(seed, cross=False)
    run = decode(model, tokens)
    assert run.matches
    # and both match the loops, step by step
    naive = naive_block(
        [list(model.embeddings[t]) for t in tokens],
        model.WQ.tolist(),
        model.WK.tolist(),
        model.WV.tolist(),
        heads=model.heads,
        kv_heads=model.n_kv_heads,
        causal=True,
        biases={name: list(b) for name, b in model.biases.items()},
        rope_base=model.rope_base if model.position_kind == "rope" else None,
        rope_pairing=model.rope_pairing,
    )
    for step in run.steps:
        for h in range(model.heads):
            np.testing.assert_allclose(step.output[h], naive["output"][h][step.t], **FLOAT64)
            np.testing.assert_allclose(
                step.weights[h], naive["softmax"][h][step.t][: step.t + 1], **FLOAT64
            )


@pytest.mark.parametrize(
    "fixed",
    [
        {"heads": 1},
        {"heads": 4, "kv_heads": 4},
        {"heads": 4, "kv_heads": 2},
        {"heads": 4, "kv_heads": 1},
        {"heads": 2, "wo": True},
    ],
    ids=["single", "MHA", "GQA", "MQA", "WO"],
)
def test_named_kinds(fixed: dict[str, Any]) -> None:
    for seed in range(5):
        model, tokens, _ = random_block(seed, cross=False, **fixed)
        run = decode(model, tokens)
        assert run.matches
        last = run.steps[-1]
        assert len(last.keys) == model.n_kv_heads  # the cache holds K/V heads only
        assert last.keys[0].shape == (len(tokens), model.d_k)
        assert last.cache_bytes == len(tokens) * model.n_kv_heads * (model.d_k + model.d_v) * 8


def test_the_cache_grows_one_row_a_step_and_keeps_earlier_rows() -> None:
    run = decode(trace_model("the-cat-sat"), ["the", "cat", "sat"])
    for earlier, later in zip(run.steps, run.steps[1:], strict=False):
        np.testing.assert_array_equal(later.keys[0][:-1], earlier.keys[0])
        assert later.keys[0].shape[0] == earlier.keys[0].shape[0] + 1


def test_every_step_keeps_its_own_cache_through_the_buffers_growth() -> None:
    """40 tokens cross the cache's buffer sizes (16, 32, 64): after the whole decode,
    each step's keys and values are still the first t+1 rows of K and V, computed by
    the loops, for each K/V head (GQA, RoPE and biases on)."""
    model, _, _ = random_block(3, cross=False, heads=4, kv_heads=2, rope=True, biases=True)
    tokens = [f"t{i % 6}" for i in range(40)]
    run = decode(model, tokens)
    naive = naive_block(
        [list(model.embeddings[t]) for t in tokens],
        model.WQ.tolist(),
        model.WK.tolist(),
        model.WV.tolist(),
        heads=4,
        kv_heads=2,
        causal=True,
        biases={name: list(b) for name, b in model.biases.items()},
        rope_base=model.rope_base,
        rope_pairing=model.rope_pairing,
    )
    for step in run.steps:
        for g, h in ((0, 0), (1, 2)):  # K/V head g is read by query head h
            np.testing.assert_allclose(step.keys[g], naive["K_rope"][h][: step.t + 1], **FLOAT64)
            np.testing.assert_allclose(step.values[g], naive["V"][h][: step.t + 1], **FLOAT64)


def test_the_cache_appends_without_copying_and_copies_on_request() -> None:
    cache = KVCache(2, 3, 1)
    rows = np.arange(2 * 3 * 20, dtype=float).reshape(20, 2, 3)
    held = []
    for t in range(20):
        cache.append(rows[t], rows[t, :, :1])
        held.append(cache.keys)
    assert cache.length == 20
    for t, keys in enumerate(held):  # views taken earlier still read their step's rows
        for g in range(2):
            np.testing.assert_array_equal(keys[g], rows[: t + 1, g])
    twin = cache.copy()
    twin.append(np.zeros((2, 3)), np.zeros((2, 1)))
    assert (cache.length, twin.length) == (20, 21)
    np.testing.assert_array_equal(cache.keys[1], rows[:, 1])
    again = KVCache.holding(cache.keys, cache.values)
    np.testing.assert_array_equal(again.values[0], rows[:, 0, :1])
    assert again.bytes == cache.bytes == 20 * 2 * (3 + 1) * 8
    before = again.keys[0]
    again.append(rows[1], rows[1, :, :1])  # room to grow: the rows already there stay put
    assert np.shares_memory(before, again.keys[0])
    with pytest.raises(ValueError, match="read-only"):
        cache.keys[0][0, 0] = 1.0  # a step's view is shared by every later step


def trace_model(sample: str) -> Any:
    from attntrace.api import choose_model

    return choose_model(None, sample, None)


def test_positions_are_those_of_each_step() -> None:
    run = decode(trace_model("positions"), ["dog", "bites", "man"])
    assert run.matches
    np.testing.assert_allclose(run.steps[2].x, run.full["X"].data[2])


def test_costs_by_hand() -> None:
    """cat eats fish (d_model 2, d_k = d_v = 2, one head), step t with t+1 tokens:
    cached = 2·(2+2+2) + (t+1)·(2+2); recomputed = (t+1)·12 + (t+1)²·4."""
    model = trace_model("cat-eats-fish")
    assert [(step_costs(model, t).cached, step_costs(model, t).recomputed) for t in range(3)] == [
        (16, 16),
        (20, 40),
        (24, 72),
    ]
    big = model_from_document(
        {
            "embeddings": {"a": [0.0] * 8},
            "weights": {
                "WQ": np.zeros((8, 8)),
                "WK": np.zeros((8, 4)),
                "WV": np.zeros((8, 4)),
                "WO": np.zeros((8, 8)),
            },
            "heads": 4,
            "kv_heads": 2,
        }
    )
    # d_k = d_v = 2: projections 8·(8 + 4 + 4) = 128, WO 4·2·8 = 64
    assert step_costs(big, 9).cached == 128 + 4 * 10 * 4 + 64
    assert step_costs(big, 9).recomputed == 10 * 128 + 4 * 100 * 4 + 10 * 64


def test_decode_refuses_a_context() -> None:
    with pytest.raises(InputError, match="context: decoding generates one sequence"):
        decode(trace_model("cross"), ["the", "cat"])
    result = invoke("decode", "--sample", "cross")
    assert result.exit_code == 2
    assert result.stderr.startswith("attntrace: error: sample cross: context: decoding")


def test_decode_cli_and_json() -> None:
    out = invoke("decode", "cat eats fish").stdout
    assert "decode matches full causal attention: 3 steps × 1 head\n" in out
    # the verdict names the bound it was judged by, rounded up, never down
    run = decode(trace_model("cat-eats-fish"), ["cat", "eats", "fish"])
    shown = re.search(r"every output within float64 rounding of it: \|Δ\| ≤ (\S+) for these", out)
    assert shown is not None
    # rounded up to two digits: at most one unit of the second digit above the bound
    assert run.bound <= float(shown[1]) <= run.bound * (1 + 2 * significant(2)["rel"])
    measured = re.search(r"measured here: max \|Δ\| = (\S+) \(the last bits depend", out)
    assert measured is not None
    assert float(measured[1]) == pytest.approx(run.max_delta, **significant(2))
    assert "cost of this step: 24 multiply-adds with the cache, 72 recomputing the prefix" in (
        " ".join(out.split())
    )
    document = json.loads(invoke("decode", "-s", "gqa", "--json").stdout)
    jsonschema.validate(document, schema("decode-v1.schema.json"))
    assert document["comparison"]["matches"] is True
    comparison = document["comparison"]
    assert 0 <= comparison["max_abs_delta"] <= comparison["rounding_bound"] < UNIT_SCALE_BOUND
    assert len(document["steps"][3]["weights"]) == 4  # one row per query head
    assert len(document["steps"][3]["k"]) == 2  # one new key per K/V head
    assert document["totals"]["cached"] < document["totals"]["recomputed"]


def test_decode_step_mode_pages_through_steps() -> None:
    result = invoke("decode", "--step", input="\n3\nb\nq\n")
    assert result.exit_code == 0
    shown = [
        line.split("):")[0] + ")" for line in result.stdout.splitlines() if line.startswith("Step ")
    ]
    assert shown == [
        "Step 1 of 3 (t = 0)",
        "Step 2 of 3 (t = 1)",
        "Step 3 of 3 (t = 2)",
        "Step 2 of 3 (t = 1)",
    ]


# ------------------------------------------------------------------ kv-cache memory

# docs/real-models.md: 2 × layers × kv heads × head dim × bytes × tokens × batch, by hand.
BY_HAND = {
    "gpt2": 2 * 12 * 12 * 64 * 2 * 1024,
    "gpt3-175b": 2 * 96 * 96 * 128 * 2 * 2048,
    "llama2-7b": 2 * 32 * 32 * 128 * 2 * 4096,  # = 2 GiB exactly
    "llama2-70b": 2 * 80 * 8 * 128 * 2 * 4096,  # = 1.25 GiB
    "llama3-8b": 2 * 32 * 8 * 128 * 2 * 8192,
    "mistral-7b": 2 * 32 * 8 * 128 * 2 * 4096,  # its sliding window keeps 4,096 of 32,768
    "gemma-2b": 2 * 18 * 1 * 256 * 2 * 8192,
    "gemma-7b": 2 * 28 * 16 * 256 * 2 * 8192,
    "smollm2-135m": 2 * 30 * 3 * 64 * 2 * 8192,  # = 180 MiB
    "gemma3-270m": 2 * 1 * 256 * 2 * (15 * 512 + 3 * 32768),  # 15 local layers, 3 global
}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_by_hand(name: str) -> None:
    shape = PRESETS[name]
    assert shape.context is not None
    assert kv_cache_bytes(shape, shape.kv_heads, shape.context, 1, "fp16") == BY_HAND[name]
    document = json.loads(invoke("kv-cache", "--preset", name, "--json").stdout)
    jsonschema.validate(document, schema("kv-cache-v1.schema.json"))
    mine = next(v for v in document["variants"] if v["label"].endswith("(this model)"))
    assert mine["bytes"] == BY_HAND[name]


def test_the_saving_of_gqa_is_visible() -> None:
    shape = PRESETS["llama2-70b"]
    found = {v.label: v.bytes for v in variants(shape, 4096, 1, "fp16")}
    assert found == {"MHA": 10 * 2**30, "GQA (this model)": 1.25 * 2**30, "MQA": 160 * 2**20}
    assert kv_cache_bytes(shape, 8, 1, 1, "fp16") == 327_680  # per token
    out = invoke("kv-cache", "--preset", "llama2-70b").stdout
    assert "GQA (this model)   8 K/V heads    1.25 GiB" in out
    assert "MHA               64 K/V heads   10.00 GiB" in out


def test_explicit_shapes_and_dtypes() -> None:
    args = [
        "kv-cache",
        "--layers",
        "32",
        "--heads",
        "32",
        "--d-model",
        "4096",
        "--tokens",
        "4096",
        "--json",
    ]
    assert json.loads(invoke(*args).stdout)["variants"][0]["bytes"] == 2 * 2**30
    int8 = json.loads(invoke(*args, "--dtype", "int8").stdout)
    assert int8["variants"][0]["bytes"] == 2**30


def test_presets_list_head_dim_as_d_model_over_heads() -> None:
    out = invoke("kv-cache", columns=120).stdout
    assert "head dim  64 =   768 / 12" in out
    assert "head dim 128 = 12288 / 96" in out
    assert "head dim 256 ≠  3072 / 16 = 192" in out  # gemma-7b: its config says 256


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--preset", "llama9"],
            "--preset: expected one of gpt2, gpt3-175b, llama2-7b, "
            "llama2-70b, llama3-8b, mistral-7b, gemma-2b, gemma-7b, "
            "smollm2-135m, gemma3-270m, got "
            "'llama9'",
        ),
        (
            ["--preset", "gpt2", "--dtype", "fp8"],
            "--dtype: expected fp32, fp16, bf16, int8, got 'fp8'",
        ),
        (
            ["--layers", "0", "--heads", "8", "--head-dim", "64", "--tokens", "1"],
            "--layers: expected a whole number ≥ 1, got 0",
        ),
        (
            [
                "--layers",
                "2",
                "--heads",
                "8",
                "--kv-heads",
                "3",
                "--head-dim",
                "64",
                "--tokens",
                "1",
            ],
            "--kv-heads: expected a divisor of --heads (8), got 3",
        ),
        (
            ["--layers", "2", "--heads", "8", "--head-dim", "-4", "--tokens", "1"],
            "--head-dim: expected a whole number ≥ 1, got -4",
        ),
        (
            ["--heads", "8"],
            "give --model MODEL, or the model's shape: missing --layers, --head-dim (or --d-model)",
        ),
        (
            ["--layers", "2", "--heads", "8", "--head-dim", "64"],
            "give --tokens N: how many tokens the cache holds",
        ),
        (["--preset", "gpt2", "--tokens", "0"], "--tokens: expected a whole number ≥ 1, got 0"),
        (
            ["--preset", "gpt2", "--heads", "4"],
            "--preset gives the model's shape: drop --layers, --heads, ...",
        ),
        (
            ["--batch", "4"],
            "give --model MODEL or the model's shape (--layers, --heads, "
            "--head-dim) for --tokens, --batch, --dtype and --window to apply to",
        ),
        (
            [
                "--layers",
                "2",
                "--heads",
                "4",
                "--d-model",
                "64",
                "--head-dim",
                "32",
                "--tokens",
                "1",
            ],
            "--d-model: expected --heads × --head-dim = 4 × 32 = 128, or only one of the "
            "two, got 64",
        ),
        # 2 × 1 × 1 × 1 × 1 B × 2^89 tokens = 2^90 bytes = 1024 YiB, the first refused
        (
            [
                "--layers",
                "1",
                "--heads",
                "1",
                "--head-dim",
                "1",
                "--dtype",
                "int8",
                "--tokens",
                str(2**89),
            ],
            "the KV cache as MHA would take 1.24e+27 bytes, and kv-cache sizes "
            "caches under 1024 YiB (2^90 bytes): lower --tokens, --batch or the "
            "model's shape",
        ),
    ],
)
def test_bad_calculator_input(args: list[str], message: str) -> None:
    result = invoke("kv-cache", *args)
    assert result.exit_code == 2
    assert result.stderr == f"attntrace: error: {message}\n"


def test_kv_cache_json_without_a_model_lists_the_presets() -> None:
    document = json.loads(invoke("kv-cache", "--json").stdout)
    assert document["schema"] == "attntrace/kv-cache-presets/v1"
    assert [p["name"] for p in document["presets"]] == list(PRESETS)
    assert document["presets"][3]["kv_heads"] == 8  # llama2-70b


@pytest.mark.parametrize("args", [("kv-cache",), ("kv-cache", "--preset", "llama3-8b")])
def test_kv_cache_at_40_columns_breaks_lines_between_numbers(args: tuple[str, ...]) -> None:
    """A narrow terminal gets each variant or preset over short lines of its own, never
    a size split from its unit ('4.00' over 'GiB')."""
    narrow = invoke(*args, columns=40).stdout
    assert max(len(line) for line in narrow.splitlines()) <= 40
    wide = invoke(*args, columns=120).stdout
    # the same words, only broken differently
    assert narrow.split() == wide.split()
    if "--preset" in args:
        assert "  32 K/V heads    4.00 GiB" in narrow.splitlines()
        assert "  4,294,967,296 B  baseline" in narrow.splitlines()
    else:
        assert "  12 layers  12 heads  12 K/V (MHA)" in narrow.splitlines()


@pytest.mark.parametrize("colour", [False, True])
def test_the_cost_legend_names_the_marks_shown(colour: bool) -> None:
    """decode's legend said "green … red" under NO_COLOR and in pipes, where the bars
    are told apart by their place alone."""
    chosen = prepared(None, sample="causal")
    out = io.StringIO()
    console = Console(
        file=out, width=80, force_terminal=colour, color_system="truecolor" if colour else None
    )
    console.print(CostTable(decode(chosen.spec, list(chosen.tokens))))
    said = " ".join(Text.from_ansi(out.getvalue()).plain.split())
    assert "left" in said
    assert "right" in said
    assert ("green" in said) == colour
    assert ("red:" in said) == colour
