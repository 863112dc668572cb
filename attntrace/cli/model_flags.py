"""The flags that name a model, shared by `run`, `flash` and `decode`: --config,
--sample, --model.

Checked here with the flags' own names, before any file is read (the Python API's
choose_model would name its arguments instead).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attntrace.cli.exits import flags_choose, usage

if TYPE_CHECKING:
    from attntrace.kernel.casting import Cast
    from attntrace.kernel.spec import ModelSpec
    from attntrace.kernel.trace import Trace


def stdin_model(config: str | None, edits: Sequence[str] = ()) -> ModelSpec | None:
    """The model file on stdin for ``--config -``, with ``--set``'s ``edits`` made to it;
    None for any other --config."""
    if config != "-":
        return None
    from attntrace.modelfile.edits import parse_edit
    from attntrace.modelfile.model_file import load_model_stdin

    parsed = [parse_edit(edit) for edit in edits]  # before stdin is read
    return load_model_stdin(edits=parsed)


def check_model_flags(
    config: str | None,
    sample: str | None,
    real_model: str | None,
    layer: int | None,
    head: int | None,
    *,
    step: bool,
    edits: Sequence[str] = (),
    mask_set: bool = False,
) -> None:
    """A usage error naming the flags (choose_model would name its Python arguments):
    one model at most, --layer and --head only with --model, --set not with it (nor
    --causal or --context: ``mask_set``), and stdin not asked for both the model
    (``--config -``) and step mode's keys."""
    given = [flag for flag, value in (("--config", config), ("--sample", sample),
             ("--model", real_model)) if value is not None]  # fmt: skip
    if len(given) > 1:
        usage(f"{given[0]} and {given[1]} both name a model: give one of them")
    parts = [flag for flag, value in (("--layer", layer), ("--head", head)) if value is not None]
    if real_model is None and parts:
        usage(f"{flags_choose(parts)} part of a real model: add --model NAME")
    if real_model is not None and edits:
        usage(
            "--set edits a model file or a sample: it does not go with --model (a trained "
            "model's weights)"
        )
    if real_model is not None and mask_set:
        usage("--causal and --context change a model file: a real model has its own mask")
    if step and config == "-":
        usage("--step reads its keys from stdin, so the model cannot come from stdin too")


def trace_from_flags(
    sentence: str | None,
    config: str | None,
    sample: str | None,
    real_model: str | None,
    layer: int | None,
    head: int | None,
    *,
    causal: bool | None,
    context: str | None,
    edits: Sequence[str],
    cast: Cast | None = None,
) -> Trace:
    """The trace the model flags name: a real model's layer (cut to ``head`` where
    given, with a progress line), or a model file, a sample or stdin's (``--set``'s
    edits made), by ``cast``'s casting rule where given. Call it inside
    ``bad_input_fails()``, after :func:`check_model_flags`."""
    if real_model is not None:
        from attntrace.cli.progress import progress_shown
        from attntrace.real.layer import layer_trace

        with progress_shown():
            return layer_trace(real_model, sentence, layer or 0, head, cast=cast)
    from attntrace.api import traced

    model = stdin_model(config, edits)
    return traced(sentence, config=None if model is not None else config, sample=sample,
                  model=model, causal=causal, context=context,
                  edits=() if model is not None else edits, cast=cast)  # fmt: skip
