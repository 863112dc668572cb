"""The process around the app: its terminal size, its streams, its usage errors, its exit.

:func:`attntrace.cli.main` runs the app through these, so the commands never meet a
closed stream, and a usage error is said as every other error is: one line, exit 2.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import os
import sys
import unicodedata
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

import typer

if TYPE_CHECKING:
    from typer._click import Context, Parameter

FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EIO)  # writes that cannot go on
USAGE_LIMIT = 300  # characters of a usage error's message: it may quote a whole argument

# COLUMNS and LINES, where set: within these, or ignored (the terminal's own size, or
# 80 columns where there is no terminal).
_SANE_SIZES = {"COLUMNS": (20, 1000), "LINES": (5, 1000)}


def sane_terminal_size() -> None:
    """Keep ``COLUMNS`` and ``LINES`` to sizes a table can be drawn in, before Rich or
    typer read them: ``COLUMNS=0`` drew every view zero cells wide (nothing at all,
    exit 0, and an empty export "saved"), ``COLUMNS=-1`` or ``abc`` is no size, and
    ``COLUMNS=100000000`` would pad a rule to a hundred million cells. A value below
    or above the range is taken to its end; one that is no positive number is dropped."""
    for name, (low, high) in _SANE_SIZES.items():
        value = os.environ.get(name)
        if value is None:
            continue
        try:
            number = int(value.strip())
        except ValueError:
            number = 0
        if number < 1:
            del os.environ[name]
        else:
            os.environ[name] = str(min(max(number, low), high))


def streams_open() -> bool:
    """Python starts with ``sys.stdin``, ``sys.stdout`` or ``sys.stderr`` None where that
    file descriptor was closed (``>&-``, ``<&-``, ``2>&-``). A closed stderr becomes
    /dev/null (a message then goes nowhere, but the exit code still tells), a closed
    stdin an empty one (step mode ends at once; ``-`` says stdin is closed); a closed
    stdout leaves nowhere to write the output at all: one line, and False."""
    if sys.stderr is None:
        sys.stderr = Path(os.devnull).open("w", encoding="utf-8")  # noqa: SIM115  # for good
    if sys.stdout is None:
        sys.stderr.write("attntrace: error: cannot write the output: stdout is closed\n")
        return False
    return True


# What attntrace writes that an ASCII stream cannot take, as ASCII a reader follows:
# the house characters of the tables, formulas and messages. Box drawing and block
# elements have their own rule (_ascii_form); Rich draws its own boxes in ASCII already
# where the stream's encoding is not UTF-*.
ASCII_FORMS = {
    **dict.fromkeys("·∘", "*"),
    "×": "x",
    **dict.fromkeys("−–", "-"),
    "—": "--",
    "∓": "-+",
    "±": "+-",
    "÷": "/",
    "∞": "inf",
    "√": "sqrt ",
    "…": "...",
    "→": "->",
    **dict.fromkeys("←⟵", "<-"),
    "≤": "<=",
    "≥": ">=",
    "≠": "!=",
    "≈": "~",
    "‖": "||",
    "⌈": "ceil(",
    "⌉": ")",
    "∂": "d",
    "ℓ": "l",
    "ᵀ": "^T",
    **{ch: f"^{digit}" for ch, digit in zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-", strict=True)},
    **{ch: f"_{digit}" for ch, digit in zip("₀₁₂₃₄₅₆₇₈₉₋", "0123456789-", strict=True)},
    **{ch: f"_{letter}" for ch, letter in zip("ₖᵢⱼₜ", "kijt", strict=True)},
    "Σ": "sum",
    "Δ": "delta",
    "δ": "delta",
    "σ": "sigma",
    "θ": "theta",
    "Θ": "Theta",
    "ε": "eps",
    "γ": "gamma",
    "π": "pi",
    "Φ": "Phi",
    "½": "1/2",
    "✓": "ok",
    "✗": "X",
    "†": "+",
    "▶": ">",
    "◀": "<",
    "■": "#",
    "□": ".",
    "•": "*",
    "\u0303": "~",  # the tilde of P̃
}


# A sparkline's eighths, lowest to highest (the rest of the blocks are #).
_BLOCKS = dict(zip("▁▂▃▄▅▆▇", "__.--==", strict=True))


def _ascii_form(ch: str, unknown: Callable[[str], str]) -> str:
    """``ch`` as ASCII: from :data:`ASCII_FORMS`; a line of a box as ``-``, ``|`` or
    ``+``; a block (bars, the heatmap's shades) as ``#``; a letter by its compatibility
    form where that is ASCII (é as e, ｃ as c, ﬁ as fi); anything else by ``unknown``."""
    if ch in ASCII_FORMS:
        return ASCII_FORMS[ch]
    if "\u2500" <= ch <= "\u257f":
        name = unicodedata.name(ch, "")
        return "-" if "HORIZONTAL" in name else "|" if "VERTICAL" in name else "+"
    if "\u2580" <= ch <= "\u259f":
        return _BLOCKS.get(ch, "#")
    plain = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode("ascii")
    return plain if plain.isprintable() and plain else unknown(ch)


def _unknown_cells(ch: str) -> str:
    """``?`` for each cell the character took, so a table's columns still line up."""
    if unicodedata.combining(ch):
        return ""
    return "??" if unicodedata.east_asian_width(ch) in ("W", "F") else "?"


def _escaped(ch: str) -> str:
    """The character's escape, as ``backslashreplace`` writes it: in a message, which
    token was meant matters more than the width."""
    return ch.encode("ascii", "backslashreplace").decode("ascii")


def _handler(unknown: Callable[[str], str]) -> Callable[[UnicodeError], tuple[str, int]]:
    def handle(error: UnicodeError) -> tuple[str, int]:
        if not isinstance(error, UnicodeEncodeError):
            raise error
        text = error.object[error.start : error.end]
        return "".join(_ascii_form(ch, unknown) for ch in text), error.end

    return handle


# The stream's errors= handlers: stdout's keeps a table's widths, stderr's says which
# character it was.
OUT_HANDLER, ERR_HANDLER = "attntrace-ascii-cells", "attntrace-ascii-escapes"
codecs.register_error(OUT_HANDLER, _handler(_unknown_cells))
codecs.register_error(ERR_HANDLER, _handler(_escaped))

# Every kind of character attntrace writes: a stream that encodes these takes them all.
_PROBE = "·×−√→…─█▶é猫🐟"


def takes_unicode(stream: TextIO) -> bool:
    """Whether ``stream``'s encoding writes every character (UTF-8, and the like)."""
    try:
        _PROBE.encode(stream.encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def ascii_where_needed() -> None:
    """Where stdout or stderr cannot encode what attntrace writes (``PYTHONIOENCODING=
    ascii`` or ``latin-1``, ``LC_ALL=C PYTHONUTF8=0``), write what it cannot encode as
    ASCII instead of ending in UnicodeEncodeError (``attntrace -h`` did): · as *, √ as
    sqrt, a box's lines as - | +, é as e, and anything else as ? on stdout (one for each
    cell it took, so a table keeps its columns) or its escape on stderr (``\\u732b``).
    What the stream can encode is written as it is (latin-1 keeps ·, ×, é). Rich sees
    the stream's encoding and draws its boxes in ASCII itself."""
    for stream, handler in ((sys.stdout, OUT_HANDLER), (sys.stderr, ERR_HANDLER)):
        if isinstance(stream, io.TextIOWrapper) and not takes_unicode(stream):
            with contextlib.suppress(ValueError):  # closed
                stream.reconfigure(errors=handler)


def no_numpy_warnings() -> None:
    """Keep numpy's warnings off stderr, where only error lines and progress go: a
    floating-point RuntimeWarning (numpy names the caller's line, so it is matched by
    its category) and anything numpy warns itself (a ``.npy`` shape of 2**62 rows made
    its memmap print ``overflow encountered in scalar multiply`` above the error line).
    What matters is checked by attntrace itself: a stage that overflows to inf is one
    error line (``stage Q: float64 overflowed to inf``), a --dtype overflow is shown. The
    API and the tests leave the filters alone (the tests turn every warning into an
    error, so a new one is seen there)."""
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    warnings.filterwarnings("ignore", module=r"numpy(\.|$)")


def exit_now(code: int) -> NoReturn:
    """Flush and leave without tearing the interpreter down.

    Teardown frees every array one by one: after a GPT-2-sized trace (110 MB of stages)
    that is some 35 ms of waiting for nothing, a tenth of the whole command. attntrace
    holds no resource that needs a finalizer (files are written and closed before this).
    """
    if sys.flags.inspect:  # python -i: the user wants the interpreter afterwards
        raise SystemExit(code)
    for stream in (sys.stdout, sys.stderr):
        # a reader that left early, or a closed stream: nothing more to say, either way
        # (a failed write of the output itself was reported in quiet_pipe)
        with contextlib.suppress(OSError, ValueError, AttributeError):  # None: never open
            stream.flush()
    os._exit(code)


def run_app(app: typer.Typer) -> int:
    """Run the app and return its exit code; a usage error is one line on stderr, exit 2.

    Typer draws usage errors as a boxed panel after the usage line; attntrace's other
    errors are one ``attntrace: error: ...`` line that scripts can grep, so usage errors
    (an unknown flag, ``--precision 99``) are caught here and said the same way.
    """
    from typer._click.exceptions import ClickException  # vendored click, typer 0.26-0.28
    from typer.main import get_command

    command = get_command(app)
    try:
        code = command.main(prog_name="attntrace", standalone_mode=False)
    except typer.Abort:
        sys.stderr.write("Aborted!\n")
        return 1
    except ClickException as error:  # usage errors; typer.TyperException only from 0.28
        if type(error).__name__ == "NoArgsIsHelpError":  # the help is already printed
            return 2
        context = getattr(error, "ctx", None)
        # some errors (an option missing its value) carry no context: name the command
        named = [a for a in sys.argv[1:] if a in getattr(command, "commands", {})][:1]
        where = context.command_path if context is not None else " ".join(["attntrace", *named])
        # it may quote what was typed (typer 0.26's click does not escape it): made visible
        from attntrace.visible import visible

        message = visible(" ".join(error.format_message().split()), USAGE_LIMIT)
        sys.stderr.write(f"attntrace: error: {message} (try '{visible(where)} -h')\n")
        return int(getattr(error, "exit_code", 2))
    return code if isinstance(code, int) else 0


def stdout_is_devnull() -> bool:
    try:
        out, null = os.fstat(sys.stdout.fileno()), Path(os.devnull).stat()
    except (OSError, ValueError):
        return False
    return (out.st_dev, out.st_ino) == (null.st_dev, null.st_ino)


# Shell completion (Typer's scripts and its _ATTNTRACE_COMPLETE protocol). Typer's own
# --show-completion is a flag that detects the shell and ignores a name after it
# (`--show-completion zsh` in bash printed bash's script): here the name is a value,
# and the flag alone detects the shell.
SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
COMPLETION_FLAGS = ("--show-completion", "--install-completion")
_DETECT = "detect"  # what the flag given alone stands for
_GROUP_VALUES = ("--color", "--width", *COMPLETION_FLAGS)  # flags with a value


def shell_named(args: list[str]) -> list[str]:
    """``args`` with the shell of a completion flag given alone made explicit
    (``--show-completion`` -> ``--show-completion detect``), up to the command's name."""
    out, words = [], iter(args)
    for word in words:
        out.append(word)
        if word in COMPLETION_FLAGS:
            following = next(words, None)
            if following is None or following.startswith("-"):
                out.append(_DETECT)
            if following is not None:
                out.append(following)
        elif word in _GROUP_VALUES:
            out.extend(word for word in [next(words, None)] if word is not None)
        elif not word.startswith("-"):
            out.extend(words)  # the command's name: the rest is the command's
    return out


def _shell(value: str) -> str:
    """The shell named, or the one this process runs in."""
    if value != _DETECT:
        return value
    from typer._completion_shared import _get_shell_name  # shellingham, as Typer does

    found = _get_shell_name()
    if found not in SHELLS:
        raise typer.BadParameter(
            f"cannot tell which shell this is ({found or 'none found'}): name one of "
            + ", ".join(SHELLS)
        )
    return found


def _completion_given(install: bool) -> Callable[..., None]:
    def given(ctx: Context, _param: Parameter, value: str | None) -> None:
        if value is None or ctx.resilient_parsing:
            return
        from typer._completion_shared import get_completion_script
        from typer._completion_shared import install as install_script

        if value not in (*SHELLS, _DETECT):
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(SHELLS)}")
        shell = _shell(value)
        if not install:
            typer.echo(get_completion_script(**_NAMES, shell=shell))
            raise typer.Exit(0)
        try:
            shell, path = install_script(shell=shell, **_NAMES)
        except OSError as error:
            where = f" {error.filename}" if error.filename else ""
            sys.stderr.write(f"attntrace: error: cannot install{where}: {error.strerror}\n")
            raise typer.Exit(1) from None
        typer.echo(f"{shell} completion installed in {path}; it works in a new shell")
        raise typer.Exit(0)

    return given


_NAMES = {"prog_name": "attntrace", "complete_var": "_ATTNTRACE_COMPLETE"}


def completion_flags() -> list[Parameter]:
    """``--show-completion [SHELL]`` and ``--install-completion [SHELL]``."""
    from typer._completion_classes import completion_init  # loaded by `import typer`
    from typer.core import TyperOption

    completion_init()  # Typer's bash/zsh/fish classes for _ATTNTRACE_COMPLETE
    shells = ", ".join(SHELLS)
    return [
        TyperOption(
            param_decls=[flag],
            metavar="[SHELL]",
            expose_value=False,
            is_eager=True,
            callback=_completion_given(flag == "--install-completion"),
            autocompletion=lambda _ctx, _args, typed: [s for s in SHELLS if s.startswith(typed)],
            help=f"{what} ({shells}; default: this shell).",
        )
        for flag, what in zip(
            COMPLETION_FLAGS,
            ("Print the completion script for SHELL", "Install completion for SHELL"),
            strict=True,
        )
    ]
