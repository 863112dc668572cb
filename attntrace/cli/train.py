"""`train`: gradient descent on the block's weights, shown live (docs/learning.md).

The model comes from `run`'s flags (a model file or a sample, not --model), the loss
from the flags `grad` takes too (cli/objective_flags); the numbers from
:func:`attntrace.learning.train.train`, the view from learning/views/train and
learning/views/train_live, the JSON from learning/train_json, the saved model file from
modelfile/model_writer.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails, usage
from attntrace.cli.model_flags import ModelFlags, model_flags
from attntrace.cli.objective_flags import check_head, objective_from_flags
from attntrace.cli.options import (
    FromToken,
    LossFlag,
    LossHead,
    MaxCols,
    MaxRows,
    TablePrecision,
    ToToken,
    completion,
    json_flag,
    sentence_argument,
)

if TYPE_CHECKING:
    from attntrace.learning.train import OnStep, Training
    from attntrace.learning.views.train import PipedTraining
    from attntrace.learning.views.train_live import LiveTraining
    from attntrace.ui.view import View

# --model, hidden: train's own, to refuse a real model by name
NotTaken = Annotated[
    str | None,
    typer.Option("--model", "-m", metavar="MODEL", hidden=True, show_default=False),
]


@model_flags("config sample real_model causal context edits")
def train(
    words: Annotated[
        list[str] | None,
        sentence_argument("The sentence to learn on; default: the model file's `sentence`."),
    ] = None,
    *,
    chosen: ModelFlags,
    real_model: NotTaken = None,
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
            metavar="I",
            help="model (its own weights) or random (fresh draws of what is trained).",
            autocompletion=completion(lambda: ("model", "random")),
        ),
    ] = "model",
    seed: Annotated[
        int | None,
        typer.Option(
            metavar="S",
            show_default=False,
            help="The seed of --init random (a whole number ≥ 0; default 0).",
        ),
    ] = None,
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
    precision: TablePrecision = None,
    max_rows: MaxRows = 20,
    max_cols: MaxCols = None,
) -> None:
    """Gradient descent on the block's weights toward a loss: watch attention learn.

    W ← W − lr·dL/dW for --steps steps, on the matrices --train names, from the loss
    `grad` takes (--from/--to, or --loss mse). Live in a terminal; a table when piped."""
    from attntrace.cli.pipes import quiet_pipe
    from attntrace.cli.prompts import interrupted, is_terminal

    if real_model is not None:
        usage(
            "--model: train takes model files and samples (--config, --sample), not a "
            "real model (its weights are not retrained here)"
        )
    chosen.check()
    if save is not None and save.strip() == "":
        usage("--save: expected a file name, got ''")
    if seed is not None and init != "random":
        usage("--seed draws the random weights: add --init random")
    sentence = " ".join(words) if words else None
    with bad_input_fails():
        ready = chosen.prepared(sentence)
        if save is not None:  # refused before training, not after it
            from attntrace.modelfile.model_writer import check_destination

            check_destination(save)
    objective = objective_from_flags(
        loss, from_token, to_token, head, has_target=ready.spec.target is not None
    )
    with bad_input_fails():
        check_head(head, ready.spec.heads)
    to_train = [name.strip() for name in names.split(",") if name.strip()]
    drawn = 0 if seed is None else seed
    from attntrace.ui.view import view_from_flags

    shown = view_from_flags(precision, max_rows, max_cols)
    display = None if as_json else _display(steps, lr, init, drawn, to_train, shown)

    def run(on_step: OnStep | None) -> Training:
        from attntrace.kernel.progress import listener, reporting_to
        from attntrace.learning.train import train as descend

        # steps shown as they come (on_step) want no second display on stderr
        with bad_input_fails(), reporting_to(None if on_step else listener()):
            return descend(
                ready.spec,
                ready.tokens,
                ready.key_tokens,
                objective,
                names=to_train,
                steps=steps,
                lr=lr,
                init=init,
                seed=drawn,
                on_step=on_step,
                keep_rows=as_json,
            )

    # Ctrl-C: the live display's line is ended; piped, nothing more is written (--json
    # writes its whole document or nothing; the table's lines printed so far stay).
    with quiet_pipe(), interrupted(end_line=is_terminal(sys.stdout)):
        try:
            training = run(None if display is None else display.on_step)
        finally:
            if display is not None:
                display.stop()
    if save is not None:
        _save(training, sentence, save)

    def document() -> bytes:
        from attntrace.learning.train_json import training_bytes

        return training_bytes(training)

    def view() -> None:
        from attntrace.cli.pipes import stdout_console
        from attntrace.learning.views.train import PipedTraining, summary

        console = stdout_console()
        parts = (
            display.finish(training)
            if isinstance(display, PipedTraining)
            else summary(training, shown)
        )
        for part in parts:
            console.print(part)
        if save is not None:
            from attntrace.visible import visible

            console.print(
                f"\nsaved the trained model to {visible(save)} (attntrace run -c {visible(save)})",
                style="dim",
            )

    emit(as_json, document, view)


def _display(
    steps: int, lr: float, init: str, seed: int, names: list[str], view: View
) -> LiveTraining | PipedTraining:
    """The live display where stdout is a terminal that redraws (not piped, not dumb);
    else the table, printed a line at a time as the steps are reached."""
    from attntrace.cli.pipes import stdout_console
    from attntrace.learning.views.train import PipedTraining, settings_line
    from attntrace.learning.views.train_live import LiveTraining

    console = stdout_console()
    settings = settings_line(list(dict.fromkeys(names)), steps, lr, init, seed)
    if not console.is_interactive:
        return PipedTraining(console, steps, settings, view)
    return LiveTraining(console, steps, settings, view)


def _save(training: Training, sentence: str | None, path: str) -> None:
    """The trained model as a model file: named and described as trained, its sentence
    the one it learned on."""
    from dataclasses import replace

    from attntrace.modelfile.model_writer import save_model

    model = training.final
    what = ", ".join(training.names)
    described = (
        f"{model.name} after {training.steps} steps of gradient descent on {what} "
        f"(lr {training.lr:g}, from {training.init} weights"
        f"{f', seed {training.seed}' if training.init == 'random' else ''}) toward "
        f"{training.loss.formula}."
    )
    saved = replace(
        model,
        name=f"{model.name}-trained",
        description=described,
        sentence=sentence or model.sentence,
    )
    with bad_input_fails():
        save_model(saved, path)
