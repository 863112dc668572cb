"""The Python entry point: a sentence and a model in, a :class:`Trace` out; and a person's
own arrays against that trace (:func:`check`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attntrace import arguments
from attntrace.errors import InputError, describe
from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.tokenize import tokenize
from attntrace.kernel.trace import Trace

if TYPE_CHECKING:
    from attntrace.checking.given import GivenArray
    from attntrace.checking.report import CheckReport
    from attntrace.kernel.casting import Cast


@dataclass(frozen=True)
class Names:
    """How messages name the inputs: the CLI's flags, or the Python arguments."""

    sentence: str
    config: str
    causal: str
    context: str
    causal_on: str
    causal_off: str
    context_given: str  # formatted with the context's repr
    edits: str = "--set"  # an edit's errors: ``--set WQ[0][9]: ...``, ``edits WQ[0][9]: ...``
    flags: bool = False  # options are --flags (the CLI), else keyword arguments

    def given_context(self, context: str) -> str:
        return self.context_given.format(repr(context))

    def option(self, name: str) -> str:
        """How an option is named: ``--head`` or ``head``; ``trained`` is ``--model``."""
        if not self.flags:
            return name
        return "--model" if name == "trained" else f"--{name}"


CLI_NAMES = Names(
    "SENTENCE",
    "--config",
    "--causal",
    "--context",
    "--causal",
    "--no-causal",
    "--context {}",
    flags=True,
)
PYTHON_NAMES = Names(
    "sentence",
    "config",
    "causal",
    "context",
    "causal=True",
    "causal=False",
    "context={}",
    edits="edits",
)


def trace_attention(
    sentence: str | None = None,
    *,
    config: str | Path | None = None,
    sample: str | None = None,
    model: ModelSpec | Mapping[str, Any] | None = None,
    causal: bool | None = None,
    context: str | None = None,
    edits: Sequence[str] = (),
    dtype: str = "float64",
    softmax_dtype: str | None = None,
    accumulate: str | None = None,
) -> Trace:
    """Trace attention over ``sentence`` and return every stage.

    The model is ``model`` if given (a mapping with the model file's structure, checked
    exactly as a file is, or a :class:`ModelSpec` from :func:`load_model`), else the file
    ``config``, else the shipped sample ``sample``, else the built-in worked example
    (cat-eats-fish). ``sentence`` defaults to the model's own; ``causal`` and ``context``
    override the model's (as ``--causal`` and ``--context`` do). A model file is
    ``config=``, never ``model=`` (in the CLI, ``--model`` names a trained model).
    ``edits`` are ``PATH=VALUE`` strings, as ``--set`` takes (``["WQ[0][1]=0.5"]``),
    made in order to the model file, sample or mapping before it is checked and before
    ``causal`` and ``context`` apply (docs/check.md); a :class:`ModelSpec` takes none.

    An argument of the wrong Python type is a :class:`TypeError` naming it; bad input
    (an unknown token, a file that does not parse) is an :class:`InputError` with the
    one line the CLI would print. The trace's arrays are read-only.

    ``dtype`` (float32, float16, bfloat16; default float64), with ``softmax_dtype`` and
    ``accumulate``, computes every stage by the casting rule of ``run --dtype``
    (docs/kernels.md): the trace's ``precision`` then holds the rule, each stage's error
    against float64 and the first overflow, which is not refused.

    >>> trace = trace_attention("cat eats fish")
    >>> [round(w, 6) for w in trace["softmax"].data[2].tolist()]
    [0.000848, 0.000848, 0.998304]
    """
    arguments.optional_text(sentence, "sentence")
    if config is not None:
        config = arguments.path(config, "config", "a file name (str or pathlib.Path) or None")
    arguments.optional_text(sample, "sample")
    _check_model_argument(model)
    causal = arguments.optional_flag(causal, "causal")
    arguments.optional_text(context, "context")
    edits = arguments.labels(edits, "edits")
    arguments.text(dtype, "dtype")
    arguments.optional_text(softmax_dtype, "softmax_dtype")
    arguments.optional_text(accumulate, "accumulate")
    cast = cast_of(dtype, softmax_dtype, accumulate, PYTHON_NAMES)
    return traced(
        sentence,
        config=config,
        sample=sample,
        model=model,
        causal=causal,
        context=context,
        edits=edits,
        names=PYTHON_NAMES,
        cast=cast,
    )


def cast_of(
    dtype: str, softmax_dtype: str | None, accumulate: str | None, names: Names = CLI_NAMES
) -> Cast | None:
    """The casting rule named (None for float64); softmax_dtype and accumulate need a
    dtype narrower than float64 (docs/kernels.md, "The casting rule")."""
    from attntrace.kernel.casting import Cast

    try:
        cast = Cast.of(dtype)
        if cast.exact and (softmax_dtype is not None or accumulate is not None):
            given = "softmax_dtype" if softmax_dtype is not None else "accumulate"
            raise InputError(
                f"{names.option(given.replace('_', '-') if names.flags else given)}"
                f" says how a narrower dtype rounds: add {names.option('dtype')} "
                "float32, float16 or bfloat16"
            )
        cast = Cast.of(dtype, softmax_dtype, accumulate)
    except InputError as error:
        if error.field is None:
            raise
        named = names.option(error.field.replace("_", "-") if names.flags else error.field)
        raise InputError(
            error.message, field=named, expected=error.expected, found=error.found
        ) from None
    return None if cast.exact else cast


def _check_model_argument(model: object) -> None:
    """``model=`` takes a spec or a mapping; a file name there says where it goes."""
    if model is None or isinstance(model, ModelSpec | Mapping):
        return
    accepts = "a ModelSpec or a mapping of model fields"
    if isinstance(model, str | Path):
        from attntrace.real.catalog import CATALOG

        name = str(model)
        if name.lower() in {m.name for m in CATALOG}:
            hint = (
                f"a trained model's layer is attntrace.real.layer.trace_layer({name!r}, "
                "sentence, layer)"
            )
        else:
            hint = f"give a model file as config={model!r}"
        raise TypeError(f"{arguments.wrong_type(model, 'model', accepts)}: {hint}")
    raise arguments.wrong_type(model, "model", accepts)


def traced(
    sentence: str | None,
    *,
    config: str | Path | None = None,
    sample: str | None = None,
    model: ModelSpec | Mapping[str, Any] | None = None,
    causal: bool | None = None,
    context: str | None = None,
    edits: Sequence[str] = (),
    names: Names = CLI_NAMES,
    cast: Cast | None = None,
) -> Trace:
    """:func:`trace_attention` without its type checks; messages name ``names``.
    ``cast`` (from :func:`cast_of`) computes it in a narrower dtype."""
    inputs = prepared(
        sentence,
        config=config,
        sample=sample,
        model=model,
        causal=causal,
        context=context,
        edits=edits,
        names=names,
    )
    return inputs.trace(context_given=context is not None, names=names, cast=cast)


@dataclass(frozen=True)
class Prepared:
    """What a trace is computed from: the model (overrides applied) and the tokens.
    `check` needs them as well as the trace, to recompute the model with a mistake."""

    spec: ModelSpec
    tokens: tuple[str, ...]
    key_tokens: tuple[str, ...] | None  # the context's, under cross-attention

    def trace(
        self, *, context_given: bool = False, names: Names = CLI_NAMES, cast: Cast | None = None
    ) -> Trace:
        try:
            if cast is not None:
                from attntrace.forward.dtype import trace_low

                return trace_low(self.spec, self.tokens, cast, self.key_tokens)
            return trace_block(self.spec, self.tokens, self.key_tokens)
        except InputError as error:
            if context_given and error.field == "context":
                # a token of --context, not of the model file, is what is unknown
                raise InputError(error.message, field=names.context) from None
            raise error.with_source(self.spec.source or None) from None


def prepared(
    sentence: str | None,
    *,
    config: str | Path | None = None,
    sample: str | None = None,
    model: ModelSpec | Mapping[str, Any] | None = None,
    causal: bool | None = None,
    context: str | None = None,
    edits: Sequence[str] = (),
    names: Names = CLI_NAMES,
) -> Prepared:
    """The model chosen and ``edits`` made to it (``--set``'s ``PATH=VALUE`` strings),
    then ``causal`` and ``context`` applied, and the sentence's tokens."""
    spec = choose_model(config, sample, model, names, edits=edits)
    overrides: dict[str, Any] = {}
    if causal is not None:
        overrides["causal"] = causal
    if context is not None:
        overrides["context"] = context
    if overrides:
        spec = _override(spec, overrides, names)
    tokens = sentence_tokens(sentence, spec, names)
    keys = None
    if spec.context is not None:  # --context, or else the file's own
        keys = _tokens(context, spec.context, spec.source, names.context, "context")
    return Prepared(spec, tuple(tokens), None if keys is None else tuple(keys))


def _override(spec: ModelSpec, overrides: dict[str, Any], names: Names) -> ModelSpec:
    """The model with --causal / --context applied; a clash names the flag, not the file."""
    causal = overrides.get("causal", spec.causal)
    context = overrides.get("context", spec.context)
    if causal and context is not None:
        if overrides.get("causal"):
            raise InputError(
                "a causal mask hides later tokens of the same sequence, but this model "
                "cross-attends to a context",
                field=names.causal,
                expected=f"{names.causal_off} (or no context)",
                found=names.causal_on,
            )
        raise InputError(
            "cross-attention lets every query see every context token, but the model is "
            "causal (a decoder)",
            field=names.context,
            expected=f"{names.causal_off} with {names.context}",
            found=names.given_context(context),
        )
    return replace(spec, **overrides)


def choose_model(
    config: str | Path | None,
    sample: str | None,
    model: ModelSpec | Mapping[str, Any] | None,
    names: Names = CLI_NAMES,
    *,
    edits: Sequence[str] = (),
) -> ModelSpec:
    """The model named by one of ``model``, ``config`` and ``sample`` (else the worked
    example), with ``edits`` (``PATH=VALUE`` strings) made to it before it is checked."""
    from attntrace.modelfile.edits import parse_edit
    from attntrace.modelfile.model_file import model_from_document, read_model
    from attntrace.modelfile.samples import DEFAULT_SAMPLE, fastest_twin, sample_path

    chosen = [
        n for n, x in (("model", model), ("config", config), ("sample", sample)) if x is not None
    ]
    if len(chosen) > 1:
        raise InputError(f"give one of model, config and sample, not {' and '.join(chosen)}")
    if config is not None and not str(config).strip():
        raise InputError(field=names.config, expected="a file name", found=repr(str(config)))
    if edits and isinstance(model, ModelSpec):
        raise InputError(
            "a ModelSpec is already checked: edits change a model file, a "
            "sample or a mapping of model fields before it is (or change the "
            "spec with dataclasses.replace)",
            field=names.edits,
        )
    parsed = [parse_edit(edit, flag=names.edits) for edit in edits]  # before any file is read
    if isinstance(model, Mapping):
        return model_from_document(model, source="model", edits=parsed)
    if model is not None:
        return model
    if config is not None:
        return read_model(config, edits=parsed)
    name = sample or DEFAULT_SAMPLE
    return read_model(fastest_twin(sample_path(name)), source=f"sample {name}", edits=parsed)


def sentence_tokens(sentence: str | None, model: ModelSpec, names: Names = CLI_NAMES) -> list[str]:
    """The tokens of ``sentence``, or of the model file's own sentence."""
    return _tokens(sentence, model.sentence, model.source, names.sentence, "sentence")


def _tokens(
    given: str | None, from_file: str | None, source: str | None, flag: str, field: str
) -> list[str]:
    """The tokens of a sentence given as an argument, or else of the model file's own."""
    if given is not None:
        text, where, name = given, None, flag
    elif from_file is not None:
        text, where, name = from_file, source, field
    else:
        raise InputError(f"no {field}: give one, or set `{field}` in the model file", source=source)
    tokens = tokenize(text)
    if not tokens:
        raise InputError(
            f"empty {field}",
            source=where,
            field=name,
            expected="at least one token",
            found=repr(text),
        )
    return tokens


def check(
    arrays: Mapping[str, Any] | str | Path,
    *,
    sentence: str | None = None,
    config: str | Path | None = None,
    sample: str | None = None,
    model: ModelSpec | Mapping[str, Any] | None = None,
    trained: str | None = None,
    layer: int | None = None,
    causal: bool | None = None,
    context: str | None = None,
    head: int | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    layout: str | None = None,
    edits: Sequence[str] = (),
) -> CheckReport:
    """Check a person's own attention against attntrace's trace, stage by stage.

    ``arrays`` maps stage names (or their aliases: ``attn``, ``q``, ...) to arrays
    (numpy, PyTorch tensors, nested lists), or names a saved file (``.npz``,
    ``.safetensors``, ``.json``). The model is chosen as in :func:`trace_attention`
    (``config``, ``sample``, ``model``, ``causal``, ``context``), or ``trained`` and
    ``layer`` name a trained model's layer. ``head`` compares that head alone; ``rtol``
    and ``atol`` replace the dtype's tolerance; ``layout`` (``heads-first`` or
    ``tokens-first``) settles a shape that reads two ways; ``edits`` change the model
    first, as in :func:`trace_attention`. The rules are docs/check.md's.

    Returns the :class:`~attntrace.checking.compare.CheckReport`: ``report.ok``,
    ``report.exit_code`` (0 or 1), ``report.first_divergent``, ``report.diagnosis``. Bad
    input is an :class:`InputError`, a wrong Python type a :class:`TypeError`.
    """
    from attntrace.checking.user_arrays import given_arrays, read_user_arrays

    arguments.optional_text(sentence, "sentence")
    if config is not None:
        config = arguments.path(config, "config", "a file name (str or pathlib.Path) or None")
    arguments.optional_text(sample, "sample")
    _check_model_argument(model)
    arguments.optional_text(trained, "trained")
    layer = arguments.optional_whole(layer, "layer")
    causal = arguments.optional_flag(causal, "causal")
    arguments.optional_text(context, "context")
    head = arguments.optional_whole(head, "head")
    rtol, atol = arguments.optional_real(rtol, "rtol"), arguments.optional_real(atol, "atol")
    arguments.optional_text(layout, "layout")
    edits = arguments.labels(edits, "edits")
    if isinstance(arrays, str | Path):
        given = read_user_arrays(arrays)
    elif isinstance(arrays, Mapping):
        given = given_arrays(arrays)
    else:
        raise arguments.wrong_type(
            arrays, "arrays", "a mapping of stage name to array, or a file name"
        )
    return checked(
        given,
        sentence,
        config=config,
        sample=sample,
        model=model,
        trained=trained,
        layer=layer,
        causal=causal,
        context=context,
        head=head,
        rtol=rtol,
        atol=atol,
        layout=layout,
        edits=edits,
        names=PYTHON_NAMES,
        source=str(arrays) if isinstance(arrays, str | Path) else None,
    )


def checked(
    given: Mapping[str, GivenArray],
    sentence: str | None,
    *,
    config: str | Path | None = None,
    sample: str | None = None,
    model: ModelSpec | Mapping[str, Any] | None = None,
    trained: str | None = None,
    layer: int | None = None,
    causal: bool | None = None,
    context: str | None = None,
    head: int | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    layout: str | None = None,
    edits: Sequence[str] = (),
    source: str | None = None,
    names: Names = CLI_NAMES,
) -> CheckReport:
    """:func:`check` without its type checks, the arrays already read (from the file
    ``source``, if they were)."""
    from attntrace.checking.compare import check_arrays
    from attntrace.checking.layout import LAYOUTS

    if layout is not None and layout not in LAYOUTS:
        raise InputError(
            field=names.option("layout"), expected=" or ".join(LAYOUTS), found=repr(layout)
        )
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and not (value >= 0 and math.isfinite(value)):
            raise InputError(
                field=names.option(name), expected="a finite number ≥ 0", found=describe(value)
            )
    from attntrace.kernel.budget import also_counted, checking_parts

    # the arrays, a trace recomputed with a mistake and the comparison, beside the trace
    held = sum(array.data.nbytes for array in given.values())
    with also_counted(checking_parts(held)):
        if trained is not None:
            from attntrace.real import layer as real_layer

            if any(x is not None for x in (config, sample, model, causal, context)) or edits:
                raise InputError(
                    f"{names.option('trained')} names the model: give no "
                    "config, sample, model, causal, context or edits with it"
                )
            real_names = real_layer.CLI_NAMES if names is CLI_NAMES else real_layer.PYTHON_NAMES
            spec, tokens = real_layer.layer_spec(trained, sentence, layer or 0, head, real_names)
            trace = trace_block(spec, tokens)
        else:
            if layer is not None:
                raise InputError(
                    f"{names.option('layer')} is a layer of a trained model: name "
                    f"one with {names.option('trained')}"
                )
            inputs = prepared(
                sentence,
                config=config,
                sample=sample,
                model=model,
                causal=causal,
                context=context,
                edits=edits,
                names=names,
            )
            spec, trace = inputs.spec, inputs.trace(context_given=context is not None, names=names)
        if head is not None and head >= spec.heads:
            raise InputError(
                field=names.option("head"),
                expected=f"a head from 0 to {spec.heads - 1} ({spec.name} has {spec.heads})",
                found=str(head),
            )
        try:
            return check_arrays(spec, trace, given, head=head, rtol=rtol, atol=atol, layout=layout)
        except InputError as error:  # about the arrays (a name, a shape): located in their file
            raise error.with_source(source) from None
