"""ModelSpec -> a model file (YAML, or JSON for a ``.json`` name): ``train --save``.

The document has the fields of docs/model-file.md, so :func:`attntrace.files.model_file.
load_model` reads it back to the same model: every number is written exactly (YAML
floats as Python's ``repr``, JSON by orjson, both the shortest text that reads back to
the same float64), and a trace of the file read back equals the model's bit for bit.

The file is written whole or not at all: into a temporary file beside it, then renamed
over the name (``os.replace``, atomic on one file system), so a reader never sees half a
model and a failed write leaves what was there before.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

from attntrace.core.spec import ModelSpec
from attntrace.errors import InputError


def model_document(model: ModelSpec) -> dict[str, Any]:
    """The model file's fields for ``model``, as plain data, in the order the docs list
    them. A model with X given (a real model's layer) has no embeddings: refused."""
    if model.given is not None:
        raise InputError("a real model's layer has no embeddings to write: only a model "
                         "file or a sample can be saved")  # fmt: skip
    document: dict[str, Any] = {"name": model.name}
    if model.description:
        document["description"] = model.description
    if model.sentence is not None:
        document["sentence"] = model.sentence
    if model.context is not None:
        document["context"] = model.context
    document["heads"] = model.heads
    if model.kv_heads is not None:
        document["kv_heads"] = model.kv_heads
    document["causal"] = model.causal
    positions = model.positions
    if isinstance(positions, str):
        document["positions"] = positions
        if positions == "rope":
            document["rope_base"] = float(model.rope_base)
            document["rope_pairing"] = model.rope_pairing
    elif positions is not None:
        document["positions"] = positions.tolist()
    document["embeddings"] = {token: vector.tolist() for token, vector in
                              model.embeddings.items()}  # fmt: skip
    weights = {"WQ": model.WQ, "WK": model.WK, "WV": model.WV, "WO": model.WO}
    document["weights"] = {name: w.tolist() for name, w in weights.items() if w is not None}
    if model.biases:
        document["biases"] = {name: b.tolist() for name, b in model.biases.items()}
    if model.target is not None:
        document["target"] = model.target.tolist()
    return document


def model_text(model: ModelSpec, *, as_json: bool) -> bytes:
    """The model file's bytes: JSON (indented, one row of a matrix per line) or YAML."""
    document = model_document(model)
    if as_json:
        import orjson

        return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
    from attntrace.files.yaml_file import dump_yaml

    return dump_yaml(document).encode("utf-8")


def save_model(model: ModelSpec, path: str | Path) -> None:
    """Write ``model`` to ``path`` (JSON where the name ends in ``.json``, any case; else
    YAML), atomically. A folder that does not exist or cannot be written, or a path that
    is a folder, is one :class:`InputError` naming the file."""
    target = Path(path)
    name = str(path)
    data = model_text(model, as_json=target.suffix.lower() == ".json")
    folder = target.parent
    if target.is_dir():
        raise InputError("is a folder: give a file name", source=name, field="--save")
    if not folder.is_dir():
        raise InputError(f"no folder {str(folder)!r} to write into", source=name,
                         field="--save")  # fmt: skip
    temporary: str | None = None
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.",
                                             suffix=".tmp")  # fmt: skip
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        Path(temporary).chmod(0o666 & ~_umask())
        Path(temporary).replace(target)
        temporary = None
    except OSError as error:
        raise InputError(f"cannot write the model file: {error.strerror or error}",
                         source=name, field="--save") from None  # fmt: skip
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                Path(temporary).unlink()


def _umask() -> int:
    """The process's umask (read by setting it and setting it back: there is no getter),
    so the saved file has the permissions a plain ``open`` would have given it."""
    mask = os.umask(0)
    os.umask(mask)
    return mask
