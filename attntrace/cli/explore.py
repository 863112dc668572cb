"""`explore`: a trace full-screen (docs/explore.md), on Textual.

The flags are run's model flags; the trace is computed (and its memory counted, the
explorer's table with it) before the screen opens, so bad input is still one line on
stderr and exit 2. Textual is imported only here, inside the command, and only once
stdin and stdout are known to be a terminal.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

from attntrace.cli.exits import bad_input_fails, usage
from attntrace.cli.model_flags import DTypeFlags, ModelFlags, dtype_flags, model_flags
from attntrace.cli.options import sentence_argument
from attntrace.cli.prompts import is_terminal
from attntrace.cli.run import TABLE_CELL_BYTES
from attntrace.kernel.budget import Extra, also_counted, trace_bytes

if TYPE_CHECKING:
    from attntrace.explore.layers import Layers
    from attntrace.kernel.casting import Cast
    from attntrace.kernel.spec import ModelSpec

NOT_A_TERMINAL = "explore needs a terminal; use run --step from a pipe"


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
    arithmetic: DTypeFlags,
) -> None:
    """Explore a trace full-screen: the stages, every cell, each cell's arithmetic.

    Keys: n/b stage, arrows cell, h/H head, l/L layer (--model), : a stage's name,
    ? help, q quit. The model: as for `run`."""
    cast = arithmetic.cast()
    chosen.check()
    if not (is_terminal(sys.stdin) and is_terminal(sys.stdout)):
        usage(NOT_A_TERMINAL)
    sentence = " ".join(words) if words else None
    with bad_input_fails(), also_counted(explorer_parts(real=chosen.real_model is not None)):
        trace = chosen.trace(sentence, cast=cast)
    layers = None if chosen.real_model is None else real_layers(chosen, sentence, cast)

    from attntrace.explore.app import ExploreApp

    ExploreApp(trace, layers).run()


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


def real_layers(chosen: ModelFlags, sentence: str | None, cast: Cast | None) -> Layers:
    """``l`` and ``L``: the model's other layers, each traced as the first was."""
    from attntrace.explore.layers import Layers
    from attntrace.real.catalog import find_model
    from attntrace.real.layer import layer_trace

    assert chosen.real_model is not None
    spec = find_model(chosen.real_model)
    return Layers(
        model=spec.name,
        count=spec.layers,
        current=chosen.layer or 0,
        trace=lambda layer: layer_trace(spec.name, sentence, layer, None, cast=cast),
    )
