"""The explorer's keys, listed once: the help screen shows them, docs/explore.md
documents them (tests/explore/ holds the two to each other), the app binds them.

Only the keys that work are listed: ``h``/``H`` with more than one head traced, ``l``/
``L`` on a real model's layer, ``d`` where the model is causal (a decoder to decode).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Abilities:
    """What the trace on screen allows."""

    heads: bool  # more than one head traced: h, H
    layers: bool  # a real model's layer: l, L
    decode: bool  # a causal model: d
    grad: bool  # the backward pass: g


def key_list(can: Abilities) -> list[tuple[str, str]]:
    """(keys, what they do), in the order the help screen lists them."""
    keys = [
        ("n, PageDown", "next stage"),
        ("b, PageUp", "previous stage"),
        ("1-9", "jump to that stage (numbered as in the list)"),
        (":NAME Enter", "jump to a stage by name or number; Esc cancels"),
        ("arrows", "move the cell cursor (the pane explains the cell under it)"),
        ("Home, End", "the first / last column"),
        ("Enter", "explain the cell under the cursor"),
    ]
    if can.heads:
        keys.append(("h, H", "the same stage of the next / previous head"))
    if can.layers:
        keys.append(("l, L", "the next / previous layer of a real model, recomputed"))
    views = [("t", "the trace")]
    if can.decode:
        views.append(("d", "decode: the KV cache growing token by token"))
    if can.grad:
        views.append(("g", "grad: each gradient beside its forward stage"))
    if len(views) > 1:
        keys.extend(views)
    keys += [("?", "this help (any key closes it)"), ("q, Ctrl-C", "quit")]
    return keys


# hints given up, in this order, when the status line is too narrow for them all; "?"
# lists every key and "q" quits, so those two always stay
DROPPED_FIRST = (":name jump", "arrows cell")


def status_hints(can: Abilities, noun: str, width: int) -> str:
    """The status line's reminder of the keys that work here, fitted to ``width`` cells
    by leaving out the hints of :data:`DROPPED_FIRST` rather than cutting ``? help``."""
    hints = [f"n/b {noun}", "arrows cell"]
    hints += ["h/H head"] if can.heads else []
    hints += ["l/L layer"] if can.layers else []
    views = [k for k, on in (("t", True), ("d", can.decode), ("g", can.grad)) if on]
    hints += ["/".join(views) + " view"] if len(views) > 1 else []
    hints += [":name jump", "? help", "q quit"]
    for dropped in DROPPED_FIRST:
        if len(" · ".join(hints)) <= width:
            break
        hints.remove(dropped)
    return " · ".join(hints)
