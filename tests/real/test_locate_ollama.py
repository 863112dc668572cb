"""--model ollama:NAME[:TAG] from an Ollama store laid out as Ollama lays it out: the
manifest, its model layer, the GGUF blob; every broken piece one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from disk_stores import MODEL_MEDIA, ollama_model, stores, tiny_gguf

from attntrace.errors import InputError
from attntrace.real.disk.locate import locate
from attntrace.real.disk.ollama import parse_name, store

__all__ = ["stores"]

TEMPLATE = {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "c" * 64}


@pytest.fixture
def gguf_bytes(tmp_path: Path) -> bytes:
    return tiny_gguf(tmp_path / "tiny.gguf").read_bytes()


def refusal(text: str) -> str:
    with pytest.raises(InputError) as caught:
        locate(text)
    return str(caught.value)


def test_the_store_is_ollama_models_else_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("OLLAMA_MODELS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert store() == tmp_path / ".ollama" / "models"
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "elsewhere"))
    assert store() == tmp_path / "elsewhere"


@pytest.mark.parametrize(
    ("spec", "parts"),
    [
        ("llama3.2", ("registry.ollama.ai", "library", "llama3.2", "latest")),
        ("qwen2.5:0.5b", ("registry.ollama.ai", "library", "qwen2.5", "0.5b")),
        ("me/tiny:q8_0", ("registry.ollama.ai", "me", "tiny", "q8_0")),
        (
            "hf.co/bartowski/Llama-3.2-1B-GGUF:Q4_K_M",
            ("hf.co", "bartowski", "Llama-3.2-1B-GGUF", "Q4_K_M"),
        ),
    ],
)
def test_names_as_ollama_parses_them(spec: str, parts: tuple[str, ...]) -> None:
    assert parse_name(spec) == parts


def test_a_model_and_its_tag(stores: tuple[Path, Path], gguf_bytes: bytes) -> None:
    _, root = stores
    ollama_model(root, "llama3.2", blob=gguf_bytes, before=[TEMPLATE])
    located = locate("ollama:llama3.2")
    assert (located.kind, located.origin, located.name) == ("gguf", "ollama", "ollama:llama3.2")
    (blob,) = located.weights
    assert blob.parent == root / "blobs"
    assert blob.name.startswith("sha256-")
    assert blob.read_bytes() == gguf_bytes
    assert locate("ollama:llama3.2:latest").weights == located.weights
    assert locate("Ollama:llama3.2").weights == located.weights
    ollama_model(root, "qwen2.5", "0.5b", blob=gguf_bytes)
    assert locate("ollama:qwen2.5:0.5b").name == "ollama:qwen2.5:0.5b"
    ollama_model(root, "tiny", "q8_0", blob=gguf_bytes, namespace="me")
    assert locate("ollama:me/tiny:q8_0").weights == located.weights


def test_a_name_typed_in_capitals_finds_the_lowercased_manifest(
    stores: tuple[Path, Path], gguf_bytes: bytes
) -> None:
    _, root = stores
    ollama_model(root, "llama3.2", blob=gguf_bytes)
    assert locate("ollama:Llama3.2").kind == "gguf"


def test_not_in_the_store_gives_the_pull_command(stores: tuple[Path, Path]) -> None:
    _, root = stores
    line = refusal("ollama:llama3.2:1b")
    assert line.startswith(f"--model: ollama:llama3.2:1b is not in Ollama's store ({root}")
    assert line.endswith("attntrace never downloads: fetch it with: ollama pull llama3.2:1b")


def test_a_manifest_without_a_model_layer(stores: tuple[Path, Path]) -> None:
    _, root = stores
    manifest = ollama_model(root, "cloudy", layers=[TEMPLATE])
    line = refusal("ollama:cloudy")
    assert line.startswith(f"{manifest}: layers: the manifest has no model layer")
    assert f"expected a layer of mediaType {MODEL_MEDIA}" in line
    assert "got application/vnd.ollama.image.template" in line


def test_a_missing_blob(stores: tuple[Path, Path], gguf_bytes: bytes) -> None:
    _, root = stores
    ollama_model(root, "llama3.2", blob=gguf_bytes)
    (blob,) = (root / "blobs").iterdir()
    blob.unlink()
    line = refusal("ollama:llama3.2")
    assert line.startswith(f"{blob}: the model's blob is missing")
    assert line.endswith("; fetch it with: ollama pull llama3.2")


def test_a_truncated_blob(stores: tuple[Path, Path], gguf_bytes: bytes) -> None:
    _, root = stores
    ollama_model(root, "llama3.2", blob=gguf_bytes)
    (blob,) = (root / "blobs").iterdir()
    blob.write_bytes(gguf_bytes[:100])
    line = refusal("ollama:llama3.2")
    assert "not the size its manifest gives" in line
    assert line.endswith(
        f"(expected {len(gguf_bytes):,} bytes, got 100); fetch it with: ollama pull llama3.2"
    )


def test_a_blob_that_is_not_gguf(stores: tuple[Path, Path]) -> None:
    _, root = stores
    ollama_model(root, "llama3.2", blob=b"PK\3\4 a zip, not a model")
    assert "not a GGUF file: expected b'GGUF', got b'PK" in refusal("ollama:llama3.2")


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('{"layers": [', "not JSON (truncated?)"),
        ("", "got an empty file"),
        ('{"layers": {}}', "layers: expected a list of layer objects, got dict"),
        (
            '{"layers": [{"mediaType": "' + MODEL_MEDIA + '", "digest": "md5:x"}]}',
            "expected sha256:<64 hex digits>, got 'md5:x'",
        ),
    ],
)
def test_a_bad_manifest_is_one_line(stores: tuple[Path, Path], text: str, found: str) -> None:
    _, root = stores
    manifest = ollama_model(root, "broken")
    manifest.write_text(text)
    line = refusal("ollama:broken")
    assert line.startswith(f"{manifest}: ")
    assert found in line


def test_a_fifo_as_manifest_does_not_hang(stores: tuple[Path, Path]) -> None:
    _, root = stores
    manifest = ollama_model(root, "piped")
    manifest.unlink()
    os.mkfifo(manifest)
    assert "a named pipe (FIFO), not a regular file" in refusal("ollama:piped")
    manifest.unlink()
    manifest.symlink_to("/dev/zero")
    assert "a character device, not a regular file" in refusal("ollama:piped")


@pytest.mark.parametrize("spec", ["ollama:", "ollama:a/b/c/d", "ollama:../x", "ollama:x:a/b"])
def test_a_bad_name(stores: tuple[Path, Path], spec: str) -> None:
    assert refusal(spec).startswith("--model: expected ollama:NAME[:TAG]")


def test_the_manifest_json_is_docker_v2(stores: tuple[Path, Path], gguf_bytes: bytes) -> None:
    """The fake is the real format: schemaVersion 2, layers with mediaType/digest/size."""
    _, root = stores
    document = json.loads(ollama_model(root, "llama3.2", blob=gguf_bytes).read_text())
    assert document["schemaVersion"] == 2
    assert set(document["layers"][0]) == {"mediaType", "digest", "size"}
