"""Every model in the two stores attntrace reads: the Hugging Face cache and Ollama's.

For `attntrace models`. Only the stores are walked, never the disk at large, and at
most :data:`ENTRY_CAP` entries of them are looked at (a cache of thousands of datasets
and models lists its first thousand, and says so). Each model is located as ``--model``
would locate it, so what the listing calls traceable opens; one broken entry (a
dangling link, a manifest without a model layer, a config that is not JSON) is a row
with its reason, never an exception.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from attntrace.errors import InputError
from attntrace.real.disk import hf_cache, ollama
from attntrace.real.disk.hf_folder import folder_names
from attntrace.real.disk.located import Located
from attntrace.real.disk.summary import Summary, config_summary, gguf_summary

#: The most entries (cache folders, manifest folders and files) looked at in each store.
ENTRY_CAP = 1000
UNKNOWN = Summary(None, None, None, None)


@dataclass(frozen=True)
class Found:
    """One model in a store: what to type after ``--model``, and what it is."""

    name: str
    store: str  # "hf-cache" or "ollama"
    format: str  # "safetensors", "GGUF", or "?" where it could not be told
    size: int  # bytes on disk: the blobs its files are
    family: str | None
    layers: int | None
    heads: int | None
    kv_heads: int | None
    traceable: bool
    why_not: str  # a few words; empty where traceable
    path: Path  # the cache entry's folder, or the manifest


@dataclass(frozen=True)
class Scan:
    """What the walk found, where it looked, and whether it stopped at the cap."""

    found: tuple[Found, ...]
    looked_in: tuple[Path, ...]
    cut_short: bool


def find_models() -> list[Found]:
    """Every model in the stores (at most :data:`ENTRY_CAP` entries looked at)."""
    return list(scan().found)


class _Budget:
    """The entries left to look at."""

    def __init__(self, cap: int) -> None:
        self.left = cap
        self.spent = False

    def take(self) -> bool:
        if self.left <= 0:
            self.spent = True
            return False
        self.left -= 1
        return True


def scan(cap: int = ENTRY_CAP) -> Scan:
    """The stores walked: the Hugging Face cache first, then Ollama's, each with a cap
    of its own (one budget for both let a large cache leave Ollama's unread)."""
    hf_budget, ollama_budget = _Budget(cap), _Budget(cap)
    found = [
        *_hf_models(hf_cache.hub_cache(), hf_budget),
        *_ollama_models(ollama.store(), ollama_budget),
    ]
    stores = (hf_cache.hub_cache(), ollama.store())
    return Scan(tuple(found), stores, hf_budget.spent or ollama_budget.spent)


def _entries(folder: Path, budget: _Budget) -> Iterator[os.DirEntry[str]]:
    """``folder``'s entries in name order, each taken from the budget."""
    try:
        with os.scandir(folder) as listing:
            entries = []
            for entry in listing:
                if not budget.take():
                    break
                entries.append(entry)
    except OSError:
        return
    yield from sorted(entries, key=lambda e: e.name)


def _hf_models(cache: Path, budget: _Budget) -> Iterator[Found]:
    for entry in _entries(cache, budget):
        if not entry.name.startswith(hf_cache.PREFIX) or not entry.is_dir():
            continue
        folder = Path(entry.path)
        repo_id = entry.name[len(hf_cache.PREFIX) :].replace("--", "/")
        if os.path.lexists(folder / "refs" / "main"):
            yield _hf_row(folder, repo_id, None)
            continue
        snapshots = [
            name for name in _names(folder / "snapshots") if hf_cache.COMMIT.fullmatch(name)
        ]
        if not snapshots:
            yield _hf_row(folder, repo_id, None)  # the row says why: no refs/main
        for commit in snapshots:
            yield _hf_row(folder, repo_id, commit)


def _names(folder: Path) -> list[str]:
    try:
        return folder_names(folder) if folder.is_dir() else []
    except InputError:
        return []


def _hf_row(folder: Path, repo_id: str, commit: str | None) -> Found:
    name = repo_id + (f"@{commit}" if commit else "")
    try:
        located = hf_cache.open_entry(folder, repo_id, commit)
        size = _blob_bytes(located.folder) if located.folder is not None else 0
        return _row(located, "hf-cache", size, folder)
    except (InputError, OSError) as error:  # OSError: a file changed while listed
        return _broken(name, "hf-cache", folder, error)


def _ollama_models(root: Path, budget: _Budget) -> Iterator[Found]:
    """Manifests at ``manifests/HOST/NAMESPACE/MODEL/TAG``."""
    for host in _entries(root / "manifests", budget):
        for namespace in _entries(Path(host.path), budget):
            for model in _entries(Path(namespace.path), budget):
                for tag in _entries(Path(model.path), budget):
                    parts = (host.name, namespace.name, model.name, tag.name)
                    yield _ollama_row(root, Path(tag.path), ollama.short_name(*parts))


def _ollama_row(root: Path, manifest: Path, name: str) -> Found:
    try:
        located = ollama.open_manifest(root, manifest, name)
        return _row(located, "ollama", ollama.blob_sizes(root, manifest), manifest)
    except (InputError, OSError) as error:  # OSError: a file changed while listed
        return _broken(f"ollama:{name}", "ollama", manifest, error)


def _row(located: Located, store: str, size: int, path: Path) -> Found:
    """A located model's row, with what its metadata says."""
    try:
        if located.kind == "gguf":
            summary = gguf_summary(located.weights[0])
        elif located.config is not None:
            summary = config_summary(located.config)
        else:
            summary = UNKNOWN
    except InputError as error:
        return _broken(located.name, store, path, error, located.format, size)
    return Found(
        located.name,
        store,
        located.format,
        size,
        summary.family,
        summary.layers,
        summary.heads,
        summary.kv_heads,
        summary.supported,
        summary.why_not,
        path,
    )


def _broken(
    name: str,
    store: str,
    path: Path,
    error: InputError | OSError,
    form: str = "?",
    size: int = 0,
) -> Found:
    if isinstance(error, OSError):
        error = InputError(f"cannot read it: {error.strerror or error}", source=error.filename)
    why = reason(error, path)
    return Found(name, store, form, size, None, None, None, None, False, why, path)


def reason(error: InputError, entry: Path) -> str:
    """An error as the few words of a listing's row: its message (or what was
    expected), after the name of the file it is about, where that is a file within
    the entry (not the manifest or folder the row already names)."""
    words = error.message or (f"expected {error.expected}" if error.expected else str(error))
    # the fetch command and what was expected are for --model's line
    words = words.split("; fetch it with: ")[0].split(" (expected ")[0]
    source = Path(error.source) if error.source else None
    if source is not None and source != entry and not source.is_dir():
        words = f"{source.name}: {words}"
    return words


def _blob_bytes(snapshot: Path) -> int:
    """The bytes of the distinct files (blobs) a snapshot's files are."""
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [snapshot]
    looked = 0
    while stack and looked < 10_000:
        try:
            with os.scandir(stack.pop()) as listing:
                for entry in listing:
                    looked += 1
                    if entry.is_dir():
                        stack.append(Path(entry.path))
                        continue
                    try:
                        info = Path(entry.path).stat()
                    except OSError:  # a dangling link to a file the model needs not
                        continue
                    if (info.st_dev, info.st_ino) not in seen:
                        seen.add((info.st_dev, info.st_ino))
                        total += info.st_size
        except OSError:
            continue
    return total


def store_names(cap: int = 200) -> list[str]:
    """What to type after ``--model`` for each model of the stores, from their folders'
    names alone (``ORG/NAME``, ``ollama:NAME[:TAG]``): no file is opened, so shell
    completion stays instant; at most ``cap`` entries are looked at."""
    budget = _Budget(cap)
    names = [
        entry.name[len(hf_cache.PREFIX) :].replace("--", "/")
        for entry in _entries(hf_cache.hub_cache(), budget)
        if entry.name.startswith(hf_cache.PREFIX)
    ]
    manifests = ollama.store() / "manifests"
    for host in _entries(manifests, budget):
        for namespace in _entries(Path(host.path), budget):
            for model in _entries(Path(namespace.path), budget):
                for tag in _entries(Path(model.path), budget):
                    parts = (host.name, namespace.name, model.name, tag.name)
                    names.append("ollama:" + ollama.short_name(*parts))
    return names
