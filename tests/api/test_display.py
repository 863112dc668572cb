"""A trace shows itself (print, Rich, Jupyter) after any import of attntrace, though the
kernel imports no renderer: attntrace/__init__.py sets the one attntrace.kernel.display uses."""

from __future__ import annotations

import subprocess
import sys

from paths import ROOT

PROBE = """
import io, sys
from attntrace import trace_attention
trace = trace_attention("cat eats fish")
drawing = ("attntrace.ui", "attntrace.display", "rich")
print("RENDERER", any(name.startswith(drawing) or ".views" in name for name in sys.modules))
text = str(trace)
print("TEXT", "output = softmax · V" in text, max(map(len, text.splitlines())) <= 80)
bundle = trace._repr_mimebundle_()
print("JUPYTER", sorted(bundle), "output" in bundle["text/html"])
from rich.console import Console
console = Console(file=io.StringIO(), width=100, color_system=None)
console.print(trace)
print("RICH", "output = softmax · V" in console.file.getvalue())
"""


def test_a_trace_shows_itself_in_a_process_that_imported_only_trace_attention() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "RENDERER False",  # nothing of the renderer until a trace is shown
        "TEXT True True",
        "JUPYTER ['text/html', 'text/plain'] True",
        "RICH True",
    ]


def test_a_check_report_prints_as_the_command_draws_it() -> None:
    import io

    from rich.console import Console

    import attntrace

    trace = attntrace.trace_attention()
    report = attntrace.check({"attn": trace["softmax"].data + 0.5})
    text = str(report)
    assert "✗ softmax (as attn)" in text
    assert "first difference: softmax" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(report)
    assert out.getvalue().rstrip() == text.rstrip()
