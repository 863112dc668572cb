"""GGUF files of the ten families, written by llama.cpp's own converter, read back.

The oracle is the converter's input: a tiny random transformers model of each family
(tests/gguf_convert.py), saved with ``save_pretrained``. Its ``model.safetensors`` must
come back tensor for tensor from :class:`GGUFTensors` (F32: exactly), and its config must
come back field for field from :func:`gguf_facts`, except where GGUF cannot say (each
exception below is one docs/real-models.md lists). Q8_0 is held to the ``gguf``
package's dequantizer of the file's own bytes, exactly.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from gguf_convert import Converted, convert, save_family
from oracles import llama_cpp, require

from attntrace.real.families.facts import ModelFacts, RopeScaling
from attntrace.real.families.gguf_facts import gguf_facts
from attntrace.real.families.gguf_tensors import GGUFTensors
from attntrace.real.families.tensors import Tensor
from attntrace.real.weights.gguf import GGUFFile

pytestmark = pytest.mark.long

FAMILIES = (
    "llama", "llama3", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3",
    "gpt2", "bert",
)  # fmt: skip

# Tensors the converter leaves out on purpose: BERT's pooler (BertModel.filter_tensors).
DROPPED = {"bert": {"pooler.dense.weight", "pooler.dense.bias"}}

_CACHE: dict[str, Converted] = {}


@pytest.fixture(scope="session")
def workshop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gguf-families")


def converted(workshop: Path, family: str, outtype: str = "f32", *extra: str) -> Path:
    """``family``'s tiny model converted (once per session and out-type)."""
    require("torch")
    require("transformers")
    require("sentencepiece")
    lcp = llama_cpp()
    if family not in _CACHE:
        _CACHE[family] = save_family(family, workshop / family)
    item = _CACHE[family]
    name = "-".join((outtype, *(flag.strip("-") for flag in extra)))
    if name not in item.gguf:
        convert(lcp, item, outtype, *extra)
    return item.gguf[name]


def saved(family: str) -> dict[str, npt.NDArray[np.float32]]:
    """What the converter read: the folder's model.safetensors."""
    from safetensors.numpy import load_file

    tensors: dict[str, npt.NDArray[np.float32]] = load_file(
        _CACHE[family].folder / "model.safetensors"
    )
    return tensors


def open_source(path: Path) -> tuple[ModelFacts, GGUFTensors]:
    gguf = GGUFFile(path)
    facts = gguf_facts(gguf)
    return facts, GGUFTensors(gguf, facts)


def assert_tensors_equal(family: str, facts: ModelFacts, source: GGUFTensors) -> None:
    expected = saved(family)
    assert set(source.names()) == set(expected) - DROPPED.get(family, set())
    for name in source.names():
        want = expected[name]
        got = source.tensor(name)
        assert source.shape(name) == want.shape, name
        assert got.shape == want.shape, name
        if facts.norm_offset and name.endswith("norm.weight"):
            # the file holds float32(1 + w): served minus 1, exactly, in float64
            assert np.array_equal(got + 1.0, (want + np.float32(1)).astype(np.float64)), name
            assert np.max(np.abs(got - want)) <= 2.0**-24 * np.max(np.abs(1.0 + want)), name
        else:
            assert np.array_equal(got, want.astype(np.float64)), name


@pytest.mark.parametrize("family", FAMILIES)
def test_every_tensor_comes_back_exactly(workshop: Path, family: str) -> None:
    facts, source = open_source(converted(workshop, family))
    assert_tensors_equal(family, facts, source)


def test_fused_qkv_files_come_back_split(workshop: Path) -> None:
    """``--fuse-qkv`` concatenates the permuted Q, K and V: sliced, then un-permuted."""
    path = converted(workshop, "llama", "f32", "--fuse-qkv")
    assert "blk.0.attn_qkv.weight" in GGUFFile(path).tensor_names
    facts, source = open_source(path)
    assert_tensors_equal("llama", facts, source)


def test_embedding_rows_are_the_tables(workshop: Path) -> None:
    for family, table in (
        ("llama", "model.embed_tokens.weight"),
        ("gpt2", "transformer.wte.weight"),
        ("gpt2", "wpe.weight"),
        ("bert", "bert.embeddings.word_embeddings.weight"),
    ):
        _, source = open_source(converted(workshop, family))
        ids = [5, 0, 5, 17]
        assert np.array_equal(source.rows(table, ids), source.tensor(table)[ids])


def permute(weight: npt.NDArray[Any], heads: int) -> npt.NDArray[Any]:
    """``LlamaModel.permute`` (conversion/llama.py), the converter's direction."""
    back: npt.NDArray[Any] = (
        weight.reshape(heads, 2, weight.shape[0] // heads // 2, *weight.shape[1:])
        .swapaxes(1, 2)
        .reshape(weight.shape)
    )
    return back


def forward(family: str, facts: ModelFacts, hf: str, name: str, got: Tensor) -> Tensor:
    """What the converter does to ``hf`` on its way to ``name``, written out here
    (conversion/llama.py, gemma.py, gpt2.py): the inverse of what is under test."""
    if family in ("llama", "mistral") and ".attn_q." in name:
        return permute(got, facts.heads)
    if family in ("llama", "mistral") and ".attn_k." in name:
        return permute(got, facts.kv_heads)
    if family.startswith("gemma") and hf.endswith("norm.weight"):
        return got + 1.0
    if (
        family == "gpt2"
        and got.ndim == 2
        and hf.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight"))
    ):
        transposed: Tensor = got.T
        return transposed
    return got


@pytest.mark.parametrize(
    ("family", "outtype"),
    [("llama", "q8_0"), ("gemma3", "q8_0"), ("gpt2", "q8_0"), ("qwen2", "bf16"), ("phi3", "f16")],
)
def test_quantized_files_are_the_gguf_packages_dequantization(
    workshop: Path, family: str, outtype: str
) -> None:
    """Every tensor of a Q8_0 (BF16, F16) file equals gguf.quants.dequantize of its
    bytes, once brought back to the file's layout by the converter's steps run forward;
    and the file serves the same names as its F32 twin (whose every tensor is the
    saved model's)."""
    gguf = require("gguf")
    path = converted(workshop, family, outtype)
    facts, source = open_source(path)
    _, twin = open_source(converted(workshop, family))
    assert source.names() == twin.names()
    stored = {t.name: t for t in gguf.GGUFReader(path).tensors}
    kinds = {t.tensor_type.name for t in stored.values()}
    assert outtype.upper() in kinds
    for hf in source.names():
        name = source.stored_name(hf)
        t = stored[name]
        want = gguf.quants.dequantize(t.data, t.tensor_type)
        got = forward(family, facts, hf, name, source.tensor(hf))
        assert got.shape == want.shape, hf
        assert np.array_equal(got, want.astype(np.float64)), hf


# ------------------------------------------------------------------------------- facts


def _activation(config: Any) -> str:
    name = getattr(config, "hidden_activation", None) or getattr(config, "hidden_act", None)
    name = str(name or config.activation_function)
    return {"silu": "silu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh"}.get(
        name, name
    )


def _rope(config: Any, family: str) -> tuple[float | None, float | None, RopeScaling | None]:
    """(base, Gemma 3's local base, Llama 3's scaling) as the config says them."""
    if family in ("gpt2", "bert"):
        return None, None, None
    params = config.rope_parameters
    if family == "gemma3":
        return (
            params["full_attention"]["rope_theta"],
            params["sliding_attention"]["rope_theta"],
            None,
        )
    scaling = None
    if params.get("rope_type") == "llama3":
        scaling = RopeScaling(
            factor=params["factor"],
            low_freq_factor=params["low_freq_factor"],
            high_freq_factor=params["high_freq_factor"],
            original_max_positions=params["original_max_position_embeddings"],
        )
    return params["rope_theta"], None, scaling


def config_facts(family: str, config: Any) -> ModelFacts:
    """What config.json says, in ModelFacts' terms, read from transformers' config class;
    ε as float32 (the file can hold no other)."""
    gpt2, bert = family == "gpt2", family == "bert"
    gemma = family.startswith("gemma")
    heads = config.num_attention_heads
    d_model = config.hidden_size
    base, local_base, scaling = _rope(config, family)
    eps = (
        config.layer_norm_epsilon
        if gpt2
        else config.layer_norm_eps
        if bert
        else config.rms_norm_eps
    )
    types = getattr(config, "layer_types", None) if family in ("gemma2", "gemma3") else None
    window = getattr(config, "sliding_window", None) if family in (
        "mistral", "gemma2", "gemma3", "phi3",
    ) else None  # fmt: skip
    biased = gpt2 or bert or getattr(config, "attention_bias", False)
    return ModelFacts(
        family="llama" if family == "llama3" else family,
        layers=config.num_hidden_layers,
        heads=heads,
        kv_heads=getattr(config, "num_key_value_heads", None) or heads,
        d_model=d_model,
        head_dim=getattr(config, "head_dim", None) or d_model // heads,
        d_ff=(config.n_inner or 4 * d_model) if gpt2 else config.intermediate_size,
        vocabulary=config.vocab_size,
        norm_eps=float(np.float32(eps)),
        max_positions=config.max_position_embeddings,
        causal=not bert,
        norm="layer" if gpt2 or bert else "rms",
        norm_offset=1.0 if gemma else 0.0,
        activation=_activation(config),
        positions="learned" if gpt2 or bert else "rope",
        rope_base=base,
        rope_local_base=local_base,
        rope_scaling=scaling,
        qkv_bias=biased or family == "qwen2",
        o_bias=biased,
        qk_norm=family in ("qwen3", "gemma3"),
        sliding_window=window,
        layer_types=tuple(t.removesuffix("_attention") for t in types) if types else (),
        attn_softcap=getattr(config, "attn_logit_softcapping", None),
        final_softcap=getattr(config, "final_logit_softcapping", None),
        query_pre_attn_scalar=getattr(config, "query_pre_attn_scalar", None),
        embed_scale=math.sqrt(d_model) if gemma else 1.0,
        post_norms=family in ("gemma2", "gemma3"),
        tied_embeddings=bool(config.tie_word_embeddings),
        token_types=config.type_vocab_size if bert else 0,
    )


def differences(got: ModelFacts, want: ModelFacts) -> dict[str, tuple[Any, Any]]:
    skip = {"notes", "rope_factors"}
    return {
        field.name: (getattr(got, field.name), getattr(want, field.name))
        for field in dataclasses.fields(ModelFacts)
        if field.name not in skip and getattr(got, field.name) != getattr(want, field.name)
    }


@pytest.mark.parametrize("family", FAMILIES)
def test_facts_are_the_configs(workshop: Path, family: str) -> None:
    facts, _ = open_source(converted(workshop, family))
    want = config_facts(family, _CACHE[family].config)
    if family == "mistral":
        # LlamaModel converts MistralForCausalLM as llama, its window not written
        assert want.sliding_window == 8
        want = dataclasses.replace(want, family="llama", sliding_window=None)
    if family == "llama3":
        # the scaling is only rope_freqs.weight: test_llama3_rope_factors
        assert want.rope_scaling is not None
        assert facts.rope_factors is not None
        want = dataclasses.replace(want, rope_scaling=None)
    if family == "bert":
        # BERT has no output layer: the file has no output.weight, "tied" by default
        want = dataclasses.replace(want, tied_embeddings=True)
    assert differences(facts, want) == {}
    # ε is the file's float32, not config.json's float64 (1e-6 -> 9.99999997e-07)
    config = _CACHE[family].config
    eps = getattr(config, "rms_norm_eps", None) or getattr(config, "layer_norm_eps", None)
    assert facts.norm_eps != (eps or config.layer_norm_epsilon)


def test_llama3_rope_factors_are_transformers_frequencies(workshop: Path) -> None:
    """base^(−2i/d) / factor_i is transformers' llama3 inv_freq, to float32's rounding
    (both sides compute in float32: the converter its factors, transformers its
    frequencies)."""
    modeling_rope_utils = require("transformers.modeling_rope_utils")
    facts, _ = open_source(converted(workshop, "llama3"))
    assert facts.rope_factors is not None
    assert facts.rope_base is not None
    config = _CACHE["llama3"].config
    inv_freq, _ = modeling_rope_utils.ROPE_INIT_FUNCTIONS["llama3"](config, "cpu")
    d = facts.head_dim
    base = facts.rope_base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    ours = base / np.array(facts.rope_factors)
    np.testing.assert_allclose(ours, inv_freq.double().numpy(), rtol=4e-7, atol=0)
    # the band is exercised: kept, blended and slowed pairs
    assert {1.0, 8.0} < set(facts.rope_factors)
    assert len(set(facts.rope_factors)) == 3
