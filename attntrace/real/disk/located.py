"""Located: where the model ``--model`` names is, once every file it needs was found.

Locating reads no weights and runs nothing: it answers *which files*, so the reader
that follows (a family's forward pass, ``kv-cache``'s config, ``attntrace models``)
starts from files known to exist, to be regular files and, for GGUF, to start with
the magic.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from attntrace.real.catalog import RealModel

#: What a Located is: a catalogued model, one GGUF file, or a Hugging Face folder.
KINDS = ("catalogue", "gguf", "hf-folder")
#: Where it was found: the catalogue, a path typed, the Hugging Face cache, Ollama.
ORIGINS = ("catalogue", "path", "hf-cache", "ollama")


@dataclass(frozen=True)
class Located:
    """A model on disk (or in the catalogue), its files found and checked.

    ``name`` is what messages and headings call it (``Qwen/Qwen2.5-0.5B-Instruct``,
    ``ollama:llama3.2``, ``model.gguf``); ``weights`` the GGUF file or the safetensors
    files in order (none for a catalogued model, whose files the catalogue finds);
    ``config`` and ``tokenizer`` a folder's ``config.json`` and ``tokenizer.json``
    where there are any; ``folder`` the folder or snapshot; ``revision`` the commit of a
    cache snapshot; ``catalogued`` the catalogue's entry.
    """

    kind: str
    name: str
    origin: str
    weights: tuple[Path, ...] = ()
    config: Path | None = None
    tokenizer: Path | None = None
    folder: Path | None = None
    revision: str | None = None
    catalogued: RealModel | None = None

    @property
    def format(self) -> str:
        """``GGUF``, ``safetensors`` or ``catalogue``, as `attntrace models` shows it."""
        return {"gguf": "GGUF", "hf-folder": "safetensors"}.get(self.kind, "catalogue")
