"""`samples`: the sample model files that ship with attntrace, listed or printed."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from attntrace.cli.exits import bad_input_fails
from attntrace.cli.pipes import quiet_pipe, stdout_console


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
    from attntrace.modelfile.samples import sample_text, summaries

    if name is not None:
        with bad_input_fails():
            text = sample_text(name)
        with quiet_pipe():
            sys.stdout.write(text)
        return

    from attntrace.modelfile.views.listing import sample_lines

    with quiet_pipe():
        console = stdout_console()
        for line in sample_lines(summaries()):
            console.print(line, no_wrap=True, overflow="ellipsis")
