"""`softmax`: one row of scores walked through exp, sum and shares, without a model."""

from __future__ import annotations

from typing import Annotated

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails
from attntrace.cli.options import json_flag
from attntrace.cli.pipes import stdout_console


def softmax(
    values: Annotated[
        list[str],
        typer.Argument(metavar="V1 V2 ...", help="One row of scores; negative numbers work."),
    ],
    as_json: Annotated[bool, json_flag("Write the numbers as JSON.")] = False,
    precision: Annotated[
        int, typer.Option(min=0, max=15, metavar="N", help="Digits after the point.")
    ] = 2,
) -> None:
    """The softmax walkthrough of one row: exp, sum, shares, and why the max is subtracted."""
    from attntrace.core.softmax_walk import parse_values, walk

    with bad_input_fails():
        steps = walk(parse_values(values))

    def document() -> str:
        from attntrace.files.serialize import walk_dumps

        return walk_dumps(steps)

    def view() -> None:
        from attntrace.render.softmax_walk import walkthrough

        stdout_console().print(walkthrough(steps, precision), crop=False)  # a number whole

    emit(as_json, document, view)
