"""`decode`: a sentence decoded one token at a time through a KV cache, against full attention."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails, usage
from attntrace.cli.model_flags import DTypeFlags, ModelFlags, dtype_flags, model_flags
from attntrace.cli.options import MaxCols, MaxRows, PageExport, json_flag, sentence_argument
from attntrace.cli.pipes import stdout_console
from attntrace.cli.prompts import (
    interrupted,
    prompt_console,
    read_line,
    stdin_is_terminal,
    terminal_keys,
)
from attntrace.cli.saved import page_target
from attntrace.cli.show import presentation
from attntrace.kernel.budget import Extra, also_counted

if TYPE_CHECKING:
    from attntrace.kernel.spec import ModelSpec

if TYPE_CHECKING:
    from attntrace.kernel.documents import Streamed


@model_flags("config sample real_model layer head")
@dtype_flags
def decode(
    words: Annotated[
        list[str] | None,
        sentence_argument("The sentence to decode token by token; default: the model file's."),
    ] = None,
    *,
    chosen: ModelFlags,
    step: Annotated[
        bool, typer.Option("--step", metavar="", help="One decoding step per screen.")
    ] = False,
    as_json: Annotated[bool, json_flag("Write every step's numbers as JSON.")] = False,
    export: PageExport = None,
    precision: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=15,
            metavar="N",
            help="Digits after the point (default 4).",
            show_default=False,
        ),
    ] = None,
    max_rows: MaxRows = 20,
    max_cols: MaxCols = None,
    arithmetic: DTypeFlags,
) -> None:
    """Decode SENTENCE one token at a time through a KV cache; compare with full attention.

    With --model, a layer of a real decoder (smollm2, gemma3) replays its own KV cache. With
    --dtype, every step is computed in that dtype (docs/kernels.md)."""
    from attntrace.api import choose_model, sentence_tokens
    from attntrace.decode.decoder import decode as run_decode

    if step and as_json:
        usage("--json writes every step for programs: it does not mix with --step")
    if chosen.head is not None and as_json:
        usage("decode --json writes every head's numbers: leave out --head (pick with jq)")
    chosen.check(step=step)
    target = page_target(export)
    cast = arithmetic.cast()  # a dtype's flags are checked before anything is read
    sentence = " ".join(words) if words else None
    with bad_input_fails(), also_counted(_written(as_json, target is not None)):
        if chosen.real_model is not None:
            from attntrace.real.layer import decoder_layer

            layer, head = chosen.layer or 0, chosen.head
            model, tokens = decoder_layer(chosen.real_model, sentence, layer, head)
            result = run_decode(model, tokens, cast)
        else:
            config, piped, _ = chosen.model_file()  # decode takes no --set
            model = choose_model(config, chosen.sample, piped)
            tokens = tuple(sentence_tokens(sentence, model))
            result = run_decode(model, tokens, cast)

    def document() -> Streamed:
        from attntrace.decode.decode_json import decode_stream

        return decode_stream(result)

    def view() -> None:
        from attntrace.decode.views.decode import screens

        layout = presentation(precision=precision, max_rows=max_rows, max_cols=max_cols).view
        pages = screens(result, layout, chosen.head)
        console = stdout_console()
        if not step:
            from attntrace.cli.progress import drawing

            with drawing("drawing decode's steps", len(pages)) as drawn:
                for index, page in enumerate(pages):
                    if index:
                        console.print()
                    page(console)
                    drawn.advance()
            return
        from attntrace.forward.views.step import page_through

        heads = (
            "each step shows every head at once: there is no next head"
            if chosen.head is None
            else f"this walk shows head {chosen.head} (--head): another head is another run"
        )
        with interrupted(), terminal_keys() as keys:
            page_through(
                console,
                pages,
                read_line,
                noun="step",
                heads=heads,
                echo=not stdin_is_terminal(),
                prompt_console=prompt_console(),
                read_key=keys,
            )

    def page() -> str:
        from attntrace.page.build import decode_page

        return decode_page(result)

    emit(as_json, document, view, export=target, page=page)


# What drawing one step's page holds (Rich's text and segments): a page at a time, its
# tables cut to --max-rows, so the same at any length (measured: under 1 MiB at 300 and
# at 600 tokens, the rest of decode's peak being the arrays it counts).
PAGE_VIEW_BYTES = 2 << 20


def _written(as_json: bool, page: bool) -> Extra:
    """--json's document and --export's page, built as plain data: every step's rows
    (about two n × n matrices a head) and the full trace's stages; or the tables, drawn
    a step's page at a time."""
    from attntrace.kernel.budget import trace_numbers, written_parts

    def parts(model: ModelSpec, n: int, m: int) -> dict[str, int]:
        numbers = 2 * model.heads * n * m + trace_numbers(model, n, m)
        shown = {} if as_json else {"the page drawn": PAGE_VIEW_BYTES}
        return {**written_parts(numbers, as_json=as_json, page=page, plain=True), **shown}

    return parts
