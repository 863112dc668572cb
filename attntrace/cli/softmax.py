"""`softmax`: one row of scores walked through exp, sum and shares, without a model."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from attntrace.cli.exits import bad_input_fails
from attntrace.cli.pipes import quiet_pipe, stdout_console


def softmax(
    values: Annotated[
        list[str],
        typer.Argument(metavar="V1 V2 ...", help="One row of scores; negative numbers work."),
    ],
    as_json: Annotated[
        bool, typer.Option("--json", metavar="", help="Write the numbers as JSON.")
    ] = False,
    precision: Annotated[
        int, typer.Option(min=0, max=15, metavar="N", help="Digits after the point.")
    ] = 2,
) -> None:
    """The softmax walkthrough of one row: exp, sum, shares, and why the max is subtracted."""
    from attntrace.core.softmax_walk import parse_values, walk

    with bad_input_fails():
        steps = walk(parse_values(values))
    with quiet_pipe():
        if as_json:
            from attntrace.files.serialize import walk_dumps

            sys.stdout.write(walk_dumps(steps) + "\n")
            return
        from attntrace.render.softmax_walk import walkthrough

        stdout_console().print(walkthrough(steps, precision), crop=False)  # a number whole
