"""Files a command writes beside its output (``--export``): whole or not at all, before
anything goes to stdout, each saying so on stderr.

``run`` and ``render`` save what they show (:mod:`attntrace.cli.show`) or the explorer
page; ``decode``, ``flash``, ``grad``, ``check`` and ``diff`` save the page alone, through
:func:`attntrace.cli.emit.emit`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from attntrace.cli.exits import bad_input_fails, fail


def page_target(given: str | None) -> Path | None:
    """The ``--export FILE.html`` of decode, flash, grad, check and diff, checked before
    any work (exit 2 for another suffix or a missing folder)."""
    if given is None:
        return None
    from attntrace.forward.views.present import page_path

    with bad_input_fails():
        return page_path(given)


def save_page(target: Path | None, page: Callable[[], str]) -> None:
    """Write the page ``page()`` builds to ``target``, whole, before anything is printed;
    a page too big, or one that cannot be written, is exit 2."""
    if target is None:
        return
    from attntrace.kernel import progress

    with bad_input_fails(), progress.task(f"building {target.name}"):
        text = page()
    save_text(target, text)


def save_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, whole or not at all; say so on stderr. A file that
    cannot be written (a full disk, a read-only folder) is one line and exit 2, as for
    ``train --save``: the name was checked before any work, so what is left is the
    user's disk or folder, not a bug."""
    from attntrace.errors import InputError

    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        fail(InputError(f"cannot write the file: {error.strerror}", source=str(path)))
    from attntrace.visible import visible

    sys.stderr.write(f"attntrace: saved {visible(str(path))}\n")
