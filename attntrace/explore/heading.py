"""The line pinned at the top: which view, where the walk is, the model and sentence.

``Stage 7 of 8 · softmax  head 0   it-animal: The animal …`` (decode: ``decode · Step 3
of 11``, grad: ``grad · Gradient 2 of 12``). The trace given is the one made visible,
so its names and tokens are safe to show; the stage's own heading (title, shapes) is
its book's (:mod:`.book`).
"""

from __future__ import annotations

from rich.text import Text

from attntrace.explore.walk import Walk
from attntrace.ui.titles import head_label


def where_line(walk: Walk, view: str = "trace", dtype: str | None = None) -> Text:
    """``Stage 7 of 8 · softmax  head 0   it-animal: The animal …``, on one line; a
    low-precision trace's or decode's ``dtype`` after the head (``· float16``)."""
    stage, trace = walk.stage, walk.trace
    text = Text.assemble(
        ("" if view == "trace" else f"{view} · ", "bold"),
        (f"{walk.noun.capitalize()} {walk.position + 1} of {len(walk.indices)} · ", "dim"),
        (stage.name, "bold magenta"),
        (head_label(stage, trace.model), "bold yellow"),
        ("" if dtype is None else f" · {dtype}", "bold red"),
        (f"   {trace.model.name}: ", "dim"),
        (" ".join(trace.tokens), "dim"),
        ("" if trace.context_tokens is None else "  ⟵  " + " ".join(trace.context_tokens), "dim"),
    )
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text
