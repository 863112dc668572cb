"""`diff`: two traces compared stage by stage, exit 0 when nothing changed, 1 when
something did, 2 on bad input (as ``cmp`` and ``diff`` use them).

A and B are saved traces (``run --json``; either may be ``-`` for stdin), or one model
traced twice: as it is, and with the ``--set`` edits. Which form is meant is told by the
flags: a model flag (``--config``, ``--sample``, ``--set``) makes the words a SENTENCE;
without one they must be two saved traces. A word that reads as a saved trace (``-``,
``*.json``) beside a model flag is a usage error, not a sentence.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails, usage
from attntrace.cli.model_flags import ModelFlags, model_flags
from attntrace.cli.options import MaxRows, PageExport, TablePrecision, json_flag
from attntrace.cli.saved import page_target
from attntrace.kernel.budget import (
    COMPARE_SQUARES,
    FLOAT,
    also_counted,
    comparison_bytes,
    model_bytes,
    refuse_past_budget,
    rows_bytes,
    saved_trace_parts,
    trace_bytes,
)

if TYPE_CHECKING:
    from attntrace.kernel.spec import ModelSpec
    from attntrace.kernel.trace import Trace

EXIT_CHANGED = 1  # as diff(1) and cmp(1): the inputs differ
DIGITS = 4  # digits after the point in the tables, without --precision


@model_flags("config sample edits")
def diff(
    words: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="A B | SENTENCE",
            help="Two saved traces (`run --json`, - for stdin); or, with --set, the "
            "sentence to trace (default: the model file's).",
            show_default=False,
        ),
    ] = None,
    *,
    chosen: ModelFlags,
    as_json: Annotated[bool, json_flag("Write the comparison as JSON.")] = False,
    export: PageExport = None,
    precision: TablePrecision = None,
    max_rows: MaxRows = 20,
) -> None:
    """Compare two traces stage by stage: what changed, by how much, and where first.

    A and B are saved traces; or, with --set, the model traced as it is (A) and
    edited (B). Exit 0 when nothing changed, 1 when something did, 2 on bad input."""
    words = words or []
    edits = list(chosen.edits)
    target = page_target(export)
    given = [
        flag
        for flag, value in (
            ("--config", chosen.config),
            ("--sample", chosen.sample),
            ("--set", edits or None),
        )
        if value is not None
    ]
    if given:
        sources, a, b = _traced_twice(words, chosen, given[0])
    else:
        if len(words) != 2:
            usage(
                "give two saved traces, A B (from `attntrace run --json`; - for stdin), or "
                "a model and the --set edits to trace it with"
            )
        if words == ["-", "-"]:
            usage("A and B cannot both come from stdin: give at least one as a file")
        sources = (
            "stdin" if words[0] == "-" else words[0],
            "stdin" if words[1] == "-" else words[1],
        )
        a = _saved(words[0], sources[0])
        b = _saved(words[1], sources[1], held=_held(a))
        largest = max((s.data.size for s in (*a.stages, *b.stages)), default=0)
        with bad_input_fails():
            refuse_past_budget(
                f"comparing {sources[0]} and {sources[1]}",
                {
                    "A": _held(a),
                    "B": _held(b),
                    "the comparison": COMPARE_SQUARES * FLOAT * largest + _held(b) // FLOAT,
                },
            )
    digits = DIGITS if precision is None else precision
    _compare(
        a, b, sources, edits, as_json=as_json, precision=digits, max_rows=max_rows, target=target
    )


def _traced_twice(
    words: list[str], chosen: ModelFlags, flag: str
) -> tuple[tuple[str, str], Trace, Trace]:
    """The model traced as it is (A) and with --set's edits (B): their names and traces."""
    from attntrace.api import traced
    from attntrace.visible import quoted

    config, sample, edits = chosen.config, chosen.sample, chosen.edits
    saved = [w for w in words if w == "-" or w.lower().endswith(".json")]
    if saved:
        usage(
            f"{quoted(saved[0])} reads as a saved trace, but {flag} traces a model: give "
            "A B alone, or a SENTENCE with --set"
        )
    if not edits:
        usage(
            f"{flag} names the model diff traces twice: add --set PATH=VALUE, the edit "
            "B is traced with"
        )
    chosen.check()
    if config == "-":
        usage("diff traces the model twice, and stdin can be read once: give --config a file")
    sentence = " ".join(words) if words else None
    with bad_input_fails(), also_counted(_second_trace):
        a = traced(sentence, config=config, sample=sample)
        b = traced(sentence, config=config, sample=sample, edits=edits)
    if config is not None:
        model = config
    else:
        from attntrace.modelfile.samples import DEFAULT_SAMPLE

        model = f"sample {sample or DEFAULT_SAMPLE}"
    return (model, f"{model} with --set {' --set '.join(edits)}"), a, b


def _second_trace(model: ModelSpec, n: int, m: int) -> dict[str, int]:
    """What diff --set holds besides the first trace: the edited model, its trace and
    the comparison of the two (and the page of both, with --export)."""
    return {
        "B's model": model_bytes(model),
        "B's trace": trace_bytes(model, n, m),
        "the comparison": comparison_bytes(model, n, m),
        # the rows compared, and their differences (measured 200,000 wide: seven copies)
        "the rows compared": 7 * rows_bytes(model, n, m),
    }


def _saved(word: str, source: str, held: int = 0) -> Trace:
    """The saved trace ``word`` names (``-``: stdin), checked as ``render`` checks it,
    counted with ``held`` bytes of the trace read before it."""
    from attntrace.forward.replay import SAVED_TRACE, load_trace
    from attntrace.kernel.reading import read_stdin, read_text

    with bad_input_fails(source):
        text = read_stdin(SAVED_TRACE) if word == "-" else read_text(Path(word), SAVED_TRACE)
        refuse_past_budget(
            "reading the saved trace", {**saved_trace_parts(text), "the trace read before": held}
        )
        return load_trace(text, source)


def _held(trace: Trace) -> int:
    """The bytes of a trace's arrays."""
    return sum(s.data.nbytes for s in (*trace.stages, *trace.weights))


def _compare(
    a: Trace,
    b: Trace,
    sources: tuple[str, str],
    edits: list[str],
    *,
    as_json: bool,
    precision: int,
    max_rows: int,
    target: Path | None = None,
) -> None:
    """Compare, write the JSON or the view, and exit 1 where something changed."""
    from attntrace.checking.diff import diff_traces

    result = diff_traces(a, b)

    def document() -> dict[str, object]:
        from attntrace.checking.check_json import diff_to_dict

        return diff_to_dict(result, sources, edits)

    def view() -> None:
        from attntrace.checking.views.diff import diff_view
        from attntrace.cli.pipes import stdout_console

        stdout_console().print(diff_view(result, sources, precision=precision, max_rows=max_rows))

    def page() -> str:
        from attntrace.page.build import diff_page

        return diff_page(result, sources, edits)

    changed = EXIT_CHANGED if result.changed else 0
    emit(as_json, document, view, verdict=changed, export=target, page=page)
