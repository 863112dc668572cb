"""Running the CLI in-process, the way a user's terminal would see it."""

from __future__ import annotations

import json
import re
import signal
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import pytest
from hypothesis import settings
from typer.testing import CliRunner, Result  # type: ignore[attr-defined, unused-ignore]

from attntrace.cli import app
from attntrace.forward.trace_json import schema_text
from attntrace.real.catalog import CATALOG

# A property that runs the whole CLI (or draws a whole panel) for each example costs some
# 30 ms an example; under the ci profile it runs 200, not the 300 of the cheap ones, so
# the deeper run stays minutes. Under dev (100) nothing changes.
WHOLE_RUN_EXAMPLES = 200
_PROFILE = settings.default  # conftest.py loaded the profile before any test module
assert _PROFILE is not None
whole_runs = settings(max_examples=min(_PROFILE.max_examples, WHOLE_RUN_EXAMPLES))


# Tests of the real models skip, naming the install commands, unless MiniLM's and
# SmolLM2's weights are installed (what the tests marked so trace; Gemma 3's have their
# own skips, so a machine without its 250 MB still runs these).
_MISSING = [m.install for m in CATALOG if m.name in ("minilm", "smollm2") and not m.installed]
WEIGHTS_MISSING = (
    f"a real model's weights are not installed: {'; '.join(_MISSING)}" if _MISSING else None
)
needs_weights = pytest.mark.skipif(WEIGHTS_MISSING is not None, reason=WEIGHTS_MISSING or "")


def invoke(*args: str, input: str | None = None, columns: int = 80) -> Result:
    """Run ``attntrace ARGS`` with a fixed terminal width and no colour."""
    env = {"COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"}
    return CliRunner().invoke(app, list(args), input=input, env=env)


def one_line_error(result: Result, *words: str) -> str:
    """The one line a refused command prints (docs/cli.md, the error line): exit 2,
    nothing on stdout, no traceback, ``attntrace: error: …`` with each of ``words``."""
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    err: str = result.stderr
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    assert err.endswith("\n"), err
    line = err[:-1]
    assert line.startswith("attntrace: error: "), line
    for word in words:
        assert word in line, line
    return line


def schema(name: str) -> dict[str, Any]:
    """A shipped JSON Schema by file name, as installed with the package."""
    text = (resources.files("attntrace") / "schema" / name).read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


@cache
def trace_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(schema_text())
    return schema


def load_valid_trace(text: str) -> dict[str, Any]:
    """Parse a --json document and validate it against the shipped JSON Schema."""
    document: dict[str, Any] = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(trace_schema())
    jsonschema.validate(document, trace_schema(), cls=jsonschema.Draft202012Validator)
    return document


_MEASURED = re.compile(r"(measured here: max \|Δ\| = )(\S+)")
_BOUND = re.compile(r"\|Δ\| ≤ (\S+) for these numbers")


def machine_independent(text: str) -> str:
    """``text`` with the figures this machine alone decides replaced by ``…``, for golden
    files: decode's measured |Δ| (its last bits are the CPU's BLAS kernel's). Each is
    checked first against the rounding bound printed beside it, which is the same
    everywhere."""
    bounds = [float(b) for b in _BOUND.findall(text)]
    for measured in _MEASURED.finditer(text):
        assert bounds, "a measured |Δ| without the bound it is judged by"
        assert float(measured[2]) <= max(bounds), measured[0]
    return _MEASURED.sub(r"\1…", text)


def raw_controls(text: str) -> list[str]:
    """The characters of ``text`` a terminal would act on or not show (newlines aside),
    as ``U+001B``: none may reach the terminal raw (attntrace.visible)."""
    return sorted(
        {
            f"U+{ord(ch):04X}"
            for ch in text
            if (ch != "\n" and not (ch.isprintable() or ch == " "))
            or unicodedata.category(ch) == "Cf"
        }
    )


class Overtime(Exception):
    """A block ran past its :func:`time_limit` (not an OSError, as TimeoutError is: a
    reader that catches OSError cannot swallow it)."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`Overtime` in the block after ``seconds``: a read that blocks (a FIFO
    with no writer) or never ends fails the test instead of hanging the suite."""

    def expire(signum: int, frame: object) -> None:
        raise Overtime(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def ctrl_c_as_a_terminal_delivers_it() -> None:
    """For a child's ``preexec_fn``: SIGINT back to its default. A shell starts a
    background job with SIGINT ignored, and Python then keeps ignoring it; a test of
    what Ctrl-C does must not depend on how the suite itself was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
