"""The two catalogued GGUF files read as any GGUF file: the same facts and the same
tensors as the catalogue's hand-written readers (real/llama.py, real/gemma.py) use.

Those readers are themselves held to transformers (tests/real/); here the families'
generic reading must agree with them on the real files, not only on tiny ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attntrace.real.catalog import GEMMA3, SMOLLM2, RealModel
from attntrace.real.families.gguf_facts import gguf_facts
from attntrace.real.families.gguf_tensors import GGUFTensors, unpermute
from attntrace.real.gemma import LOCAL_ROPE_BASE, QUERY_PRE_ATTN_SCALAR, is_global
from attntrace.real.weights.gguf import GGUFFile

pytestmark = pytest.mark.long

_TOKENIZER = ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type")


def opened(model: RealModel) -> GGUFFile:
    if not model.installed:
        pytest.skip(f"{model.name}'s weights are not installed: {model.install}")
    path: Path = model.weights_path()
    return GGUFFile(path, skip=(*_TOKENIZER, "tokenizer.ggml.scores"))


@pytest.mark.parametrize("model", [SMOLLM2, GEMMA3], ids=lambda m: m.name)
def test_the_shape_is_the_catalogues(model: RealModel) -> None:
    facts = gguf_facts(opened(model))
    assert (facts.layers, facts.heads, facts.kv_heads) == (
        model.layers,
        model.heads,
        model.kv_heads,
    )
    assert (facts.d_model, facts.head_dim, facts.vocabulary) == (
        model.d_model,
        model.head_dim,
        model.vocabulary,
    )
    assert (facts.positions, facts.causal) == (model.positions, model.causal)


def test_smollm2_reads_as_real_llama_reads_it() -> None:
    gguf = opened(SMOLLM2)
    facts = gguf_facts(gguf)
    assert facts.family == "llama"
    assert facts.rope_base == 100_000.0
    source = GGUFTensors(gguf, facts)
    for layer in (0, 29):
        for hf, name, heads in (
            ("q_proj", "attn_q", facts.heads),
            ("k_proj", "attn_k", facts.kv_heads),
        ):
            stored = np.asarray(gguf.tensor(f"blk.{layer}.{name}.weight"), dtype=np.float64)
            got = source.tensor(f"model.layers.{layer}.self_attn.{hf}.weight")
            assert np.array_equal(got, unpermute(stored, heads))


def test_gemma3_reads_as_real_gemma_reads_it() -> None:
    gguf = opened(GEMMA3)
    facts = gguf_facts(gguf)
    assert facts.family == "gemma3"
    assert facts.query_pre_attn_scalar == QUERY_PRE_ATTN_SCALAR
    assert facts.rope_local_base == LOCAL_ROPE_BASE
    assert facts.sliding_window == 512
    assert facts.layer_types == tuple(
        "full" if is_global(layer) else "sliding" for layer in range(facts.layers)
    )
    source = GGUFTensors(gguf, facts)
    # real/gemma.py uses the file's 1 + w as it is: minus 1 plus the norm offset is it
    stored = np.asarray(gguf.tensor("blk.4.attn_q_norm.weight"), dtype=np.float64)
    got = source.tensor("model.layers.4.self_attn.q_norm.weight")
    assert np.array_equal(got + facts.norm_offset, stored)
    assert np.array_equal(
        source.tensor("model.layers.4.self_attn.q_proj.weight"),
        np.asarray(gguf.tensor("blk.4.attn_q.weight"), dtype=np.float64),
    )
