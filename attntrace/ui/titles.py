"""A stage's title: its formula, its shape and whose slice it is (head, K/V head).

Shared by the tables, step mode's panel and the attention map's head labels, so every
view names a slice the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from attntrace.kernel.trace import ModelInfo, Stage
from attntrace.ui.fitted import Fitted


def title(stage: Stage, model: ModelInfo | None = None) -> Text:
    """``Q = X · WQ   [3 × 2]  head 1 · K/V head 0``: formula, shape, and whose it is.

    The head is named wherever the model has more than one, and the K/V head wherever
    query heads share them (GQA, MQA), so a reader knows which slice is on screen.
    """
    rows, cols = stage.shape
    text = Text()
    text.append(stage.formula, style="bold")
    text.append(f"   [{rows} × {cols}]", style="cyan")
    text.append(head_label(stage, model), style="bold yellow")
    return text


def fitted_title(stage: Stage, model: ModelInfo | None = None) -> Fitted:
    """:func:`title` on one line where it fits, else the head on a line of its own: a
    narrow terminal would otherwise leave ``K/V head`` at a line's end and ``0`` below."""
    whose = head_label(stage, model).strip()
    narrow = title(stage)  # no model: no head
    narrow.append("\n" + whose, style="bold yellow")
    return Fitted((title(stage, model), narrow) if whose else (title(stage, model),))


def head_label(stage: Stage, model: ModelInfo | None) -> str:
    """``  head 1 · K/V head 0``, or '' for a one-head model and shared stages."""
    if model is None or (model.heads == 1 and model.kv_heads == 1):
        return ""
    parts = []
    if stage.head is not None:
        parts.append(f"head {stage.head}")
    if stage.kv_head is not None and (model.group > 1 or stage.head is None):
        parts.append(f"K/V head {stage.kv_head}")
    return "  " + " · ".join(parts) if parts else ""


def numbered(what: str, indices: Sequence[int]) -> str:
    """``head 1``, ``heads 1, 3``, ``heads 0 to 11`` (a run of three or more)."""
    if len(indices) == 1:
        return f"{what} {indices[0]}"
    if len(indices) > 2 and indices[-1] - indices[0] == len(indices) - 1:
        return f"{what}s {indices[0]} to {indices[-1]}"
    return f"{what}s {', '.join(map(str, indices))}"
