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
    if ascii_only:
        from attntrace.kernel.documents import ascii_json

        text = _dumped(written) if isinstance(written, dict) else written
        written = ascii_json(text if isinstance(text, bytes) else text.encode("utf-8"))
    if isinstance(written, bytes):
        sys.stdout.flush()
        # two writes, not ``written + b"\n"``: that copied the whole document (121 ms
        # for a 154 MB trace) to add one byte
        sys.stdout.buffer.write(written)
        sys.stdout.buffer.write(b"\n")
        return
    if isinstance(written, dict):
        written = _dumped(written)
    sys.stdout.write(written + "\n")


def _dumped(document: dict[str, Any]) -> str:
    """:func:`attntrace.kernel.documents.plain_dumps`'s text, the same to the byte, written
    a list item at a time so that long work reports how far it got: decode's 3,000
    steps take json.dumps 20 s."""
    from attntrace.kernel import progress
    from attntrace.kernel.documents import plain_dumps

    if not all(isinstance(key, str) for key in document):
        return plain_dumps(document)  # json's own rule for such keys
    items = sum(len(value) for value in document.values() if isinstance(value, list))
    pieces = ["{"]  # joined once, at the end: the text is held twice at most, as json does
    with progress.task("writing the JSON", items, "items") as writing:
        for number, (key, value) in enumerate(document.items()):
            pieces += [",", plain_dumps(key), ":"] if number else [plain_dumps(key), ":"]
            if not isinstance(value, list):
                pieces.append(plain_dumps(value))
                continue
            pieces.append("[")
            for index, item in enumerate(value):
                pieces += [",", plain_dumps(item)] if index else [plain_dumps(item)]
                writing.advance()
            pieces.append("]")
    pieces.append("}")
    return "".join(pieces)
