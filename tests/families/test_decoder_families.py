"""The eight decoder families, opened from Hugging Face folders, against transformers.

Each case is a tiny random model made by transformers' own config and model classes
(tests/family_models.py), saved with ``save_pretrained`` and opened with
:func:`open_hf_folder`. Every layer's attention probabilities and every hidden state
must equal transformers' float64 eager run to 1e-9 (they agree to about 1e-14: the
oracle's float32 upcasts are made float64), and the stage-by-stage trace of each layer
must give the same softmax. Each feature a family adds is shown to matter: the same
model with the feature switched off in its facts disagrees with the oracle.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from family_models import float64_oracle, oracle_run, tiny_model
from finite_differences import assert_close_to, finite_difference
from oracles import require
from published_configs import LLAMA_32_1B
from weight_files import safetensors_bytes

from attntrace.decode.decoder import decode
from attntrace.errors import InputError
from attntrace.forward.attention import trace_block
from attntrace.learning.backward import grad_block
from attntrace.real.families.decoder import Decoder, rope_frequencies
from attntrace.real.families.facts import FAMILIES
from attntrace.real.families.folder_tensors import FolderTensors
from attntrace.real.families.hf_config import facts_from_config, read_config
from attntrace.real.families.hf_folder import open_hf_folder
from attntrace.real.layer import Tokenized, transformer_spec
from attntrace.real.weights.safetensors import SafetensorsFile

# transformers and torch: seconds to import and build (docs/development.md)
pytestmark = pytest.mark.long

IDS = [3, 17, 42, 5, 99, 0, 23, 8, 64, 11]  # 10 tokens: a window of 4 cuts in
LLAMA3 = {
    "rope_type": "llama3",
    "rope_theta": 10_000.0,
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    # wavelengths of a 16-wide head run from 6 to 20,000: some kept, some blended, some slowed
    "original_max_position_embeddings": 64,
}
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "llama": ("llama", {}),
    "llama-rope-llama3": ("llama", {"rope_parameters": LLAMA3}),
    "llama-biases-tied": (
        "llama",
        {"attention_bias": True, "mlp_bias": True, "tie_word_embeddings": True},
    ),
    "llama-sharded": ("llama", {"max_shard_size": "40KB"}),
    "mistral-window": ("mistral", {}),
    "qwen2": ("qwen2", {}),
    "qwen2-window": (
        "qwen2",
        {"use_sliding_window": True, "sliding_window": 4, "max_window_layers": 1},
    ),
    "qwen3": ("qwen3", {}),
    "qwen3-bf16": ("qwen3", {"saved_dtype": "bfloat16"}),
    "gemma": ("gemma", {}),
    "gemma2": ("gemma2", {}),
    "gemma3": ("gemma3", {}),
    "phi3": ("phi3", {}),
    "phi3-partial-window": ("phi3", {"partial_rotary_factor": 0.5, "sliding_window": 5}),
}


@pytest.fixture(scope="session")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiny-models")


@cache
def _case(name: str, root: Path) -> tuple[Decoder, list[Any], list[Any], Path]:
    family, overrides = CASES[name]
    model, folder = tiny_model(family, root, **overrides)
    attentions, hidden = oracle_run(model, IDS)
    opened = open_hf_folder(folder)
    assert isinstance(opened, Decoder)
    return opened, attentions, hidden, folder


def case(name: str, root: Path) -> tuple[Decoder, list[Any], list[Any], Path]:
    return _case(name, root)


def close(ours: npt.NDArray[Any], reference: npt.NDArray[Any], scale: float = 1.0) -> None:
    np.testing.assert_allclose(ours, reference, rtol=1e-9, atol=1e-12 * scale)


@pytest.mark.parametrize("name", CASES)
def test_every_layers_attention_is_the_references(name: str, root: Path) -> None:
    ours, attentions, _, _ = case(name, root)
    probabilities = ours.run(IDS, ours.spec.layers)
    assert len(probabilities) == len(attentions) == ours.spec.layers
    for mine, theirs in zip(probabilities, attentions, strict=True):
        close(mine, theirs)


@pytest.mark.parametrize("name", CASES)
def test_every_hidden_state_is_the_references(name: str, root: Path) -> None:
    """transformers' hidden states: the embeddings, each layer's output, and the last
    layer's through the final norm."""
    ours, _, hidden, _ = case(name, root)
    state = ours.embed(IDS)
    close(state, hidden[0])
    for layer in range(ours.spec.layers):
        state, _ = ours.layer(layer, state)
        last = layer == ours.spec.layers - 1
        shown = ours.final_norm(state) if last else state
        close(shown, hidden[layer + 1], scale=float(np.abs(hidden[layer + 1]).max()))


@pytest.mark.parametrize("name", CASES)
def test_the_trace_of_each_layer_has_the_references_softmax(name: str, root: Path) -> None:
    """The stage-by-stage trace (a layer as a ModelSpec, X given) gives each head the
    probabilities transformers computed."""
    ours, attentions, _, _ = case(name, root)
    tokens = Tokenized(IDS, tuple(ours.labels(IDS)))
    for layer in range(ours.spec.layers):
        trace = trace_block(transformer_spec(ours, tokens, layer), tokens.labels)
        for head in range(ours.spec.heads):
            close(trace.stage("softmax", head).data, attentions[layer][head])


@pytest.mark.parametrize("name", ["llama-rope-llama3", "phi3-partial-window"])
def test_a_scaled_or_partial_rope_is_traced_by_its_own_frequencies(name: str, root: Path) -> None:
    """The spec carries the layer's frequencies (scaled, or fewer pairs than d_k/2), and
    the trace turned by the base alone would not be transformers' softmax."""
    ours, attentions, _, _ = case(name, root)
    tokens = Tokenized(IDS, tuple(ours.labels(IDS)))
    spec = transformer_spec(ours, tokens, 0)
    assert spec.rope_frequencies is not None
    np.testing.assert_array_equal(spec.turn_frequencies, rope_frequencies(ours.facts, 0))
    by_base = dataclasses.replace(spec, rope_frequencies=None)
    softmax = trace_block(by_base, tokens.labels).stage("softmax", 0).data
    assert float(np.abs(softmax - attentions[0][0]).max()) > 1e-3


@pytest.mark.parametrize("name", ["llama-rope-llama3", "phi3-partial-window"])
def test_decode_and_grad_of_a_scaled_or_partial_layer_agree_with_the_reference(
    name: str, root: Path
) -> None:
    """decode over the last layer's spec turns each new q and k by the layer's own
    frequencies: every step's weights over its cache are transformers' row. The backward
    turns back by them: its gradient along a random direction of WQ and of WK is the
    finite difference of the traced loss."""
    ours, attentions, _, _ = case(name, root)
    tokens = Tokenized(IDS, tuple(ours.labels(IDS)))
    layer = ours.spec.layers - 1
    spec = transformer_spec(ours, tokens, layer)
    run = decode(spec, tokens.labels)
    assert run.matches
    for step in run.steps:
        for head in range(spec.heads):
            row = attentions[layer][head][step.t]
            close(step.weights[head], row[list(step.positions)])
    rng = np.random.default_rng(0)
    d_output = rng.normal(size=(len(IDS), spec.d_model))
    gradients = grad_block(spec, tokens.labels, d_output=d_output)
    for name_of, gradient in (("WQ", gradients.d_WQ), ("WK", gradients.d_WK)):
        weight = getattr(spec, name_of)
        direction = rng.normal(size=weight.shape)
        direction /= np.linalg.norm(direction)

        def loss(
            step: npt.NDArray[np.float64],
            weight: Any = weight,
            direction: Any = direction,
            name_of: str = name_of,
        ) -> float:
            moved = dataclasses.replace(spec, **{name_of: weight + step[0] * direction})
            return float((trace_block(moved, tokens.labels)["projected"].data * d_output).sum())

        along = float((gradient * direction).sum())
        estimate = finite_difference((1,), loss)
        assert_close_to(estimate, np.array([along]), loss(np.zeros(1)), f"d_{name_of}")


# What each family adds, switched off in its facts: the oracle must then disagree.
FEATURES = [
    ("llama-rope-llama3", {"rope_scaling": None}),
    ("llama-biases-tied", {"qkv_bias": False, "o_bias": False}),
    ("mistral-window", {"sliding_window": None}),
    ("qwen2", {"qkv_bias": False}),
    ("qwen2-window", {"sliding_window": None, "layer_types": ()}),
    ("qwen3", {"qk_norm": False}),
    ("gemma", {"embed_scale": 1.0}),
    ("gemma", {"norm_offset": 0.0}),
    ("gemma2", {"attn_softcap": None}),
    ("gemma2", {"query_pre_attn_scalar": None}),
    ("gemma2", {"sliding_window": None, "layer_types": ()}),
    ("gemma3", {"rope_local_base": None}),
    ("gemma3", {"query_pre_attn_scalar": None}),
    ("phi3-partial-window", {"rotary_dim": None}),
    ("phi3-partial-window", {"sliding_window": None}),
]


@pytest.mark.parametrize(("name", "off"), FEATURES, ids=lambda v: str(v))
def test_each_feature_matters(name: str, off: dict[str, Any], root: Path) -> None:
    ours, attentions, _, _ = case(name, root)
    without = Decoder(dataclasses.replace(ours.facts, **off), ours.source, ours.spec)
    worst = max(
        float(np.abs(mine - theirs).max())
        for mine, theirs in zip(without.run(IDS, ours.spec.layers), attentions, strict=True)
    )
    assert worst > 1e-3


def test_a_sliding_layer_hides_what_its_window_does_not_reach(root: Path) -> None:
    """The window of 4 cuts in: query 9 of a sliding layer sees keys 6 to 9 only."""
    ours, attentions, _, _ = case("gemma2", root)
    assert ours.layer_kind(0) == "local (sliding window 4)"
    assert ours.layer_kind(1) == "global"
    assert (attentions[0][:, 9, :6] == 0).all()
    assert (attentions[1][:, 9, :6] > 0).all()


def test_llama3_frequencies_are_transformers_for_llama_3_2() -> None:
    """Llama 3.2 1B's published rope_scaling: each frequency as
    ``_compute_llama3_parameters`` makes it (in float64), kept, blended or slowed."""
    transformers = require("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = {k: v for k, v in LLAMA_32_1B.items() if k != "architectures"}
    with float64_oracle():
        inverse, factor = ROPE_INIT_FUNCTIONS["llama3"](transformers.LlamaConfig(**config))
    assert factor == 1.0
    facts = facts_from_config(LLAMA_32_1B, "config.json")
    ours = rope_frequencies(facts, 0)
    np.testing.assert_allclose(ours, inverse.numpy(), rtol=1e-13)
    plain = 1.0 / 500000.0 ** (np.arange(0, 64, 2) / 64)
    assert (ours == plain).any()
    assert (ours < plain / 31).any()
    assert len(set(ours / plain)) > 3


def test_the_bf16_folder_holds_bf16(root: Path) -> None:
    _, _, _, folder = case("qwen3-bf16", root)
    stored = SafetensorsFile(folder / "model.safetensors")
    assert {stored.dtype_name(name) for name in stored} == {"BF16"}


# ------------------------------------------------------------------- the folder's tensors


def test_rows_read_only_the_ids_rows_and_equal_the_table(root: Path) -> None:
    _, folder = tiny_model("llama", root)
    source = FolderTensors(folder)
    table = source.tensor("model.embed_tokens.weight")
    np.testing.assert_array_equal(
        source.rows("model.embed_tokens.weight", [5, 0, 5]), table[[5, 0, 5]]
    )


def test_a_sharded_folder_reads_each_tensor_from_its_shard(root: Path) -> None:
    ours, _, _, folder = case("llama-sharded", root)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1
    assert isinstance(ours.source, FolderTensors)
    name = "model.layers.2.mlp.down_proj.weight"
    assert ours.source.file_of(name).name == index["weight_map"][name]


def test_tied_embeddings_need_no_lm_head(root: Path) -> None:
    ours, _, _, _ = case("llama-biases-tied", root)
    assert ours.facts.tied_embeddings
    assert not ours.source.has("lm_head.weight")


def test_a_bare_models_names_have_no_prefix(root: Path, tmp_path: Path) -> None:
    """A folder saved from LlamaModel (no ``model.`` before its names) reads the same."""
    model, _ = tiny_model("llama", root)
    model.model.save_pretrained(tmp_path)
    assert "embed_tokens.weight" in SafetensorsFile(tmp_path / "model.safetensors")
    _, attentions, _, _ = case("llama", root)
    bare = open_hf_folder(tmp_path)
    for mine, theirs in zip(bare.run(IDS, 3), attentions, strict=True):
        close(mine, theirs)


def test_without_a_tokenizer_ids_are_labels_and_a_sentence_is_refused(root: Path) -> None:
    ours, _, _, _ = case("llama", root)
    assert ours.labels([3, 17]) == ["3", "17"]
    with pytest.raises(InputError, match="without a tokenizer"):
        ours.tokenizer.encode("hello")


def test_a_given_tokenizer_is_the_models(root: Path) -> None:
    """The tokenizer passed in is used for labels; the stub fails the test if asked to
    encode (these tests feed ids)."""

    class Stub:
        def encode(self, text: str) -> list[int]:
            raise AssertionError("the tests feed token ids")

        def vocab_strings(self, ids: list[int]) -> list[str]:
            return [f"t{i}" for i in ids]

    ours, _, _, folder = case("llama", root)
    opened = open_hf_folder(folder, tokenizer=Stub())
    assert opened.labels([1, 2]) == ["t1", "t2"]
    for mine, theirs in zip(opened.run(IDS, 3), ours.run(IDS, 3), strict=True):
        np.testing.assert_array_equal(mine, theirs)


# ---------------------------------------------------------------------------- bad folders


def _copy(folder: Path, tmp_path: Path) -> Path:
    copied = tmp_path / "copy"
    shutil.copytree(folder, copied)
    return copied


def _edit_config(folder: Path, **changes: Any) -> None:
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config))


def test_an_unknown_architecture_is_one_line_naming_it(root: Path, tmp_path: Path) -> None:
    _, folder = tiny_model("llama", root)
    copied = _copy(folder, tmp_path)
    _edit_config(copied, model_type="mamba")
    with pytest.raises(InputError) as caught:
        open_hf_folder(copied)
    line = str(caught.value)
    assert "config.json" in line
    assert "'mamba'" in line
    assert ", ".join(FAMILIES) in line


def test_a_config_that_disagrees_with_its_tensors_names_the_tensor(
    root: Path, tmp_path: Path
) -> None:
    _, folder = tiny_model("llama", root)
    copied = _copy(folder, tmp_path)
    _edit_config(copied, num_key_value_heads=4)
    with pytest.raises(InputError) as caught:
        open_hf_folder(copied)
    line = str(caught.value)
    assert "model.safetensors" in line
    assert "model.layers.0.self_attn.k_proj.weight" in line
    assert "expected 64 × 64, got 32 × 64" in line


def test_a_missing_shard_is_one_line(root: Path, tmp_path: Path) -> None:
    _, folder = tiny_model("llama", root, max_shard_size="40KB")
    copied = _copy(folder, tmp_path)
    next(copied.glob("model-*.safetensors")).unlink()
    with pytest.raises(InputError, match="shard"):
        open_hf_folder(copied)


def test_an_unknown_rope_scaling_is_one_line(root: Path, tmp_path: Path) -> None:
    _, folder = tiny_model("llama", root)
    copied = _copy(folder, tmp_path)
    _edit_config(copied, rope_parameters={"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0})
    with pytest.raises(InputError, match="'yarn'"):
        open_hf_folder(copied)


def test_a_truncated_shard_is_one_line(root: Path, tmp_path: Path) -> None:
    _, folder = tiny_model("llama", root, max_shard_size="40KB")
    copied = _copy(folder, tmp_path)
    index = json.loads((copied / "model.safetensors.index.json").read_text())
    shard = copied / index["weight_map"]["model.layers.1.self_attn.q_proj.weight"]
    shard.write_bytes(shard.read_bytes()[:-100])
    with pytest.raises(InputError) as caught:
        open_hf_folder(copied)
    assert shard.name in str(caught.value)


# ------------------------------------------------------ the configs the Hub has, and a VLM


def _old_style(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` as transformers 4 wrote it: ``rope_theta`` and ``rope_scaling`` (Gemma 3:
    ``rope_local_base_freq``), ``partial_rotary_factor`` at the top, no ``layer_types``
    where its default (Gemma 2's alternation, Qwen's max_window_layers, Gemma 3's
    sliding_window_pattern) says the same."""
    old = dict(config)
    rope = dict(old.pop("rope_parameters"))
    if old["model_type"] == "gemma3_text":
        old["rope_local_base_freq"] = rope["sliding_attention"]["rope_theta"]
        rope = dict(rope["full_attention"])
        old["sliding_window_pattern"] = 2  # the tiny model's: sliding, full, sliding
    old["rope_theta"] = rope.pop("rope_theta")
    if "partial_rotary_factor" in rope:
        old["partial_rotary_factor"] = rope.pop("partial_rotary_factor")
    if rope.get("rope_type", "default") != "default":
        old["rope_scaling"] = rope
    old.pop("layer_types", None)
    return old


@pytest.mark.parametrize("name", CASES)
def test_the_config_transformers_4_wrote_reads_the_same(name: str, root: Path) -> None:
    ours, _, _, folder = case(name, root)
    config = read_config(folder)
    assert facts_from_config(_old_style(config), "config.json") == ours.facts


def test_a_multimodal_gemma3_reads_its_language_model(root: Path, tmp_path: Path) -> None:
    """Gemma 3 4B and up are Gemma3ForConditionalGeneration: the text model's config under
    ``text_config`` and its tensors under ``model.language_model.`` (transformers 5)."""
    ours, attentions, _, folder = case("gemma3", root)
    source = FolderTensors(folder)
    stored = SafetensorsFile(folder / "model.safetensors")
    tensors = {
        name.replace("model.", "model.language_model.", 1): (
            "F32",
            list(stored.shape(name)),
            source.tensor(name).astype("<f4").tobytes(),
        )
        for name in stored
    }
    (tmp_path / "model.safetensors").write_bytes(safetensors_bytes(tensors))
    text = read_config(folder)
    config = {"model_type": "gemma3", "text_config": text, "vision_config": {}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    opened = open_hf_folder(tmp_path)
    assert opened.facts == ours.facts  # type: ignore[attr-defined]
    for mine, theirs in zip(opened.run(IDS, 3), attentions, strict=True):
        close(mine, theirs)


def test_a_folder_without_config_or_safetensors_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a Hugging Face model folder"):
        open_hf_folder(tmp_path)
    config = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4}
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "pytorch_model.bin").write_bytes(b"PK")
    with pytest.raises(InputError, match=r"only pytorch_model\.bin \(PyTorch's pickle"):
        open_hf_folder(tmp_path)
