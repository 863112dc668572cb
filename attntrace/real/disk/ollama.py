"""``ollama:NAME[:TAG]`` from Ollama's store: its manifest, and the GGUF blob it names.

The store is ``OLLAMA_MODELS``, else ``~/.ollama/models`` (Ollama's ``envconfig``; its
Linux service keeps its own under ``/usr/share/ollama/.ollama/models``, which a user
points ``OLLAMA_MODELS`` at). A name is ``[HOST/][NAMESPACE/]MODEL[:TAG]``, defaults
``registry.ollama.ai``, ``library`` and ``latest`` (Ollama's ``types/model.ParseName``);
its manifest is ``manifests/HOST/NAMESPACE/MODEL/TAG``, lowercased as Ollama writes it
(``Name.Filepath``). The manifest is Docker's v2 JSON: ``layers``, each a
``mediaType``, ``digest`` (``sha256:<hex>``) and ``size``; the layer of media type
``application/vnd.ollama.image.model`` is the GGUF file, ``blobs/sha256-<hex>``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from attntrace.errors import InputError
from attntrace.real.disk.files import gguf_file, read_json_object, refusal
from attntrace.real.disk.located import Located

MODEL_MEDIA = "application/vnd.ollama.image.model"
HOST = "registry.ollama.ai"
NAMESPACE = "library"
TAG = "latest"
#: A part of a name: Ollama's ``isValidPart`` (letters, digits, ``_ - .``), never ``..``.
PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", re.ASCII)
DIGEST = re.compile(r"sha256[:-]([0-9a-fA-F]{64})")
MANIFEST = "an Ollama manifest (JSON: a list of layers)"


def store() -> Path:
    """Ollama's model store: ``OLLAMA_MODELS``, else ``~/.ollama/models``."""
    value = os.environ.get("OLLAMA_MODELS", "").strip().strip("\"'")
    return Path(value) if value else Path.home() / ".ollama" / "models"


def parse_name(spec: str, field: str = "--model") -> tuple[str, str, str, str]:
    """``[HOST/][NAMESPACE/]MODEL[:TAG]`` as (host, namespace, model, tag), defaults filled."""
    name, colon, tag = spec.rpartition(":")
    if not colon or "/" in tag:  # no tag (a colon before a slash is a host's port)
        name, tag = spec, TAG
    parts = name.split("/")
    if len(parts) > 3 or not all(PART.fullmatch(p) and ".." not in p for p in [*parts, tag]):
        raise InputError(
            field=field,
            expected="ollama:NAME[:TAG] (e.g. ollama:llama3.2, ollama:qwen2.5:0.5b, "
            "ollama:NAMESPACE/NAME:TAG)",
            found=repr(f"ollama:{spec}"),
        )
    host, namespace = HOST, NAMESPACE
    if len(parts) == 3:
        host, namespace, model = parts
    elif len(parts) == 2:
        namespace, model = parts
    else:
        (model,) = parts
    return host, namespace, model, tag


def short_name(host: str, namespace: str, model: str, tag: str) -> str:
    """The name as Ollama shows it: defaults left out (``llama3.2``, ``me/tiny:q8_0``)."""
    name = model if namespace == NAMESPACE else f"{namespace}/{model}"
    if host != HOST:
        name = f"{host}/{namespace}/{model}"
    return name if tag == TAG else f"{name}:{tag}"


def locate_ollama(spec: str, field: str = "--model") -> Located:
    """``ollama:SPEC`` (``SPEC`` without the prefix) from the store; one InputError
    line where the manifest, its model layer or its blob is not there."""
    parts = parse_name(spec, field)
    name = short_name(*parts)
    root = store()
    manifest = root / "manifests" / Path(*parts)
    if not os.path.lexists(manifest):
        manifest = root / "manifests" / Path(*(p.lower() for p in parts))
    if not os.path.lexists(manifest):
        where = (
            ""
            if (root / "manifests").is_dir()
            else ": no manifests/ folder; OLLAMA_MODELS names the store"
        )
        raise InputError(
            f"ollama:{name} is not in Ollama's store ({root}{where}); attntrace never "
            f"downloads: fetch it with: ollama pull {name}",
            field=field,
        )
    return open_manifest(root, manifest, name)


def open_manifest(root: Path, manifest: Path, name: str) -> Located:
    """The GGUF blob the manifest at ``manifest`` names as its model layer."""
    layer = model_layer(manifest)
    digest = DIGEST.fullmatch(str(layer.get("digest")))
    if digest is None:
        raise InputError(
            source=str(manifest),
            field="layers[].digest",
            expected="sha256:<64 hex digits>",
            found=repr(str(layer.get("digest"))[:80]),
        )
    blob = root / "blobs" / f"sha256-{digest.group(1).lower()}"
    fetch = f"ollama pull {name}"
    if not os.path.lexists(blob):
        raise refusal(
            "the model's blob is missing (an interrupted pull, or pruned?)",
            blob,
            expected=f"the GGUF file {manifest} names",
            fetch=fetch,
        )
    gguf_file(blob, fetch)
    size = layer.get("size")
    found = blob.stat().st_size
    if isinstance(size, int) and not isinstance(size, bool) and size != found:
        raise refusal(
            "the blob is not the size its manifest gives (a truncated pull?)",
            blob,
            expected=f"{size:,} bytes",
            found=f"{found:,}",
            fetch=fetch,
        )
    return Located("gguf", f"ollama:{name}", "ollama", (blob,))


def layers(manifest: Path) -> list[dict[str, Any]]:
    """The manifest's layers, each an object (read to a bound, checked)."""
    found = read_json_object(manifest, MANIFEST).get("layers")
    if not isinstance(found, list) or not all(isinstance(layer, dict) for layer in found):
        raise InputError(
            source=str(manifest),
            field="layers",
            expected="a list of layer objects",
            found="nothing" if found is None else type(found).__name__,
        )
    return found


def model_layer(manifest: Path) -> dict[str, Any]:
    """The layer of media type :data:`MODEL_MEDIA` (the last, as Ollama's ``GetModel``
    takes it, where a manifest lists more than one)."""
    every = layers(manifest)
    models = [layer for layer in every if layer.get("mediaType") == MODEL_MEDIA]
    if not models:
        kinds = sorted({str(layer.get("mediaType")) for layer in every})
        raise InputError(
            "the manifest has no model layer (a safetensors-based or cloud model?)",
            source=str(manifest),
            field="layers",
            expected=f"a layer of mediaType {MODEL_MEDIA}",
            found=", ".join(kinds[:4]) or "no layers",
        )
    return models[-1]


def blob_sizes(root: Path, manifest: Path) -> int:
    """The bytes on disk of the blobs the manifest's layers name (those present)."""
    total = 0
    for layer in layers(manifest):
        digest = DIGEST.fullmatch(str(layer.get("digest")))
        blob = None if digest is None else root / "blobs" / f"sha256-{digest.group(1).lower()}"
        if blob is not None and blob.is_file():
            total += blob.stat().st_size
    return total
