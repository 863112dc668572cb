"""Where the explorer is: which head it follows, which stage, which cell; and the moves.

Plain Python, no Textual: the keys of :mod:`.app` call these moves and show the message
each returns in the status line. A head's walk is the trace's stages that head sees (the
shared ones and its own), numbered from 1 as step mode numbers a one-head trace.
"""

from __future__ import annotations

from dataclasses import dataclass

from attntrace.kernel.trace import Stage, Trace


@dataclass
class Walk:
    """The explorer's place in ``trace``: ``head`` (None for a trace with no per-head
    stage), ``position`` in that head's walk, and the cell ``row``, ``col``."""

    trace: Trace
    noun: str = "stage"  # what a stage is called here: decode walks steps
    head: int | None = None
    position: int = 0
    row: int = 0
    col: int = 0

    def __post_init__(self) -> None:
        heads = self.trace.traced_heads
        if self.head is None and heads and any(s.head is not None for s in self.trace.stages):
            self.head = heads[0]

    @property
    def indices(self) -> list[int]:
        """The trace's stages on this head's walk, as indices into ``trace.stages``: its
        own, those of every head, and those of its K/V head (grad's sums over a group)."""
        kv = None if self.head is None else self.trace.model.kv_head_of(self.head)
        return [
            i
            for i, s in enumerate(self.trace.stages)
            if s.head == self.head or (s.head is None and s.kv_head in (None, kv))
        ]

    @property
    def stages(self) -> list[Stage]:
        return [self.trace.stages[i] for i in self.indices]

    @property
    def stage(self) -> Stage:
        return self.stages[self.position]

    def go(self, position: int) -> str:
        """Show the walk's stage at ``position``, the cell kept where the shape allows."""
        count = len(self.indices)
        if not 0 <= position < count:
            noun = self.noun
            return f"no {noun} {position + 1}: {noun}s are numbered 1 to {count}"
        self.position = position
        self.clamp()
        return ""

    def clamp(self) -> None:
        rows, cols = self.stage.shape
        self.row = max(0, min(self.row, rows - 1))
        self.col = max(0, min(self.col, cols - 1))

    def step(self, by: int) -> str:
        """``n`` (+1) and ``b`` (−1): the next or previous stage, stopping at the ends."""
        target = self.position + by
        if target < 0:
            return f"already at the first {self.noun}"
        if target >= len(self.indices):
            return f"already at the last {self.noun}"
        return self.go(target)

    def jump(self, key: str) -> str:
        """A stage's number (1 to the walk's length) or name as the list shows it (exact,
        else any case): ``d_K`` is the head's own, ``d_K kv0`` its K/V head's sum."""
        key = key.strip()
        if key.isdecimal():
            return self.go(int(key) - 1)
        names = [entry(s) for s in self.stages]
        for wanted in (key, key.lower()):
            found = [
                i for i, n in enumerate(names) if (n if wanted == key else n.lower()) == wanted
            ]
            if found:
                return self.go(found[0])
        return f"no {self.noun} named {key!r}: the {self.noun}s are {', '.join(names)}"

    def other_head(self, by: int) -> str:
        """``h`` (+1) and ``H`` (−1): the same stage of the next or previous head, wrapping.
        On a stage every head shares the table stays as it is, and the message says so
        (the next per-head stage is then the new head's)."""
        heads = self.trace.traced_heads
        if self.head is None or len(heads) == 1:
            if self.trace.is_cut:
                return f"only head {heads[0]} is traced here: the others were left out"
            return "this model has one head"
        here = self.stage
        self.head = heads[(heads.index(self.head) + by) % len(heads)]
        same = [i for i, s in enumerate(self.stages) if s.name == here.name]
        self.position = same[0] if same else 0
        self.clamp()
        if here.head is None:
            return f"{here.name} is shared by all heads: the same for head {self.head}"
        return ""

    def take_head(self, head: int | None) -> None:
        """Follow ``head``, the head another view was showing (the explorer has one head
        for every view): the same stage of it where this walk has one, else the same
        place."""
        if head is None or self.head is None or head not in self.trace.traced_heads:
            return
        name = entry(self.stage)
        self.head = head
        names = [entry(s) for s in self.stages]
        if name in names:
            self.position = names.index(name)
        self.position = min(self.position, len(names) - 1)
        self.clamp()

    def cell(self, row: int, col: int) -> None:
        self.row, self.col = row, col
        self.clamp()


def entry(stage: Stage) -> str:
    """A stage's name in the list; a K/V head's sum over its query heads (grad's d_K,
    d_V under GQA) marked ``kv0``, apart from the head's own."""
    if stage.head is None and stage.kv_head is not None:
        return f"{stage.name} kv{stage.kv_head}"
    return stage.name
