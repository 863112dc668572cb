"""Gemma 3 270M (issue 17) against Hugging Face transformers' own numbers.

tests/golden/real/gemma3.json was written by ``tools/make_model_goldens.py gemma3`` with
transformers 5.24 reading the same GGUF file (``gguf_file=``, float32, eager attention):
what the reference made of the file (layer kinds, RoPE bases, the query scale), the whole
attention of a local layer (4) and a global one (5) on two sentences, X and Q of layer 4,
and query rows of a 563-token text, long enough for the local layers' 512-token window to
cut in. The tests that need the weights skip, naming the install command, where the
packages are absent; the rest (the synthetic files, the helpers) run everywhere.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import invoke, one_line_error
from hypothesis import given
from hypothesis import strategies as st
from paths import GOLDEN
from tolerances import FLOAT32_REFERENCE, FLOAT64_APPROX
from weight_files import ARRAY, F32V, STRING, U32, Metadata, write_gguf

from attntrace.errors import InputError
from attntrace.forward.focus import resolve_position
from attntrace.real.catalog import GEMMA3
from attntrace.real.forward import gelu_tanh
from attntrace.real.gemma import (
    LOCAL_ROPE_BASE,
    QUERY_PRE_ATTN_SCALAR,
    Gemma3,
    is_global,
)
from attntrace.real.layer import layer_spec, open_model, trace_layer
from attntrace.real.weights.gguf import GGUFFile

# The transformers oracle: seconds of torch; a long run (docs/development.md).
pytestmark = pytest.mark.long

GEMMA3_GOLDEN = GOLDEN / "real" / "gemma3.json"
LOCAL, GLOBAL = 4, 5


@cache
def golden() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(GEMMA3_GOLDEN.read_text())
    return document


def need() -> Gemma3:
    if not GEMMA3.installed:
        pytest.skip(f"gemma3's weights are not installed: {GEMMA3.install}")
    model = open_model("gemma3")
    assert isinstance(model, Gemma3)
    return model


# ------------------------------------------------ what the file does not say, and the reference


def test_the_layer_kinds_are_the_references() -> None:
    """transformers' layer_types for this file (sliding_window_pattern 6): every sixth
    layer global, so 5, 11 and 17."""
    kinds = golden()["reference"]["layer_types"]
    assert [i for i, kind in enumerate(kinds) if kind == "full_attention"] == [5, 11, 17]
    assert [is_global(i) for i in range(len(kinds))] == [k == "full_attention" for k in kinds]


def test_the_rope_bases_scale_and_window_are_the_references() -> None:
    model = need()
    reference = golden()["reference"]
    bases = reference["rope_parameters"]
    assert bases["sliding_attention"]["rope_theta"] == LOCAL_ROPE_BASE == 10_000
    assert bases["full_attention"]["rope_theta"] == model.layer_rope_base(GLOBAL) == 1e6
    assert model.layer_rope_base(LOCAL) == LOCAL_ROPE_BASE
    assert reference["query_pre_attn_scalar"] == QUERY_PRE_ATTN_SCALAR == GEMMA3.head_dim
    assert reference["sliding_window"] == model.window == 512
    assert (model.window_of(LOCAL), model.window_of(GLOBAL)) == (512, None)
    # float32's √640 in the reference, float64's here: 1.2e-8 apart, relatively
    assert reference["embed_scale"] == pytest.approx(math.sqrt(640), rel=1e-7)


# ------------------------------------------------------------------- the forward pass


@pytest.mark.parametrize("index", [0, 1])
def test_a_local_and_a_global_layer_whole_match_transformers(index: int) -> None:
    model = need()
    expected = golden()["short"][index]
    probabilities = model.run(expected["ids"], GLOBAL + 1)
    for layer in (LOCAL, GLOBAL):
        np.testing.assert_allclose(
            probabilities[layer],
            expected["full"][str(layer)],
            rtol=0,
            atol=FLOAT32_REFERENCE,
            err_msg=f"L{layer}",
        )


def test_x_q_and_the_normed_q_of_layer_4_match_transformers() -> None:
    """X (what q_proj reads), Q (its output, head 0) and Q_norm (q_norm's output, before
    RoPE) of the last token, from the traced layer's stages."""
    need()
    expected = golden()["short"][0]
    row = expected["rows"][0]
    trace = trace_layer("gemma3", expected["sentence"], LOCAL)
    assert list(trace.tokens) == expected["tokens"]
    np.testing.assert_allclose(
        trace["X"].data[row, :8], expected["x_first"], rtol=0, atol=FLOAT32_REFERENCE
    )
    for stage, values in (("Q", "q_first"), ("Q_norm", "q_normed_first")):
        np.testing.assert_allclose(
            trace.stage(stage, head=0).data[row, :8],
            expected[values],
            rtol=0,
            atol=FLOAT32_REFERENCE,
            err_msg=stage,
        )
    for head in range(GEMMA3.heads):
        np.testing.assert_allclose(
            trace.stage("softmax", head=head).data,
            expected["full"][str(LOCAL)][head],
            rtol=0,
            atol=FLOAT32_REFERENCE,
        )


def test_the_window_cuts_in_past_512_tokens_as_in_transformers() -> None:
    """Query i of a local layer sees keys i − 511 … i: keys before carry exactly 0, here
    and in the reference; the global layer still weighs key 0 from the last query."""
    model = need()
    expected = golden()["long"]
    ids, rows = expected["ids"], expected["rows"]
    n = len(ids)
    assert n > 512
    assert rows[-1] == n - 1
    probabilities = model.run(ids, GLOBAL + 1, rows=rows)
    for layer in (LOCAL, GLOBAL):
        np.testing.assert_allclose(
            probabilities[layer].transpose(1, 0, 2),
            np.asarray(expected["attention"][str(layer)]).transpose(1, 0, 2),
            rtol=0,
            atol=FLOAT32_REFERENCE,
            err_msg=f"L{layer}",
        )
    local = probabilities[LOCAL]  # [head, len(rows), n]
    reference = np.asarray(expected["attention"][str(LOCAL)])
    for i, row in enumerate(rows):
        first = max(0, row - 511)  # the oldest key the window keeps
        assert np.all(local[:, i, :first] == 0), row  # exact zeros, not small numbers
        assert np.all(reference[:, i, :first] == 0), row
        assert np.all(local[:, i, first : row + 1] > 0), row
        assert np.all(local[:, i, row + 1 :] == 0), row  # and nothing after the query
    assert rows[1:3] == [511, 512]  # query 511 still sees key 0; query 512 no longer
    assert np.all(probabilities[GLOBAL][:, -1, 0] > 0)


def test_the_spec_names_the_layer_kind_and_its_variants() -> None:
    need()
    local, _ = layer_spec("gemma3", "The cat sat", LOCAL)
    assert local.description.endswith(" · layer 4: local (sliding window 512)")
    assert local.name == "gemma3 L4 (local)"  # what every header starts with
    assert local.variants.window == 512
    assert local.variants.qk_norm
    assert local.rope_base == 10_000
    assert local.kv_heads == 1
    assert local.heads == 4
    global_, _ = layer_spec("gemma3", "The cat sat", GLOBAL)
    assert global_.description.endswith(" · layer 5: global")
    assert global_.name == "gemma3 L5 (global)"
    assert global_.variants.window is None
    assert global_.variants.qk_norm
    assert global_.rope_base == 1e6
    model = need()
    q_norm, k_norm = model.qk_norms(GLOBAL)
    assert global_.variants.q_norm is not None
    assert global_.variants.k_norm is not None
    np.testing.assert_array_equal(global_.variants.q_norm, q_norm)
    np.testing.assert_array_equal(global_.variants.k_norm, k_norm)
    assert global_.variants.qk_norm_eps == model.eps == pytest.approx(1e-6, rel=1e-6)


def test_run_traces_the_issues_sentence_on_layer_5() -> None:
    need()
    result = invoke(
        "run",
        "--model",
        "gemma3",
        "The animal didn't cross the street because it was tired.",
        "--layer",
        "5",
        "--head",
        "0",
    )
    assert result.exit_code == 0, result.output
    assert "gemma3 L5 (global) · 14 tokens" in result.output
    assert "1 K/V head (MQA)" in result.output
    assert "Q_norm = RMSNorm(Q) · q_norm" in result.output


# ------------------------------------------------ refusals and helpers (no weights needed)

_SHAPE = {
    "gemma3.block_count": (U32, 18),
    "gemma3.attention.head_count": (U32, 4),
    "gemma3.attention.head_count_kv": (U32, 1),
    "gemma3.embedding_length": (U32, 640),
    "gemma3.attention.key_length": (U32, 256),
    "gemma3.attention.value_length": (U32, 256),
    "gemma3.feed_forward_length": (U32, 2048),
}


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("gemma3.attention.head_count", (U32, 8), "expected 4, got 8"),
        ("gemma3.attention.head_count_kv", (U32, 4), "expected 1, got 4"),
        ("gemma3.attention.key_length", (U32, 128), "expected 256, got 128"),
        ("gemma3.block_count", (STRING, "18"), "expected 18, got '18'"),
        ("general.architecture", (STRING, "llama"), "expected gemma3, got 'llama'"),
        ("gemma3.attention.sliding_window", (F32V, -1.0), "expected a positive finite"),
        ("gemma3.attention.sliding_window", (F32V, 511.5), "expected a whole number of tokens"),
        ("gemma3.feed_forward_length", (U32, 4096), "expected 2048, got 4096"),
        ("gemma3.rope.freq_base", (STRING, "1e6"), "expected a number"),
        ("tokenizer.ggml.tokens", (ARRAY, (STRING, ["a", "b"])), "expected 262144 tokens, got 2"),
    ],
)
def test_a_file_that_disagrees_with_the_catalogue_is_one_input_error(
    tmp_path: Path, key: str, value: tuple[int, Any], words: str
) -> None:
    metadata: Metadata = {
        "general.architecture": (STRING, "gemma3"),
        **_SHAPE,
        "gemma3.attention.layer_norm_rms_epsilon": (F32V, 1e-6),
        "gemma3.rope.freq_base": (F32V, 1e6),
        "gemma3.attention.sliding_window": (U32, 512),
        key: value,
    }
    path = write_gguf(tmp_path / "model.gguf", metadata, [])
    with pytest.raises(InputError) as caught:
        Gemma3(GGUFFile(path))
    message = str(caught.value)
    assert message.startswith(str(path))
    assert words in message
    assert "\n" not in message


def test_a_missing_model_name_is_refused_on_one_line() -> None:
    one_line_error(invoke("run", "--model", "gemma4", "hi"), "--model", "gemma3")


def test_a_token_is_named_without_its_sentencepiece_space_mark() -> None:
    """`heads --from it --to animal` and --focus find Gemma's ``▁it`` as SmolLM2's ``Ġit``."""
    tokens = ["<bos>", "The", "\u2581animal", "\u2581it", "\u2581It"]
    assert resolve_position(tokens, "animal", "--to") == (2, "")
    assert resolve_position(tokens, "it", "--from") == (3, "")
    assert resolve_position(tokens, "It", "--from") == (4, "")


def test_only_layers_5_11_17_are_global() -> None:
    assert [layer for layer in range(18) if is_global(layer)] == [5, 11, 17]


@given(st.floats(-20, 20))
def test_gelu_tanh_is_pytorchs_tanh_approximation(x: float) -> None:
    """``gelu_pytorch_tanh``, written out with math.tanh, one value at a time."""
    expected = 0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    # FLOAT64_APPROX's absolute part: for x ≪ 0, 1 + tanh(…) cancels and an ulp of tanh
    # (numpy's against the C library's) is all that is left of the value
    assert gelu_tanh(np.array([x]))[0] == pytest.approx(expected, **FLOAT64_APPROX)


def test_the_kv_cache_preset_has_the_models_local_layers() -> None:
    """kv-cache's gemma3-270m preset (decode/kv_memory, which may not import real/) prices
    the local layers this module's rule makes: every layer but each sixth."""
    from attntrace.decode.kv_memory import PRESETS

    preset = PRESETS["gemma3-270m"]
    assert preset.layers == GEMMA3.layers
    assert sum(not is_global(layer) for layer in range(GEMMA3.layers)) == preset.local_layers
