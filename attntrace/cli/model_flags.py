"""The flags that choose the model, declared once: --config, --sample, --model, --layer,
--head, --causal, --context, --set; and the dtype it is computed in: --dtype,
--softmax-dtype, --accumulate.

A command takes them as one parameter, :class:`ModelFlags` (:func:`model_flags` lists
which, in --help's order) or :class:`DTypeFlags` (:data:`dtype_flags`), and resolves them
with its methods. They are checked here with the flags' own names, before any file is
read (the Python API's choose_model would name its arguments instead).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from attntrace.cli.exits import bad_input_fails, flags_choose, usage
from attntrace.cli.options import Command, completion, flag_group

if TYPE_CHECKING:
    from attntrace.api import Prepared
    from attntrace.kernel.casting import Cast
    from attntrace.kernel.spec import ModelSpec
    from attntrace.kernel.trace import Trace


def sample_names() -> list[str]:
    """--sample's values, for completion: the shipped samples."""
    from attntrace.modelfile.samples import list_samples

    return [sample.name for sample in list_samples()]


def model_names() -> list[str]:
    """--model's values, for completion: the catalogued real models, then the models of
    the Hugging Face cache and Ollama's store by name (their folders' names only, never
    a file opened, so a Tab stays instant). A path being typed completes as files: the
    shell's script falls back to them where nothing here matches."""
    from attntrace.real.catalog import CATALOG
    from attntrace.real.disk.listing import store_names

    return [model.name for model in CATALOG] + store_names()


def dtype_names() -> tuple[str, ...]:
    """--dtype's values (and --softmax-dtype's), for completion."""
    from attntrace.kernel.precision import DTYPES

    return DTYPES


def _accumulate_names() -> tuple[str, ...]:
    from attntrace.kernel.precision import ACCUMULATE

    return ACCUMULATE


# The model's flags, each declared once.
Config = Annotated[
    str | None,
    typer.Option("--config", "-c", metavar="FILE", help="A YAML or JSON model file (- for stdin)."),
]
Sample = Annotated[
    str | None,
    typer.Option(
        "--sample",
        "-s",
        metavar="NAME",
        help="A shipped sample (see `samples`).",
        autocompletion=completion(sample_names),
    ),
]
# What --model accepts, in --help (attntrace.real.disk.locate: the order they are tried);
# \\[ keeps Rich from reading [@REV] as markup (it would vanish).
MODEL_FORMS = (
    "a catalogued name, a .gguf file, a model folder, ORG/NAME\\[@REV] or ollama:NAME[:TAG]"
)
MODEL_HELP = f"{MODEL_FORMS[0].upper()}{MODEL_FORMS[1:]} (see `attntrace models`)."
# A real trained model's layer.
RealModelName = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        metavar="MODEL",
        help=MODEL_HELP,
        show_default=False,
        autocompletion=completion(model_names),
    ),
]
# Edits to the model file or sample before it is traced (docs/check.md: the paths, the
# values, the order).
Edits = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="PATH=VALUE",
        show_default=False,
        help="Edit the model first (repeatable): WQ[0][1]=0.5, embeddings.cat=[1,0], causal=true.",
    ),
]
Layer = Annotated[
    int | None,
    typer.Option(
        min=0, metavar="L", help="With --model: the layer to trace (default 0).", show_default=False
    ),
]
Head = Annotated[
    int | None,
    typer.Option(
        min=0, metavar="H", help="With --model: this head alone (default: all).", show_default=False
    ),
]
# A model file's mask and context, overridden.
Causal = Annotated[
    bool | None,
    typer.Option(
        "--causal/--no-causal",
        help="Mask later tokens (a decoder), overriding the model file.",
        show_default=False,
    ),
]
Context = Annotated[
    str | None,
    typer.Option(
        metavar="SENTENCE",
        help="Cross-attention: take K and V from this sentence (overrides the file).",
    ),
]
# The dtype it is computed in (docs/kernels.md, "The casting rule").
DType = Annotated[
    str | None,
    typer.Option(
        "--dtype",
        metavar="D",
        show_default=False,
        help="Compute in float32, float16 or bfloat16 by the frameworks' casting "
        "rule (default float64).",
        autocompletion=completion(dtype_names),
    ),
]
SoftmaxDType = Annotated[
    str | None,
    typer.Option(
        "--softmax-dtype",
        metavar="D",
        show_default=False,
        help="With --dtype: the softmax's dtype, float32 (default) or D itself.",
        autocompletion=completion(dtype_names),
    ),
]
AccumulateFlag = Annotated[
    str | None,
    typer.Option(
        "--accumulate",
        metavar="WHERE",
        show_default=False,
        help="With --dtype: matrix products summed in float32 (default) or dtype.",
        autocompletion=completion(_accumulate_names),
    ),
]

# By parameter name: a flag without a name of its own (Layer, Head, Context) is named
# after it (layer -> --layer).
MODEL_FLAGS = {
    "config": Config,
    "sample": Sample,
    "real_model": RealModelName,
    "layer": Layer,
    "head": Head,
    "causal": Causal,
    "context": Context,
    "edits": Edits,
}


def model_flags(taken: str) -> Callable[[Command], Command]:
    """The command's parameter typed :class:`ModelFlags` becomes the flags ``taken``: their
    names in :data:`MODEL_FLAGS`, space-separated, in --help's order (a name of one of the
    command's own parameters places that flag among them: see
    :func:`~attntrace.cli.options.flag_group`)."""
    return flag_group(ModelFlags, MODEL_FLAGS, taken.split())


@dataclass(frozen=True)
class ModelFlags:
    """The model the flags choose: a real model's layer (``real_model``), else a model
    file (``config``; ``-`` for stdin), a sample or the worked example, with ``edits``
    (``--set``), ``causal`` and ``context`` made to it."""

    config: str | None = None
    sample: str | None = None
    real_model: str | None = None
    layer: int | None = None
    head: int | None = None  # with --model: this head alone
    causal: bool | None = None
    context: str | None = None
    edits: Sequence[str] = ()

    def check(self, *, step: bool = False) -> None:
        """A usage error naming the flags (choose_model would name its Python arguments):
        one model at most, --layer and --head only with --model, --set not with it (nor
        --causal or --context), and stdin not asked for both the model (``--config -``)
        and step mode's keys."""
        given = [
            flag
            for flag, value in (
                ("--config", self.config),
                ("--sample", self.sample),
                ("--model", self.real_model),
            )
            if value is not None
        ]
        if len(given) > 1:
            usage(f"{given[0]} and {given[1]} both name a model: give one of them")
        parts = [
            flag
            for flag, value in (("--layer", self.layer), ("--head", self.head))
            if value is not None
        ]
        if self.real_model is None and parts:
            usage(f"{flags_choose(parts)} part of a real model: add --model MODEL")
        if self.real_model is not None and self.edits:
            usage(
                "--set edits a model file or a sample: it does not go with --model (a trained "
                "model's weights)"
            )
        if self.real_model is not None and (self.causal is not None or self.context is not None):
            usage("--causal and --context change a model file: a real model has its own mask")
        if step and self.config == "-":
            usage("--step reads its keys from stdin, so the model cannot come from stdin too")

    def stdin_model(self) -> ModelSpec | None:
        """The model file on stdin for ``--config -``, with ``--set``'s edits made to it;
        None for any other --config."""
        if self.config != "-":
            return None
        from attntrace.modelfile.edits import parse_edit
        from attntrace.modelfile.model_file import load_model_stdin

        parsed = [parse_edit(edit) for edit in self.edits]  # before stdin is read
        return load_model_stdin(edits=parsed)

    def model_file(self) -> tuple[str | None, ModelSpec | None, Sequence[str]]:
        """``config``, ``model`` and ``edits`` for the Python API: stdin's model, read and
        edited (:meth:`stdin_model`), for ``--config -``; else --config and --set."""
        model = self.stdin_model()
        if model is not None:
            return None, model, ()
        return self.config, None, self.edits

    def prepared(self, sentence: str | None) -> Prepared:
        """The model file, sample or stdin's model (not --model's), edited, and the
        sentence's tokens. Call it inside ``bad_input_fails()``, after :meth:`check`."""
        from attntrace.api import prepared

        config, model, edits = self.model_file()
        return prepared(
            sentence,
            config=config,
            sample=self.sample,
            model=model,
            causal=self.causal,
            context=self.context,
            edits=edits,
        )

    def trace(
        self, sentence: str | None, *, cast: Cast | None = None, head: int | None = None
    ) -> Trace:
        """The trace the flags name: a real model's layer (cut to --head, or to ``head``
        for a command whose --head is its own), or :meth:`prepared`'s
        model, by ``cast``'s casting rule where given. Call it inside
        ``bad_input_fails()``, after :meth:`check`."""
        if self.real_model is not None:
            from attntrace.real.layer import layer_trace

            cut = self.head if head is None else head
            return layer_trace(self.real_model, sentence, self.layer or 0, cut, cast=cast)
        return self.prepared(sentence).trace(context_given=self.context is not None, cast=cast)


DTYPE_FLAGS = {"dtype": DType, "softmax_dtype": SoftmaxDType, "accumulate": AccumulateFlag}


@dataclass(frozen=True)
class DTypeFlags:
    """The dtype `run` and `decode` compute in (docs/kernels.md, "The casting rule")."""

    dtype: str | None = None  # float64
    softmax_dtype: str | None = None
    accumulate: str | None = None

    def cast(self) -> Cast | None:
        """The casting rule the flags name (None: float64's arithmetic), a bad name
        refused (exit 2) before anything is read."""
        from attntrace.api import cast_of

        with bad_input_fails():
            return cast_of(
                "float64" if self.dtype is None else self.dtype, self.softmax_dtype, self.accumulate
            )


# The command's parameter typed DTypeFlags becomes the three flags.
dtype_flags = flag_group(DTypeFlags, DTYPE_FLAGS, list(DTYPE_FLAGS))
