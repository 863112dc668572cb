"""A command's result on stdout: one JSON document for programs (--json), or a view.

run, softmax, decode, kv-cache, models and heads all end here. Only the side asked for
is built, so --json never imports the renderers (nor Rich) and a view never builds the
JSON; both are written inside :func:`quiet_pipe`, so ``| head`` ends quietly. A command
with ``--export FILE.html`` gives its explorer page too, saved first, whole, so that a
reader who stops early cannot cost it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import typer

from attntrace.cli.pipes import quiet_pipe
from attntrace.cli.process import takes_unicode
from attntrace.cli.saved import save_page
from attntrace.kernel.documents import Streamed

# A JSON document: plain data (written compactly, as plain_dumps does), or already
# written: text, or bytes (from orjson); or one written as it is serialized (a trace).
Document = dict[str, Any] | str | bytes | Streamed


def emit(
    as_json: bool,
    document: Callable[[], Document],
    view: Callable[[], None],
    *,
    verdict: int | None = None,
    export: Path | None = None,
    page: Callable[[], str] | None = None,
) -> None:
    """Write ``document()`` and a newline when ``as_json``, or else draw ``view()``;
    first, where ``export`` is given, save the page ``page()`` builds there.

    Bytes go straight to stdout's buffer, after whatever was written to stdout as text;
    a :class:`Streamed` document (run's, grad's, flash's and decode's) goes there piece
    by piece, as it is serialized, having been checked whole before its first byte.
    With a ``verdict`` (check's and diff's exit code: 0 same, 1 different) the command
    exits with it, even when the reader left early; a failed write is then exit 2, as
    cmp reports trouble, since 1 is an answer.
    """
    if export is not None and page is not None:
        save_page(export, page)
    with quiet_pipe(verdict or 0, 1 if verdict is None else 2):
        _written(as_json, document, view)
    if verdict:
        raise typer.Exit(verdict)


def _written(as_json: bool, document: Callable[[], Document], view: Callable[[], None]) -> None:
    if not as_json:
        view()
        return
    from attntrace.kernel import progress

    with progress.task("building the JSON"):
        written = document()  # whatever can fail has failed by now: nothing is written yet
    ascii_only = not takes_unicode(sys.stdout)  # PYTHONIOENCODING=ascii: JSON escaped
    if isinstance(written, Streamed):
        from attntrace.kernel.documents import ascii_json

        sys.stdout.flush()
        # a display while the JSON goes to a file; none where it would share the terminal
        with nullcontext() if sys.stdout.isatty() else progress.task("writing the JSON"):
            for piece in written:  # at most JSON_PIECE_BYTES of it held at a time
                # a piece ends between two items, never inside a character
                sys.stdout.buffer.write(ascii_json(bytes(piece)) if ascii_only else piece)
                progress.beat()
        sys.stdout.buffer.write(b"\n")
        return
    if isinstance(written, dict):  # small documents (check, diff, kv-cache, ...): whole
        from attntrace.kernel.documents import plain_dumps

        written = plain_dumps(written)
    if ascii_only:
        from attntrace.kernel.documents import ascii_json

        written = ascii_json(written if isinstance(written, bytes) else written.encode("utf-8"))
    if isinstance(written, bytes):
        sys.stdout.flush()
        # two writes, not ``written + b"\n"``: that copied the whole document (121 ms
        # for a 154 MB trace) to add one byte
        sys.stdout.buffer.write(written)
        sys.stdout.buffer.write(b"\n")
        return
    sys.stdout.write(written + "\n")
