"""Drawing a trace for `run` and `render`: the display flags, the views, step mode, --export.

Both commands end here with a checked :class:`Presentation`, so a saved trace is shown
exactly as the run that made it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from attntrace.cli.exits import bad_input_fails
from attntrace.cli.pipes import quiet_pipe, stdout_console
from attntrace.cli.prompts import (
    interrupted,
    prompt_console,
    read_line,
    stdin_is_terminal,
    terminal_keys,
)
from attntrace.cli.saved import save_page, save_text

if TYPE_CHECKING:
    from rich.console import Console

    from attntrace.forward.focus import Focus
    from attntrace.forward.views.present import Presentation
    from attntrace.kernel.trace import Trace
    from attntrace.ui.view import View


def presentation(**flags: Any) -> Presentation:
    """The display flags, checked against each other (exit 2 where they do not mix)."""
    from attntrace.forward.views.present import Presentation

    with bad_input_fails():
        return Presentation.from_flags(**flags)


def show(trace: Trace, how: Presentation) -> None:
    """Print the chosen view of ``trace`` (or walk it in step mode), and export it.

    The views draw the trace as shown: its tokens, names and formulas made visible
    (:func:`attntrace.ui.shown.shown_trace`), so no text from a file reaches the
    terminal raw; a --focus token is matched as it is shown.
    """
    from attntrace.ui.shown import label, shown_trace

    typed, trace = trace, shown_trace(trace)
    focus = None
    if how.focus is not None:
        from attntrace.errors import InputError
        from attntrace.forward.focus import focus_at, resolve_focus

        with bad_input_fails():  # a bad token is an input error before anything prints
            try:  # the token as typed (é, \x1b[2J from a script), by the file's tokens
                index, note = resolve_focus(typed, how.focus)
            except InputError:  # or as the tables show it: é#4, \x1b[2J in a terminal
                index, note = resolve_focus(trace, label(how.focus))
            focus = tuple(focus_at(trace, index, h, note) for h in trace.traced_heads)
    how = chosen_tokens(typed, trace, how, None if focus is None else focus[0].label)
    if how.export is not None and how.export.suffix.lower() == ".html":
        # the explorer, once every flag has been checked: the whole trace as typed (the
        # page escapes its own text), not what the terminal shows; the view still prints
        from dataclasses import replace

        from attntrace.page.build import trace_page

        save_page(how.export, lambda: trace_page(typed))
        how = replace(how, export=None)
    if how.step:
        console = stdout_console(record=how.export is not None)
        try:
            with quiet_pipe():
                walk_steps(console, trace, how, focus)
        except typer.Exit as done:  # the walk ended: a closed pipe ends it too (exit 0)
            if done.exit_code == 0 and how.export is not None:
                save_export(console, how.export)  # the screens the walk showed
            raise
        if how.export is not None:
            save_export(console, how.export)
        return
    from attntrace.forward.views.present import renderables

    console = stdout_console()
    if how.export is None:
        from attntrace.cli.progress import drawing

        with quiet_pipe(), drawing("drawing the tables"):
            for renderable in renderables(trace, how, focus):
                console.print(renderable, crop=False)  # a number is never cut
        return
    # drawn once, into memory, as stdout would get it; saved to the file first, so a
    # reader that stops early (| head) or a full disk cannot cost the export
    from attntrace.ui.pager import recording_console

    recorder = recording_console(console)
    from attntrace.kernel import progress

    with progress.task(f"drawing {how.export.name}"):
        for renderable in renderables(trace, how, focus):
            recorder.print(renderable, crop=False)
        text = exported(recorder, how.export)
    save_text(how.export, text)
    with quiet_pipe():
        sys.stdout.write(recorder.file.getvalue())  # type: ignore[attr-defined]


def chosen_tokens(typed: Trace, trace: Trace, how: Presentation, focus: str | None) -> Presentation:
    """``how`` with its view told the focused token's label and ``--rows``/``--cols``'
    tokens (:func:`chosen_view`)."""
    from dataclasses import replace

    return replace(how, view=chosen_view(typed, trace, how.view, how.rows, how.cols, focus))


def chosen_view(
    typed: Trace,
    trace: Trace,
    view: View,
    rows: str | None,
    cols: str | None,
    focus: str | None = None,
) -> View:
    """``view`` told the focused token's label and ``--rows``/``--cols``' tokens as the
    tables label them (``trace``: ``typed`` made visible), each read as --focus reads
    its token: as typed, or as the tables show it. A token not in the sentence is an
    input error, one line and exit 2."""
    from dataclasses import replace

    from attntrace.errors import InputError
    from attntrace.forward.focus import resolve_positions
    from attntrace.kernel.labels import unique_labels
    from attntrace.ui.shown import label

    def labels(which: str | None, flag: str, keys: bool) -> tuple[str, ...] | None:
        if which is None:
            return None
        shown = unique_labels(_axis(trace, keys))
        with bad_input_fails():
            try:
                positions, notes = resolve_positions(_axis(typed, keys), which, flag)
            except InputError:
                positions, notes = resolve_positions(_axis(trace, keys), label(which), flag)
        for note in notes:  # which of several tokens was taken: beside the tables, not in
            sys.stderr.write(f"attntrace: note: {note}\n")  # its tokens quoted()
        return tuple(shown[i] for i in positions)

    return replace(
        view,
        focus=focus,
        rows=labels(rows, "--rows", keys=False),
        cols=labels(cols, "--cols", keys=True),
    )


def _axis(trace: Trace, keys: bool) -> tuple[str, ...]:
    """The tokens the tables' rows (queries) or columns (keys: a --context's) run over."""
    if keys and trace.context_tokens is not None:
        return trace.context_tokens
    return trace.tokens


def walk_steps(
    console: Console, trace: Trace, how: Presentation, focus: tuple[Focus, ...] | None
) -> None:
    from attntrace.forward.views.step import run_steps

    # a key line past LINE_LIMIT (< /dev/zero); at a terminal, stages fitted to its
    # height (not with --export, which saves the screens whole)
    with interrupted(), bad_input_fails(), terminal_keys() as keys:
        run_steps(
            console,
            trace,
            read_line,
            how.view,
            echo=not stdin_is_terminal(),
            prompt_console=prompt_console(),
            focus=focus,
            read_key=keys if how.export is None else None,
        )


def save_export(console: Console, path: Path) -> None:
    """Write what ``console`` recorded to ``path`` (.svg, or text), whole or not at all."""
    save_text(path, exported(console, path))


def exported(console: Console, path: Path) -> str:
    """What ``console`` recorded, as ``path``'s suffix asks: an SVG picture, or text."""
    suffix = path.suffix.lower()
    return console.export_svg(title="attntrace") if suffix == ".svg" else console.export_text()
