"""Model file (YAML or JSON) -> validated :class:`ModelSpec`: reading, and the top-level keys.

:mod:`attntrace.modelfile.parse` turns the text into plain data; this module checks that data
against docs/model-file.md. It reads the file and checks the top level: which keys there
are, and the settings (heads, causal, positions, names). The matrices and vectors
(embeddings, weights, biases, learned positions) are :mod:`attntrace.modelfile.model_matrices`'
job, .npy files beside the model file :mod:`attntrace.modelfile.npy_files`'. Every failure is
one :class:`InputError` naming the file, the field path, what was expected and what was
found (spelled as :mod:`attntrace.kernel.fields` spells it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attntrace import arguments
from attntrace.errors import InputError, describe
from attntrace.kernel import fields, progress
from attntrace.kernel.reading import read_stdin, read_text
from attntrace.kernel.spec import ROPE_PAIRINGS, Matrix, ModelSpec
from attntrace.modelfile.edits import Edit, apply_edits
from attntrace.modelfile.model_budget import check_matrices, check_parse
from attntrace.modelfile.model_matrices import (
    bias_vectors,
    embeddings_table,
    matrix,
    refuse_duplicates,
    weight_matrices,
)
from attntrace.modelfile.model_variants import VARIANT_FIELDS, variants_from
from attntrace.modelfile.npy_files import NpyReader
from attntrace.modelfile.parse import parse_document

# The fields of docs/model-file.md#fields.
KNOWN_FIELDS = (
    "name",
    "description",
    "sentence",
    "embeddings",
    "weights",
    "heads",
    "kv_heads",
    "causal",
    "positions",
    "context",
    "vocabulary",
    "biases",
    "rope_base",
    "rope_pairing",
    "target",
    *VARIANT_FIELDS,
)
REQUIRED_FIELDS = ("embeddings", "weights")


def load_model(path: str | Path, *, source: str | None = None) -> ModelSpec:
    """Read and validate the model file at ``path`` (YAML, or JSON by its ``.json`` suffix).

    ``source`` names the file in error messages (default: the path as given). ``path``
    is a str or a :class:`pathlib.Path` (else a TypeError); a file that cannot be read or
    does not hold a valid model is an :class:`InputError` naming the file and the field.
    The arrays of the spec are read-only.
    """
    path = arguments.path(path, "path", "a file name (str or pathlib.Path)")
    arguments.optional_text(source, "source")
    if not str(path).strip():
        # The caller's name for the file, quoted as api.py quotes config=: not a value
        # read from a file, so not spelled by describe().
        raise InputError(field="path", expected="a file name", found=repr(str(path)))
    return read_model(path, source=source)


def read_model(
    path: str | Path, *, source: str | None = None, edits: Sequence[Edit] = ()
) -> ModelSpec:
    """:func:`load_model` without its argument checks, and with ``edits`` (``--set``)
    made to the parsed file before it is validated (:mod:`attntrace.modelfile.edits`)."""
    source = source or str(path)
    # a big file takes seconds to read and to check: two tasks, so that a display due
    # after the first is drawn as the second starts
    with progress.task(f"reading {source}"):
        try:
            text = read_text(Path(path))
            parsed = check_parse(text, is_json=_is_json(Path(path)))
            document = parse_document(text, source, is_json=_is_json(Path(path)))
        except InputError as error:
            raise error.with_source(source) from None
        del text  # only the parsed document is held while its matrices are converted
    with progress.task(f"checking {source}"):
        return model_from_document(
            document, source, folder=Path(path).parent, edits=edits, parsed=parsed
        )


def load_model_stdin(*, edits: Sequence[Edit] = ()) -> ModelSpec:
    """Read and validate the model file on stdin (``--config -``), named ``stdin``.

    It is JSON if its first non-blank character is ``{``, YAML otherwise (a YAML file
    that starts with a flow mapping ``{`` is read as JSON: give it as a file). A ``.npy``
    matrix is named relative to the current folder. ``edits`` as for :func:`read_model`.
    """
    source = "stdin"
    try:
        text = read_stdin()
        is_json = re.match(r"\s*\{", text) is not None
        parsed = check_parse(text, is_json=is_json)
        document = parse_document(text, source, is_json=is_json)
    except InputError as error:
        raise error.with_source(source) from None
    del text
    return model_from_document(document, source, folder=Path(), edits=edits, parsed=parsed)


def _is_json(path: Path) -> bool:
    return path.suffix.lower() == ".json"


def model_from_document(
    document: Any,
    source: str | None = None,
    *,
    folder: Path | None = None,
    edits: Sequence[Edit] = (),
    parsed: int = 0,
) -> ModelSpec:
    """Check a parsed document against docs/model-file.md and build the :class:`ModelSpec`.

    A matrix (a weight, the embedding table, learned positions) may be given as the name
    of a ``.npy`` file, relative to ``folder`` (the model file's own folder). ``edits``
    are made to the document first (the one given is left as it was); then every error,
    and the spec, name the source as edited: ``model.yaml (with --set WQ[0][1])``.
    ``parsed``: the bytes the parsed document takes (:mod:`.model_budget`), counted
    with the matrices against the memory budget.
    """
    where = edited_source(source, edits) if edits else source
    arrays = NpyReader(folder, where)
    document = apply_edits(document, edits, arrays)
    try:
        return _model(document, where, arrays, named=source, parsed=parsed)
    except InputError as error:  # every check's error, located in the file
        raise error.with_source(where or None) from None


def check_keys(document: Mapping[Any, Any], name: str = "model") -> None:
    """Every key of a Python caller's model mapping a str, and of each mapping in it
    (embeddings, weights, biases): another key is a :class:`TypeError`, the wrong Python
    type, as for :class:`ModelSpec`'s keys (a parsed file's keys are always strings)."""
    for key, value in document.items():
        if not isinstance(key, str):
            raise arguments.wrong_type(key, f"{name} keys", "str")
        if isinstance(value, Mapping):
            check_keys(value, f"{name}[{key!r}]")


def edited_source(source: str | None, edits: Sequence[Edit]) -> str:
    """How errors name an edited model: the source and the paths edited (the first
    three), ``model.yaml (with --set WQ[0][1], causal)``, so a message about a value
    an edit set says where it came from."""
    paths = ", ".join(edit.path for edit in edits[:3]) + (", ..." if len(edits) > 3 else "")
    edited = f"with {edits[0].flag} {paths}"
    return f"{source} ({edited})" if source else edited


def _model(
    document: Any, source: str | None, arrays: NpyReader, *, named: str | None, parsed: int
) -> ModelSpec:
    document = fields.mapping(
        document, None, "a mapping of model fields at the top level (embeddings, weights, ...)"
    )
    refuse_duplicates(document, None)
    fields.known_keys(
        document, KNOWN_FIELDS, None, noun="field", listing="known fields", every=True
    )
    fields.required_keys(document, REQUIRED_FIELDS, None, noun="field")
    check_matrices(document, arrays, parsed)  # .npy headers and the budget, before converting

    embeddings = embeddings_table(document["embeddings"], document.get("vocabulary"), arrays)
    weights = weight_matrices(document["weights"], arrays)
    # Types here; how the shapes fit together, ModelSpec checks (for Python callers too).
    return ModelSpec(
        embeddings=embeddings,
        WQ=weights["WQ"],
        WK=weights["WK"],
        WV=weights["WV"],
        WO=weights.get("WO"),
        heads=_count(document, "heads") or 1,
        kv_heads=_count(document, "kv_heads"),
        causal=fields.flag(document.get("causal", False), "causal"),
        positions=_positions(document.get("positions"), arrays),
        rope_base=_rope_base(document),
        rope_pairing=_rope_pairing(document),
        biases=bias_vectors(document.get("biases")),
        context=_optional_text(document, "context"),
        name=_optional_text(document, "name") or _default_name(named),
        description=_optional_text(document, "description") or "",
        sentence=_optional_text(document, "sentence"),
        source=source,
        target=_target(document.get("target"), arrays),
        variants=variants_from(document),
    )


def _default_name(source: str | None) -> str:
    return Path(source.removeprefix("sample ")).stem if source else "model"


def _count(document: Mapping[str, Any], key: str) -> int | None:
    """A whole number ≥ 1 (heads, kv_heads), or None where the field is absent."""
    value = document.get(key)
    return None if value is None else fields.whole(value, key)


def _positions(value: Any, arrays: NpyReader) -> str | Matrix | None:
    """``none`` (or absent), ``sinusoidal``, ``rope``, ``alibi``, or learned vectors (a
    list, or a .npy file)."""
    if value is None or value == "none":
        return None
    if value in ("sinusoidal", "rope", "alibi"):
        return str(value)
    if isinstance(value, list):
        return matrix(value, "positions")
    if arrays.names_file(value):
        return arrays.load(value, "positions")
    raise InputError(
        field="positions",
        expected="none, sinusoidal, rope, alibi, or a list of position vectors",
        found=describe(value),
    )


def _target(value: Any, arrays: NpyReader) -> Matrix | None:
    """``target``: the block output `--loss mse` pulls toward (rows, or a .npy file)."""
    if value is None:
        return None
    return arrays.load(value, "target") if arrays.names_file(value) else matrix(value, "target")


def _rope_base(document: Mapping[str, Any]) -> float:
    """RoPE's base (default 10000, as in RoFormer); meaningful only with ``positions: rope``."""
    if "rope_base" not in document:
        return 10000.0
    _only_with_rope(document, "rope_base", "sets the angles of rotary positions")
    return fields.number(document["rope_base"], "rope_base")


def _rope_pairing(document: Mapping[str, Any]) -> str:
    """Which dimensions RoPE turns together: ``half`` (i with i + d_k/2, Hugging Face's
    rotate_half; the default) or ``interleaved`` (2i with 2i+1, RoFormer and GPT-J);
    meaningful only with ``positions: rope``."""
    if "rope_pairing" not in document:
        return "half"
    _only_with_rope(
        document, "rope_pairing", "says which dimensions rotary positions turn together"
    )
    return fields.choice(
        document["rope_pairing"], "rope_pairing", ROPE_PAIRINGS, "half or interleaved"
    )


def _only_with_rope(document: Mapping[str, Any], key: str, what: str) -> None:
    """A setting of rotary positions given without them is an error, not ignored."""
    if document.get("positions") != "rope":
        raise InputError(
            f"{key} {what}",
            field=key,
            expected=f"positions: rope with {key}",
            found=f"positions: {document.get('positions', 'none')}",
        )


def _optional_text(document: Mapping[str, Any], key: str) -> str | None:
    value = document.get(key)
    return None if value is None else fields.text(value, key)
