"""A trace: every intermediate matrix of attention, named, labelled and in order.

The compute core returns a :class:`Trace`; renderers and the JSON serializer only read
it. Stage names are a contract (docs/model-file.md, "What the options compute"): ``X``,
``Q``, ``K``, ``V``, ``scores``, ``scaled``, ``softmax``, ``output``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace import arguments
from attntrace.errors import InputError
from attntrace.kernel import display
from attntrace.kernel.fields import shape_text
from attntrace.kernel.frozen import read_only
from attntrace.kernel.ops import Matrix, kv_head_of, rope_frequencies
from attntrace.kernel.precision_record import LowPrecision
from attntrace.kernel.variants import Variants


@dataclass(frozen=True, eq=False)
class Stage:
    """One named intermediate: ``data`` is ``len(rows) × len(cols)``.

    ``rows`` and ``cols`` are labels: tokens where the axis runs over tokens, ``d0``,
    ``d1``, ... where it runs over dimensions. ``head`` is ``None`` for stages shared by
    all heads (``X``), else the head index.

    A stage is a record: ``data`` is read-only (``data.flags.writeable`` is False). An
    array given that is not already the package's own read-only one is copied (as
    float64), so the caller's array stays theirs to change; labels are kept as tuples.
    """

    name: str
    formula: str
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    data: npt.NDArray[np.float64]
    head: int | None = None
    kv_head: int | None = None

    def __post_init__(self) -> None:
        set_field = object.__setattr__  # frozen: the checked values replace the given ones
        arguments.text(self.name, "Stage.name")
        arguments.text(self.formula, "Stage.formula")
        set_field(self, "rows", arguments.labels(self.rows, "Stage.rows"))
        set_field(self, "cols", arguments.labels(self.cols, "Stage.cols"))
        for name in ("head", "kv_head"):
            index = arguments.optional_whole(getattr(self, name), f"Stage.{name}")
            if index is not None and index < 0:
                raise InputError(
                    field=f"Stage.{name}", expected="None or a whole number ≥ 0", found=str(index)
                )
            set_field(self, name, index)
        data = self.data
        if not isinstance(data, np.ndarray) or data.dtype.kind not in "fiu":
            raise arguments.wrong_type(data, "Stage.data", "a numpy array of real numbers")
        expected = (len(self.rows), len(self.cols))
        if data.shape != expected:
            raise InputError(
                field="Stage.data",
                expected=f"{expected[0]} × {expected[1]} (len(rows) × len(cols))",
                found=shape_text(data.shape) or "a scalar",
            )
        set_field(self, "data", read_only(data))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (and copied) through the constructor: the copy's data is read-only too."""
        return (
            Stage,
            (self.name, self.formula, self.rows, self.cols, self.data, self.head, self.kv_head),
        )

    @property
    def shape(self) -> tuple[int, int]:
        rows, cols = self.data.shape
        return int(rows), int(cols)

    def __repr__(self) -> str:
        head = "" if self.head is None else f" head={self.head}"
        return f"<Stage {self.name}{head} {self.shape[0]}×{self.shape[1]}: {self.formula}>"


# The learned matrix each projection stage multiplies by, and the bias it adds.
WEIGHT_OF_STAGE = {"Q": "WQ", "K": "WK", "V": "WV", "projected": "WO"}
BIAS_OF_STAGE = {"Q": "bQ", "K": "bK", "V": "bV", "projected": "bO"}
# How a learned matrix is titled: what it is and its shape in the model's terms.
WEIGHT_SHAPES = {
    "WQ": "d_model × d_k",
    "WK": "d_model × d_k",
    "WV": "d_model × d_v",
    "WO": "heads·d_v × d_model",
    "bQ": "d_k",
    "bK": "d_k",
    "bV": "d_v",
    "bO": "d_model",
}


def weight_title(name: str) -> str:
    """``WQ (learned, d_model × d_k)``: the 'formula' line of a learned matrix."""
    shape = WEIGHT_SHAPES.get(name)
    return f"{name} (learned, {shape})" if shape else f"{name} (learned)"


@dataclass(frozen=True)
class ModelInfo:
    """The sizes a reader needs to follow the trace (docs/json.md, the trace's ``model``)."""

    name: str
    d_model: int
    d_k: int
    d_v: int
    heads: int = 1
    kv_heads: int = 1
    causal: bool = False
    description: str = ""
    positions: str = "none"  # none, sinusoidal, learned or rope
    rope_base: float | None = None  # with rope: the base of its angles
    rope_pairing: str | None = None  # with rope: half (i, i + d_k/2) or interleaved (2i, 2i+1)
    # window, sinks, ALiBi's slopes, QK-norm, softcap, sink logit (docs/variants.md)
    variants: Variants = field(default_factory=Variants)
    # with rope, where a base does not say them: each turned pair's frequency
    rope_frequencies: tuple[float, ...] | None = None

    @property
    def turn_frequencies(self) -> Matrix:
        """The frequency each pair was turned by (as :attr:`ModelSpec.turn_frequencies`:
        the given ones, else ``rope_base^(−2i/d_k)``), which the cell stories quote."""
        given = None if self.rope_frequencies is None else np.array(self.rope_frequencies)
        return rope_frequencies(self.d_k, self.rope_base or 10000.0, given)

    def rope_pair(self, column: int) -> tuple[int, int, bool] | None:
        """Which pair column ``column`` of a turned row is in: (the pair i, its partner
        column, whether it is the pair's first), by ``rope_pairing`` over the turned
        width r = 2 · pairs (``half``: i with i + r/2; ``interleaved``: 2i with 2i + 1);
        None for a column past r (a partial rotary width leaves it unturned)."""
        width = 2 * len(self.turn_frequencies)
        if column >= width:
            return None
        if self.rope_pairing == "interleaved":
            return column // 2, column + 1 - 2 * (column % 2), column % 2 == 0
        half = width // 2
        return column % half, (column + half) % width, column < half

    @property
    def group(self) -> int:
        """Query heads per K/V head: 1 for multi-head, heads for multi-query attention."""
        return self.heads // self.kv_heads

    def kv_head_of(self, head: int) -> int:
        """The K/V head query head ``head`` reads (:func:`attntrace.kernel.ops.kv_head_of`)."""
        return kv_head_of(head, self.heads, self.kv_heads)

    @property
    def score_inputs(self) -> tuple[str, str]:
        """The stages whose product is ``scores``: the turned rows under RoPE, the normed
        ones under QK-norm, else Q and K."""
        if self.positions == "rope":
            return ("Q_rope", "K_rope")
        return ("Q_norm", "K_norm") if self.variants.qk_norm else ("Q", "K")

    @property
    def mask_source(self) -> str:
        """The stage the mask (and the softmax, without one) reads: ``capped`` under a
        softcap, ``biased`` under ALiBi, else ``scaled``."""
        if self.variants.softcap is not None:
            return "capped"
        return "biased" if self.positions == "alibi" else "scaled"

    @property
    def softmax_source(self) -> str:
        """The stage softmax is applied to: ``masked`` under a causal mask, else the
        stage the mask would read (:attr:`mask_source`)."""
        return "masked" if self.causal else self.mask_source


@dataclass(frozen=True, eq=False)
class Trace:
    """The stages of one attention computation, in computation order.

    ``weights`` holds the learned matrices the stages were computed from, per head
    (WQ's slice for head h, WK's and WV's for K/V head g, WO whole): they are inputs, not
    stages, but a reader needs them to check a product by hand.

    Stages are looked up by name and head, like TransformerLens' activation cache:
    ``trace["softmax"]`` where the name is unique (one head), ``trace["softmax", 1]``
    or ``trace.stage("softmax", head=1)`` for head 1.

    A trace is a record: its stages' and weights' arrays are read-only, and its tokens
    and stages are tuples.
    """

    model: ModelInfo
    tokens: tuple[str, ...]
    stages: tuple[Stage, ...]
    context_tokens: tuple[str, ...] | None = None
    weights: tuple[Stage, ...] = ()
    precision: LowPrecision | None = None  # run --dtype: the dtype, the errors (None: float64)

    def __post_init__(self) -> None:
        set_field = object.__setattr__  # frozen: the checked values replace the given ones
        if not isinstance(self.model, ModelInfo):
            raise arguments.wrong_type(self.model, "Trace.model", "a ModelInfo")
        if self.precision is not None and not isinstance(self.precision, LowPrecision):
            raise arguments.wrong_type(self.precision, "Trace.precision", "a LowPrecision or None")
        set_field(self, "tokens", arguments.labels(self.tokens, "Trace.tokens"))
        if self.context_tokens is not None:
            context = arguments.labels(self.context_tokens, "Trace.context_tokens")
            set_field(self, "context_tokens", context)
        for name in ("stages", "weights"):
            stages = getattr(self, name)
            if isinstance(stages, str) or not isinstance(stages, Sequence):
                raise arguments.wrong_type(stages, f"Trace.{name}", "a tuple (or list) of Stage")
            for index, stage in enumerate(stages):
                if not isinstance(stage, Stage):
                    raise arguments.wrong_type(stage, f"Trace.{name}[{index}]", "a Stage")
            set_field(self, name, tuple(stages))

    def __iter__(self) -> Iterator[Stage]:
        return iter(self.stages)

    def __len__(self) -> int:
        return len(self.stages)

    def __getitem__(self, key: str | tuple[str, int]) -> Stage:
        """``trace["X"]``, ``trace["softmax"]`` (one head), ``trace["softmax", 1]``."""
        if isinstance(key, tuple) and len(key) == 2:
            return self.stage(key[0], head=key[1])
        if not isinstance(key, str):
            raise arguments.wrong_type(
                key, "a stage key", "a name or (name, head), as trace['softmax', 0]"
            )
        return self.stage(key)

    def stage(self, name: str, head: int | None = None) -> Stage:
        """The stage ``name`` of ``head``; without a head, the name must be unambiguous.

        A name (or head) the trace does not hold is a :class:`KeyError` naming the stages
        it does hold."""
        arguments.text(name, "name")
        head = arguments.optional_whole(head, "head")
        found = [s for s in self.stages if s.name == name and (head is None or s.head == head)]
        if len(found) == 1:
            return found[0]
        if found:
            heads = ", ".join(str(s.head) for s in found)
            raise KeyError(
                f"stage {name!r} is traced for heads {heads}: say which, as "
                f"trace[{name!r}, 0] or trace.stage({name!r}, head=0)"
            )
        known = ", ".join(dict.fromkeys(s.name for s in self.stages))
        where = f" for head {head}" if head is not None else ""
        raise KeyError(f"no stage {name!r}{where} in this trace (stages: {known})")

    def softmax_input(self, head: int | None = None) -> Stage:
        """What softmax was applied to: ``masked`` under a causal mask, else ``scaled``."""
        head = arguments.optional_whole(head, "head")
        name = self.model.softmax_source
        return self.stage(name, head=head if head is not None else self._only_head())

    def _only_head(self) -> int | None:
        heads = self.traced_heads
        return heads[0] if len(heads) == 1 else None

    @property
    def names(self) -> list[str]:
        return [stage.name for stage in self.stages]

    @property
    def traced_heads(self) -> list[int]:
        """The query heads whose stages the trace holds: all of them, unless it was cut
        to some (:meth:`only_heads`, ``run --model --head``)."""
        return sorted({stage.head for stage in self.stages if stage.head is not None})

    @property
    def is_cut(self) -> bool:
        """Whether some of the model's heads were left out of this trace."""
        return len(self.traced_heads) < self.model.heads

    def only_heads(self, heads: Sequence[int]) -> Trace:
        """The trace of ``heads`` alone, keeping their real numbers (head 8 stays 8).

        Kept: the shared inputs, those heads' stages, and the weights they read (WQ's
        slices of those heads, WK's and WV's of their K/V heads, and their biases).
        Left out: concat and projected, which need every head. ``heads`` must be heads
        this trace holds (an :class:`InputError` names them otherwise).
        """
        wanted = set(arguments.head_numbers(heads, "heads"))
        traced = self.traced_heads
        if not wanted:
            raise InputError(
                field="heads",
                expected=f"at least one of the traced heads ({', '.join(map(str, traced))})",
                found="none",
            )
        missing = sorted(wanted - set(traced))
        if missing:
            raise InputError(
                field="heads",
                expected=f"heads this trace holds ({', '.join(map(str, traced))})",
                found=str(missing[0]),
            )
        kv_read = {self.model.kv_head_of(h) for h in wanted}

        def kept(stage: Stage) -> bool:
            if stage.head is not None:
                return stage.head in wanted
            if stage.kv_head is not None:
                return stage.kv_head in kv_read
            return stage.name not in ("concat", "projected", "WO", "bO")

        return Trace(
            model=self.model,
            tokens=self.tokens,
            stages=tuple(s for s in self.stages if kept(s)),
            context_tokens=self.context_tokens,
            weights=tuple(w for w in self.weights if kept(w)),
            precision=self.precision,
        )

    def weight(
        self, name: str, head: int | None = None, kv_head: int | None = None
    ) -> Stage | None:
        """The learned matrix ``name`` (its slice for ``head`` or ``kv_head``), if carried."""
        arguments.text(name, "name")
        head = arguments.optional_whole(head, "head")
        kv_head = arguments.optional_whole(kv_head, "kv_head")
        return next(
            (w for w in self.weights if w.name == name and w.head == head and w.kv_head == kv_head),
            None,
        )

    def weight_for(self, stage: Stage) -> Stage | None:
        """The learned matrix (slice) ``stage`` was computed with: WQ for Q, ...; else None."""
        if not isinstance(stage, Stage):
            raise arguments.wrong_type(stage, "stage", "a Stage")
        return self._learned_for(stage, WEIGHT_OF_STAGE.get(stage.name))

    def bias_for(self, stage: Stage) -> Stage | None:
        """The bias vector (slice) added after ``stage``'s matrix: bQ for Q, ...; else None."""
        if not isinstance(stage, Stage):
            raise arguments.wrong_type(stage, "stage", "a Stage")
        return self._learned_for(stage, BIAS_OF_STAGE.get(stage.name))

    def _learned_for(self, stage: Stage, name: str | None) -> Stage | None:
        """The learned ``name`` as ``stage`` read it: Q's slice of its head, K's and V's
        of its K/V head, projected's whole."""
        if name is None:
            return None
        if stage.name == "Q":
            return self.weight(name, head=stage.head)
        if stage.name in ("K", "V"):
            return self.weight(name, kv_head=stage.kv_head)
        return self.weight(name)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{s.name} {s.shape[0]}×{s.shape[1]}" for s in self.stages)
        return f"<Trace {self.model.name!r} tokens={list(self.tokens)} stages: {shapes}>"

    # print, Rich and Jupyter: shown by the renderer attntrace/__init__.py sets, through
    # attntrace.kernel.display (the kernel imports no renderer)
    def __str__(self) -> str:
        """The tables as plain text, 80 columns wide: ``print(trace)``."""
        text: str = display.show(self, "text")
        return text

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        yield from display.show(self, "rich")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        bundle: dict[str, str] = display.show(self, "jupyter")
        return bundle

    def _repr_html_(self) -> str:
        """The explorer page in an iframe, as a notebook shows it (docs/page.md)."""
        html: str = display.show(self, "html")
        return html
