"""`explore`: a trace full-screen (docs/explore.md), on Textual.

The flags are run's model flags and grad's loss; the trace (and, with a loss named, the
gradients) is computed, its memory counted with the explorer's table, before the screen
opens, so bad input is still one line on stderr and exit 2. Textual is imported only
here, inside the command, and only once stdin and stdout are known to be a terminal
(else one line says to use step mode, exit 2).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated

from attntrace.cli.exits import bad_input_fails, usage
from attntrace.cli.model_flags import DTypeFlags, ModelFlags, dtype_flags, model_flags
from attntrace.cli.objective_flags import objective_from_flags
from attntrace.cli.options import FromToken, LossFlag, ToToken, sentence_argument
from attntrace.cli.prompts import is_terminal
from attntrace.cli.run import TABLE_CELL_BYTES
from attntrace.kernel.budget import Extra, also_counted, trace_bytes

if TYPE_CHECKING:
    from attntrace.explore.sources import Layers, Sources
    from attntrace.kernel.casting import Cast
    from attntrace.kernel.spec import ModelSpec
    from attntrace.learning.grad_trace import GradTrace
    from attntrace.learning.objective import Objective

NOT_A_TERMINAL = "explore needs a terminal on stdin, stdout and stderr; from a pipe, use run --step"


@model_flags("config sample real_model layer causal context edits")
@dtype_flags
def explore(
    words: Annotated[
        list[str] | None,
        sentence_argument(
            "The input sentence (quoted or not); default: the model file's `sentence`."
        ),
    ] = None,
    *,
    chosen: ModelFlags,
    loss: LossFlag = None,
    from_token: FromToken = None,
    to_token: ToToken = None,
    arithmetic: DTypeFlags,
) -> None:
    """Explore a trace full-screen: the stages, every cell, each cell's arithmetic.

    Keys: n/b stage, arrows cell, h/H head, l/L layer (--model), d decode, g grad
    (with a loss), : a stage's name, ? help, q quit. The model: as for `run`."""
    cast = arithmetic.cast()
    chosen.check()
    asked = loss is not None or from_token is not None or to_token is not None
    if asked and cast is not None:
        usage("the gradients are float64's backward pass: --loss, --from, --to not with --dtype")
    sentence = " ".join(words) if words else None
    real = chosen.real_model is not None
    with bad_input_fails(), also_counted(explorer_parts(real=real)):
        trace = chosen.trace(sentence, cast=cast)
        objective = None
        if asked:
            objective = objective_from_flags(loss, from_token, to_token, None, has_target=False)
        first = chosen.layer or 0
        gradients = None if objective is None else grad_of(chosen, sentence, objective, first)
    layers = real_layers(chosen, sentence, cast) if real else None
    crossed = trace.context_tokens is not None  # --context, or the model file's own
    sources = other_views(chosen, sentence, cast, objective, gradients, crossed=crossed)
    # after the input is checked (a bad sample is named even from a pipe), before Textual
    # Textual reads the keys from stdin and draws on stderr; stdout must not be a file
    if not all(is_terminal(stream) for stream in (sys.stdin, sys.stdout, sys.stderr)):
        usage(NOT_A_TERMINAL)

    from attntrace.explore.app import ExploreApp

    # the explorer fills the terminal and follows it when resized: Textual asks shutil,
    # which would take COLUMNS and LINES (--width's) over the terminal's own size
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
    ExploreApp(trace, layers, sources).run()


def explorer_parts(*, real: bool) -> Extra:
    """What the explorer holds besides the trace: the largest stage as its table holds it
    (every cell as text, as Rich lays out run's tables) and, on a real model, the next
    layer's trace while it is computed."""

    def parts(model: ModelSpec, n: int, m: int) -> dict[str, int]:
        shown = {"the table": TABLE_CELL_BYTES * n * max(m, model.d_model)}
        if real:
            shown["the next layer's trace"] = trace_bytes(model, n, m)
        return shown

    return parts


def grad_of(
    chosen: ModelFlags, sentence: str | None, objective: Objective, layer: int
) -> GradTrace:
    """The gradients of the loss the flags name (grad's numbers), of a real model's
    ``layer``. The first layer's are computed before the screen opens, so that a loss
    that does not fit the sentence is refused with exit 2."""
    from attntrace.learning.grad_trace import grad_trace

    if chosen.real_model is not None:
        from attntrace.real.layer import layer_spec

        spec, tokens = layer_spec(chosen.real_model, sentence, layer)
        return grad_trace(spec, tokens, None, objective)
    ready = chosen.prepared(sentence)
    return grad_trace(ready.spec, ready.tokens, ready.key_tokens, objective)


def other_views(
    chosen: ModelFlags,
    sentence: str | None,
    cast: Cast | None,
    objective: Objective | None,
    gradients: GradTrace | None,
    *,
    crossed: bool = False,
) -> Sources:
    """``d`` and ``g``: decode's steps and the gradients of the layer on screen (the
    first layer's gradients are ``gradients``, computed already). A cross-attention
    (``crossed``: ``--context`` or the model file's own context) has no ``d``: decode
    grows a cache over one sentence, so the key and help list leave it out."""
    from attntrace.decode.decoder import Decode, decode
    from attntrace.explore.sources import Sources

    def decoded(layer: int) -> Decode:
        if chosen.real_model is not None:
            from attntrace.real.layer import decoder_layer

            model, tokens = decoder_layer(chosen.real_model, sentence, layer)
            return decode(model, tokens, cast)
        ready = chosen.prepared(sentence)
        return decode(ready.spec, ready.tokens, cast)

    why_not_decode = ""
    if chosen.context is not None:
        why_not_decode = "decode grows a cache over one sentence: not under --context"
    elif crossed:
        why_not_decode = (
            "decode grows a cache over one sentence: this model cross-attends to a context"
        )
    else:
        from attntrace.real.layer import model_for

        if chosen.real_model is not None and not model_for(chosen.real_model).spec.causal:
            why_not_decode = f"{chosen.real_model} is an encoder: there is no cache to grow"
    first = chosen.layer or 0

    def gradients_at(layer: int) -> GradTrace:
        if gradients is not None and layer == first:
            return gradients
        assert objective is not None
        return grad_of(chosen, sentence, objective, layer)

    return Sources(
        decode=None if why_not_decode else decoded,
        grad=None if gradients is None else gradients_at,
        why_not_decode=why_not_decode,
        why_not_grad="g needs a loss: start explore with --from TOKEN --to TOKEN or --loss mse",
    )


def real_layers(chosen: ModelFlags, sentence: str | None, cast: Cast | None) -> Layers:
    """``l`` and ``L``: the model's other layers, each traced as the first was."""
    from attntrace.explore.sources import Layers
    from attntrace.real.layer import layer_trace, model_for

    name = chosen.real_model
    assert name is not None
    spec = model_for(name).spec
    return Layers(
        model=spec.name,
        count=spec.layers,
        current=chosen.layer or 0,
        trace=lambda layer: layer_trace(name, sentence, layer, None, cast=cast),
    )
