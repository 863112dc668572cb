"""`grad`: the backward pass of the attention block from a loss, every gradient a table
(docs/learning.md); --step walks it, --focus takes one row through the softmax's
Jacobian, --json writes ``attntrace/grad/v1``.

The model flags are `run`'s (cli/model_flags) but for --head, which is the loss's here;
the loss flags are made one Objective by cli/objective_flags, once the model (and so
whether it has a target) is known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails, usage
from attntrace.cli.model_flags import ModelFlags, model_flags
from attntrace.cli.objective_flags import check_head, objective_from_flags
from attntrace.cli.options import (
    ColsFlag,
    FromToken,
    LossFlag,
    LossHead,
    MaxCols,
    MaxHeads,
    MaxRows,
    PageExport,
    RowsFlag,
    TablePrecision,
    ToToken,
    json_flag,
    sentence_argument,
)
from attntrace.cli.saved import page_target
from attntrace.kernel.budget import (
    Extra,
    also_counted,
    square_bytes,
    trace_numbers,
    written_parts,
)

if TYPE_CHECKING:
    from attntrace.kernel.documents import StreamedJSON
    from attntrace.kernel.spec import ModelSpec
    from attntrace.learning.grad_trace import GradTrace
    from attntrace.ui.view import View

GradStep = Annotated[
    bool, typer.Option("--step", metavar="", help="One gradient per screen, with a prompt.")
]
GradFocus = Annotated[
    str | None,
    typer.Option(
        "--focus",
        metavar="TOKEN",
        show_default=False,
        help="One query row through the softmax backward by hand (e.g. the --from token).",
    ),
]


@model_flags("config sample real_model layer causal context edits")
def grad(
    words: Annotated[
        list[str] | None,
        sentence_argument("The input sentence (quoted or not); default: the model's own."),
    ] = None,
    *,
    chosen: ModelFlags,
    loss: LossFlag = None,
    from_token: FromToken = None,
    to_token: ToToken = None,
    head: LossHead = None,
    step: GradStep = False,
    focus: GradFocus = None,
    as_json: Annotated[
        bool, json_flag("Write every gradient as JSON (attntrace/grad/v1).")
    ] = False,
    export: PageExport = None,
    precision: TablePrecision = None,
    max_rows: MaxRows = 20,
    max_cols: MaxCols = None,
    max_heads: MaxHeads = 4,
    rows: RowsFlag = None,
    cols: ColsFlag = None,
) -> None:
    """The backward pass from a loss: every gradient, as a table beside its stage.

    From dL/d output back to dL/d X and the weights, each with its formula and shape."""
    display = [
        flag
        for flag, on in (
            ("--step", step),
            ("--focus", focus is not None),
            ("--rows", rows is not None),
            ("--cols", cols is not None),
        )
        if on
    ]
    if as_json and display:
        usage(f"--json writes the gradients for programs: it does not mix with {display[0]}")
    if step and focus is not None:
        usage("--step and --focus are different views: choose one")
    target = page_target(export)
    chosen.check(step=step)  # --head is the loss's here, not "trace this head alone"
    sentence = " ".join(words) if words else None
    with bad_input_fails():
        if chosen.real_model is not None:
            from attntrace.real.layer import layer_spec

            spec, tokens = layer_spec(chosen.real_model, sentence, chosen.layer or 0)
            keys = None
        else:
            ready = chosen.prepared(sentence)
            spec, tokens, keys = ready.spec, ready.tokens, ready.key_tokens
    # Under mse (which reads every head) --head is only --focus's: the head to take by hand
    objective = objective_from_flags(
        loss,
        from_token,
        to_token,
        head,
        has_target=spec.target is not None,
        head_elsewhere=focus is not None,
    )
    with bad_input_fails():
        check_head(head, spec.heads)
        from attntrace.learning.grad_trace import grad_trace

        with also_counted(_written(as_json, target is not None, focus is not None)):
            traced = grad_trace(spec, tokens, keys, objective)

    def document() -> StreamedJSON:
        from attntrace.learning.grad_json import grad_stream

        return grad_stream(traced)

    def view() -> None:
        from attntrace.ui.view import view_from_flags

        shown_view = view_from_flags(precision, max_rows, max_cols, max_heads)
        if rows is not None or cols is not None:
            from attntrace.cli.show import chosen_view
            from attntrace.ui.shown import shown_trace

            forward = traced.forward
            shown_view = chosen_view(forward, shown_trace(forward), shown_view, rows, cols)
        if step:
            _walk(traced, shown_view)
        elif focus is not None:
            _focus(traced, focus, head, shown_view)
        else:
            _tables(traced, shown_view)

    def page() -> str:
        from attntrace.page.build import grad_page

        return grad_page(traced)

    emit(as_json, document, view, export=target, page=page)


# n × m matrices a head --focus holds tracing a row's gradient by hand (measured: ten,
# at 600 and at 1,200 tokens)
FOCUS_SQUARES = 10


def _written(as_json: bool, page: bool, focused: bool = False) -> Extra:
    """--json's document and --export's page: the forward trace and its gradients; and
    --focus's sums by hand."""

    def parts(model: ModelSpec, n: int, m: int) -> dict[str, int]:
        numbers = 2 * trace_numbers(model, n, m) + model.heads * n * m
        focus = {"the focus": FOCUS_SQUARES * square_bytes(model, n, m)} if focused else {}
        return {**written_parts(numbers, as_json=as_json, page=page), **focus}

    return parts


def _tables(grad: GradTrace, view: View) -> None:
    from attntrace.cli.pipes import stdout_console
    from attntrace.learning.views.grad import render_grad, shown_grad

    console = stdout_console()
    for renderable in render_grad(shown_grad(grad), view):
        console.print(renderable, crop=False)  # a number is never cut


def _walk(grad: GradTrace, view: View) -> None:
    from attntrace.cli.pipes import quiet_pipe, stdout_console
    from attntrace.cli.prompts import (
        interrupted,
        prompt_console,
        read_line,
        stdin_is_terminal,
        terminal_keys,
    )
    from attntrace.learning.views.grad import shown_grad
    from attntrace.learning.views.grad_step import run_grad_steps

    console = stdout_console()
    with quiet_pipe(), interrupted(), terminal_keys() as keys:
        run_grad_steps(
            console,
            shown_grad(grad),
            read_line,
            view,
            echo=not stdin_is_terminal(),
            prompt_console=prompt_console(),
            read_key=keys,
        )


def _focus(grad: GradTrace, token: str, head: int | None, view: View) -> None:
    """--focus TOKEN: that query row of the head (--head, else 0) through the softmax
    backward, by hand."""
    from attntrace.cli.pipes import stdout_console
    from attntrace.learning.views.grad import shown_grad
    from attntrace.learning.views.grad_focus import grad_focus_panel

    row, note = _focus_row(grad, token)
    shown = 0 if head is None else head
    stdout_console().print(grad_focus_panel(shown_grad(grad), row, shown, view, note), crop=False)


def _focus_row(grad: GradTrace, token: str) -> tuple[int, str]:
    """The 0-based query row --focus TOKEN names (as run's --focus names one)."""
    from attntrace.forward.focus import resolve_position

    with bad_input_fails():
        return resolve_position(grad.forward.tokens, token, "--focus")
