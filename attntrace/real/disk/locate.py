"""What ``--model`` names: a catalogued model, a path, ``ORG/NAME[@REV]``, ``ollama:NAME``.

Read in this order, the first that fits wins:

1. a catalogued name (``minilm``, ``smollm2``, ``gemma3``, any case): a file of that
   name is written ``./minilm``;
2. ``ollama:NAME[:TAG]``: Ollama's store (:mod:`.ollama`);
3. a path that exists (``~`` expanded): a ``.gguf`` file, a Hugging Face folder, a
   folder holding one ``.gguf`` file, a cache entry or snapshot folder. A path wins
   over ``ORG/NAME``: a folder ``Qwen/Qwen2.5-0.5B`` under the current one is that
   folder, not the cache's model (write ``./`` to be plain, or ``cd`` elsewhere for
   the cache);
4. ``ORG/NAME`` or ``ORG/NAME@REVISION``: the Hugging Face cache (:mod:`.hf_cache`).

Anything else is one line saying what ``--model`` takes.
"""

from __future__ import annotations

import os
from pathlib import Path

from attntrace.errors import InputError
from attntrace.real.catalog import CATALOG
from attntrace.real.disk.files import gguf_file
from attntrace.real.disk.hf_cache import cache_entry, is_repo_id, locate_cached, open_entry
from attntrace.real.disk.hf_folder import CONFIG, open_folder
from attntrace.real.disk.located import Located
from attntrace.real.disk.ollama import locate_ollama

OLLAMA = "ollama:"
ACCEPTED = (
    ", ".join(m.name for m in CATALOG)
    + ", a .gguf file, a model folder, ORG/NAME[@REV] (Hugging Face cache) "
    "or ollama:NAME[:TAG]"
)


def locate(text: str, field: str = "--model") -> Located:
    """The model ``text`` names (see the module's docstring for the order); one
    InputError line naming the file and what was expected where it is not there."""
    for model in CATALOG:
        if model.name == text.lower():
            return Located("catalogue", model.name, "catalogue", catalogued=model)
    if text[: len(OLLAMA)].lower() == OLLAMA:
        return locate_ollama(text[len(OLLAMA) :], field)
    path = _expanded(text, field)
    if text and os.path.lexists(path):
        return open_path(path)
    if is_repo_id(text):
        return locate_cached(text, field)
    if not text.strip():
        raise InputError(field=field, expected=ACCEPTED, found="nothing")
    if _looks_like_path(text):
        raise InputError(
            "no such file or folder",
            source=text,
            expected="a .gguf file or a model folder",
        )
    raise InputError(field=field, expected=ACCEPTED, found=repr(text))


def _expanded(text: str, field: str) -> Path:
    try:
        return Path(text).expanduser()
    except RuntimeError:  # ~user of no such user
        raise InputError("no such user's home", field=field, found=repr(text)) from None


def _looks_like_path(text: str) -> bool:
    return (
        text.startswith(("/", ".", "~"))
        or text.lower().endswith((".gguf", ".safetensors", ".json"))
        or text.count("/") > 1
    )


def _named(folder: Path) -> str:
    """A folder's name for headings: its own, even as ``.`` or ``..``."""
    return Path(os.path.normpath(Path.cwd() / folder)).name or str(folder)


def open_path(path: Path) -> Located:
    """The model at ``path``: a file (GGUF; config.json names its folder) or a folder."""
    if path.is_dir():
        entry = cache_entry(path)
        if entry is not None:
            folder, repo_id, commit = entry
            if commit is None:
                return open_entry(folder, repo_id, None)
            return open_folder(path, repo_id, "path", revision=commit)
        return open_folder(path, _named(path), "path")
    if path.name == CONFIG:
        return open_folder(path.parent, _named(path.parent), "path")
    if path.suffix == ".safetensors":
        raise InputError(
            "a .safetensors file alone says nothing of the model's shape: give the folder "
            "that holds it with its config.json",
            source=str(path),
        )
    return Located("gguf", path.name, "path", (gguf_file(path),), folder=path.parent)
