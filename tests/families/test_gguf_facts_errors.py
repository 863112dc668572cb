"""A GGUF file the families cannot read is one InputError naming the file and the key.

Synthetic files (tests/weight_files.py's writer): a small llama-shaped header, then one
thing wrong at a time.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from weight_files import ARRAY, F32V, STRING, T_F32, U32, U64, Metadata, Tensor, write_gguf

from attntrace.errors import InputError
from attntrace.real.families.gguf_facts import SUPPORTED, gguf_facts
from attntrace.real.families.gguf_tensors import GGUFTensors, unpermute
from attntrace.real.weights.gguf import GGUFFile


def _f32(rows: int, cols: int, start: float = 0.0) -> Tensor:
    values = np.arange(rows * cols, dtype=np.float32) + np.float32(start)
    return ("", (cols, rows), T_F32, values.tobytes())


def llama_file(path: Path, **changes: tuple[int, object] | None) -> Path:
    """A 1-layer llama: d_model 8, 2 heads of 4, 1 K/V head, d_ff 16, 10 tokens."""
    meta: Metadata = {
        "general.architecture": (STRING, "llama"),
        "llama.block_count": (U32, 1),
        "llama.embedding_length": (U32, 8),
        "llama.feed_forward_length": (U32, 16),
        "llama.attention.head_count": (U32, 2),
        "llama.attention.head_count_kv": (U32, 1),
        "llama.attention.layer_norm_rms_epsilon": (F32V, 1e-5),
        "llama.context_length": (U32, 32),
        "llama.rope.freq_base": (F32V, 10000.0),
    }
    for key, value in changes.items():
        key = key.replace("__", ".")
        if value is None:
            meta.pop(key)
        else:
            meta[key] = value
    shapes = {
        "token_embd.weight": (10, 8),
        "blk.0.attn_q.weight": (8, 8),
        "blk.0.attn_k.weight": (4, 8),
        "blk.0.attn_v.weight": (4, 8),
        "blk.0.attn_output.weight": (8, 8),
        "blk.0.ffn_up.weight": (16, 8),
        "blk.0.ffn_gate.weight": (16, 8),
        "blk.0.ffn_down.weight": (8, 16),
    }
    tensors = [(name, *_f32(*shape)[1:]) for name, shape in shapes.items()]
    return write_gguf(path, meta, tensors)


def refusal(path: Path) -> str:
    with pytest.raises(InputError) as caught:
        gguf_facts(GGUFFile(path))
    return str(caught.value)


def test_a_good_file_reads(tmp_path: Path) -> None:
    facts = gguf_facts(GGUFFile(llama_file(tmp_path / "m.gguf")))
    assert (facts.family, facts.layers, facts.heads, facts.kv_heads) == ("llama", 1, 2, 1)
    assert (facts.head_dim, facts.d_ff, facts.vocabulary) == (4, 16, 10)
    # ε is the file's float32, widened exactly
    assert facts.norm_eps == float(np.float32(1e-5)) != 1e-5


def test_an_unknown_architecture_is_named_with_the_supported_list(tmp_path: Path) -> None:
    line = refusal(llama_file(tmp_path / "m.gguf", general__architecture=(STRING, "mamba")))
    assert "m.gguf" in line
    assert "general.architecture" in line
    assert "mamba" in line
    assert all(name in line for name in SUPPORTED)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"llama__block_count": None}, ["llama.block_count", "whole number"]),
        ({"llama__attention__head_count": (STRING, "two")}, ["llama.attention.head_count"]),
        ({"llama__attention__head_count_kv": (U32, 3)}, ["head_count_kv", "divisor"]),
        ({"llama__attention__layer_norm_rms_epsilon": (F32V, -1.0)}, ["positive"]),
        ({"llama__feed_forward_length": (U32, 32)}, ["blk.0.ffn_up.weight", "disagrees"]),
        ({"llama__attention__head_count": (U32, 4)}, ["blk.0.attn_k.weight", "disagrees"]),
        ({"llama__rope__dimension_count": (U32, 2)}, ["partial rotary", "dimension_count"]),
        ({"llama__rope__scaling__type": (STRING, "yarn")}, ["rope.scaling.type", "yarn"]),
        ({"llama__attention__causal": (U32, 1)}, ["llama.attention.causal", "true or false"]),
        ({"llama__block_count": (U64, 7)}, ["block_count", "blocks 0 to 0 (1)"]),
        ({"llama__block_count": (U64, 2**40)}, ["block_count", "at most 1,024 layers"]),
        (
            {"llama__attention__sliding_window_pattern": (ARRAY, (U32, [1, 2]))},
            ["sliding_window_pattern"],
        ),
    ],
)
def test_a_bad_key_is_one_line(
    tmp_path: Path, changes: dict[str, tuple[int, object] | None], words: list[str]
) -> None:
    if "llama__attention__sliding_window_pattern" in changes:
        changes = {**changes, "llama__attention__sliding_window": (U32, 4)}
    line = refusal(llama_file(tmp_path / "m.gguf", **changes))
    assert line.startswith(str(tmp_path / "m.gguf"))
    assert all(word in line for word in words), line


def test_an_unknown_tensor_name_is_one_line(tmp_path: Path) -> None:
    gguf = GGUFFile(llama_file(tmp_path / "m.gguf"))
    source = GGUFTensors(gguf, gguf_facts(gguf))
    assert not source.has("model.layers.1.self_attn.q_proj.weight")
    with pytest.raises(InputError, match=r"model\.layers\.1\.self_attn"):
        source.tensor("model.layers.1.self_attn.q_proj.weight")


def test_unpermute_inverts_the_converters_permutation() -> None:
    """LlamaModel.permute's formula, written out, then undone: rows and a bias."""
    rng = np.random.default_rng(31)
    for shape in ((12, 5), (12,)):
        w = rng.standard_normal(shape)
        heads = 3
        permuted = (
            w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:])
            .swapaxes(1, 2)
            .reshape(w.shape)
        )
        assert not np.array_equal(permuted, w)
        assert np.array_equal(unpermute(permuted, heads), w)


def test_float32_keys_are_read_as_stored() -> None:
    # the writer packs "<f": what the file holds is float32(1e-5)
    assert struct.unpack("<f", struct.pack("<f", 1e-5))[0] == float(np.float32(1e-5))
