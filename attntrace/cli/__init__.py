"""The command line: parse flags, load -> compute -> render or serialize, map errors.

Exit codes (docs/cli.md#exit-codes): 0 success, 2 bad usage or bad input (one line on
stderr, no traceback), 1 a bug, 130 interrupted. Output into a pipe that closes early
(``| head``) ends quietly with 0. Heavy modules (numpy, PyYAML, the renderers) are
imported inside the commands, so ``--help`` and ``--version`` stay fast.

Here: the app, its callback and :func:`main`. Each command family has a module (run,
explore, check, diff, grade, quiz, grad, train, scaling, softmax, decode, flash, kv_cache, real,
samples), registered below in the order ``--help`` lists them; what they share is in
options (flags), model_flags (the model's flags and --dtype's, one parameter each, checked and
resolved), objective_flags (the loss's), emit (JSON or the view), show (drawing a
trace), exits (bad input), pipes (stdout), prompts (step mode's keys), progress and
process (start and exit).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup  # what `import typer` loaded already

from attntrace import __version__
from attntrace.cli import (
    check,
    decode,
    diff,
    explore,
    flash,
    grad,
    grade,
    kv_cache,
    quiz,
    real,
    run,
    samples,
    scaling,
    softmax,
    train,
)
from attntrace.cli.exits import bad_input_fails
from attntrace.cli.options import DrawingCommand, terminal_flags
from attntrace.cli.pipes import drop_stdout
from attntrace.cli.process import (
    FULL,
    ascii_where_needed,
    completion_flags,
    exit_now,
    no_numpy_warnings,
    run_app,
    sane_terminal_size,
    shell_named,
    stdout_is_devnull,
    streams_open,
)
from attntrace.cli.progress import environment_checked, progress_shown
from attntrace.environment import one_blas_thread


class _Attntrace(TyperGroup):
    """The app's group: ``--color`` and ``--width`` before the command's name too, and
    shell completion's two flags (cli/process.py)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.params.extend([*terminal_flags(), *completion_flags()])

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, shell_named(args))


app = typer.Typer(
    name="attntrace",
    cls=_Attntrace,
    help="Trace scaled dot-product attention stage by stage: every matrix, labelled by token.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"attntrace {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    context: typer.Context,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """attntrace: softmax(Q·Kᵀ/√d_k)·V, one stage at a time."""
    # main() has done it for a process; a test runs the app without main()
    sane_terminal_size()
    with bad_input_fails():  # a bad ATTNTRACE_* variable is refused by every command
        environment_checked()
    # one progress display for the whole command, erased when it ends (Ctrl-C, exit 2)
    context.with_resource(progress_shown())


# In the order `attntrace --help` lists them.
app.command(cls=DrawingCommand)(run.run)
app.command(cls=DrawingCommand)(run.render)
app.command(cls=DrawingCommand)(explore.explore)
app.command(cls=DrawingCommand)(check.check)
app.command(cls=DrawingCommand)(diff.diff)
app.command(cls=DrawingCommand)(grade.grade)
app.command(cls=DrawingCommand)(quiz.quiz)
app.command(cls=DrawingCommand)(grad.grad)
app.command(cls=DrawingCommand)(train.train)
app.command(cls=DrawingCommand)(scaling.scaling)
# softmax: -1 is a value, not an unknown option
app.command(context_settings={"ignore_unknown_options": True}, cls=DrawingCommand)(softmax.softmax)
app.command(cls=DrawingCommand)(decode.decode)
app.command(cls=DrawingCommand)(flash.flash)
app.command("kv-cache", cls=DrawingCommand)(kv_cache.kv_cache)
app.command("models", cls=DrawingCommand)(real.models_command)
app.command("heads", cls=DrawingCommand)(real.heads_command)
app.command("samples", cls=DrawingCommand)(samples.samples_command)


def main() -> None:
    """Console-script entry point."""
    if not streams_open():
        # check's and diff's 1 is an answer (differs, changed): their trouble is 2
        command = next((word for word in sys.argv[1:] if not word.startswith("-")), None)
        exit_now(2 if command in ("check", "diff") else 1)
    sane_terminal_size()  # for --help too, which typer draws before any command runs
    ascii_where_needed()  # an ASCII stream: · as *, not UnicodeEncodeError
    no_numpy_warnings()  # stderr holds error lines, not numpy's RuntimeWarnings
    one_blas_thread()  # before any command imports numpy
    try:
        code = run_app(app)
    except SystemExit as done:
        # Rich (printing --help) answers a closed pipe by pointing stdout at /dev/null and
        # exiting 1; a reader that left early is no failure: exit 0, as everywhere else.
        # Only Rich's own exit is read this way, not a code attntrace returned.
        if done.code == 1 and stdout_is_devnull():
            raise SystemExit(0) from None
        raise
    except OSError as error:
        if error.errno not in FULL:  # not the output's fault: a bug, with its traceback
            raise
        # the commands' output is guarded by quiet_pipe; this is typer's --help, --version
        drop_stdout()
        sys.stderr.write(f"attntrace: error: cannot write the output: {error.strerror}\n")
        code = 1
    exit_now(code)
