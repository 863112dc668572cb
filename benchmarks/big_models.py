"""Big models, bounded (issue 31 §4): a Llama-3.2-1B-shaped and a Llama-3-8B-shaped GGUF
file, traced at their last layer over 15 tokens, with wall time and peak memory.

Run:  python benchmarks/big_models.py          (the 1B shape; about a minute the first time)
      python benchmarks/big_models.py --8b     (the 8B shape too: a 4.6 GB file, written once)

No real checkpoint is downloaded: the files are synthesized with the real shapes and
random quantized weights laid out as llama.cpp's Q4_K_M mix lays them (Q4_K for most
matrices, Q6_K for the embedding table, attn_v and ffn_down; F32 norms), with a
`rope_freqs.weight` as Llama 3.1/3.2 files carry, and the real Llama 3 vocabulary copied
from llama.cpp's `models/ggml-vocab-llama-bpe.gguf` (found through ATTNTRACE_LLAMA_CPP, as
the tests find it). They are cached in $XDG_CACHE_HOME/attntrace/benchmarks. Each trace
is `attntrace run --model FILE --layer LAST SENTENCE --json` in a fresh process, its peak
resident memory read from the kernel (``os.wait4``'s ru_maxrss, the child alone).

Targets (issue 31): the 1B shape under 15 s and 2 GB peak; the 8B under 90 s and 4 GB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# 15 tokens with Llama 3's vocabulary, <|begin_of_text|> included
SENTENCE = "The animal didn't cross the street because it was too tired now."


@dataclass(frozen=True)
class Shape:
    name: str
    layers: int
    d_model: int
    d_ff: int
    heads: int
    kv_heads: int
    head_dim: int
    vocabulary: int = 128256
    tied: bool = True


LLAMA_1B = Shape("llama-3.2-1b-shaped", 16, 2048, 8192, 32, 8, 64)
LLAMA_8B = Shape("llama-3-8b-shaped", 32, 4096, 14336, 32, 8, 128, tied=False)


def cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    folder = Path(base) / "attntrace" / "benchmarks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def gguf_module() -> Any:
    """llama.cpp's gguf-py (the writer the converter uses)."""
    where = os.environ.get("ATTNTRACE_LLAMA_CPP")
    if not where:
        sys.exit("set ATTNTRACE_LLAMA_CPP to llama.cpp's folder (see tests/oracles.py)")
    sys.path.insert(0, str(Path(where) / "gguf-py"))
    import gguf

    return gguf


def random_blocks(kind: str, count: int, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """``count`` random Q4_K or Q6_K blocks (ggml-common.h layouts), with small f16
    scales, so the weights are of a trained model's size (about 0.02)."""
    if kind == "Q4_K":
        dtype = np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", 12), ("qs", "u1", 128)])
    else:
        dtype = np.dtype([("ql", "u1", 128), ("qh", "u1", 64), ("scales", "i1", 16), ("d", "<f2")])
    blocks = np.frombuffer(rng.bytes(count * dtype.itemsize), dtype=dtype).copy()
    # Q4_K's weight is d·scale·q − dmin·min (scales to 63, q to 15); Q6_K's d·scale·q
    # (scale to ±128, q to ±32): these d keep the weights' spread near 0.02
    low, high = (2e-5, 6e-5) if kind == "Q4_K" else (5e-6, 1.5e-5)
    blocks["d"] = rng.uniform(low, high, count).astype(np.float16)
    if kind == "Q4_K":
        blocks["dmin"] = rng.uniform(low, high, count).astype(np.float16)
    raw: np.ndarray[Any, Any] = blocks.view(np.uint8)
    return raw


def tensors(shape: Shape) -> list[tuple[str, tuple[int, ...], str]]:
    """Every tensor: name, shape as ggml lists it (fastest axis first), type."""
    d, kv = shape.d_model, shape.kv_heads * shape.head_dim
    out: list[tuple[str, tuple[int, ...], str]] = [
        ("token_embd.weight", (d, shape.vocabulary), "Q6_K")
    ]
    out.append(("rope_freqs.weight", (shape.head_dim // 2,), "F32"))
    for i in range(shape.layers):
        p = f"blk.{i}."
        out += [
            (p + "attn_norm.weight", (d,), "F32"),
            (p + "attn_q.weight", (d, shape.heads * shape.head_dim), "Q4_K"),
            (p + "attn_k.weight", (d, kv), "Q4_K"),
            (p + "attn_v.weight", (d, kv), "Q6_K"),
            (p + "attn_output.weight", (shape.heads * shape.head_dim, d), "Q4_K"),
            (p + "ffn_norm.weight", (d,), "F32"),
            (p + "ffn_gate.weight", (d, shape.d_ff), "Q4_K"),
            (p + "ffn_up.weight", (d, shape.d_ff), "Q4_K"),
            (p + "ffn_down.weight", (shape.d_ff, d), "Q6_K"),
        ]
    out.append(("output_norm.weight", (d,), "F32"))
    if not shape.tied:
        out.append(("output.weight", (d, shape.vocabulary), "Q6_K"))
    return out


def llama3_rope_freqs(head_dim: int, base: float = 500000.0) -> np.ndarray[Any, Any]:
    """The factors convert_hf_to_gguf.py's LlamaModel writes as rope_freqs.weight for
    rope_scaling llama3 (factor 32, low 1, high 4, original 8192)."""
    factor, low, high, original = 32.0, 1.0, 4.0, 8192
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    wavelengths = 2 * np.pi / freqs
    smooth = (original / wavelengths - low) / (high - low)
    factors = np.where(
        wavelengths < original / high,
        1.0,
        np.where(wavelengths > original / low, factor, 1.0 / ((1 - smooth) / factor + smooth)),
    )
    return factors.astype(np.float32)


def write(shape: Shape, path: Path) -> None:
    """The synthesized file, written tensor by tensor (never all in memory)."""
    gguf = gguf_module()
    vocab = gguf.GGUFReader(
        Path(os.environ["ATTNTRACE_LLAMA_CPP"]) / "models" / "ggml-vocab-llama-bpe.gguf"
    )
    writer = gguf.GGUFWriter(str(path) + ".partial", "llama")
    writer.add_block_count(shape.layers)
    writer.add_context_length(131072)
    writer.add_embedding_length(shape.d_model)
    writer.add_feed_forward_length(shape.d_ff)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.kv_heads)
    writer.add_key_length(shape.head_dim)
    writer.add_value_length(shape.head_dim)
    writer.add_rope_dimension_count(shape.head_dim)
    writer.add_rope_freq_base(500000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(shape.vocabulary)
    for key in ("tokenizer.ggml.model", "tokenizer.ggml.pre"):
        writer.add_string(key, vocab.fields[key].contents())
    writer.add_token_list(vocab.fields["tokenizer.ggml.tokens"].contents())
    writer.add_token_types(vocab.fields["tokenizer.ggml.token_type"].contents())
    writer.add_token_merges(vocab.fields["tokenizer.ggml.merges"].contents())
    writer.add_bos_token_id(128000)
    writer.add_eos_token_id(128001)
    rng = np.random.default_rng(31)
    kinds = {"Q4_K": gguf.GGMLQuantizationType.Q4_K, "Q6_K": gguf.GGMLQuantizationType.Q6_K}
    plan = tensors(shape)
    for name, dims, kind in plan:
        count = int(np.prod(dims))
        if kind == "F32":
            nbytes, dtype = count * 4, np.float32
            writer.add_tensor_info(name, dims[::-1], np.dtype(dtype), nbytes)
        else:
            block = 144 if kind == "Q4_K" else 210
            nbytes = count // 256 * block
            rows, columns = dims[::-1]  # numpy's order: the byte shape of the blocks
            writer.add_tensor_info(
                name,
                (rows, columns // 256 * block),
                np.dtype(np.uint8),
                nbytes,
                raw_dtype=kinds[kind],
            )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for name, dims, kind in plan:
        count = int(np.prod(dims))
        if name == "rope_freqs.weight":
            data = llama3_rope_freqs(shape.head_dim)
        elif kind == "F32":
            data = rng.uniform(0.8, 1.2, count).astype(np.float32)
        else:
            data = random_blocks(kind, count // 256, rng)
        writer.write_tensor_data(data)
    writer.close()
    Path(str(path) + ".partial").replace(path)


def trace(path: Path, layer: int) -> tuple[float, float]:
    """Seconds and peak GB of `attntrace run --model PATH --layer LAYER --json` (its
    output, the trace of every head, written to /dev/null)."""
    command = [sys.executable, "-m", "attntrace", "run", "--model", str(path)]
    command += ["--layer", str(layer), SENTENCE, "--json"]
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    assert child.stderr is not None
    if status != 0:
        sys.exit(f"run failed ({status}): {child.stderr.read().decode()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024 / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--8b", dest="eight", action="store_true", help="the 8B shape too")
    chosen = [LLAMA_1B, LLAMA_8B] if parser.parse_args().eight else [LLAMA_1B]
    for shape in chosen:
        path = cache() / f"{shape.name}.Q4_K_M.gguf"
        if not path.is_file():
            print(f"writing {path} …", flush=True)
            write(shape, path)
        size = path.stat().st_size / 1e9
        seconds, peak = trace(path, shape.layers - 1)
        print(
            f"{shape.name}: {size:.2f} GB file, layer {shape.layers - 1}, 15 tokens: "
            f"{seconds:.1f} s, peak {peak:.2f} GB"
        )


if __name__ == "__main__":
    main()
