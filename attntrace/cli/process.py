"""The process around the app: its terminal size, its streams, its usage errors, its exit.

:func:`attntrace.cli.main` runs the app through these, so the commands never meet a
closed stream, and a usage error is said as every other error is: one line, exit 2.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from pathlib import Path
from typing import NoReturn

import typer

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
