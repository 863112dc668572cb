"""The renderer's one entry point for a Trace shown outside the CLI.

``print(trace)``, ``rich.print(trace)`` and Jupyter ask :mod:`attntrace.core.display`,
which ``attntrace/__init__.py`` points here: the core names no renderer.
"""

from __future__ import annotations

from typing import Any

from attntrace.core.display import Form
from attntrace.core.trace import Trace
from attntrace.render.tables import shown_renderables, trace_mimebundle, trace_text


def show(trace: Trace, form: Form) -> Any:
    """``trace`` as ``form``: text (80 columns), Rich renderables, or a Jupyter bundle."""
    if form == "text":
        return trace_text(trace)
    if form == "rich":
        return shown_renderables(trace)
    return trace_mimebundle(trace)
