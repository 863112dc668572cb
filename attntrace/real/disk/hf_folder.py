"""A folder as ``save_pretrained`` writes it, or a folder holding one GGUF file.

transformers writes ``config.json``, the weights as one ``model.safetensors`` or as
shards named by ``model.safetensors.index.json``'s ``weight_map``, and the tokenizer's
``tokenizer.json``. A snapshot of the Hugging Face cache is the same folder with each
file a symlink into ``blobs/``. The index wins over a lone ``model.safetensors``, as in
transformers (which looks for the index only when the single file is absent; both at
once is a folder saved twice, and the index is the newer layout). A folder without
config.json but with exactly one ``.gguf`` file is that file (what LM Studio and
``hf download`` of a GGUF repository leave).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from attntrace.errors import InputError
from attntrace.real.disk.files import gguf_file, read_json_object, refusal, regular_file
from attntrace.real.disk.located import Located

CONFIG = "config.json"
SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
TOKENIZER = "tokenizer.json"
#: How many names a folder listing in a message shows.
SHOWN = 4
#: The most entries of a folder looked at (a model folder holds tens).
FOLDER_CAP = 10_000


def folder_names(folder: Path) -> list[str]:
    """The names in ``folder``, sorted, at most :data:`FOLDER_CAP` of them."""
    names: list[str] = []
    try:
        for entry in folder.iterdir():
            names.append(entry.name)
            if len(names) >= FOLDER_CAP:
                break
    except OSError as error:
        raise InputError(
            f"cannot list the folder: {error.strerror or error}", source=str(folder)
        ) from None
    return sorted(names)


def open_folder(
    folder: Path, name: str, origin: str, *, revision: str | None = None, fetch: str | None = None
) -> Located:
    """The model in ``folder``: a Hugging Face folder (kind ``hf-folder``), or its one
    GGUF file (kind ``gguf``); one InputError naming the folder and what was expected
    where it is neither. ``fetch`` is the command that fetches a cache entry again, for
    the messages about missing or dangling files."""
    names = folder_names(folder)
    ggufs = [n for n in names if n.lower().endswith(".gguf")]
    config = folder / CONFIG
    if CONFIG in names:
        weights = safetensors_files(folder, names, fetch)
        if weights:
            regular_file(config, "the model's config.json", fetch)
            read_json_object(config, "the model's config (a JSON object)")
            tokenizer = folder / TOKENIZER if TOKENIZER in names else None
            if tokenizer is not None:
                regular_file(tokenizer, "the tokenizer's tokenizer.json", fetch)
            return Located("hf-folder", name, origin, weights, config, tokenizer, folder, revision)
    if len(ggufs) == 1:
        path = gguf_file(folder / ggufs[0], fetch)
        return Located("gguf", name, origin, (path,), folder=folder, revision=revision)
    raise _no_model(folder, names, ggufs, fetch)


def _no_model(folder: Path, names: list[str], ggufs: list[str], fetch: str | None) -> InputError:
    """Why ``folder`` holds no model attntrace opens, in one line."""
    if len(ggufs) > 1:
        some = ", ".join(ggufs[:SHOWN]) + (", ..." if len(ggufs) > SHOWN else "")
        return InputError(
            f"{len(ggufs)} GGUF files, so which one is meant? Name the file: "
            f"--model {folder / ggufs[0]}",
            source=str(folder),
            found=some,
        )
    if CONFIG in names:
        bins = [n for n in names if n.endswith(".bin") or n.endswith(".pt")]
        found = (
            f"only PyTorch weights ({bins[0]}): attntrace reads safetensors, not pickles"
            if bins
            else "no weights"
        )
        return refusal(
            "config.json without its weights",
            folder,
            expected=f"{SINGLE} or {INDEX} with its shards",
            found=found,
            fetch=fetch,
        )
    cached = [n[len("models--") :].replace("--", "/") for n in names if n.startswith("models--")]
    if cached:
        return InputError(
            f"a Hugging Face cache, not a model: name one of its models as ORG/NAME, "
            f"e.g. --model {cached[0]} (attntrace models lists them)",
            source=str(folder),
        )
    some = ", ".join(names[:SHOWN]) + (", ..." if len(names) > SHOWN else "")
    return refusal(
        "neither a Hugging Face model folder nor a GGUF file",
        folder,
        expected=f"{CONFIG} and {SINGLE} (or its shards), or one .gguf file",
        found=some or "an empty folder",
        fetch=fetch,
    )


def safetensors_files(folder: Path, names: list[str], fetch: str | None) -> tuple[Path, ...]:
    """The weight files: the index's shards (each checked), or ``model.safetensors``;
    none where the folder has neither."""
    if INDEX in names:
        return _shards(folder / INDEX, fetch)
    if SINGLE in names:
        return (regular_file(folder / SINGLE, "the weights, model.safetensors", fetch),)
    return ()


def _shards(index: Path, fetch: str | None) -> tuple[Path, ...]:
    """The files ``index``'s weight_map names, in name order (00001-of-N first), each
    checked to be a regular file inside the folder."""
    what = "a shard index (a JSON object with a weight_map of tensor name -> file)"
    regular_file(index, what, fetch)
    weight_map = read_json_object(index, what).get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise InputError(
            source=str(index),
            field="weight_map",
            expected="an object of tensor name -> shard file",
            found="nothing" if weight_map is None else "an empty or other value",
        )
    files = set()
    for tensor, file in weight_map.items():
        if not isinstance(file, str) or not _inside(file):
            raise InputError(
                source=str(index),
                field=f"weight_map.{tensor}",
                expected="a file name inside the folder (no '..', not absolute)",
                found=repr(file)[:80],
            )
        files.add(file)
    return tuple(
        regular_file(index.parent / file, f"a shard the index names ({file})", fetch)
        for file in sorted(files)
    )


def _inside(file: str) -> bool:
    """Whether ``file`` (from an index) names a file below the folder, not outside."""
    parts = PurePosixPath(file).parts
    return bool(parts) and not PurePosixPath(file).is_absolute() and ".." not in parts
