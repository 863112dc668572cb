"""`flash`: one head's FlashAttention forward pass tile by tile, against the ordinary
trace, with the memory it saves (docs/kernels.md, "attntrace flash"); --step walks the
tiles one per screen, --json writes ``attntrace/flash/v1``.

The model flags are `run`'s (cli/model_flags), all but its --head: --head here is the
head to tile, on any model, not `run --model`'s "this head alone".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails, usage
from attntrace.cli.model_flags import ModelFlags, model_flags
from attntrace.cli.options import (
    MaxCols,
    MaxRows,
    PageExport,
    TablePrecision,
    completion,
    json_flag,
    sentence_argument,
)
from attntrace.cli.saved import page_target
from attntrace.kernel.budget import FLOAT, Extra, also_counted, trace_numbers, written_parts

if TYPE_CHECKING:
    from attntrace.kernel.documents import StreamedJSON
    from attntrace.kernel.spec import ModelSpec
    from attntrace.kernels.flash_report import FlashReport
    from attntrace.ui.view import View

DEFAULT_SRAM = 196_608  # core.flash_report.DEFAULT_SRAM_BYTES, without importing numpy
DEFAULT_TILES = 16  # render.flash.DEFAULT_MAX_TILES, likewise

FlashHead = Annotated[int, typer.Option("--head", min=0, metavar="H", help="The head to tile.")]
BlockQ = Annotated[
    int | None,
    typer.Option(
        "--block-q",
        min=1,
        metavar="N",
        help="Query rows per block (default 2, or n/8 for long inputs).",
        show_default=False,
    ),
]
BlockK = Annotated[
    int | None,
    typer.Option(
        "--block-k",
        min=1,
        metavar="N",
        help="Keys per block (default 2, or m/8 for long inputs).",
        show_default=False,
    ),
]
Variant = Annotated[
    int,
    typer.Option(
        "--variant",
        metavar="1|2",
        autocompletion=completion(lambda: ("1", "2")),
        help="2: FlashAttention-2 (O divided by ℓ once, at the end); "
        "1: FlashAttention (O rescaled and normalised every tile).",
    ),
]
Sram = Annotated[
    int,
    typer.Option(
        "--sram",
        metavar="BYTES",
        help="The SRAM the HBM traffic is counted for (the A100's 192 KiB).",
    ),
]
FlashStep = Annotated[
    bool, typer.Option("--step", metavar="", help="One tile per screen, with a prompt.")
]
MaxTiles = Annotated[
    int,
    typer.Option(
        "--max-tiles",
        min=0,
        metavar="N",
        help="Tiles drawn in full; past N, one line each (0: all in full).",
    ),
]


@model_flags("config sample real_model layer causal context edits")
def flash(
    words: Annotated[
        list[str] | None,
        sentence_argument("The input sentence (quoted or not); default: the model's own."),
    ] = None,
    *,
    chosen: ModelFlags,
    head: FlashHead = 0,
    block_q: BlockQ = None,
    block_k: BlockK = None,
    variant: Variant = 2,
    sram: Sram = DEFAULT_SRAM,
    step: FlashStep = False,
    as_json: Annotated[
        bool, json_flag("Write every tile's m, ℓ and O as JSON (attntrace/flash/v1).")
    ] = False,
    export: PageExport = None,
    precision: TablePrecision = None,
    max_rows: MaxRows = 20,
    max_cols: MaxCols = None,
    max_tiles: MaxTiles = DEFAULT_TILES,
) -> None:
    """FlashAttention tile by tile for one head, checked against standard attention.

    After every tile: the running max m, the sum ℓ and the output O; then that it
    matches standard attention, and the memory it never used."""
    if as_json and step:
        usage("--json writes every tile for programs: it does not mix with --step")
    if variant not in (1, 2):
        usage(f"--variant is 1 (FlashAttention) or 2 (FlashAttention-2), not {variant}")
    if sram < 2:
        usage(f"--sram is at least 2 bytes (one fp16 element), not {sram}")
    chosen.check(step=step)  # --head is the head to tile on every model, not "with --model"
    target = page_target(export)
    sentence = " ".join(words) if words else None
    with bad_input_fails(), also_counted(_tiles_parts(as_json, target is not None)):
        # a head a real model lacks is refused there, naming its heads
        trace = chosen.trace(sentence, head=head)  # a real model's layer, cut to that head
        if chosen.real_model is None:
            _check_head(head, trace.model.heads)
        from attntrace.kernels.flash_report import flash_report

        report = flash_report(trace, head, block_q, block_k, variant, sram)

    def document() -> StreamedJSON:
        from attntrace.kernels.flash_json import flash_stream

        return flash_stream(report)

    def view() -> None:
        from attntrace.ui.view import view_from_flags

        shown_view = view_from_flags(precision, max_rows, max_cols)
        if step:
            _walk(report, shown_view)
        else:
            _tiles(report, shown_view, max_tiles or None)

    def page() -> str:
        from attntrace.page.build import flash_page

        return flash_page(report)

    emit(as_json, document, view, export=target, page=page)


def _tiles_parts(as_json: bool, page: bool) -> Extra:
    """What tiling one head holds besides the trace: every tile's scores and weights
    (two n × m matrices in all), the row statistics, and --json's or the page's numbers."""

    def parts(model: ModelSpec, n: int, m: int) -> dict[str, int]:
        tiles = 2 * n * m + 4 * n * model.d_v
        numbers = tiles + trace_numbers(model, n, m) // model.heads
        return {"the tiles": FLOAT * tiles, **written_parts(numbers, as_json=as_json, page=page)}

    return parts


def _check_head(head: int, heads: int) -> None:
    """A head the model lacks, named with the ones it has."""
    if head >= heads:
        from attntrace.errors import InputError

        raise InputError(
            field="--head",
            expected=f"a head of this model, 0 to {heads - 1}"
            if heads > 1
            else "0, the model's one head",
            found=str(head),
        )


def _tiles(report: FlashReport, view: View, max_tiles: int | None) -> None:
    from attntrace.cli.pipes import stdout_console
    from attntrace.kernels.views.flash import render_flash

    console = stdout_console()
    for renderable in render_flash(report, view, max_tiles):
        console.print(renderable, crop=False)  # a number is never cut


def _walk(report: FlashReport, view: View) -> None:
    from attntrace.cli.pipes import quiet_pipe, stdout_console
    from attntrace.cli.prompts import (
        interrupted,
        prompt_console,
        read_line,
        stdin_is_terminal,
        terminal_keys,
    )
    from attntrace.forward.views.step import page_through
    from attntrace.kernels.views.flash_step import screens

    console = stdout_console()
    with quiet_pipe(), interrupted(), terminal_keys() as keys:
        page_through(
            console,
            screens(report, view),
            read_line,
            noun="tile",
            heads=f"flash traces one head (--head {report.head}): there is no next head here",
            echo=not stdin_is_terminal(),
            prompt_console=prompt_console(),
            read_key=keys,
        )
