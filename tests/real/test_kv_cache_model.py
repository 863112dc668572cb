"""`kv-cache --model`: the cache priced from the model's own config.json or GGUF
metadata, against the closed form written here,

    2 (K and V) × layers × kv_heads × head_dim × bytes per value × tokens × batch

(a sliding window: min(tokens, N) tokens on each layer that slides), with the shapes
taken from the published configs, not from attntrace's reading of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from disk_stores import hf_model, ollama_model, safetensors, stores
from helpers import invoke, one_line_error, schema
from oracles import require
from published_configs import GEMMA3_270M, LLAMA_32_1B, MISTRAL_7B

from attntrace.decode.kv_memory import CATALOGUED, PRESETS
from attntrace.real.catalog import CATALOG

__all__ = ["stores"]  # the fixture, imported for the tests that take it


def folder(root: Path, config: dict[str, Any]) -> Path:
    """A Hugging Face folder: config.json and a tiny safetensors (never read here)."""
    root.mkdir()
    (root / "config.json").write_text(json.dumps(config))
    (root / "model.safetensors").write_bytes(safetensors())
    return root


def priced(*args: str) -> dict[str, Any]:
    result = invoke("kv-cache", *args, "--json")
    assert result.exit_code == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(document, schema("kv-cache-v1.schema.json"))
    return document


def model_bytes(document: dict[str, Any]) -> int:
    (row,) = [v for v in document["variants"] if v["label"].endswith("(this model)")]
    value: int = row["bytes"]
    return value


def test_a_folder_is_priced_from_its_config(tmp_path: Path) -> None:
    path = folder(tmp_path / "llama", LLAMA_32_1B)
    document = priced("--model", str(path), "--tokens", "1000", "--batch", "3")
    assert model_bytes(document) == 2 * 16 * 8 * 64 * 2 * 1000 * 3
    assert document["model"] == "llama"
    assert document["shape"] == {
        "layers": 16,
        "heads": 32,
        "kv_heads": 8,
        "head_dim": 64,
        "d_model": 2048,
        "attention": "GQA",
    }
    # without --tokens: the context the config says
    assert priced("-m", str(path))["tokens"] == 131072


def test_gemma3s_local_layers_keep_the_window(tmp_path: Path) -> None:
    path = folder(tmp_path / "gemma", GEMMA3_270M)
    for tokens in (100, 512, 5000):
        document = priced("--model", str(path), "--tokens", str(tokens), "--dtype", "fp32")
        held = min(tokens, 512)
        assert model_bytes(document) == 2 * 1 * 256 * 4 * (15 * held + 3 * tokens)
        assert document["window"]["local_layers"] == 15
    # the same shape as the preset of the same checkpoint
    assert priced("-m", str(path))["shape"] == priced("--preset", "gemma3-270m")["shape"]
    full = priced("-m", str(path), "--tokens", "5000", "--no-window")
    assert model_bytes(full) == 2 * 18 * 1 * 256 * 2 * 5000


def test_mistrals_window_is_on_every_layer(tmp_path: Path) -> None:
    path = folder(tmp_path / "mistral", MISTRAL_7B)
    document = priced("-m", str(path), "--tokens", "10000")
    assert model_bytes(document) == 2 * 32 * 8 * 128 * 2 * 4096
    assert document["shape"]["local_layers"] == 32


def llama_gguf(path: Path, layers: int = 2, heads: int = 4, kv_heads: int = 2) -> Path:
    """A tiny llama GGUF written by the gguf package: d_model 32, d_ff 48, 10 tokens."""
    gguf = require("gguf")
    np = require("numpy")
    d_model, d_ff, head_dim = 32, 48, 32 // heads
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(layers)
    writer.add_context_length(64)
    writer.add_embedding_length(d_model)
    writer.add_feed_forward_length(d_ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list([f"t{i}" for i in range(10)])
    shapes = {"token_embd.weight": (10, d_model), "output_norm.weight": (d_model,)}
    for i in range(layers):
        shapes |= {
            f"blk.{i}.attn_norm.weight": (d_model,),
            f"blk.{i}.attn_q.weight": (heads * head_dim, d_model),
            f"blk.{i}.attn_k.weight": (kv_heads * head_dim, d_model),
            f"blk.{i}.attn_v.weight": (kv_heads * head_dim, d_model),
            f"blk.{i}.attn_output.weight": (d_model, heads * head_dim),
            f"blk.{i}.ffn_norm.weight": (d_model,),
            f"blk.{i}.ffn_gate.weight": (d_ff, d_model),
            f"blk.{i}.ffn_up.weight": (d_ff, d_model),
            f"blk.{i}.ffn_down.weight": (d_model, d_ff),
        }
    for name, shape in shapes.items():
        writer.add_tensor(name, np.zeros(shape, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_gguf_file_is_priced_from_its_metadata(tmp_path: Path) -> None:
    path = llama_gguf(tmp_path / "tiny.gguf", layers=3, heads=4, kv_heads=2)
    document = priced("--model", str(path), "--dtype", "int8")
    assert document["model"] == "tiny.gguf"
    assert document["tokens"] == 64  # llama.context_length
    assert model_bytes(document) == 2 * 3 * 2 * 8 * 1 * 64
    assert "window" not in document


def test_a_cached_model_is_priced_by_its_repo_id(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    files = {"config.json": json.dumps(LLAMA_32_1B).encode(), "model.safetensors": safetensors()}
    hf_model(hub, "meta-llama/Llama-3.2-1B", files)
    document = priced("--model", "meta-llama/Llama-3.2-1B", "--tokens", "8192")
    assert document["model"] == "meta-llama/Llama-3.2-1B"
    assert model_bytes(document) == 2 * 16 * 8 * 64 * 2 * 8192


def test_an_ollama_model_is_priced_from_its_blobs_metadata(
    stores: tuple[Path, Path], tmp_path: Path
) -> None:
    _, store = stores
    blob = llama_gguf(tmp_path / "blob.gguf", layers=2, heads=4, kv_heads=1).read_bytes()
    ollama_model(store, "tiny", "q8", blob=blob)
    document = priced("--model", "ollama:tiny:q8", "--tokens", "10")
    assert document["model"] == "ollama:tiny:q8"
    assert model_bytes(document) == 2 * 2 * 1 * 8 * 2 * 10


def test_presets_and_catalogued_names(tmp_path: Path) -> None:
    assert priced("--model", "llama2-70b") == priced("--preset", "llama2-70b")
    for name, preset in CATALOGUED.items():
        by_name = priced("--model", name)
        assert by_name["shape"] == priced("--preset", preset)["shape"]
        assert by_name["model"] == name


@pytest.mark.long
def test_the_catalogued_decoders_presets_are_their_files_shapes() -> None:
    """smollm2's preset is what its GGUF's own metadata says (where it is installed)."""
    smollm2 = next(model for model in CATALOG if model.name == "smollm2")
    if not smollm2.installed:
        pytest.skip("smollm2's weights are not installed")
    gguf = require("gguf")
    reader = gguf.GGUFReader(str(smollm2.weights_path()))

    def key(name: str) -> int:
        field = reader.fields[f"llama.{name}"]
        return int(field.parts[field.data[0]][0])

    layers, heads, kv = (
        key("block_count"),
        key("attention.head_count"),
        key("attention.head_count_kv"),
    )
    d_model = key("embedding_length")
    shape = PRESETS[CATALOGUED["smollm2"]]
    assert (shape.layers, shape.heads, shape.kv_heads) == (layers, heads, kv)
    assert (shape.head_dim, shape.d_model) == (d_model // heads, d_model)
    assert shape.context == key("context_length")


def test_an_encoder_keeps_no_cache(tmp_path: Path) -> None:
    bert = {
        "model_type": "bert",
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "intermediate_size": 128,
        "max_position_embeddings": 64,
        "vocab_size": 100,
    }
    path = folder(tmp_path / "bert", bert)
    one_line_error(invoke("kv-cache", "--model", str(path)), "encoder", "no KV cache")
    one_line_error(invoke("kv-cache", "--model", "minilm"), "minilm is an encoder")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--model", "gpt2", "--preset", "gpt2"], ["--model and --preset"]),
        (["--model", "gpt2", "--layers", "2"], ["--model gives the model's shape"]),
        (["--model", "/nonexistent/x.gguf"], ["no such file"]),
        (["--model", "nope"], ["--model", "ollama:NAME"]),
    ],
)
def test_refusals(args: list[str], words: list[str]) -> None:
    one_line_error(invoke("kv-cache", *args), *words)


def test_a_config_not_a_familys_is_one_line(tmp_path: Path) -> None:
    path = folder(tmp_path / "mamba", {"model_type": "mamba"})
    one_line_error(invoke("kv-cache", "-m", str(path)), "config.json", "mamba")
