"""A person's saved arrays against the trace: which stages match, where it first goes
wrong, and which mistake of the catalogue reproduces it (docs/check.md).

:func:`check_arrays` places each given array on the stage and heads it names
(:mod:`attntrace.checking.layout`), compares it with the trace in computation order
(:mod:`attntrace.checking.tolerance`), and at the first stage that differs recomputes
the model with each mistake of :mod:`attntrace.checking.mistakes` that applies to it.

Placing an array on its heads and comparing it share one set of settings and findings
(:class:`Check`); the diagnosis (:mod:`attntrace.checking.diagnosis`) asks it whether
a recomputed block reproduces what was given. The record it produces is
:mod:`attntrace.checking.report`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from attntrace.checking.diagnosis import diagnose
from attntrace.checking.given import GivenArray
from attntrace.checking.layout import LAYOUTS, Reading, dims_last, readings
from attntrace.checking.recompute import Computed
from attntrace.checking.report import (
    CheckReport,
    Divergence,
    Region,
    Spot,
    StageResult,
)
from attntrace.checking.tolerance import Comparison, Tolerance, compare, matches, tolerance_for
from attntrace.errors import InputError
from attntrace.kernel import progress
from attntrace.kernel.fields import shape_text
from attntrace.kernel.ops import Matrix
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.stage_names import (
    ALIASES,
    DIMENSION_COLUMNS,
    ONE_COLUMN,
    ORDER,
    PER_HEAD,
    PER_KV_HEAD,
    stage_name,
)
from attntrace.kernel.trace import Trace

#: How many rows and columns of the differing region the report shows at most.
REGION = 6


@dataclass(frozen=True, eq=False)
class Placed:
    """A given array placed on a stage: per head (or K/V head), or shared."""

    stage: str
    given: GivenArray
    per: str  # shared, head, kv_head
    indices: tuple[int, ...]  # the heads (or K/V heads) of ``matrices``
    matrices: tuple[Matrix, ...] | None  # None: the shape fits no reading
    shape_expected: str = ""
    # a shape that reads two ways, neither matching the trace: the other reading, and
    # how the two read (settled only if the stage is the first to differ)
    other: Placed | None = None
    readings: tuple[str, str] | None = None
    form: str = ""  # the reading's form (side-by-side, ...), where the shape had one


def check_arrays(
    model: ModelSpec,
    trace: Trace,
    given: Mapping[str, GivenArray],
    *,
    head: int | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    layout: str | None = None,
) -> CheckReport:
    """Compare ``given`` (named as a file names them) with ``trace``, ``model``'s own.

    An unknown name, two names for one stage, a stage the trace lacks or a shape that
    reads two ways with nothing to settle it is an :class:`InputError`; a stage whose
    numbers (or shape) differ is a result, not an error. ``layout`` is one of
    :data:`~attntrace.checking.layout.LAYOUTS` or None (the caller checks it).
    """
    with progress.task(f"checking against {trace.model.name}"):
        return _checked(model, trace, given, head, rtol, atol, layout)


def _checked(
    model: ModelSpec,
    trace: Trace,
    given: Mapping[str, GivenArray],
    head: int | None,
    rtol: float | None,
    atol: float | None,
    layout: str | None,
) -> CheckReport:
    """:func:`check_arrays`' work, reported as one step."""
    expected = _expected(trace, head)
    check = Check(trace, expected, head, layout, rtol, atol)
    named = _named(given, expected, trace.model.name, cut=head is not None)
    check.settle(named)
    placed = {name: check.place(name, named[name]) for name in ORDER if name in named}
    report = _report(check, model, placed)
    first = report.first_divergent
    spot = None if first is None else placed[first.stage]
    if spot is None or spot.other is None or report.diagnosis is not None:
        return report
    # the first stage to differ reads two ways: the other reading, if a mistake explains it
    other = _report(
        Check(trace, expected, head, layout, rtol, atol), model, {**placed, spot.stage: spot.other}
    )
    if other.diagnosis is not None:
        return other
    assert spot.readings is not None
    one, two = spot.readings
    raise InputError(
        f"its shape reads two ways, as {one} or as {two}, and neither matches the trace "
        "nor a known mistake; say which with --layout heads-first or --layout tokens-first",
        field=spot.given.name,
        expected="one reading",
        found=shape_text(spot.given.data.shape),
    )


def _report(check: Check, model: ModelSpec, placed: Mapping[str, Placed]) -> CheckReport:
    """Every stage compared, the first that differs, and its diagnosis."""
    trace, expected = check.trace, check.expected
    results: list[StageResult] = []
    for name in ORDER:
        if name in expected.shared or name in expected.heads:
            results += check.results(name, placed.get(name))
    first = next((r for r in results if r.status == "differs"), None)
    divergence = diagnosis = None
    if first is not None:
        divergence = check.divergence(first, placed[first.name])
        diagnosis = diagnose(check, model, placed, first.name)
    return CheckReport(
        trace.model,
        trace.tokens,
        trace.context_tokens,
        tuple(results),
        divergence,
        diagnosis,
        check.head,
    )


def _expected(trace: Trace, head: int | None) -> Computed:
    """The trace's stages as a :class:`Computed`: by head, by K/V head, shared. With
    ``head`` (``--head``), without concat and projected: they need every head."""
    out = Computed(shared={}, heads={}, kv={})
    for stage in trace.stages:
        if stage.head is None:
            if head is None or stage.name not in ("concat", "projected"):
                out.shared[stage.name] = stage.data
            continue
        out.heads.setdefault(stage.name, []).append(stage.data)
        if stage.name in PER_KV_HEAD:
            kv = out.kv.setdefault(stage.name, [])
            if stage.kv_head is not None and stage.kv_head == len(kv):
                kv.append(stage.data)
    return out


def _named(
    given: Mapping[str, GivenArray], expected: Computed, model: str, *, cut: bool = False
) -> dict[str, GivenArray]:
    """The given arrays by stage name, aliases resolved; refused: unknown names, two
    names for one stage, stages this model's trace does not have. Without positions X
    is the embeddings, so an array named embeddings is X."""
    have = [n for n in ORDER if n in expected.shared or n in expected.heads]
    if not given:
        raise InputError(
            field="arrays", expected=f"at least one of {', '.join(have)}", found="none"
        )
    stages: dict[str, GivenArray] = {}
    for key, array in given.items():
        name = stage_name(key)
        if name in ("embeddings", "embeddings_context") and name not in have:
            name = "X" if name == "embeddings" else "X_context"  # X = embeddings here
        if name is None:
            raise InputError(
                "each array is named by the stage it holds",
                field=key,
                expected=f"a stage name ({', '.join(have)}) or an alias ({', '.join(ALIASES)})",
                found=repr(key),
            )
        if name in stages:
            raise InputError(
                f"{stages[name].name!r} and {key!r} both name the stage {name}",
                field=key,
                expected="one array per stage",
                found=f"two names for {name}",
            )
        if name not in have:
            why = (
                "; --head compares one head, and it needs every head"
                if cut and name in ("concat", "projected")
                else "; is it the model you meant?"
            )
            raise InputError(
                field=key,
                expected=f"a stage of the trace of {model} ({', '.join(have)})",
                found=f"{name}, which it does not have{why}",
            )
        stages[name] = array
    return stages


Key = tuple[str, int | None, int | None]  # stage, head, K/V head


class Check:
    """One comparison's settings and what it has found so far."""

    def __init__(
        self,
        trace: Trace,
        expected: Computed,
        head: int | None,
        layout: str | None,
        rtol: float | None,
        atol: float | None,
    ) -> None:
        self.trace, self.expected, self.head, self.layout = trace, expected, head, layout
        self.rtol, self.atol = rtol, atol
        model = trace.model
        self.heads = list(range(model.heads)) if head is None else [head]
        self.kv_heads = sorted({model.kv_head_of(h) for h in self.heads})
        self.compared: dict[Key, tuple[Comparison, Matrix, Matrix]] = {}
        self.settled: str | None = layout  # the layout the person's arrays are in, once known

    def settle(self, named: Mapping[str, GivenArray]) -> None:
        """The layout (heads first or tokens first) of the arrays whose shape reads one
        way only: a shape that reads both ways is read the way the others were saved."""
        if self.settled is not None:
            return
        for name, array in named.items():
            if name not in DIMENSION_COLUMNS:
                continue
            rows, cols = self.expected.heads[name][0].shape
            counts = self._counts(name)
            options = readings(array.data, counts, rows, cols, side_by_side=True)
            forms = {o.form for o in options if o.form in LAYOUTS}
            if len(options) == 1 and len(forms) == 1:
                self.settled = forms.pop()
                return

    def _counts(self, name: str) -> list[int]:
        model = self.trace.model
        counts = [model.heads] + ([model.kv_heads] if name in PER_KV_HEAD else [])
        return counts + ([1] if self.head is not None else [])

    def tolerance(self, array: GivenArray) -> Tolerance:
        return tolerance_for(array.dtype, self.rtol, self.atol)

    def place(self, name: str, array: GivenArray, computed: Computed | None = None) -> Placed:
        """``array`` read as stage ``name``'s heads, as ``computed`` (the trace, or a
        mistake that changes the stage's shape) has them."""
        computed = computed or self.expected
        if name not in PER_HEAD:
            rows, cols = computed.shared[name].shape
            found = readings(array.data, [1], rows, cols, side_by_side=False)
            matrices = (found[0].matrices[0],) if found else None
            return Placed(name, array, "shared", (0,), matrices, f"[{rows}, {cols}]")
        rows, cols = computed.heads[name][0].shape
        if name in ONE_COLUMN and array.data.ndim and array.data.shape[-1] != 1:
            array = replace(array, data=array.data[..., None])  # [H, n]: the column left out
        counts = self._counts(name)  # the query heads, the K/V heads, or --head's one
        options = readings(
            array.data,
            counts,
            rows,
            cols,
            layout=self.layout,
            side_by_side=name in DIMENSION_COLUMNS,
        )
        if not options:
            return Placed(name, array, "head", (), None, _shapes(name, counts, rows, cols))
        placings = [self._on_heads(name, array, option) for option in options]
        if len(placings) == 1:
            return placings[0]
        # a shape that reads two ways: the one that fits, or the one the others were saved
        # in; else the first (heads first, PyTorch's), with the other kept to try
        for placing, option in zip(placings, options, strict=True):
            if self.fits(placing, computed):
                if computed is self.expected and option.form in LAYOUTS:
                    self.settled = self.settled or option.form
                return placing
        for placing, option in zip(placings, options, strict=True):
            if option.form == self.settled:
                return placing
        return replace(
            placings[0],
            other=placings[1],
            readings=(options[0].describe(name), options[1].describe(name)),
        )

    def _on_heads(self, name: str, array: GivenArray, reading: Reading) -> Placed:
        """Which heads a reading's matrices are: the query heads, the K/V heads, or the
        one head of --head; cut to the heads compared."""
        model = self.trace.model
        if reading.count == model.heads:
            per, indices = "head", list(range(model.heads))
        elif reading.count == model.kv_heads and name in PER_KV_HEAD:
            per, indices = "kv_head", list(range(model.kv_heads))
        else:  # one head's matrix, under --head
            assert self.head is not None
            per, indices = "head", [self.head]
        wanted = self.kv_heads if per == "kv_head" else self.heads
        keep = [i for i, index in enumerate(indices) if index in wanted]
        return Placed(
            name,
            array,
            per,
            tuple(indices[i] for i in keep),
            tuple(reading.matrices[i] for i in keep),
            form=reading.form,
        )

    def results(self, name: str, spot: Placed | None) -> list[StageResult]:
        """The stage compared, one result per head (K/V head, or one if shared)."""
        if name not in PER_HEAD:
            targets: list[tuple[int | None, int | None]] = [(None, None)]
        elif spot is not None and spot.per == "kv_head":
            targets = [(None, g) for g in self.kv_heads]
        else:
            targets = [(h, None) for h in self.heads]
        return [self._result(name, h, g, spot) for h, g in targets]

    def _result(
        self, name: str, head: int | None, kv_head: int | None, spot: Placed | None
    ) -> StageResult:
        if spot is None:
            return StageResult(name, head, kv_head, "missing")
        tolerance = self.tolerance(spot.given)
        if spot.matrices is None:
            return StageResult(
                name,
                head,
                kv_head,
                "differs",
                spot.given.name,
                tolerance=tolerance,
                shape_found=tuple(spot.given.data.shape),
                shape_expected=spot.shape_expected,
            )
        want = _matrix(self.expected, name, head, kv_head)
        got = spot.matrices[spot.indices.index(_index(head, kv_head))]
        result = compare(want, got, tolerance, masked=name == "masked")
        self.compared[(name, head, kv_head)] = (result, want, got)
        nonfinite = result.nonfinite_wrong
        return StageResult(
            name,
            head,
            kv_head,
            "match" if result.matches else "differs",
            spot.given.name,
            result.max_abs_delta,
            int(result.wrong.sum()),
            int(want.size),
            nonfinite,
            tolerance,
        )

    def divergence(self, first: StageResult, spot: Placed) -> Divergence:
        """The first differing stage's worst cell and the region around it, and its
        first differing cell in reading order."""
        if first.shape_found is not None:
            return Divergence(
                first.name,
                first.head,
                first.kv_head,
                spot.given.name,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                first.shape_found,
                first.shape_expected,
            )
        comparison, want, got = self.compared[(first.name, first.head, first.kv_head)]
        assert comparison.worst is not None
        i, j = comparison.worst
        stage = next(
            s
            for s in self.trace.stages
            if s.name == first.name
            and (first.head is None or s.head == first.head)
            and (first.kv_head is None or s.kv_head == first.kv_head)
        )
        rows = _window(np.any(comparison.wrong, axis=1), i)
        cols = _window(np.any(comparison.wrong, axis=0), j)
        region = Region(
            tuple(stage.rows[r] for r in rows),
            tuple(stage.cols[c] for c in cols),
            want[np.ix_(rows, cols)],
            got[np.ix_(rows, cols)],
            comparison.wrong[np.ix_(rows, cols)],
            rows[0],
            cols[0],
        )
        # the first wrong cell reading row by row, beside the worst one shown
        r, c = (int(x) for x in np.argwhere(comparison.wrong)[0])
        first_cell = Spot(r, c, stage.rows[r], stage.cols[c], float(want[r, c]), float(got[r, c]))
        return Divergence(
            first.name,
            first.head,
            first.kv_head,
            spot.given.name,
            i,
            j,
            stage.rows[i],
            stage.cols[j],
            float(want[i, j]),
            float(got[i, j]),
            region,
            first_cell=first_cell,
        )

    def reproduces(self, spot: Placed, computed: Computed) -> bool:
        """Whether ``computed`` holds the given array's numbers, every head of it: as the
        array was read, or, where the mistake changes the stage's shape, read anew."""
        name = spot.stage
        if name not in computed.shared and name not in computed.heads:
            return False
        if spot.matrices is not None and self._same_shapes(spot, computed):
            return self.fits(spot, computed)
        try:
            spot = self.place(name, spot.given, computed)
        except InputError:
            return False
        if spot.matrices is None and name in DIMENSION_COLUMNS:
            # a shape that fits no form may be [r, c, H], a wrong .view(B, T, d, H); read
            # so, it must differ from the trace (else every mistake would reproduce it)
            rows, cols = computed.heads[name][0].shape
            heads = dims_last(spot.given.data, self._counts(name), rows, cols)
            if heads is not None:
                spot = self._on_heads(name, spot.given, heads)
                if self.fits(spot, self.expected):
                    return False
        return self.fits(spot, computed)

    def _same_shapes(self, spot: Placed, computed: Computed) -> bool:
        assert spot.matrices is not None
        wanted = computed.matrix(spot.stage, spot.per, 0)
        return all(m.shape == wanted.shape for m in spot.matrices)

    def fits(self, spot: Placed, computed: Computed) -> bool:
        """Whether every matrix of ``spot`` matches ``computed``'s within the tolerance."""
        if spot.matrices is None:
            return False
        name, tolerance = spot.stage, self.tolerance(spot.given)
        for index, got in zip(spot.indices, spot.matrices, strict=True):
            want = computed.matrix(name, spot.per, index)
            if want.shape != got.shape:
                return False
            if not matches(want, got, tolerance, masked=name == "masked"):
                return False
        return True


def _index(head: int | None, kv_head: int | None) -> int:
    return kv_head if kv_head is not None else head if head is not None else 0


def _matrix(computed: Computed, name: str, head: int | None, kv_head: int | None) -> Matrix:
    per = "kv_head" if kv_head is not None else "head" if head is not None else "shared"
    return computed.matrix(name, per, _index(head, kv_head))


def _window(wrong: npt.NDArray[np.bool_], at: int) -> list[int]:
    """At most REGION indices from the first to the last wrong one, holding ``at``."""
    marked = np.nonzero(wrong)[0]
    low, high = int(marked.min()), int(marked.max())
    if high - low + 1 > REGION:
        low = max(low, min(at - REGION // 2, high - REGION + 1))
        high = low + REGION - 1
    return list(range(low, high + 1))


def _shapes(name: str, counts: list[int], rows: int, cols: int) -> str:
    """The shapes a per-head stage may have, for the report of one that has none."""
    shapes = []
    for count in dict.fromkeys(counts):
        if count > 1:
            shapes.append(f"[{count}, {rows}, {cols}]")
            if name in DIMENSION_COLUMNS:
                shapes += [f"[{rows}, {count}, {cols}]", f"[{rows}, {count * cols}]"]
        else:
            shapes.append(f"[{rows}, {cols}]")
    return " or ".join(dict.fromkeys(shapes))
