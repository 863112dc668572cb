"""`attntrace models`' listing: every model of the two stores, its family, shape, size
and whether it can be traced; a broken entry is a row with its reason, never an error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from disk_stores import (
    COMMIT_A,
    COMMIT_B,
    blob_of,
    config,
    hf_model,
    ollama_model,
    safetensors,
    stores,
    tiny_gguf,
)

from attntrace.real.disk.listing import Found, find_models, scan
from attntrace.real.disk.summary import gguf_summary

__all__ = ["stores"]


def by_name() -> dict[str, Found]:
    return {found.name: found for found in find_models()}


def test_nothing_installed_lists_nothing(stores: tuple[Path, Path]) -> None:
    hub, root = stores
    result = scan()
    assert result.found == ()
    assert result.looked_in == (hub, root)
    assert not result.cut_short


def test_a_cache_model_its_shape_and_size(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    files = {"config.json": config("qwen2"), "model.safetensors": safetensors()}
    hf_model(hub, "Qwen/Tiny", files)
    (found,) = find_models()
    assert (found.name, found.store, found.format) == ("Qwen/Tiny", "hf-cache", "safetensors")
    assert (found.family, found.layers, found.heads, found.kv_heads) == ("qwen2", 2, 4, 2)
    assert found.traceable
    assert found.why_not == ""
    assert found.size == sum(len(content) for content in files.values())


def test_the_size_counts_each_blob_once(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    same = safetensors()
    snapshot = hf_model(hub, "a/b", {"config.json": config(), "model.safetensors": same})
    (snapshot / "copy.safetensors").symlink_to(
        Path("../../blobs") / blob_of(snapshot / "model.safetensors").name
    )
    assert by_name()["a/b"].size == len(config()) + len(same)


def test_an_unsupported_architecture(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    hf_model(
        hub,
        "state-spaces/mamba",
        {"config.json": config("mamba"), "model.safetensors": safetensors()},
    )
    found = by_name()["state-spaces/mamba"]
    assert not found.traceable
    assert found.why_not == "architecture mamba is not supported"


def test_gemma3_text_and_a_nested_text_config(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    hf_model(
        hub,
        "google/gemma-3-270m",
        {"config.json": config("gemma3_text"), "model.safetensors": safetensors()},
    )
    nested = (
        b'{"model_type": "gemma3", "text_config": {"num_hidden_layers": 5, '
        b'"num_attention_heads": 8, "num_key_value_heads": 4}}'
    )
    hf_model(hub, "google/gemma-3-4b", {"config.json": nested, "model.safetensors": safetensors()})
    found = by_name()
    assert found["google/gemma-3-270m"].family == "gemma3"
    assert (found["google/gemma-3-4b"].layers, found["google/gemma-3-4b"].kv_heads) == (5, 4)


def test_broken_entries_are_rows_with_their_reason(stores: tuple[Path, Path]) -> None:
    hub, root = stores
    snapshot = hf_model(
        hub, "a/dangling", {"config.json": config(), "model.safetensors": safetensors()}
    )
    blob_of(snapshot / "model.safetensors").unlink()
    hf_model(hub, "a/bad-json", {"config.json": b"{", "model.safetensors": safetensors()})
    hf_model(hub, "a/no-config", {"README.md": b"hi"})
    ollama_model(root, "cloudy", layers=[{"mediaType": "application/vnd.ollama.image.template"}])
    found = by_name()
    assert found["a/dangling"].why_not.startswith("model.safetensors: dangling symlink to")
    assert found["a/bad-json"].why_not == "config.json: not JSON (truncated?)"
    assert found["a/no-config"].why_not == "neither a Hugging Face model folder nor a GGUF file"
    assert found["ollama:cloudy"].why_not == (
        "the manifest has no model layer (a safetensors-based or cloud model?)"
    )
    assert not any(row.traceable for row in found.values())


def test_snapshots_without_refs_main_are_listed_by_commit(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    files = {"config.json": config(), "model.safetensors": safetensors()}
    hf_model(hub, "a/b", files, ref=None)
    hf_model(hub, "a/b", files, commit=COMMIT_B, ref=None)
    assert set(by_name()) == {f"a/b@{COMMIT_A}", f"a/b@{COMMIT_B}"}


def test_ollama_models_with_their_gguf_metadata(stores: tuple[Path, Path], tmp_path: Path) -> None:
    _, root = stores
    blob = tiny_gguf(tmp_path / "t.gguf", arch="qwen2", layers=3, heads=8).read_bytes()
    ollama_model(
        root,
        "qwen2.5",
        "0.5b",
        blob=blob,
        layers=[
            {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "0" * 64}
        ],
    )
    (found,) = find_models()
    assert (found.name, found.store, found.format) == ("ollama:qwen2.5:0.5b", "ollama", "GGUF")
    assert (found.family, found.layers, found.heads, found.kv_heads) == ("qwen2", 3, 8, 2)
    assert found.traceable
    assert found.size == len(blob)


def test_a_gguf_of_an_unsupported_architecture(stores: tuple[Path, Path], tmp_path: Path) -> None:
    _, root = stores
    blob = tiny_gguf(tmp_path / "m.gguf", arch="mamba").read_bytes()
    ollama_model(root, "mamba", blob=blob)
    assert by_name()["ollama:mamba"].why_not == "architecture mamba is not supported"


def test_the_gguf_summary_agrees_with_the_gguf_package(tmp_path: Path) -> None:
    """The family and counts as the gguf package's own reader reads them."""
    from oracles import require

    gguf = require("gguf")
    path = tiny_gguf(tmp_path / "t.gguf", arch="gemma3", layers=7, heads=4)
    reader = gguf.GGUFReader(str(path))

    def field(key: str) -> object:
        value = reader.fields[key]
        return (
            value.parts[value.data[0]].tobytes().decode()
            if key.startswith("general")
            else int(value.parts[value.data[0]][0])
        )

    summary = gguf_summary(path)
    assert summary.family == field("general.architecture")
    assert summary.layers == field("gemma3.block_count")
    assert summary.heads == field("gemma3.attention.head_count")
    assert summary.kv_heads == field("gemma3.attention.head_count_kv")


def test_the_walk_is_capped_and_says_so(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    files = {"config.json": config(), "model.safetensors": safetensors()}
    for i in range(5):
        hf_model(hub, f"a/m{i}", files)
    result = scan(cap=3)
    assert len(result.found) == 3
    assert result.cut_short
    assert not scan(cap=100).cut_short


def test_datasets_and_stray_files_are_not_models(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    (hub / "datasets--a--b").mkdir()
    (hub / ".locks").mkdir()
    (hub / "version.txt").write_text("1")
    assert find_models() == []


@pytest.mark.parametrize("garbage", [b"GGUF\3\0\0\0" + b"\xff" * 40, b"GGUF"])
def test_a_garbled_gguf_header_is_a_row(stores: tuple[Path, Path], garbage: bytes) -> None:
    _, root = stores
    ollama_model(root, "garbled", blob=garbage)
    found = by_name()["ollama:garbled"]
    assert not found.traceable
    assert found.why_not


def test_a_gguf_summary_stops_at_the_head_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vocabulary after the head counts (50,000 tokens here, megabytes in a real
    file) is never read: the first 64 KiB of the file are all a listing reads."""
    import attntrace.real.disk.summary as summary

    path = tiny_gguf(tmp_path / "big.gguf", tokens=50_000)
    assert path.stat().st_size > 4 * summary.FIRST_READ
    reads: list[int] = []
    from attntrace.kernel.reading import read_at as real_read

    def counted(file: Any, offset: int, into: memoryview) -> None:
        reads.append(len(into))
        real_read(file, offset, into)

    monkeypatch.setattr(summary, "read_at", counted)
    assert gguf_summary(path).layers == 3
    assert reads == [summary.FIRST_READ]


def test_a_header_past_the_limit_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import attntrace.real.disk.summary as summary
    from attntrace.errors import InputError

    path = tiny_gguf(tmp_path / "t.gguf")
    monkeypatch.setattr(summary, "FIRST_READ", 32)
    monkeypatch.setattr(summary, "HEADER_LIMIT", 64)
    with pytest.raises(InputError, match=r"t\.gguf: a header over 64 bytes before its head counts"):
        gguf_summary(path)
