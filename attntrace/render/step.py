"""Step mode: one stage per screen, then a prompt (SPEC.md section 2).

Keys, one line each: Enter or ``n`` next, ``b`` back, a stage number or name to jump,
``q`` quit, ``?`` help. End of input (a closed or exhausted stdin) ends the walk
cleanly, so a pipe can script it and it never hangs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from attntrace.explain import paragraph, shape_equation
from attntrace.focus import Focus
from attntrace.render.focus import SECTION_OF_STAGE
from attntrace.render.tables import DEFAULT_VIEW, View, stage_body, title
from attntrace.trace import Trace

HELP = (
    "Enter or n: next stage · b: back · 1-{last} or a stage name ({names}): jump · "
    "q: quit · ?: this help"
)

ReadLine = Callable[[], "str | None"]


@dataclass
class Move:
    """What a typed line asks for: a stage index to show, quit, help, or a complaint."""

    index: int | None = None
    quit: bool = False
    help: bool = False
    error: str | None = None


def interpret(line: str, current: int, trace: Trace) -> Move:
    """Turn one typed line into a :class:`Move` from stage ``current`` (0-based)."""
    key = line.strip()
    last = len(trace) - 1
    if key in ("", "n"):
        return Move(quit=True) if current == last else Move(index=current + 1)
    if key == "b":
        if current == 0:
            return Move(error="already at the first stage")
        return Move(index=current - 1)
    if key == "q":
        return Move(quit=True)
    if key in ("?", "h", "help"):
        return Move(help=True)
    if re.fullmatch(r"[0-9]+", key):
        number = int(key)
        if 1 <= number <= len(trace):
            return Move(index=number - 1)
        return Move(error=f"no stage {number}: stages are numbered 1 to {len(trace)}")
    names = trace.names
    if key in names:
        return Move(index=names.index(key))
    folded = [i for i, name in enumerate(names) if name.lower() == key.lower()]
    if len(folded) == 1:
        return Move(index=folded[0])
    return Move(error=f"unknown key {key!r}: type ? for help")


def show_stage(
    console: Console,
    trace: Trace,
    index: int,
    view: View,
    focus: tuple[Focus, ...] | None = None,
) -> None:
    stage = trace.stages[index]
    if console.is_terminal:
        console.clear()
    else:
        console.rule(style="dim")
    console.print(
        Text.assemble(
            (f"Stage {index + 1} of {len(trace)} · ", "dim"),
            (stage.name, "bold magenta"),
            (f"   {trace.model.name}: {' '.join(trace.tokens)}", "dim"),
        )
    )
    console.print(
        Panel(
            Text.assemble(title(stage, trace.model), "\n", (shape_equation(stage, trace), "cyan")),
            expand=False,
        )
    )
    console.print(Text(paragraph(stage, trace)))
    console.print()
    # As an equation of its operands where it fits, else after the weight it used.
    console.print(stage_body(stage, trace, view), crop=False)
    console.print()
    section = SECTION_OF_STAGE.get(stage.name)
    if focus is not None and section is not None:  # the arithmetic behind the focus row
        console.print(section(focus[stage.head or 0], view))
        console.print()


def run_steps(
    console: Console,
    trace: Trace,
    read_line: ReadLine,
    view: View = DEFAULT_VIEW,
    *,
    echo: bool = False,
    prompt_console: Console | None = None,
    focus: tuple[Focus, ...] | None = None,
) -> None:
    """Walk ``trace`` stage by stage until the user quits, passes the end, or input ends.

    ``echo`` repeats each line read after the prompt: with input from a pipe nothing
    else shows what was typed, and the transcript should read like a session.
    ``prompt_console`` is where prompts, help and complaints go (default: ``console``):
    stderr when the stages go to a file but the keys come from a person. With ``focus``,
    each stage it explains is followed by that token's arithmetic.
    """
    talk = prompt_console or console

    help_text = HELP.format(last=len(trace), names=", ".join(dict.fromkeys(trace.names)))
    index = 0
    show_stage(console, trace, index, view, focus)
    while True:
        where = "last stage: Enter ends" if index == len(trace) - 1 else "Enter: next"
        talk.print(f"[dim]({where} · b back · q quit · ? help)[/dim] > ", end="")
        line = read_line()
        if line is None:
            talk.print()
            return
        if echo:
            talk.print(Text(line))
        move = interpret(line, index, trace)
        if move.quit:
            return
        if move.help:
            talk.print(Text(help_text))
        elif move.error:
            talk.print(Text(move.error, style="yellow"))
        elif move.index is not None:
            index = move.index
            show_stage(console, trace, index, view, focus)
