"""Gemma 3's real weight file: assembled from its four packages, read by the numpy reader,
its Q5_0 / Q4_K / Q6_K / Q8_0 / F32 weights equal to the ``gguf`` package's, bit for bit.

The reference numbers are ``gguf.quants.dequantize``'s (``tests/golden/real/readers.json``,
section ``gemma3``, written by ``tools/make_reader_goldens.py``). Equality, not a
tolerance, for the runs of weights: a dequantized weight is one to three float32
operations in a fixed order (no sum a machine could reorder), and the issue asks for
bit for bit; a float32 is exact in the JSON's float64. The whole-tensor sums are float64
sums, so they take FLOAT32_SUMS. Skipped, naming the install command, where the packages
are missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from paths import GOLDEN as GOLDEN_DIR
from tolerances import FLOAT32_SUMS

from attntrace.real.catalog import GEMMA3, file_sha256
from attntrace.real.weights.gguf import GGUFFile

GOLDEN: dict[str, Any] = json.loads(
    (GOLDEN_DIR / "real" / "readers.json").read_text(encoding="utf-8")
)["gemma3"]


@pytest.fixture(scope="module")
def gemma3() -> GGUFFile:
    if not GEMMA3.installed:
        pytest.skip(f"Gemma 3's weights are not installed: {GEMMA3.install}")
    path = GEMMA3.verified_weights()
    assert path.stat().st_size == GOLDEN["size"]
    return GGUFFile(path)


def test_the_assembled_file_is_the_golden_one(gemma3: GGUFFile) -> None:
    assert GOLDEN["sha256"] == GEMMA3.sha256
    assert len(gemma3.tensor_names) == GOLDEN["tensor_count"]
    types = [gemma3.tensor_info(name).type_name for name in gemma3.tensor_names]
    assert {name: types.count(name) for name in sorted(set(types))} == GOLDEN["type_counts"]
    for key, value in GOLDEN["metadata"].items():
        assert gemma3.metadata[key] == value, key  # ints, strings, one float32 read exactly


def test_the_catalogue_entry_agrees_with_the_file(gemma3: GGUFFile) -> None:
    meta = GOLDEN["metadata"]
    assert GEMMA3.architecture == meta["general.architecture"]
    assert GEMMA3.layers == meta["gemma3.block_count"]
    assert GEMMA3.heads == meta["gemma3.attention.head_count"]
    assert GEMMA3.kv_heads == meta["gemma3.attention.head_count_kv"]
    assert GEMMA3.d_model == meta["gemma3.embedding_length"]
    assert GEMMA3.head_dim == meta["gemma3.attention.key_length"]
    assert GEMMA3.vocabulary == GOLDEN["n_tokens"]
    assert GEMMA3.max_tokens > meta["gemma3.attention.sliding_window"]


@pytest.mark.parametrize("type_name", ["Q5_0", "Q4_K", "Q6_K", "Q8_0", "F32"])
def test_dequantized_weights_equal_the_gguf_package(gemma3: GGUFFile, type_name: str) -> None:
    golden = GOLDEN["tensors"][type_name]
    assert gemma3.tensor_info(golden["tensor"]).type_name == type_name
    array = gemma3.tensor(golden["tensor"])
    assert array.dtype == np.float32
    assert list(array.shape) == golden["shape"]
    flat = array.reshape(-1)
    for run in golden["runs"]:
        expected = np.array(run["values"], dtype=np.float64)
        assert np.array_equal(expected.astype(np.float32), expected)  # float32s, exactly
        got = flat[run["start"] : run["start"] + len(expected)]
        np.testing.assert_array_equal(got, expected.astype(np.float32))
    for index, value in golden["samples"].items():
        at = tuple(int(i) for i in index.split(","))
        assert array[at] == np.float32(value), index
    as64 = flat.astype(np.float64)
    assert float(np.sum(as64)) == pytest.approx(golden["sum"], **FLOAT32_SUMS)
    assert float(np.dot(as64, as64)) == pytest.approx(golden["sum_sq"], **FLOAT32_SUMS)


def test_every_tensor_dequantizes_finite(gemma3: GGUFFile) -> None:
    for name in gemma3.tensor_names:
        if name == "token_embd.weight":  # 168 M weights: its rows, not all of it
            rows = gemma3.rows(name, [0, 2, 1000, 262_143])
            assert rows.shape == (4, 640)
            assert np.isfinite(rows).all()
            continue
        assert np.isfinite(gemma3.tensor(name)).all(), name


def test_assembling_anew_in_an_empty_cache_gives_the_same_file(
    gemma3: GGUFFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real assembly, from the installed chunks, in a cache of its own: the renamed
    file hashes to the pinned SHA-256 and no partial file is left beside it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = GEMMA3.verified_weights()
    assert path == tmp_path / "attntrace" / GEMMA3.weights
    assert file_sha256(path) == GEMMA3.sha256
    assert sorted(p.name for p in path.parent.iterdir()) == [GEMMA3.weights, "verified.json"]
    assert GEMMA3.verified_weights() == path  # the second time: found, not rewritten
