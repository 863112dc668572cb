"""The Python entry point: a sentence and a model in, a :class:`Trace` out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from attntrace.attention import trace_block
from attntrace.errors import InputError
from attntrace.spec import ModelSpec
from attntrace.tokenize import tokenize
from attntrace.trace import Trace


def trace_attention(
    sentence: str | None = None,
    *,
    config: str | Path | None = None,
    sample: str | None = None,
    model: ModelSpec | Mapping[str, Any] | None = None,
    causal: bool | None = None,
    context: str | None = None,
) -> Trace:
    """Trace attention over ``sentence`` and return every stage.

    The model is ``model`` if given (a mapping with the model file's structure, checked
    exactly as a file is, or a :class:`ModelSpec` from :func:`load_model`), else the file
    ``config``, else the shipped sample ``sample``, else the built-in worked example
    (cat-eats-fish). ``sentence`` defaults to the model's own; ``causal`` and ``context``
    override the model's (as ``--causal`` and ``--context`` do). Bad input raises
    :class:`InputError`, as the CLI reports it.

    >>> trace = trace_attention("cat eats fish")
    >>> [round(w, 6) for w in trace["softmax"].data[2].tolist()]
    [0.000848, 0.000848, 0.998304]
    """
    spec = choose_model(config, sample, model)
    overrides: dict[str, Any] = {}
    if causal is not None:
        overrides["causal"] = causal
    if context is not None:
        overrides["context"] = context
    if overrides:
        spec = _override(spec, overrides)
    tokens = sentence_tokens(sentence, spec)
    keys = None
    if spec.context is not None:  # --context, or else the file's own
        keys = _tokens(context, spec.context, spec.source, "--context", "context")
    try:
        return trace_block(spec, tokens, keys)
    except InputError as error:
        if context is not None and error.field == "context":
            # a token of --context, not of the model file, is what is unknown
            raise InputError(error.message, field="--context") from None
        raise error.with_source(spec.source) if spec.source else error from None


def _override(spec: ModelSpec, overrides: dict[str, Any]) -> ModelSpec:
    """The model with --causal / --context applied; a clash names the flag, not the file."""
    causal = overrides.get("causal", spec.causal)
    context = overrides.get("context", spec.context)
    if causal and context is not None:
        if overrides.get("causal"):
            raise InputError(
                "a causal mask hides later tokens of the same sequence, but this model "
                "cross-attends to a context",
                field="--causal",
                expected="--no-causal (or no context)",
                found="--causal",
            )
        raise InputError(
            "cross-attention lets every query see every context token, but the model is "
            "causal (a decoder)",
            field="--context",
            expected="--no-causal with --context",
            found=f"--context {context!r}",
        )
    return replace(spec, **overrides)


def choose_model(
    config: str | Path | None, sample: str | None, model: ModelSpec | Mapping[str, Any] | None
) -> ModelSpec:
    from attntrace.model_file import load_model, model_from_document
    from attntrace.samples import DEFAULT_SAMPLE, fastest_twin, sample_path

    chosen = [x for x in (model, config, sample) if x is not None]
    if len(chosen) > 1:
        raise InputError("give one of model, config and sample")
    if config is not None and not str(config).strip():
        raise InputError(field="--config", expected="a file name", found=repr(str(config)))
    if isinstance(model, Mapping):
        return model_from_document(model, source="model")
    if model is not None:
        return model
    if config is not None:
        return load_model(config)
    name = sample or DEFAULT_SAMPLE
    return load_model(fastest_twin(sample_path(name)), source=f"sample {name}")


def sentence_tokens(sentence: str | None, model: ModelSpec) -> list[str]:
    """The tokens of ``sentence``, or of the model file's own sentence."""
    return _tokens(sentence, model.sentence, model.source, "SENTENCE", "sentence")


def _tokens(
    given: str | None, from_file: str | None, source: str | None, flag: str, field: str
) -> list[str]:
    """The tokens of a sentence given as an argument, or else of the model file's own."""
    if given is not None:
        text, where, name = given, None, flag
    elif from_file is not None:
        text, where, name = from_file, source, field
    else:
        raise InputError(f"no {field}: give one, or set `{field}` in the model file",
                         source=source)  # fmt: skip
    tokens = tokenize(text)
    if not tokens:
        raise InputError(
            f"empty {field}", source=where, field=name, expected="at least one token",
            found=repr(text),
        )  # fmt: skip
    return tokens
