"""`run` (compute a trace and show it, or write it as JSON) and `render` (show a saved one).

Both draw through :mod:`attntrace.cli.show`; the checks of --json's own flags
(--stages, --heads) sit here with the command that takes them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails, flags_choose, usage
from attntrace.cli.model_flags import DTypeFlags, ModelFlags, dtype_flags, model_flags
from attntrace.cli.options import (
    ColsFlag,
    Export,
    FocusFlag,
    Map,
    MaxCols,
    MaxHeads,
    MaxRows,
    Overview,
    Precision,
    RowsFlag,
    Step,
    Top,
    json_flag,
    sentence_argument,
)
from attntrace.cli.show import presentation, show
from attntrace.kernel.budget import (
    FLOAT,
    also_counted,
    json_bytes,
    model_bytes,
    page_bytes,
    refuse_past_budget,
    rows_bytes,
    saved_trace_parts,
    trace_numbers,
)

if TYPE_CHECKING:
    from attntrace.forward.views.present import Presentation
    from attntrace.kernel.documents import StreamedJSON
    from attntrace.kernel.spec import ModelSpec
    from attntrace.kernel.trace import Trace


@model_flags("config sample real_model layer head causal context edits")
@dtype_flags
def run(
    words: Annotated[
        list[str] | None,
        sentence_argument(
            "The input sentence (quoted or not); default: the model file's `sentence`."
        ),
    ] = None,
    *,
    chosen: ModelFlags,
    step: Step = False,
    as_json: Annotated[bool, json_flag("Write the whole trace as JSON to stdout.")] = False,
    precision: Precision = None,
    focus: FocusFlag = None,
    map_view: Map = False,
    top: Top = None,
    overview: Overview = False,
    max_rows: MaxRows = 20,
    max_cols: MaxCols = None,
    max_heads: MaxHeads = 4,
    rows: RowsFlag = None,
    cols: ColsFlag = None,
    export: Export = None,
    only_stages: Annotated[
        str | None,
        typer.Option(
            "--stages",
            metavar="NAMES",
            help="With --json: only these stages, comma-separated (e.g. softmax,output).",
        ),
    ] = None,
    only_heads: Annotated[
        str | None,
        typer.Option(
            "--heads",
            metavar="LIST",
            help="With --json: only these heads' stages, comma-separated (e.g. 0,3).",
        ),
    ] = None,
    arithmetic: DTypeFlags,
) -> None:
    """Trace attention over SENTENCE: X, Q, K, V, scores, scaled, softmax, output.

    The model: a model file (--config), a sample (--sample), the worked
    example, or a layer of a trained model (--model; see `attntrace models`)."""
    cast = arithmetic.cast()  # a dtype's flags are checked before anything is read
    if cast is not None and focus is not None:
        usage("--focus is float64's arithmetic by hand: it does not mix with --dtype")
    display = [
        flag
        for flag, on in (
            ("--step", step),
            ("--export", export is not None),
            ("--focus", focus is not None),
            ("--map", map_view),
            ("--overview", overview),
            ("--rows", rows is not None),
            ("--cols", cols is not None),
        )
        if on
    ]
    if as_json and display:
        usage(f"--json writes the whole trace for programs: it does not mix with {display[0]}")
    filters = [
        flag
        for flag, value in (("--stages", only_stages), ("--heads", only_heads))
        if value is not None
    ]
    if not as_json and filters:
        usage(f"{flags_choose(filters)} what --json writes: add --json")
    # --json never loads the renderers (nor Rich): the display flags are checked only
    # when something is displayed.
    how = (
        None
        if as_json
        else presentation(
            precision=precision,
            focus=focus,
            map_view=map_view,
            top=top,
            overview=overview,
            max_rows=max_rows,
            max_cols=max_cols,
            max_heads=max_heads,
            step=step,
            export=export,
            rows=rows,
            cols=cols,
        )
    )
    chosen.check(step=step)
    if chosen.head is not None and only_heads is not None:
        usage("--head already cuts the trace to one head: --heads has nothing left to choose")
    sentence = " ".join(words) if words else None
    with bad_input_fails(), also_counted(shown_parts(as_json, how, focused=focus is not None)):
        trace = chosen.trace(sentence, cast=cast)

    def document() -> StreamedJSON:  # to stdout as written: the renderers are not imported
        from attntrace.forward.trace_json import dump_stream

        with bad_input_fails():
            stages, heads = json_filters(trace, only_stages, only_heads)
        return dump_stream(trace, stages=stages, heads=heads)

    def view() -> None:
        assert how is not None  # only --json has no presentation, and it draws nothing
        show(trace, how)

    emit(as_json, document, view)


def shown_parts(
    as_json: bool, how: Presentation | None, *, focused: bool = False
) -> Callable[[ModelSpec, int, int], dict[str, int]]:
    """What showing a trace holds besides it, counted before it is computed: --json's
    document as it is written, the tables as Rich lays them out, --map's masks and
    order of keys, --export's page, --focus's sums written out by hand."""

    def parts(model: ModelSpec, n: int, m: int) -> dict[str, int]:
        numbers = trace_numbers(model, n, m)
        if how is None:
            if not as_json:
                return {}
            # each head's slice of the learned matrices, made C-ordered for orjson
            copies = model_bytes(model) if model.heads > 1 else 0
            return {"its JSON": json_bytes(numbers), "the weights by head": copies}
        shown = {"the tables": table_bytes(model, n, m, how)}
        if focused:  # every product of a dot product, as a number and as text
            shown["the sums by hand"] = FOCUS_ROWS * rows_bytes(model, n, m)
        if how.map:
            # each head's map: its mask (a byte a cell), the weights with the sink
            # column beside them, and the keys it names
            shown["the maps"] = model.heads * n * (m + 1) * (1 + 8) + 8 * n * how.top
        if how.export is not None and how.export.suffix.lower() == ".html":
            shown["the page"] = page_bytes(page_numbers(model, n, m))
        return shown

    return parts


# Copies of a trace's rows --focus holds writing its sums out (measured 200,000 wide).
FOCUS_ROWS = 8

# Bytes Rich takes for a cell of a table as it lays it out (its text, styles and
# segments), measured at some 380 for one table of 160,000 cells; and for a cell kept
# in a recording (--export .svg or .txt), every table's at once, some 170.
TABLE_CELL_BYTES = 400
RECORDED_CELL_BYTES = 200
FIT_COLUMNS = 334  # columns that fit the widest terminal (1,000 cells), 3 cells each
STAGES_A_HEAD = 12  # tables a head draws at most (Q … output, the variants' stages)


def table_bytes(model: ModelSpec, n: int, m: int, how: Presentation) -> int:
    """The largest table drawn at once (one stage of one head: --max-rows by --max-cols,
    or the columns that fit), and with --export .svg or .txt, every table recorded."""
    numbers = trace_numbers(model, n, m)
    return shown_table_bytes(n, max(m, model.d_model), model.heads, numbers, how)


def shown_table_bytes(rows: int, cols: int, heads: int, numbers: int, how: Presentation) -> int:
    """:func:`table_bytes` of a trace whose widest stage is ``rows`` × ``cols``, of
    ``heads`` heads and ``numbers`` numbers in all."""
    view = how.view
    fit = min(FIT_COLUMNS, shutil.get_terminal_size().columns // 3 + 1)  # COLUMNS, as Rich
    table = min(rows, view.max_rows + 2) * min(
        cols, fit if view.max_cols is None else view.max_cols + 2
    )  # the first and last rows (columns), and the ellipsis
    if how.export is None or how.export.suffix.lower() == ".html":
        return TABLE_CELL_BYTES * table
    shown = heads if view.max_heads is None else min(heads, view.max_heads + 1)
    return TABLE_CELL_BYTES * table + RECORDED_CELL_BYTES * min(
        numbers, shown * STAGES_A_HEAD * table
    )


def page_numbers(model: ModelSpec, n: int, m: int) -> int:
    """The numbers of a trace's explorer page keeps: every head where they fit
    PAGE_NUMBERS, else the first heads that do, at least one."""
    from attntrace.page.build import PAGE_NUMBERS

    numbers = trace_numbers(model, n, m)
    one_head = numbers // model.heads + 3 * (n + m) * model.d_model  # and the shared stages
    return min(numbers, max(PAGE_NUMBERS, one_head))


def json_filters(
    trace: Trace, stages: str | None, heads: str | None
) -> tuple[list[str] | None, list[int] | None]:
    """--stages NAMES and --heads LIST, checked against the trace."""
    from attntrace.errors import InputError

    names = None if stages is None else [n.strip() for n in stages.split(",") if n.strip()]
    known = list(dict.fromkeys(trace.names))
    unknown = [name for name in names or [] if name not in known]
    if names == [] or unknown:  # no name at all (--stages ,) is quoted whole
        raise InputError(
            field="--stages",
            expected=f"names from {', '.join(known)}",
            found=repr(unknown[0] if unknown else stages),
        )
    numbers = None
    if heads is not None:
        parts = [p.strip() for p in heads.split(",") if p.strip()]
        last = trace.model.heads - 1
        if not all(p.isdecimal() and int(p) <= last for p in parts) or not parts:
            raise InputError(
                field="--heads",
                expected=f"head numbers from 0 to {last}, comma-separated",
                found=repr(heads),
            )
        numbers = sorted({int(p) for p in parts})  # 1,1 is head 1
    return names, numbers


def _shown_saved(trace: Trace, how: Presentation) -> dict[str, int]:
    """What showing a saved trace holds: the trace, its largest table as laid out (every
    table recorded, with --export .svg or .txt) and --export's page."""
    from attntrace.page.build import PAGE_NUMBERS

    numbers = sum(s.data.size for s in (*trace.stages, *trace.weights))
    rows, cols = max(
        (s.data.shape for s in trace.stages if s.data.ndim == 2),
        key=lambda shape: shape[0] * shape[1],
        default=(1, 1),
    )
    parts = {
        "the trace": FLOAT * numbers,
        "the tables": shown_table_bytes(rows, cols, trace.model.heads, numbers, how),
    }
    if how.export is not None and how.export.suffix.lower() == ".html":
        kept = min(numbers, max(PAGE_NUMBERS, numbers // trace.model.heads))
        parts["the page"] = page_bytes(kept)
    return parts


def render(
    source: Annotated[
        str, typer.Argument(metavar="TRACE", help="A saved `run --json` trace, or - for stdin.")
    ],
    step: Step = False,
    precision: Precision = None,
    focus: FocusFlag = None,
    map_view: Map = False,
    top: Top = None,
    overview: Overview = False,
    max_rows: MaxRows = 20,
    max_cols: MaxCols = None,
    max_heads: MaxHeads = 4,
    rows: RowsFlag = None,
    cols: ColsFlag = None,
    export: Export = None,
) -> None:
    """Show a saved trace (from `run --json`) as `run` would, without recomputing it."""
    from attntrace.forward.replay import SAVED_TRACE, load_trace
    from attntrace.kernel.reading import read_stdin, read_text

    how = presentation(
        precision=precision,
        focus=focus,
        map_view=map_view,
        top=top,
        overview=overview,
        max_rows=max_rows,
        max_cols=max_cols,
        max_heads=max_heads,
        step=step,
        export=export,
        rows=rows,
        cols=cols,
    )
    if step and source == "-":
        usage("--step reads its keys from stdin, so the trace cannot come from stdin too")
    name = "stdin" if source == "-" else source
    with bad_input_fails(name):
        text = read_stdin(SAVED_TRACE) if source == "-" else read_text(Path(source), SAVED_TRACE)
        refuse_past_budget("reading the saved trace", saved_trace_parts(text))
        trace = load_trace(text, name)
        del text  # not held while the trace is shown
        refuse_past_budget("showing the saved trace", _shown_saved(trace, how))
    show(trace, how)
