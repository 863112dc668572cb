"""`softmax`: one row of scores walked through exp, sum and shares, without a model."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails
from attntrace.cli.model_flags import dtype_names
from attntrace.cli.options import completion, json_flag
from attntrace.cli.pipes import stdout_console

WALK_VALUE_BYTES = 12 << 10  # what the walkthrough holds for each value (softmax)


def softmax(
    values: Annotated[
        list[str],
        typer.Argument(metavar="V1 V2 ...", help="One row of scores; negative numbers work."),
    ],
    as_json: Annotated[bool, json_flag("Write the numbers as JSON.")] = False,
    precision: Annotated[
        int, typer.Option(min=0, max=15, metavar="N", help="Digits after the point.")
    ] = 2,
    dtype: Annotated[
        str,
        typer.Option(
            metavar="D",
            help="Compute the row in float32, float16 or bfloat16 (fp32, fp16, bf16): every "
            "value and step rounded there.",
            autocompletion=completion(dtype_names),
        ),
    ] = "float64",
    online: Annotated[
        bool,
        typer.Option(
            "--online",
            help="The one-pass online softmax (running max, rescaled running sum), element "
            "by element, beside the two-pass one.",
        ),
    ] = False,
) -> None:
    """The softmax walkthrough of one row: exp, sum, shares, and why the max is subtracted."""
    from attntrace.cli.exits import usage
    from attntrace.kernel.casting import Cast

    with bad_input_fails():
        name = Cast.of(dtype).dtype
        row = parse_values(values)
        from attntrace.kernel.budget import refuse_past_budget

        # every value is a line of each step's table, as Rich lays it out (measured at
        # 6,000 values: 6 KB a value walked through, 8.4 KB online)
        refuse_past_budget(
            f"the softmax of {len(row):,} values", {"its walkthrough": WALK_VALUE_BYTES * len(row)}
        )
    if online and name != "float64":
        usage("--online is float64's one-pass softmax: it takes no --dtype")
    if online:
        _online(row, as_json, precision)
        return
    from attntrace.forward.softmax_walk_dtype import walk_in

    with bad_input_fails():
        steps = walk_in(row, name)

    def document() -> str:
        from attntrace.forward.softmax_json import walk_dumps

        return walk_dumps(steps)

    def view() -> None:
        from attntrace.forward.views.softmax_walk import walkthrough

        stdout_console().print(walkthrough(steps, precision), crop=False)  # a number whole

    emit(as_json, document, view)


def _online(row: list[float], as_json: bool, precision: int) -> None:
    """``softmax --online``: the one-pass pass, step by step, and the two-pass weights."""
    from attntrace.kernels.online_softmax import online_softmax

    with bad_input_fails():
        result = online_softmax(row)

    def document() -> str:
        from attntrace.kernels.online_json import online_dumps

        return online_dumps(result)

    def view() -> None:
        from attntrace.kernels.views.online_softmax import online_view

        stdout_console().print(online_view(result, precision), crop=False)

    emit(as_json, document, view)


# A number as a model file writes one (JSON's and YAML 1.2's form, ASCII digits): not
# Python's float() alone, which also takes 1_000, ' 1' and Arabic-Indic digits.
_NUMBER = re.compile(
    r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?(?:inf|nan)", re.IGNORECASE
)


def parse_values(words: Sequence[str]) -> list[float]:
    """Command-line words -> finite floats, or an InputError naming the bad word (its
    messages name softmax's own options: this is the command line's, not the kernel's)."""
    import math

    from attntrace.errors import InputError  # here, not above: --help stays light
    from attntrace.visible import quoted

    numbers = []
    for position, word in enumerate(words):
        if word.startswith("--") and not _NUMBER.fullmatch(word[1:]):
            raise InputError(
                f"{quoted(word)} is no number and no option of softmax (V1 V2 ..., --json, "
                "--precision N, --dtype D, --online; after --, every word is a value)"
            )
        if not _NUMBER.fullmatch(word):
            raise InputError(field=f"value {position + 1}", expected="a number", found=quoted(word))
        number = float(word)
        if not math.isfinite(number):
            raise InputError(
                field=f"value {position + 1}", expected="a finite number", found=quoted(word)
            )
        numbers.append(number)
    if not numbers:
        raise InputError(expected="at least one number (the scores of one row)", found="none")
    return numbers
