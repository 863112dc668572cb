"""The real trained models: `models` lists them, `heads` ranks a model's heads.

Their numbers come from :mod:`attntrace.real`; `run --model` and `decode --model` trace
one layer of them.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails
from attntrace.cli.model_flags import MODEL_HELP, model_names
from attntrace.cli.options import completion, json_flag, sentence_argument
from attntrace.cli.pipes import stdout_console


def models_command(
    as_json: Annotated[bool, json_flag("Write the list as JSON.")] = False,
) -> None:
    """List the real trained models attntrace can trace, installed or not, and every
    model in the Hugging Face cache and Ollama's store."""
    from attntrace.real.catalog import CATALOG
    from attntrace.real.disk import listing

    cap = listing.ENTRY_CAP  # read here, so a test can lower it
    found = listing.scan(cap)  # a broken entry is a row with its reason, never an error

    def document() -> dict[str, Any]:
        from attntrace.real.real_json import models_to_dict

        return models_to_dict(CATALOG, found)

    def view() -> None:
        from attntrace.real.views.found import found_lines
        from attntrace.real.views.models import model_table
        from attntrace.ui.fitted import RightTrimmed

        console = stdout_console()
        console.print(RightTrimmed(model_table(CATALOG)))
        console.print()
        for line in found_lines(found, cap):
            console.print(RightTrimmed(line))

    emit(as_json, document, view)


def heads_command(
    words: Annotated[
        list[str] | None, sentence_argument("The sentence (default: the animal sentence).")
    ] = None,
    real_model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            metavar="MODEL",
            help=MODEL_HELP,
            autocompletion=completion(model_names),
        ),
    ] = "minilm",
    query: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="TOKEN",
            show_default=False,
            help="The query token (it; the#7 of a repeated one) or its position "
            "(default sentence: it).",
        ),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            "--to",
            metavar="TOKEN",
            show_default=False,
            help="The key token (animal; the#7 of a repeated one) or its position "
            "(default sentence: animal).",
        ),
    ] = None,
    top: Annotated[
        int, typer.Option(min=0, metavar="N", help="How many heads to list (0: all).")
    ] = 10,
    as_json: Annotated[bool, json_flag("Write every head's weight as JSON.")] = False,
) -> None:
    """Rank every layer × head by the weight one token puts on another.

    The heads worth stepping through with `run --model --layer --head`."""
    from attntrace.real.layer import rank_heads

    with bad_input_fails():
        ranking = rank_heads(real_model, " ".join(words) if words else None, query, key)

    def document() -> dict[str, Any]:
        from attntrace.real.real_json import ranking_to_dict

        return ranking_to_dict(ranking)

    def view() -> None:
        from attntrace.real.views.models import ranking_lines

        console = stdout_console()
        for line in ranking_lines(ranking, top):
            console.print(line, soft_wrap=True)  # the next: line must paste as one line

    emit(as_json, document, view)
