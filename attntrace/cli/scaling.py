"""`scaling`: why the scores are divided by √d_k, measured (docs/learning.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails
from attntrace.cli.options import json_flag

# The core's names for its settings, as the command line spells them.
_FLAGS = {
    "seed": "--seed",
    "keys": "--keys",
    "samples": "--samples",
    "max_dk": "--max-dk",
    "samples × keys × max_dk": "--samples × --keys × --max-dk",
}


def scaling(
    seed: Annotated[
        int, typer.Option(metavar="S", help="The random stream's seed (0 … 2⁶⁴ − 1).")
    ] = 0,
    keys: Annotated[int, typer.Option(metavar="N", help="Scores per softmax row (2 … 4,096).")] = 8,
    samples: Annotated[
        int, typer.Option(metavar="K", help="Rows drawn per d_k (10 … 100,000).")
    ] = 2000,
    max_dk: Annotated[
        int,
        typer.Option(
            "--max-dk",
            metavar="D",
            help="The largest d_k, a power of two (2 … 16,384); d_k = 2, 4, …, D.",
        ),
    ] = 1024,
    as_json: Annotated[
        bool, json_flag("Write every figure as JSON (attntrace/scaling/v1).")
    ] = False,
) -> None:
    """Why ÷√d_k: the softmax of q·k, as it is and divided by √d_k, for d_k = 2 … 1024.

    The variance of q·k, the largest softmax weight, its entropy and the gradient
    through it, measured on random q and k; then the example of Swaroop's "How
    Transformers Actually Compute Attention — A Step-by-Step Breakdown" worked exactly.
    """
    from attntrace.errors import InputError
    from attntrace.learning.scaling import LOWER, measure

    with bad_input_fails():
        try:
            result = measure(seed=seed, keys=keys, samples=samples, max_dk=max_dk)
        except InputError as error:
            field = _FLAGS.get(error.field or "", error.field)
            expected = error.expected
            if expected is not None:
                expected = expected.replace(LOWER, "lower --samples, --keys or --max-dk")
            raise InputError(
                error.message, field=field, expected=expected, found=error.found
            ) from None

    def document() -> dict[str, object]:
        from attntrace.learning.scaling_json import scaling_to_dict

        return scaling_to_dict(result)

    def view() -> None:
        from attntrace.cli.pipes import stdout_console
        from attntrace.learning.views.scaling import scaling_view

        stdout_console().print(scaling_view(result))

    emit(as_json, document, view)
