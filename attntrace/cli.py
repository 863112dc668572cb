"""The command line: parse flags, load -> compute -> render or serialize, map errors.

Exit codes (SPEC.md section 5): 0 success, 2 bad usage or bad input (one line on
stderr, no traceback), 1 a bug, 130 interrupted. Output into a pipe that closes early
(``| head``) ends quietly with 0. Heavy modules (numpy, PyYAML, the renderers) are
imported inside the commands, so ``--help`` and ``--version`` stay fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from attntrace import __version__

if TYPE_CHECKING:
    from rich.console import Console

    from attntrace.errors import InputError

EXIT_INPUT = 2
EXIT_INTERRUPTED = 130

app = typer.Typer(
    name="attntrace",
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
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """attntrace: softmax(Q·Kᵀ/√d_k)·V, one stage at a time."""


def fail(error: InputError) -> NoReturn:
    """Report bad input as one line on stderr and exit 2."""
    sys.stderr.write(f"attntrace: error: {error}\n")
    raise typer.Exit(EXIT_INPUT)


@contextmanager
def quiet_pipe() -> Iterator[None]:
    """End quietly (exit 0) when the reader of stdout goes away, as ``| head`` does."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        # Point stdout at /dev/null so the interpreter's final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise typer.Exit(0) from None


def stdout_console() -> Console:
    """A Console on stdout whose broken pipe ends in :func:`quiet_pipe` (Rich would exit 1)."""
    from rich.console import Console

    class PipeQuietConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return PipeQuietConsole(highlight=False)


@app.command()
def run(
    words: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="SENTENCE",
            help="The input sentence (quoted or not); default: the model file's `sentence`.",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option("--config", "-c", metavar="FILE", help="A YAML or JSON model file."),
    ] = None,
    sample: Annotated[
        str | None,
        typer.Option("--sample", "-s", metavar="NAME", help="A shipped sample (see `samples`)."),
    ] = None,
    step: Annotated[
        bool, typer.Option("--step", metavar="", help="One stage per screen, with a prompt.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", metavar="", help="Write the whole trace as JSON to stdout.")
    ] = False,
    precision: Annotated[
        int, typer.Option(min=0, max=15, metavar="N", help="Digits after the point in tables.")
    ] = 4,
) -> None:
    """Trace attention over SENTENCE: X, Q, K, V, scores, scaled, softmax, output."""
    from attntrace.api import trace_attention
    from attntrace.errors import InputError

    if step and as_json:
        fail(InputError("--step and --json do not mix: --json writes the whole trace at once"))
    if config is not None and sample is not None:
        fail(InputError("--config and --sample both name a model: give one of them"))
    sentence = " ".join(words) if words else None
    try:
        trace = trace_attention(sentence, config=config, sample=sample)

    except InputError as error:
        fail(error)

    with quiet_pipe():
        if as_json:  # plain dicts to stdout: the renderers are not even imported
            from attntrace.serialize import dumps

            sys.stdout.write(dumps(trace) + "\n")
            return
        from attntrace.render.tables import View, render_trace

        view = View(precision=precision)
        if step:
            from rich.console import Console

            from attntrace.render.step import run_steps

            typing_person = sys.stdin.isatty()
            # Stages to a file, keys from a person: the prompts must still reach them.
            talk = Console(stderr=True) if typing_person and not sys.stdout.isatty() else None
            try:
                run_steps(
                    stdout_console(),
                    trace,
                    _read_line,
                    view,
                    echo=not typing_person,
                    prompt_console=talk,
                )
            except KeyboardInterrupt:  # Ctrl-C at a prompt: end the line, exit 130
                sys.stdout.write("\n")
                raise typer.Exit(EXIT_INTERRUPTED) from None
        else:
            console = stdout_console()
            for renderable in render_trace(trace, view):
                console.print(renderable)


def _read_line() -> str | None:
    """One line of stdin without its newline, or None at end of input."""
    line = sys.stdin.readline()
    return line.rstrip("\r\n") if line else None


@app.command("samples")
def samples_command(
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="[NAME]",
            help="Print this sample's model file (to read, or to start your own from).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """List the sample models that ship with attntrace, or print one of them."""
    from attntrace.errors import InputError
    from attntrace.samples import list_samples, sample_text, summarize

    if name is not None:
        try:
            text = sample_text(name)
        except InputError as error:
            fail(error)
        with quiet_pipe():
            sys.stdout.write(text)
        return

    from attntrace.render.listing import sample_lines

    summaries = [summarize(sample) for sample in list_samples()]
    with quiet_pipe():
        console = stdout_console()
        for line in sample_lines(summaries):
            console.print(line, no_wrap=True, overflow="ellipsis")


def main() -> None:
    """Console-script entry point."""
    app()
