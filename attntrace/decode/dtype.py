"""decode in a low-precision dtype: each step by the casting rule, beside float64's decode.

:func:`attntrace.decode.decoder.decode` decodes in float64 and, given a :class:`Cast` of a
narrower dtype, hands its result here (docs/kernels.md, "decode --dtype D"): every step's
q, k and v by :meth:`Cast.linear` (and :meth:`Cast.rope`), a cache of the dtype's values
at its storage size, the one query row's attention by :meth:`Cast.attention` and WO by
:meth:`Cast.linear`; then the outputs are compared with the full causal trace in the same
dtype (``run --dtype``'s, which they equal exactly) and with float64's decode (each
step's error), and the first overflow is found.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from attntrace.decode.cache import KVCache, attend_cache, make_room, prepared, stacked
from attntrace.decode.decoder import Decode, DecodeStep, StepErrors
from attntrace.forward.attention import computed_block
from attntrace.kernel import progress
from attntrace.kernel.casting import Cast, fresh_cells, stage_error
from attntrace.kernel.ops import Matrix
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Trace


def decode_in(model: ModelSpec, exact: Decode, cast: Cast) -> Decode:
    """``exact`` (float64's decode) redone by ``cast``'s rule: every step's q, k and v
    by :meth:`Cast.linear` (and :meth:`Cast.rope`), a cache of the dtype's values, the
    one query row's attention by :meth:`Cast.attention`, WO by :meth:`Cast.linear`."""
    words = exact.tokens
    X = _inputs_in(exact.full, cast)  # [n, d_model], the dtype's values
    heads, kv_heads, d_k, d_v = model.heads, model.n_kv_heads, model.d_k, model.d_v
    kv_head_of = exact.full.model.kv_head_of
    cache = KVCache(kv_heads, d_k, d_v, cast.storage_bytes)
    steps: list[DecodeStep] = []
    errors: list[StepErrors] = []
    with progress.task(f"decoding {model.name} in {cast.dtype}", len(words), "tokens") as task:
        for t, (token, twin) in enumerate(zip(words, exact.steps, strict=True)):
            x = X[t : t + 1]  # [1, d_model]
            # every head's columns at once (each cell its own sum, so the same numbers as
            # head by head): [1, d_model] · [d_model, heads·d_k] (+ b) -> [heads, d_k]
            q = cast.linear(x, model.WQ, model.bias("bQ")).reshape(heads, d_k)
            k = cast.linear(x, model.WK, model.bias("bK")).reshape(kv_heads, d_k)
            v = cast.linear(x, model.WV, model.bias("bV")).reshape(kv_heads, d_v)
            q, k = prepared(model, q, k, t, cast.rms_norm, cast.rope)
            dropped = make_room(model, cache, t)
            cache.append(k, v, t)
            keys, values = tuple(cache.keys), tuple(cache.values)
            attended = attend_cache(
                model, cast.attention, q, keys, values, cache.positions, t, kv_head_of, cast.round
            )
            rows = stacked(attended)
            weights = rows["weights"]  # [heads, rows]
            output = np.concatenate([a.output for a in attended])  # [heads, d_v]
            projected = (
                cast.linear(output.reshape(1, -1), model.WO, model.bias("bO"))[0]
                if model.WO is not None
                else None
            )
            steps.append(
                DecodeStep(
                    t=t,
                    token=token,
                    x=x[0],
                    q=q,
                    k=k,
                    v=v,
                    keys=keys,
                    values=values,
                    output=output,
                    projected=projected,
                    costs=twin.costs,
                    cache_bytes=cache.bytes,
                    positions=cache.positions,
                    dropped=dropped,
                    **rows,
                )
            )
            errors.append(
                StepErrors(
                    stage_error(weights, twin.weights),
                    stage_error(output, twin.output),
                    None
                    if projected is None or twin.projected is None
                    else stage_error(projected, twin.projected),
                )
            )
            task.advance()
    outputs, full_projected = _full_in(model, words, cast)
    decoded = [np.stack([s.output for s in steps], axis=1)]  # [heads, n, d_v]
    whole = [outputs]
    if full_projected is not None:
        decoded.append(np.stack([s.projected for s in steps if s.projected is not None]))
        whole.append(full_projected)
    same = [_same(a, b) for a, b in zip(decoded, whole, strict=True)]
    both = [np.isfinite(a) & np.isfinite(b) for a, b in zip(decoded, whole, strict=True)]
    deltas = [np.abs(a[f] - b[f]) for a, b, f in zip(decoded, whole, both, strict=True)]
    differing = sum(int(np.count_nonzero(~s)) for s in same)
    return replace(
        exact,
        steps=tuple(steps),
        max_delta=max((float(d.max()) for d in deltas if d.size), default=0.0),
        bound=0.0,
        matches=differing == 0,
        cast=cast,
        reference=exact,
        errors=tuple(errors),
        differing=differing,
    )


def _same(a: Matrix, b: Matrix) -> npt.NDArray[np.bool_]:
    """Cell by cell, the same value (NaN and NaN too): exact agreement."""
    return np.asarray((a == b) | (np.isnan(a) & np.isnan(b)))


def _inputs_in(full: Trace, cast: Cast) -> Matrix:
    """X as the dtype holds it: the embeddings and positions (stored matrices) rounded,
    their sum rounded once; a given X, or embeddings alone, rounded."""
    names = full.names
    if "positions" in names and "embeddings" in names:
        return cast.add(cast.round(full["embeddings"].data), cast.round(full["positions"].data))
    return cast.round(full["X"].data)


def _full_in(model: ModelSpec, words: Sequence[str], cast: Cast) -> tuple[Matrix, Matrix | None]:
    """Each head's full causal output ``[heads, n, d_v]`` in the dtype, and the
    projected ``[n, d_model]`` with WO: the trace `run --dtype` computes, causally."""
    full = computed_block(replace(model, causal=True), words, arithmetic=cast, refuse=False)
    outputs = np.stack([full.stage("output", head=h).data for h in range(model.heads)])
    projected = full["projected"].data if model.WO is not None else None
    return outputs, projected


# A step's stages in the order it computes them, as DecodeStep names them.
STEP_STAGES = ("q", "k", "v", "scores", "scaled", "weights", "output", "projected")


@dataclass(frozen=True)
class Overflow:
    """The first cell of a low-precision decode that is ±inf or NaN where float64's is
    not: in step ``t``'s stage ``stage`` (a :data:`STEP_STAGES` name), at ``row`` (a
    head, or a K/V head for k and v; 0 for projected) and ``col`` (a key for scores,
    scaled and weights, else a dimension). ``exact`` is float64's value there."""

    t: int
    stage: str
    row: int
    col: int
    value: float
    exact: float


def first_overflow(run: Decode) -> Overflow | None:
    """Where a low-precision decode first holds a new ±inf or NaN (None if nowhere,
    and always None in float64)."""
    if run.reference is None:
        return None
    for step, twin in zip(run.steps, run.reference.steps, strict=True):
        for name in STEP_STAGES:
            low, exact = getattr(step, name), getattr(twin, name)
            if low is None or exact is None:
                continue
            low, exact = np.atleast_2d(low), np.atleast_2d(exact)
            fresh = fresh_cells(low, exact)
            if fresh.any():
                row, col = (int(i) for i in np.argwhere(fresh)[0])
                return Overflow(
                    step.t, name, row, col, float(low[row, col]), float(exact[row, col])
                )
    return None
