"""Which rows and columns a table too big for its screen keeps, and how it marks the rest.

The one rule every stage table follows (docs/forward.md, "What a narrow table keeps"):

- ``--cols``/``--rows`` name tokens: a table over those tokens shows exactly them.
- Otherwise the table keeps, in this order, as many as fit: the focused token
  (``--focus``), the first and the last, then
  - over key tokens (columns of scores, scaled, softmax, ...): the heaviest keys of the
    rows shown, each key ranked by the largest attention weight it gets in any of those
    rows. Softmax ranks by itself; the stages before it (scores, scaled, masked, biased,
    capped) rank by the same head's softmax, so that their columns line up with it. A
    token axis with no weights beside it (a gradient's dA) ranks by the largest
    magnitude in the rows shown;
  - over dimensions (d0, d1, ...) and over rows: the next from either end, as numpy
    summarizes (the first and last halves).
- Each run of hidden rows or columns is one row or column marked ``…``; where an axis
  has several, each says how many it hides (``…3``).

Only the order is decided here; how many fit is measured by the table
(:class:`attntrace.ui.stage_table.StageTable`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import chain

import numpy as np
import numpy.typing as npt

from attntrace.kernel.trace import Stage, Trace
from attntrace.ui.numbers import CUT


def keeping_order(
    count: int, pinned: Iterable[int] = (), ranked: Iterable[int] = ()
) -> Iterator[int]:
    """Indices ``0 … count−1``, each once, in the order a summarized axis keeps them:
    ``pinned`` (the focused token), the first and the last, ``ranked`` (the heaviest
    keys), then the rest from either end inward (lazily: a 768-wide axis is asked for
    its first twenty)."""
    seen: set[int] = set()
    for index in chain(pinned, (0, count - 1), ranked, _inward(count)):
        if 0 <= index < count and index not in seen:
            seen.add(index)
            yield index


def _inward(count: int) -> Iterator[int]:
    """0, count−1, 1, count−2, ...: numpy's first and last halves, one from each end."""
    low, high = 0, count - 1
    while low <= high:
        yield low
        if high != low:
            yield high
        low, high = low + 1, high - 1


def heaviest(
    data: npt.NDArray[np.float64], rows: Sequence[int], *, magnitude: bool, masks: bool = True
) -> list[int]:
    """Columns of ``data`` heaviest first: by their largest value in ``rows`` (weights),
    or largest ``|value|`` (``magnitude``: a stage with no weights beside it). A NaN or
    an overflow counts as heaviest (it is what a reader must see); a masked −∞ (where
    ``masks``) as lightest. Ties keep the sentence's order."""
    if not len(rows) or not data.shape[1]:
        return []
    block = np.asarray(data[list(rows)], dtype=np.float64)
    hidden = np.isneginf(block) if masks else np.zeros(block.shape, dtype=bool)
    values = np.abs(block) if magnitude else block
    values = np.where(np.isnan(values), np.inf, values)
    values = np.where(hidden, -np.inf, values)
    top = values.max(axis=0)
    order: list[int] = np.argsort(-top, kind="stable").tolist()
    return order


def with_gaps(kept: Iterable[int], count: int) -> list[int | None]:
    """The kept indices in order, ``None`` wherever some are hidden between them (or
    before the first, or after the last)."""
    shown: list[int | None] = []
    previous = -1
    for index in sorted(set(kept)):
        if index > previous + 1:
            shown.append(None)
        shown.append(index)
        previous = index
    if previous < count - 1:
        shown.append(None)
    return shown


def hidden_counts(shown: Sequence[int | None], count: int) -> list[int]:
    """For each entry of ``shown``: 0 for a kept index, how many a gap hides for None."""
    counts = []
    for position, index in enumerate(shown):
        if index is not None:
            counts.append(0)
            continue
        before = shown[position - 1] if position else None
        after = shown[position + 1] if position + 1 < len(shown) else None
        low = -1 if before is None else before
        high = count if after is None else after
        counts.append(high - low - 1)
    return counts


def gap_labels(shown: Sequence[int | None], count: int) -> list[str]:
    """For each entry of ``shown``: '' for a kept index, and a gap's header: ``…`` where
    it is the axis's only gap (the note under the table counts what is hidden), ``…3``
    (three hidden) where there are several."""
    counts = hidden_counts(shown, count)
    several = sum(index is None for index in shown) > 1
    return [
        "" if index is not None else f"{CUT}{hidden}" if several else CUT
        for index, hidden in zip(shown, counts, strict=True)
    ]


def chosen(labels: Sequence[str], wanted: Sequence[str] | None) -> list[int] | None:
    """The positions of ``wanted`` (``--cols``/``--rows``, as the tables label tokens)
    among ``labels``: None where none of them is there (a table over dimensions)."""
    if not wanted:
        return None
    names = set(wanted)
    found = [i for i, label in enumerate(labels) if label in names]
    return found or None


def pinned(labels: Sequence[str], focus: str | None) -> list[int]:
    """The focused token's position among ``labels``, where it is one of them."""
    if focus is None:
        return []
    return [i for i, label in enumerate(labels) if label == focus][:1]


def weights_beside(stage: Stage, trace: Trace) -> Stage | None:
    """The attention weights ``stage``'s columns are ranked by: the same head's softmax,
    for a stage over the same rows and keys (scores, scaled, masked, biased, capped);
    None for any other (it ranks by itself)."""
    if stage.head is None or stage.name == "softmax":
        return None
    found = [s for s in trace.stages if s.name == "softmax" and s.head == stage.head]
    if len(found) != 1 or found[0].cols != stage.cols or found[0].rows != stage.rows:
        return None
    return found[0]
