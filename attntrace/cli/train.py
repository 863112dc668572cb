"""`train`: gradient descent on the block's weights, shown live (docs/learning.md).

The model comes from `run`'s flags (a model file or a sample, not --model), the loss
from the flags `grad` takes too (cli/objective_flags); the numbers from
:func:`attntrace.core.train.train`, the view from render/train and render/train_live,
the JSON from files/train_json, the saved model file from files/model_writer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails, usage
from attntrace.cli.model_flags import check_model_flags, stdin_model
from attntrace.cli.objective_flags import objective_from_flags
from attntrace.cli.options import (
    Causal,
    Config,
    Context,
    Edits,
    FromToken,
    LossFlag,
    Precision,
    Sample,
    ToToken,
    json_flag,
    sentence_argument,
)

if TYPE_CHECKING:
    from attntrace.core.train import OnStep, Training
    from attntrace.render.train_live import LiveTraining

LossHead = Annotated[
    int | None,
    typer.Option("--head", min=0, metavar="H", show_default=False,
                 help="The attend loss of head H alone (default: summed over every head)."),
]  # fmt: skip
NotTaken = Annotated[
    str | None,
    typer.Option("--model", "-m", metavar="NAME", hidden=True, show_default=False),
]  # fmt: skip


def train(
    words: Annotated[
        list[str] | None,
        sentence_argument("The sentence to learn on; default: the model file's `sentence`."),
    ] = None,
    config: Config = None,
    sample: Sample = None,
    real_model: NotTaken = None,
    causal: Causal = None,
    context: Context = None,
    edits: Edits = None,
    loss: LossFlag = None,
    from_token: FromToken = None,
    to_token: ToToken = None,
    head: LossHead = None,
    steps: Annotated[
        int, typer.Option(metavar="N", help="Steps of gradient descent (1 to 100000).")
    ] = 100,
    lr: Annotated[float, typer.Option(metavar="R", help="The learning rate, > 0.")] = 0.5,
    names: Annotated[
        str,
        typer.Option(
            "--train",
            metavar="NAMES",
            help="What to train, comma-separated: WQ, WK, WV, WO, bQ, bK, bV, bO.",
        ),
    ] = "WQ,WK",
    init: Annotated[
        str,
        typer.Option(
            metavar="I", help="model (its own weights) or random (fresh draws of what is trained)."
        ),
    ] = "model",
    seed: Annotated[
        int, typer.Option(metavar="S", help="The seed of --init random (a whole number ≥ 0).")
    ] = 0,
    save: Annotated[
        str | None,
        typer.Option(
            metavar="FILE",
            show_default=False,
            help="Write the trained model as a model file (YAML; JSON for .json).",
        ),
    ] = None,
    as_json: Annotated[
        bool, json_flag("Write the run (settings, history, changes) as JSON to stdout.")
    ] = False,
    precision: Precision = None,
) -> None:
    """Gradient descent on the block's weights toward a loss: watch attention learn.

    W ← W − lr·dL/dW for --steps steps, on the matrices --train names, from the loss
    `grad` takes (--from/--to, or --loss mse). Live in a terminal; a table when piped."""
    from attntrace.api import prepared
    from attntrace.cli.prompts import interrupted

    if real_model is not None:
        usage("--model: train takes model files and samples (--config, --sample), not a "
              "real model (its weights are not retrained here)")  # fmt: skip
    check_model_flags(config, sample, None, None, None, step=False, edits=edits or ())
    if save is not None and save.strip() == "":
        usage("--save: expected a file name, got ''")
    sentence = " ".join(words) if words else None
    with bad_input_fails():
        model = stdin_model(config, edits or ())
        ready = prepared(sentence, config=None if model is not None else config,
                         sample=sample, model=model, causal=causal, context=context,
                         edits=() if model is not None else edits or ())  # fmt: skip
        if save is not None:  # refused before training, not after it
            from attntrace.files.model_writer import check_destination

            check_destination(save)
    objective = objective_from_flags(loss, from_token, to_token, head,
                                     has_target=ready.spec.target is not None)  # fmt: skip
    chosen = [name.strip() for name in names.split(",") if name.strip()]
    live = None if as_json else _live_display(steps, lr, init, seed, chosen, precision)

    def run(on_step: OnStep | None) -> Training:
        from attntrace.core.train import train as descend

        with bad_input_fails():
            return descend(ready.spec, ready.tokens, ready.key_tokens, objective,
                           names=chosen, steps=steps, lr=lr, init=init, seed=seed,
                           on_step=on_step)  # fmt: skip

    with interrupted():
        try:
            training = run(None if live is None else live.on_step)
        finally:
            if live is not None:
                live.stop()
    if save is not None:
        _save(training, sentence, save)

    def document() -> bytes:
        from attntrace.files.train_json import training_bytes

        return training_bytes(training)

    def view() -> None:
        from attntrace.cli.pipes import stdout_console
        from attntrace.render.train import piped_view, summary
        from attntrace.render.view import View

        console = stdout_console()
        shown = View(precision=4 if precision is None else precision)
        parts = piped_view(training, shown) if live is None else summary(training, shown)
        for part in parts:
            console.print(part)
        if save is not None:
            from attntrace.visible import visible

            console.print(f"\nsaved the trained model to {visible(save)} "
                          f"(attntrace run -c {visible(save)})", style="dim")  # fmt: skip

    emit(as_json, document, view)


def _live_display(steps: int, lr: float, init: str, seed: int, names: list[str],
                  precision: int | None) -> LiveTraining | None:  # fmt: skip
    """The live display where stdout is a terminal that redraws (not piped, not dumb)."""
    from attntrace.cli.pipes import stdout_console

    console = stdout_console()
    if not console.is_interactive:
        return None
    from attntrace.render.train import settings_line
    from attntrace.render.train_live import LiveTraining
    from attntrace.render.view import View

    settings = settings_line(list(dict.fromkeys(names)), steps, lr, init, seed)
    return LiveTraining(console, steps, settings,
                        View(precision=4 if precision is None else precision))  # fmt: skip


def _save(training: Training, sentence: str | None, path: str) -> None:
    """The trained model as a model file: named and described as trained, its sentence
    the one it learned on."""
    from dataclasses import replace

    from attntrace.files.model_writer import save_model

    model = training.final
    what = ", ".join(training.names)
    described = (f"{model.name} after {training.steps} steps of gradient descent on {what} "
                 f"(lr {training.lr:g}, from {training.init} weights"
                 f"{f', seed {training.seed}' if training.init == 'random' else ''}) toward "
                 f"{training.loss.formula}.")  # fmt: skip
    saved = replace(model, name=f"{model.name}-trained", description=described,
                    sentence=sentence or model.sentence)  # fmt: skip
    with bad_input_fails():
        save_model(saved, path)
