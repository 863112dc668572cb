"""The flags more than one command takes, declared once: the same name, metavar and help.

``--json`` is one flag on every command that writes a document, each saying what it
writes: :func:`json_flag` declares it with that command's help. A flag a single command
takes stays in that command's signature. An option without a name of its own here
(``Precision``, ``Top``, ...) is named after the parameter that takes it (``top`` ->
``--top``), so the commands keep these parameter names.

A group of flags read together (the model's, in cli/model_flags) is declared once and
given to each command by :func:`flag_group`: the command takes one parameter, the group
gathered, and Typer sees the flags in its place.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand  # what `import typer` loaded already

if TYPE_CHECKING:
    from typer._click import Parameter


def completion(values: Callable[[], Iterable[str]]) -> Callable[[str], list[str]]:
    """Typer's ``autocompletion=`` for a flag with a fixed set of values: those starting
    with what was typed, so that ``run -s <Tab>`` offers the samples, not the files here
    (nothing matching: the shell's script falls back to files). ``values`` imports what
    it lists when it is called, at a Tab, never at start-up (``attntrace --help`` loads
    neither numpy nor yaml)."""

    def complete(incomplete: str) -> list[str]:
        return [value for value in values() if value.startswith(incomplete)]

    return complete


def _losses() -> tuple[str, ...]:
    from attntrace.learning.objective import LOSS_KINDS

    return LOSS_KINDS


# The loss of `grad` and `train` (docs/learning.md#the-losses).
LossFlag = Annotated[
    str | None,
    typer.Option(
        "--loss",
        metavar="LOSS",
        show_default=False,
        autocompletion=completion(_losses),
        help="attend (−log softmax[from, to]) or mse (against the model's target); "
        "default: attend with --from/--to, else mse with a target.",
    ),
]
FromToken = Annotated[
    str | None,
    typer.Option(
        "--from",
        metavar="TOKEN",
        show_default=False,
        help="The attend loss's query token (a token, it#7, or an index).",
    ),
]
# --head of grad and train: the attend loss's head (not `run --model`'s head to trace).
LossHead = Annotated[
    int | None,
    typer.Option(
        "--head",
        min=0,
        metavar="H",
        show_default=False,
        help="The attend loss of head H alone (default: summed over every head).",
    ),
]
ToToken = Annotated[
    str | None,
    typer.Option(
        "--to", metavar="TOKEN", show_default=False, help="The key token it should look at."
    ),
]
# Display flags shared by `run` and `render`: none of them changes a number.
Step = Annotated[
    bool, typer.Option("--step", metavar="", help="One stage per screen, with a prompt.")
]
Precision = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=15,
        metavar="N",
        help="Digits after the point (default: 4 in tables, 2 in --map).",
        show_default=False,
    ),
]
# --precision for the commands without --map (check, diff): tables only.
TablePrecision = Annotated[
    int | None,
    typer.Option(
        "--precision",
        min=0,
        max=15,
        metavar="N",
        help="Digits after the point in the tables (default 4).",
        show_default=False,
    ),
]
FocusFlag = Annotated[
    str | None,
    typer.Option(
        "--focus",
        metavar="TOKEN",
        help="One token's row by hand (a token, fish#4, or a 0-based index).",
    ),
]
Map = Annotated[
    bool, typer.Option("--map", metavar="", help="Where each token looks: weights as bars.")
]
Top = Annotated[
    int | None,
    typer.Option(
        min=1,
        metavar="K",
        help="With --map: how many keys per token (default 3).",
        show_default=False,
    ),
]
Overview = Annotated[
    bool, typer.Option("--overview", metavar="", help="Every stage at once, compactly.")
]
MaxRows = Annotated[int, typer.Option(min=0, metavar="N", help="Rows shown per table (0: all).")]
MaxCols = Annotated[
    int | None,
    typer.Option(
        min=0,
        metavar="N",
        help="Columns shown per table (0: all; default: fit).",
        show_default=False,
    ),
]
ColsFlag = Annotated[
    str | None,
    typer.Option(
        "--cols",
        metavar="TOKENS",
        help="Only these keys' columns in the tables (comma-separated: it,street, the#4, 3).",
    ),
]
RowsFlag = Annotated[
    str | None,
    typer.Option(
        "--rows",
        metavar="TOKENS",
        help="Only these tokens' rows in the tables (comma-separated: it,street, the#4, 3).",
    ),
]
MaxHeads = Annotated[
    int,
    typer.Option(min=0, metavar="N", help="Heads shown in the tables, first and last (0: all)."),
]
PageExport = Annotated[  # decode, flash, grad, check and diff: the explorer page only
    str | None,
    typer.Option(
        "--export",
        metavar="FILE",
        help="Also save the explorer page: one self-contained .html file.",
        show_default=False,
    ),
]
Export = Annotated[  # a str: a Path would make 'x.svg/' into x.svg and '' into '.'
    str | None,
    typer.Option(
        metavar="FILE",
        help="Also save what is shown as .svg or .txt, or the explorer page as .html.",
        show_default=False,
    ),
]


def sentence_argument(help_text: str) -> Any:
    """``SENTENCE``: the words of run, check, decode and heads (quoted or not, joined with
    spaces); only its help, what the default is, differs
    (``Annotated[list[str] | None, sentence_argument("...")]``)."""
    return typer.Argument(metavar="SENTENCE", help=help_text, show_default=False)


def json_flag(help_text: str) -> Any:
    """``--json``: the same flag on every command that writes a document; only its help,
    what it writes, differs (``Annotated[bool, json_flag("...")]``)."""
    return typer.Option("--json", metavar="", help=help_text)


Command = Callable[..., None]


def flag_group(
    group: type, declared: Mapping[str, Any], taken: Sequence[str]
) -> Callable[[Command], Command]:
    """A decorator: the flags ``taken`` of ``declared`` (parameter name -> its Annotated
    type, every one None when not given), spliced into the command's signature where it
    has a parameter typed ``group``, and passed to it gathered as ``group(**flags)`` (a
    flag left out is left to the group's default).

    ``taken`` is the order ``--help`` lists them in. A name in it that is a parameter of
    the command is the command's own flag, moved there and passed to it as it was (a flag
    with its own help or use, listed among the group's)."""

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)  # Typer reads no strings here
        params = signature.parameters
        [marker] = [param for param in params.values() if param.annotation is group]
        gathered = [name for name in taken if name not in params]

        def spliced(name: str) -> inspect.Parameter:
            if name in params:
                return params[name].replace(kind=marker.kind)
            return inspect.Parameter(name, marker.kind, default=None, annotation=declared[name])

        listed: list[inspect.Parameter] = []
        for param in params.values():
            if param is marker:
                listed += [spliced(name) for name in taken]
            elif param.name not in taken:
                listed.append(param)

        @functools.wraps(command)
        def with_group(**given: Any) -> None:
            values = {name: given.pop(name) for name in gathered}
            flags = group(**{name: value for name, value in values.items() if value is not None})
            command(**given, **{marker.name: flags})

        with_group.__signature__ = signature.replace(parameters=listed)  # type: ignore[attr-defined]
        with_group.__annotations__ = {param.name: param.annotation for param in listed}
        with_group.__annotations__["return"] = signature.return_annotation
        return with_group

    return decorate


def terminal_flags() -> list[Parameter]:
    """``--color WHEN`` and ``--width N``, made anew for each command that takes them
    (every command, and ``attntrace`` itself before the command's name): they win over
    ``NO_COLOR``, ``FORCE_COLOR`` and ``COLUMNS`` (:mod:`attntrace.cli.pipes`)."""
    from typer.core import TyperOption  # what `import typer` loaded already

    from attntrace.cli.pipes import COLORS, WIDTHS, color_given, width_given

    colors = completion(lambda: COLORS)
    return [
        TyperOption(
            param_decls=["--color"],
            metavar="WHEN",
            expose_value=False,
            is_eager=True,  # before --help, which then draws as asked
            callback=color_given,
            autocompletion=lambda _ctx, _args, incomplete: colors(incomplete),
            help="auto (a terminal, unless NO_COLOR), always (a pipe too) or never; "
            "wins over NO_COLOR and FORCE_COLOR.",
        ),
        TyperOption(
            param_decls=["--width"],
            metavar="N",
            expose_value=False,
            is_eager=True,  # before --help, which then draws as asked
            callback=width_given,
            help=f"Draw N columns wide ({WIDTHS[0]}–{WIDTHS[1]}); wins over COLUMNS.",
        ),
    ]


class DrawingCommand(TyperCommand):
    """Every command's class: Typer's, with :func:`terminal_flags` after its own flags,
    so that ``attntrace run --color never`` works without each signature naming them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.extend(terminal_flags())
