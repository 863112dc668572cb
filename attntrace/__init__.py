"""attntrace: trace scaled dot-product attention stage by stage.

From Python::

    from attntrace import trace_attention
    trace = trace_attention("cat eats fish")
    trace["softmax"].data        # numpy array, the attention weights (read-only)

docs/forward.md's "What attntrace exports" documents each name, its arguments and errors.
The public names are imported lazily, so ``attntrace --help`` does not pay for numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attntrace.kernel import display as _display

__version__ = "0.1.0"

__all__ = [
    "InputError",
    "ModelSpec",
    "Stage",
    "Trace",
    "__version__",
    "check",
    "load_model",
    "trace_attention",
]

if TYPE_CHECKING:
    from attntrace.api import check, trace_attention
    from attntrace.errors import InputError
    from attntrace.kernel.spec import ModelSpec
    from attntrace.kernel.trace import Stage, Trace
    from attntrace.modelfile.model_file import load_model

_LAZY = {
    "trace_attention": "attntrace.api",
    "check": "attntrace.api",
    "InputError": "attntrace.errors",
    "load_model": "attntrace.modelfile.model_file",
    "ModelSpec": "attntrace.kernel.spec",
    "Stage": "attntrace.kernel.trace",
    "Trace": "attntrace.kernel.trace",
}


def _show_trace(trace: Any, form: _display.Form) -> Any:
    """How print(trace), Rich and Jupyter show a trace: the renderer's one entry point,
    imported the first time a trace is shown (the kernel cannot import it). In a notebook a
    trace is the explorer page (attntrace.page), its plain text the tables'; its HTML
    alone (``_repr_html_``) draws no tables."""
    if form == "html":
        from attntrace.page.notebook import notebook_html

        return notebook_html(trace)
    from attntrace.display import show

    shown = show(trace, form)
    if form == "jupyter" and isinstance(shown, dict):
        shown["text/html"] = _show_trace(trace, "html")
    return shown


_display.set_show(_show_trace)


def __dir__() -> list[str]:
    return sorted(__all__)


def __getattr__(name: str) -> Any:

    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'attntrace' has no attribute {name!r}")
