"""`diff`: two traces compared stage by stage, exit 0 when nothing changed, 1 when
something did, 2 on bad input (as ``cmp`` and ``diff`` use them).

A and B are saved traces (``run --json``; either may be ``-`` for stdin), or one model
traced twice: as it is, and with the ``--set`` edits. Which form is meant is told by the
flags: a model flag (``--config``, ``--sample``, ``--set``) makes the words a SENTENCE;
without one they must be two saved traces. A saved trace's name beside a model flag is
a usage error, not a sentence.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails, usage
from attntrace.cli.options import Config, Sample, json_flag

if TYPE_CHECKING:
    from attntrace.core.trace import Trace

EXIT_CHANGED = 1  # as diff(1) and cmp(1): the inputs differ


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
    config: Config = None,
    sample: Sample = None,
    as_json: Annotated[bool, json_flag("Write the comparison as JSON.")] = False,
    precision: Annotated[
        int,
        typer.Option(min=0, max=15, metavar="N", help="Digits after the point in the tables."),
    ] = 4,
    max_rows: Annotated[
        int, typer.Option(min=0, metavar="N", help="Rows shown per table (0: all).")
    ] = 20,
) -> None:
    """Compare two traces stage by stage: what changed, by how much, and where first."""
    edits: list[str] = []
    given = [flag for flag, value in (("--config", config), ("--sample", sample),
             ("--set", edits or None)) if value is not None]  # fmt: skip
    words = words or []
    if given:
        usage(f"{given[0]} traces a model, which diff does with --set edits only: not yet")
    if len(words) != 2:
        usage("give two saved traces, A B (from `attntrace run --json`; - for stdin)")
    if words == ["-", "-"]:
        usage("A and B cannot both come from stdin: give at least one as a file")
    sources = ("stdin" if words[0] == "-" else words[0], "stdin" if words[1] == "-" else words[1])
    a, b = (_saved(word, source) for word, source in zip(words, sources, strict=True))
    _compare(a, b, sources, edits, as_json=as_json, precision=precision, max_rows=max_rows)


def _saved(word: str, source: str) -> Trace:
    """The saved trace ``word`` names (``-``: stdin), checked as ``render`` checks it."""
    from attntrace.files.reading import read_stdin, read_text
    from attntrace.files.replay import SAVED_TRACE, load_trace

    with bad_input_fails(source):
        text = read_stdin(SAVED_TRACE) if word == "-" else read_text(Path(word), SAVED_TRACE)
        return load_trace(text, source)


def _compare(
    a: Trace,
    b: Trace,
    sources: tuple[str, str],
    edits: list[str],
    *,
    as_json: bool,
    precision: int,
    max_rows: int,
) -> None:
    """Compare, write the JSON or the view, and exit 1 where something changed."""
    from attntrace.core.trace_diff import diff_traces

    result = diff_traces(a, b)

    def document() -> dict[str, object]:
        from attntrace.files.serialize import diff_to_dict

        return diff_to_dict(result, sources, edits)

    def view() -> None:
        from attntrace.cli.pipes import stdout_console
        from attntrace.render.diff import diff_view

        stdout_console().print(diff_view(result, sources, precision=precision,
                                         max_rows=max_rows))  # fmt: skip

    emit(as_json, document, view)
    if result.changed:
        raise typer.Exit(EXIT_CHANGED)
