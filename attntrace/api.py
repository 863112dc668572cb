"""The Python entry point: a sentence and a model in, a :class:`Trace` out."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attntrace.attention import trace_head
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
) -> Trace:
    """Trace attention over ``sentence`` and return every stage.

    The model is ``model`` if given (a mapping with the model file's structure, checked
    exactly as a file is, or a :class:`ModelSpec` from :func:`load_model`), else the file
    ``config``, else the shipped sample ``sample``, else the built-in worked example
    (cat-eats-fish). ``sentence`` defaults to the model's own. Bad input raises
    :class:`InputError`, as the CLI reports it.

    >>> trace = trace_attention("cat eats fish")
    >>> [round(w, 6) for w in trace["softmax"].data[2].tolist()]
    [0.000848, 0.000848, 0.998304]
    """
    from attntrace.model_file import load_model, model_from_document
    from attntrace.samples import DEFAULT_SAMPLE, sample_path

    chosen = [x for x in (model, config, sample) if x is not None]
    if len(chosen) > 1:
        raise InputError("give one of model, config and sample")
    if config is not None and not str(config).strip():
        raise InputError(field="--config", expected="a file name", found=repr(str(config)))
    if isinstance(model, Mapping):
        model = model_from_document(model, source="model")
    if model is None:
        if config is not None:
            model = load_model(config)
        else:
            name = sample or DEFAULT_SAMPLE
            model = load_model(sample_path(name), source=f"sample {name}")
    if sentence is not None:
        text, source, field = sentence, None, "SENTENCE"
    elif model.sentence is not None:
        text, source, field = model.sentence, model.source, "sentence"
    else:
        raise InputError(
            "no sentence: give one, or set `sentence` in the model file", source=model.source
        )
    tokens = tokenize(text)
    if not tokens:
        raise InputError(
            "empty sentence",
            source=source,
            field=field,
            expected="at least one token",
            found=repr(text),
        )

    try:
        return trace_head(model, tokens)
    except InputError as error:
        raise error.with_source(model.source) if model.source else error from None
