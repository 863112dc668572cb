"""A Hugging Face folder's tensors, by name: one ``model.safetensors`` or its shards.

``save_pretrained`` writes either one ``model.safetensors`` or, past ``max_shard_size``,
``model-00001-of-0000N.safetensors`` files and ``model.safetensors.index.json``, whose
``weight_map`` names the shard of each tensor (transformers' ``modeling_utils.py``,
``load_sharded_checkpoint``). Each file is read with attntrace's own reader
(:mod:`attntrace.real.weights.safetensors`: read, never mapped), opened the first time one
of its tensors is asked for; F32, F16 and BF16 come back widened to float64, exactly.

Names are asked for as a causal LM's ``state_dict`` has them (``model.layers.0...``,
``lm_head.weight``). A folder saved from the bare model (``LlamaModel``) has no ``model.``
prefix, and a multimodal Gemma 3 keeps its language model under
``model.language_model.`` (transformers 5) or ``language_model.model.`` (4.x): the
prefix is found once, here, from where the embedding table is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from attntrace.errors import InputError
from attntrace.kernel.reading import naming, read_small
from attntrace.real.families.tensors import Tensor
from attntrace.real.weights.safetensors import SafetensorsFile

SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
INDEX_LIMIT = 50_000_000  # bytes: a 400-shard index of a large model is a few MB
_FLOATS = ("F64", "F32", "F16", "BF16")
# Where a model's own tensors may sit: the prefix that replaces "model." in a name asked.
_PREFIXES = ("model.", "", "model.language_model.", "language_model.model.")
_EMBEDDING = "embed_tokens.weight"


class FolderTensors:
    """The tensors of a Hugging Face folder (:class:`~attntrace.real.families.tensors
    .TensorSource`)."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._files: dict[str, SafetensorsFile] = {}
        index = folder / INDEX
        if index.is_file():
            self._where = _weight_map(index)
        elif (folder / SINGLE).is_file():
            single = self._open(SINGLE)
            self._where = dict.fromkeys(single, SINGLE)
        else:
            pickled = sorted(p.name for p in folder.glob("*.bin"))
            raise InputError(
                "no weights in this folder attntrace reads",
                source=str(folder),
                expected=f"{SINGLE} or {INDEX} with its shards",
                found=f"only {pickled[0]} (PyTorch's pickle, which attntrace does not load)"
                if pickled
                else "neither",
            )
        self._prefix = next((p for p in _PREFIXES if p + _EMBEDDING in self._where), "model.")

    @property
    def path(self) -> Path:
        return self._folder

    def _name(self, name: str) -> str:
        """``name`` as the folder stores it (its model prefix in place of ``model.``)."""
        if name.startswith("model.") and self._prefix != "model.":
            return self._prefix + name.removeprefix("model.")
        return name

    def file_of(self, name: str) -> Path:
        """The file tensor ``name`` is in (the folder where it is nowhere), for messages."""
        stored = self._where.get(self._name(name))
        return self._folder / stored if stored else self._folder

    def _open(self, file: str) -> SafetensorsFile:
        opened = self._files.get(file)
        if opened is None:
            path = self._folder / file
            if not path.is_file():
                raise InputError(
                    "a shard the index names is missing",
                    source=str(self._folder / INDEX),
                    field="weight_map",
                    expected=f"the file {file}",
                    found="no such file",
                )
            opened = self._files[file] = SafetensorsFile(path)
        return opened

    def _stored(self, name: str) -> tuple[SafetensorsFile, str]:
        stored = self._name(name)
        file = self._where.get(stored)
        if file is None:
            raise InputError(
                "a tensor the model needs is missing",
                source=str(self._folder),
                field=name,
                expected="the tensor, as transformers names it",
                found="no such tensor",
            )
        tensors = self._open(file)
        if stored not in tensors:
            raise InputError(
                "the index names a tensor its shard does not hold",
                source=str(self._folder / file),
                field=stored,
                expected=f"the tensor ({INDEX} says it is here)",
                found="no such tensor",
            )
        dtype = tensors.dtype_name(stored)
        if dtype not in _FLOATS:
            raise InputError(
                source=str(self._folder / file),
                field=stored,
                expected="a float tensor (" + ", ".join(_FLOATS) + ")",
                found=dtype,
            )
        return tensors, stored

    def has(self, name: str) -> bool:
        return self._name(name) in self._where

    def shape(self, name: str) -> tuple[int, ...]:
        tensors, stored = self._stored(name)
        return tuple(tensors.shape(stored))

    def tensor(self, name: str) -> Tensor:
        tensors, stored = self._stored(name)
        return np.asarray(tensors[stored], dtype=np.float64)

    def rows(self, name: str, ids: Sequence[int]) -> Tensor:
        tensors, stored = self._stored(name)
        return np.asarray(tensors.rows(stored, ids), dtype=np.float64)


def _weight_map(index: Path) -> dict[str, str]:
    """The index's ``weight_map``, checked: every value a plain file name in the folder."""
    source = str(index)
    with naming(source):
        raw = read_small(index, INDEX_LIMIT)
    try:
        document: Any = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(source=source, expected="JSON", found=str(error)) from None
    weight_map = document.get("weight_map") if isinstance(document, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise InputError(
            source=source,
            field="weight_map",
            expected="an object naming each tensor's file",
            found=repr(weight_map)[:80],
        )
    for name, file in weight_map.items():
        if (
            not isinstance(file, str)
            or Path(file).name != file
            or not file.endswith(".safetensors")
        ):
            raise InputError(
                source=source,
                field=f"weight_map.{name}",
                expected="a .safetensors file name in the folder",
                found=repr(file)[:80],
            )
    return weight_map
