"""`grad --step`: one gradient per screen, with a paragraph on what it is and how it was
computed, and run --step's keys (forward/views/step.py's walk): Enter or ``n`` next, ``b``
back, a number or a gradient's name to jump, ``h``/``h N`` the same gradient of the
next head or head N, ``q`` quit, ``?`` help; end of input ends the walk.
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from attntrace.forward.views.document import sentence_line
from attntrace.forward.views.step import (
    HEAD_HELP,
    HELP,
    KEY_LIMIT,
    ReadLine,
    basic_move,
    head_keys,
    walk,
)
from attntrace.kernel.labels import marks_note
from attntrace.kernel.trace import Stage
from attntrace.learning.grad_trace import GradTrace
from attntrace.learning.grad_words import stage_caption, stage_paragraph
from attntrace.learning.views.grad import GradBlock, loss_line, reached_heads
from attntrace.ui.elide import weights_beside
from attntrace.ui.pager import Move, Paged, ReadKey
from attntrace.ui.titles import fitted_title, head_label
from attntrace.ui.view import DEFAULT_VIEW, View
from attntrace.ui.wrap import Wrapped
from attntrace.visible import quoted


def walked_stages(grad: GradTrace) -> list[Stage]:
    """The screens: every gradient of the heads the loss reaches, their K/V sums and the
    whole-model gradients, in backward order."""
    reached = set(reached_heads(grad))
    out = []
    for stage in grad.stages:
        if stage.head is not None and stage.head not in reached:
            continue
        if (
            stage.head is None
            and stage.kv_head is not None
            and not any(h in reached for h in grad.summed.get(stage.kv_head, ()))
        ):
            continue
        out.append(stage)
    return out


def help_text(stages: list[Stage], heads: list[int]) -> str:
    names = ", ".join(dict.fromkeys(stage.name for stage in stages))
    text = HELP.format(noun="gradient", jump=f"1-{len(stages)} or a name ({names})")
    if len(heads) > 1:
        text += HEAD_HELP.format(heads=", ".join(map(str, heads)))
    return text


def interpret(line: str, current: int, stages: list[Stage], heads: list[int]) -> Move:
    """One typed line as a move from screen ``current``: a name jumps to that gradient of
    the head on screen where it has one."""
    key = line.strip()
    move = basic_move(key, current, len(stages), "gradient")
    if move is not None:
        return move
    here = stages[current]
    if key == "h" or re.fullmatch(r"h\s*[0-9]+", key):
        return _other_head(key, here, stages, heads)
    names = [stage.name for stage in stages]
    matches = [i for i, name in enumerate(names) if name == key] or [
        i for i, name in enumerate(names) if name.lower() == key.lower()
    ]
    if matches:
        same_head = [i for i in matches if stages[i].head == here.head]
        return Move(index=(same_head or matches)[0])
    return Move(error=f"unknown key {quoted(key, KEY_LIMIT)}: type ? for help")


def _other_head(key: str, here: Stage, stages: list[Stage], heads: list[int]) -> Move:
    if len(heads) < 2:
        return Move(error="one head is drawn here: the loss reaches no other")
    if here.head is None:
        return Move(error=f"{here.name} is the whole model's: go to a head's gradient first")
    after = [h for h in heads if h > here.head]
    target = (after or heads)[0] if key == "h" else int(key[1:].strip())
    if target not in heads:
        return Move(
            error=f"no head {target} here: the loss reaches heads {', '.join(map(str, heads))}"
        )
    for i, stage in enumerate(stages):
        if stage.name == here.name and stage.head == target:
            return Move(index=i)
    return Move(error=f"head {target} has no {here.name}")  # pragma: no cover - same stages


def gradient_screen(grad: GradTrace, stages: list[Stage], index: int, view: View) -> Paged:
    """One screen. Pinned: where we are, the loss, the gradient's title; the body: its
    paragraph, its table beside the forward stage it mirrors, its caption."""
    stage, trace = stages[index], grad.forward

    def pinned(console: Console) -> None:
        console.print(
            Text.assemble(
                (f"Gradient {index + 1} of {len(stages)} · ", "dim"),
                (stage.name, "bold magenta"),
                (head_label(stage, trace.model), "bold yellow"),
                (f"   {trace.model.name}: {sentence_line(trace.tokens, view)}", "dim"),
            )
        )
        console.print(Wrapped(loss_line(grad, view)))
        console.print(Panel(fitted_title(stage, trace.model), expand=False))

    def body(console: Console) -> None:
        marks = marks_note(trace.tokens, trace.context_tokens or ()) if index == 0 else ""
        if marks:  # a trained model's tokens: what Ġ, ▁ or ## mean, on the first screen
            console.print(Wrapped(Text(marks, style="dim")))
        console.print(Wrapped(Text(stage_paragraph(stage, grad))))
        console.print()
        caption = stage_caption(stage, grad)
        block = GradBlock(
            stage,
            grad.mirror(stage),
            trace.model,
            view,
            caption,
            weights_beside(stage, grad.forward),  # the head's softmax: its heaviest keys
        )
        console.print(block, crop=False)
        console.print()

    return Paged(pinned, body)


def run_grad_steps(
    console: Console,
    grad: GradTrace,
    read_line: ReadLine,
    view: View = DEFAULT_VIEW,
    *,
    echo: bool = False,
    prompt_console: Console | None = None,
    read_key: ReadKey | None = None,
) -> None:
    """Walk ``grad`` (as shown) gradient by gradient until the user quits, passes the
    end, or input ends; ``echo``, ``prompt_console`` and ``read_key`` as in run --step."""
    stages, heads = walked_stages(grad), reached_heads(grad)
    walk(
        console,
        len(stages),
        lambda i: gradient_screen(grad, stages, i, view),
        lambda line, i: interpret(line, i, stages, heads),
        read_line,
        help_text(stages, heads),
        noun="gradient",
        keys=head_keys(len(heads), lambda i: stages[i].head),
        echo=echo,
        prompt_console=prompt_console,
        read_key=read_key,
    )
