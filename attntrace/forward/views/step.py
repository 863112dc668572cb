"""Step mode: one stage per screen, then a prompt (docs/cli.md#step-mode-keys).

Keys, one line each: Enter or ``n`` next, ``b`` back, a stage number or name to jump,
``q`` quit, ``?`` help. End of input (a closed or exhausted stdin) ends the walk
cleanly, so a pipe can script it and it never hangs. At a terminal (a ``read_key``),
each screen is fitted to its height by ui/pager.py, and the page keys act at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rich.console import Console, Group
from rich.panel import Panel
from rich.text import Text

from attntrace.forward.focus import Focus
from attntrace.forward.views.document import sentence_line
from attntrace.forward.views.dtype import precision_line
from attntrace.forward.views.focus import SECTION_OF_STAGE
from attntrace.forward.views.stage_block import stage_body
from attntrace.forward.words import paragraph, shape_equation
from attntrace.kernel.labels import marks_note
from attntrace.kernel.trace import Trace
from attntrace.ui.pager import Move, Paged, ReadKey, Walk, paged_walk
from attntrace.ui.titles import fitted_title, head_label
from attntrace.ui.view import DEFAULT_VIEW, View
from attntrace.ui.wrap import Wrapped
from attntrace.visible import quoted, visible

HELP = "Enter or n: next {noun} · b: back · {jump}: jump · q: quit · ?: this help"
HEAD_HELP = " · h: the same stage of the next head · h N: of head N ({heads})"

ReadLine = Callable[[], "str | None"]
KEY_LIMIT = 80  # characters of a typed line echoed or quoted back: keys are short


def ask(
    talk: Console, read_line: ReadLine, where: str, extra: str = "", *, echo: bool
) -> str | None:
    """Prompt for one key and read it; None at end of input. ``echo`` repeats it (piped
    keys would not show otherwise)."""
    talk.print(f"[dim]{prompt_text(where, extra)}[/dim] > ", end="")
    line = read_line()
    if line is None:
        talk.print()
    elif echo:
        talk.print(Text(visible(line, KEY_LIMIT)))
    return line


def prompt_text(where: str, extra: str = "") -> str:
    """The prompt's words: ``(Enter: next · b back · q quit · ? help)``."""
    return f"({where} · b back{extra} · q quit · ? help)"


def help_text(trace: Trace) -> str:
    names = ", ".join(dict.fromkeys(trace.names))
    text = HELP.format(noun="stage", jump=f"1-{len(trace)} or a stage name ({names})")
    if len(trace.traced_heads) > 1:
        heads = trace.traced_heads
        shown = ", ".join(map(str, heads)) if trace.is_cut else f"0-{heads[-1]}"
        text += HEAD_HELP.format(heads=shown)
    return text


def interpret(line: str, current: int, trace: Trace) -> Move:
    """Turn one typed line into a :class:`Move` from stage ``current`` (0-based).

    A stage name jumps to that stage of the head on screen where it has one, so a
    reader can follow one head through Q, K, V, scores ... without counting stages.
    """
    key = line.strip()
    stages = trace.stages
    here = stages[current]
    move = basic_move(key, current, len(trace), "stage")
    if move is not None:
        return move
    if key == "h" or re.fullmatch(r"h\s*[0-9]+", key):
        return _other_head(key, current, trace)
    names = trace.names
    exact = [i for i, name in enumerate(names) if name == key]
    matches = exact or [i for i, name in enumerate(names) if name.lower() == key.lower()]
    if len({names[i] for i in matches}) == 1:
        same_head = [i for i in matches if stages[i].head == here.head]
        return Move(index=(same_head or matches)[0])
    return Move(error=f"unknown key {quoted(key, KEY_LIMIT)}: type ? for help")


def basic_move(key: str, current: int, count: int, noun: str) -> Move | None:
    """The keys every walk has, over ``count`` screens called ``noun`` (stage, step):
    Enter or n, b, q, ?, a number. None for any other key."""
    if key in ("", "n"):
        return Move(quit=True) if current == count - 1 else Move(index=current + 1)
    if key == "b":
        return (
            Move(error=f"already at the first {noun}") if current == 0 else Move(index=current - 1)
        )
    if key == "q":
        return Move(quit=True)
    if key in ("?", "help"):
        return Move(help=True)
    if re.fullmatch(r"[0-9]+", key):
        number = int(key)
        if 1 <= number <= count:
            return Move(index=number - 1)
        return Move(error=f"no {noun} {number}: {noun}s are numbered 1 to {count}")
    return None


def _other_head(key: str, current: int, trace: Trace) -> Move:
    """``h``: this stage of the next head (wrapping); ``h N``: of head N. With one head
    traced, one answer on every stage."""
    heads, here = trace.traced_heads, trace.stages[current]
    if len(heads) == 1:
        return Move(
            error=f"only head {heads[0]} is traced here: the others were left out"
            if trace.is_cut
            else "this model has one head"
        )
    if here.head is None:
        return Move(error=f"{here.name} is shared by all heads: go to a head's stage first")
    after = [h for h in heads if h > here.head]
    target = (after or heads)[0] if key == "h" else int(key[1:].strip())
    if target not in heads:
        shown = f"0 to {heads[-1]}" if not trace.is_cut else ", ".join(map(str, heads))
        return Move(error=f"no head {target}: heads are {shown}")
    for i, stage in enumerate(trace.stages):
        if stage.name == here.name and stage.head == target:
            return Move(index=i)
    return Move(error=f"head {target} has no {here.name} stage")


def new_screen(console: Console) -> None:
    """Clear a terminal for the next screen; in a transcript (a pipe, a file), draw a
    rule between screens instead."""
    if console.is_terminal:
        console.clear()
    else:
        console.rule(style="dim")


def stage_screen(
    trace: Trace,
    index: int,
    view: View,
    focus: tuple[Focus, ...] | None = None,
) -> Paged:
    """Stage ``index``'s screen. Pinned: where we are, the title and the shape equation
    (and a --dtype's rule); the body: the paragraph, the table, the focus row's
    arithmetic."""
    stage = trace.stages[index]

    def pinned(console: Console) -> None:
        context = trace.context_tokens
        console.print(
            Text.assemble(
                (f"Stage {index + 1} of {len(trace)} · ", "dim"),
                (stage.name, "bold magenta"),
                (head_label(stage, trace.model), "bold yellow"),
                (f"   {trace.model.name}: {sentence_line(trace.tokens, view)}", "dim"),
                (f"  ⟵  {sentence_line(context, view)}" if context else "", "dim"),
            )
        )
        heading = Group(
            fitted_title(stage, trace.model),
            Wrapped(Text(shape_equation(stage, trace), style="cyan")),
        )
        console.print(Panel(heading, expand=False))
        rule = precision_line(trace)  # a --dtype's rule on every screen, as under run's header
        if rule is not None:
            console.print(rule)

    def body(console: Console) -> None:
        marks = marks_note(trace.tokens, trace.context_tokens or ()) if index == 0 else ""
        if marks:  # a trained model's tokens: what Ġ, ▁ or ## mean, on the first screen
            console.print(Wrapped(Text(marks, style="dim")))
        console.print(Wrapped(Text(paragraph(stage, trace))))
        console.print()
        # As an equation of its operands where it fits, else after the weight it used.
        console.print(stage_body(stage, trace, view), crop=False)
        console.print()
        section = SECTION_OF_STAGE.get(stage.name)
        if focus is not None and section is not None:  # the arithmetic behind the focus row
            row = next((f for f in focus if (f.head or 0) == (stage.head or 0)), focus[0])
            console.print(section(row, view), crop=False)  # a number is never cut
            console.print()

    return Paged(pinned, body)


def head_keys(heads: int, head_of: Callable[[int], int | None]) -> Callable[[int], str]:
    """The prompt's ``h next head`` where ``h`` acts: with several heads, on a stage of
    one head (``head_of(i)`` not None)."""
    return lambda i: " · h next head" if heads > 1 and head_of(i) is not None else ""


def run_steps(
    console: Console,
    trace: Trace,
    read_line: ReadLine,
    view: View = DEFAULT_VIEW,
    *,
    echo: bool = False,
    prompt_console: Console | None = None,
    focus: tuple[Focus, ...] | None = None,
    read_key: ReadKey | None = None,
) -> None:
    """Walk ``trace`` stage by stage until the user quits, passes the end, or input ends.

    ``echo`` repeats each line read after the prompt: with input from a pipe nothing
    else shows what was typed, and the transcript should read like a session.
    ``prompt_console`` is where prompts, help and complaints go (default: ``console``):
    stderr when the stages go to a file but the keys come from a person. With ``focus``,
    each stage it explains is followed by that token's arithmetic. With ``read_key``
    (keys from a terminal), each stage is fitted to the terminal's height and paged.
    """
    walk(
        console,
        len(trace),
        lambda index: stage_screen(trace, index, view, focus),
        lambda line, index: interpret(line, index, trace),
        read_line,
        help_text(trace),
        noun="stage",
        keys=head_keys(len(trace.traced_heads), lambda i: trace.stages[i].head),
        echo=echo,
        prompt_console=prompt_console,
        read_key=read_key,
    )


def page_through(
    console: Console,
    screens: Sequence[Callable[[Console], None]],
    read_line: ReadLine,
    *,
    noun: str = "page",
    heads: str | None = None,
    echo: bool = False,
    prompt_console: Console | None = None,
    read_key: ReadKey | None = None,
) -> None:
    """Show ``screens`` one at a time with the step-mode keys: Enter or n next, b back,
    a number to jump, q quit, ? help. The last screen is the summary: the numbers count
    the others (``noun``: step, tile), and ``summary`` jumps to it. ``heads`` is what
    ``h`` says (these walks show their heads together). End of input ends the walk."""
    count = len(screens) - 1

    def screen(index: int) -> Paged:
        draw = screens[index]
        return draw if isinstance(draw, Paged) else Paged(draw, lambda _: None)

    def move(line: str, index: int) -> Move:
        key = line.strip()
        if key == "summary":
            return Move(index=count)
        if re.fullmatch(r"[0-9]+", key) and not 1 <= int(key) <= count:
            return Move(
                error=f"no {noun} {int(key)}: {noun}s are numbered 1 to {count}, then summary"
            )
        if heads is not None and (key == "h" or re.fullmatch(r"h\s*[0-9]+", key)):
            return Move(error=heads)
        found = basic_move(key, index, count + 1, noun)
        return found or Move(error=f"unknown key {quoted(key, KEY_LIMIT)}: type ? for help")

    usage = (
        f"Enter or n: next {noun} · b: back · 1-{count}: jump to a {noun} · "
        "summary: the summary · q: quit · ?: this help"
    )
    walk(
        console,
        len(screens),
        screen,
        move,
        read_line,
        usage,
        noun=noun,
        last="last page",
        echo=echo,
        prompt_console=prompt_console,
        read_key=read_key,
    )


def walk(
    console: Console,
    count: int,
    screen: Callable[[int], Paged],
    interpret: Callable[[str, int], Move],
    read_line: ReadLine,
    usage: str,
    *,
    noun: str,
    keys: Callable[[int], str] = lambda _: "",
    last: str = "",
    echo: bool = False,
    prompt_console: Console | None = None,
    read_key: ReadKey | None = None,
) -> None:
    """The prompt loop of every walk: show screen 0, then read a key, move, show, until
    the user quits, passes the end, or input ends. ``keys(i)`` adds to the prompt's list
    at screen i; ``last`` names the last screen in its prompt (default: last ``noun``).
    With ``read_key`` (a terminal), screens are fitted to its height
    (:func:`attntrace.ui.pager.paged_walk`); else each is printed whole."""

    def where(index: int) -> str:
        return f"{last or 'last ' + noun}: Enter ends" if index == count - 1 else "Enter: next"

    def prompt(index: int) -> str:
        return prompt_text(where(index), keys(index))

    if read_key is not None:
        paged_walk(console, Walk(count, screen, interpret, prompt, usage, noun), read_key)
        return
    talk = prompt_console or console
    index = 0
    new_screen(console)
    screen(index)(console)
    while True:
        line = ask(talk, read_line, where(index), keys(index), echo=echo)
        if line is None:
            return
        move = interpret(line, index)
        if move.quit:
            return
        if move.help:
            talk.print(Text(usage))
        elif move.error:
            talk.print(Text(move.error, style="yellow"))
        elif move.index is not None:
            index = move.index
            new_screen(console)
            screen(index)(console)
