"""Fake model stores laid out as the real ones are, for the locating tests.

A Hugging Face cache as huggingface_hub writes it (``models--ORG--NAME/`` with
``blobs/<hash>``, ``snapshots/<commit>/<file>`` as relative symlinks into ``blobs/``,
``refs/<branch>`` holding the commit with no newline: ``file_download.py``'s
``_create_symlink`` and ``_cache_commit_hash_for_specific_revision``), and an Ollama
store (``manifests/registry.ollama.ai/library/NAME/TAG``, Docker v2 JSON; blobs named
``sha256-<hex>`` of their content). GGUF files are written with the ``gguf`` package's
GGUFWriter, not with attntrace's own code.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest
from oracles import require

COMMIT_A = "a" * 40
COMMIT_B = "b" * 40
MODEL_MEDIA = "application/vnd.ollama.image.model"


def safetensors(names: tuple[str, ...] = ("w",)) -> bytes:
    """A tiny valid .safetensors file: one float32 per tensor."""
    header = {
        name: {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]}
        for i, name in enumerate(names)
    }
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"\0" * (4 * len(names))


def config(model_type: str = "llama", **extra: Any) -> bytes:
    fields = {
        "model_type": model_type,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "hidden_size": 64,
    }
    return json.dumps({**fields, **extra}).encode()


def tiny_gguf(
    path: Path, arch: str = "llama", layers: int = 3, heads: int = 8, tokens: int = 100
) -> Path:
    """A GGUF file written by the gguf package: the architecture's head counts, a
    vocabulary array (stepped over by the listing), one F32 tensor."""
    gguf = require("gguf")
    np = require("numpy")
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(layers)
    writer.add_head_count(heads)
    writer.add_head_count_kv(2)
    writer.add_embedding_length(16)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list([f"token{i}" for i in range(tokens)])
    writer.add_tensor("token_embd.weight", np.zeros((4, 16), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def hf_model(
    hub: Path,
    repo_id: str,
    files: dict[str, bytes],
    *,
    commit: str = COMMIT_A,
    ref: str | None = "main",
) -> Path:
    """A snapshot of ``repo_id`` in the cache ``hub``; returns the snapshot folder."""
    entry = hub / ("models--" + repo_id.replace("/", "--"))
    snapshot = entry / "snapshots" / commit
    for name, content in files.items():
        blob = entry / "blobs" / hashlib.sha256(content).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(content)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    snapshot.mkdir(parents=True, exist_ok=True)
    if ref is not None:
        (entry / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
        (entry / "refs" / ref).write_text(commit)
    return snapshot


def blob_of(link: Path) -> Path:
    """The blob a snapshot's symlink points at."""
    return (link.parent / link.readlink()).resolve()


def ollama_model(
    store: Path,
    name: str,
    tag: str = "latest",
    *,
    blob: bytes | None = None,
    layers: list[dict[str, Any]] | None = None,
    namespace: str = "library",
    before: list[dict[str, Any]] | None = None,
) -> Path:
    """A manifest (and the blobs it names) in the Ollama store; returns the manifest.
    ``layers`` come after the model's, ``before`` before it."""
    found = []
    if blob is not None:
        digest = hashlib.sha256(blob).hexdigest()
        (store / "blobs").mkdir(parents=True, exist_ok=True)
        (store / "blobs" / f"sha256-{digest}").write_bytes(blob)
        found.append({"mediaType": MODEL_MEDIA, "digest": f"sha256:{digest}", "size": len(blob)})
    manifest = store / "manifests" / "registry.ollama.ai" / namespace / name / tag
    manifest.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json"},
        "layers": [*(before or []), *found, *(layers or [])],
    }
    manifest.write_text(json.dumps(document))
    return manifest


@pytest.fixture
def stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(the HF hub cache, the Ollama store), both empty, in tmp_path, with HOME and the
    variables pointed at tmp_path so no real store is read."""
    home = tmp_path / "home"
    home.mkdir()
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(home))
    hub = tmp_path / "hf" / "hub"
    hub.mkdir(parents=True)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    store = tmp_path / "ollama"
    store.mkdir()
    monkeypatch.setenv("OLLAMA_MODELS", str(store))
    monkeypatch.chdir(tmp_path)
    return hub, store
