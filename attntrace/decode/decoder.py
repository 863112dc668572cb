"""Incremental decoding with a KV cache: one token at a time, as GPT and LLaMA generate.

At step t only the new token's q, k and v are computed; k and v are appended to the
cache (one entry per K/V head: the cache of a GQA model holds kv_heads heads, not
heads), and q attends over the t+1 cached keys, which is causal attention by
construction: the same :func:`attntrace.kernel.ops.attention` as the full trace, given one
query row. The outputs are then compared with the full causal trace of the same
sentence: they must agree to rounding, cell by cell within the float64 bound of
:mod:`attntrace.decode.rounding` (a few times 1e-16 of the values for small models).

Costs are counted in multiply-adds (one a·b added to a sum), the unit matmul costs are
quoted in, for one step t (t+1 tokens so far, h heads, k K/V heads):

- with the cache: the new token's projections, d_model·(h·d_k + k·d_k + k·d_v), then
  attention over the cache, h·(t+1)·(d_k + d_v), then WO, h·d_v·d_model if present;
- without it, recomputing the prefix: every token's projections,
  (t+1)·d_model·(h·d_k + k·d_k + k·d_v), full attention over the prefix,
  h·(t+1)²·(d_k + d_v), and WO for every row, (t+1)·h·d_v·d_model.

Softmax's exps and divisions are left out of both (they are not multiply-adds). The
cache holds (t+1)·k·(d_k + d_v) numbers after step t; bytes are at float64 (8 each),
the precision attntrace computes in, or at the dtype's size under a :class:`Cast`.

**With the variants** (docs/variants.md, "The commands"), each step computes the new
token's row as the full trace computes it: q and k RMS-normed (QK-norm) before RoPE turns
them by position t, ALiBi's bias ``−m_h · (t − p)`` over the positions p the cache holds,
the cap, the mask by those positions (:func:`attntrace.kernel.masks.hidden`) and the sink
logit. With a sliding window of N (and S sinks) the cache **drops its oldest row** before
the new token's is appended, once that row is N or more positions back and not one of the
first S: the row no later query may see (transformers' ``SlidingWindowCache`` keeps the
last N likewise; StreamingLLM's cache keeps the sinks). It stops growing at N + S rows.

**In a low-precision dtype** (``decode(model, tokens, Cast.of("float16"))``, docs/kernels.md
"decode --dtype D"), each step's q, k and v, its attention over the cache and WO follow
the casting rule of :mod:`attntrace.kernel.casting`, and the cache holds the dtype's
values (:mod:`attntrace.decode.dtype`). The outputs are then compared with the full
causal attention of the sentence in the same dtype, which they equal exactly where every
v is finite: each cell is the same sequence of rounded operations (a masked key adds
exp(−∞) = 0 to the softmax's sum and 0 · v = 0 to the output's, both exact; a v of ±inf
would make 0 · inf = NaN in the full product, which the cache never computes), and with
float64's decode, as each stage's error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from attntrace.decode.cache import (
    KVCache,
    attend_cache,
    make_room,
    prepared,
    stacked,
)
from attntrace.decode.kv_memory import KV_CACHE_NAME
from attntrace.decode.rounding import decode_bounds
from attntrace.errors import InputError
from attntrace.forward.attention import trace_block
from attntrace.kernel import progress
from attntrace.kernel.budget import (
    FLOAT,
    Extra,
    also_counted,
    rows_bytes,
    square_bytes,
    trace_bytes,
)
from attntrace.kernel.casting import Cast, StageError, stage_error
from attntrace.kernel.ops import Matrix, attention, linear, rms_norm, rope
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Trace


@dataclass(frozen=True)
class Costs:
    """Multiply-adds of one step with the cache and recomputing the prefix (see module)."""

    cached: int
    recomputed: int


def step_costs(model: ModelSpec, t: int, cached_rows: int | None = None) -> Costs:
    """The multiply-adds of step ``t`` (t+1 tokens so far), both ways: the cache's
    attention reads ``cached_rows`` keys (t+1 without a window, at most N + S with one);
    recomputing the prefix computes every score of it, as a dense kernel does."""
    heads, kv_heads, d_k, d_v = model.heads, model.n_kv_heads, model.d_k, model.d_v
    projections = model.d_model * (heads * d_k + kv_heads * d_k + kv_heads * d_v)
    wo = heads * d_v * model.d_model if model.WO is not None else 0
    length = t + 1
    rows = length if cached_rows is None else cached_rows
    cached = projections + heads * rows * (d_k + d_v) + wo
    recomputed = length * projections + heads * length * length * (d_k + d_v) + length * wo
    return Costs(cached, recomputed)


@dataclass(frozen=True)
class DecodeStep:
    """Everything step ``t`` computed: the new token's q, k, v, its attention, its output.

    ``keys``/``values`` are the cache after this step's append, one per K/V head, its
    rows at ``positions`` in the sentence; ``scores``, ``scaled`` and ``weights`` are
    ``[heads, rows]``, ``output`` ``[heads, d_v]``. ``q`` and ``k`` are as the scores read
    them (RMS-normed with QK-norm, then turned by RoPE). With the variants on: ``biased``
    (scaled + ALiBi), ``capped`` and ``sink`` ``[heads, 1]``, else None; ``dropped`` is
    the position of the row a sliding window took out of the cache at this step.
    """

    t: int
    token: str
    x: Matrix  # [d_model]: the new token's embedding (+ position)
    q: Matrix  # [heads, d_k]
    k: Matrix  # [kv_heads, d_k]: appended to the cache
    v: Matrix  # [kv_heads, d_v]
    keys: tuple[Matrix, ...]
    values: tuple[Matrix, ...]
    scores: Matrix
    scaled: Matrix
    weights: Matrix
    output: Matrix
    projected: Matrix | None  # [d_model], with WO
    costs: Costs
    cache_bytes: int
    positions: tuple[int, ...] = ()
    dropped: int | None = None
    biased: Matrix | None = None
    capped: Matrix | None = None
    sink: Matrix | None = None


@dataclass(frozen=True)
class Decode:
    """A sentence decoded step by step, and how it compares with full causal attention."""

    model: ModelSpec
    tokens: tuple[str, ...]
    steps: tuple[DecodeStep, ...]
    full: Trace  # the same sentence traced at once, causally
    max_delta: float  # max |decode − full| over every head's output (and projected)
    bound: float  # the largest of the cells' float64 rounding bounds (attntrace.decode.rounding)
    matches: bool  # every cell's |decode − full| within its own bound
    # Under a low-precision cast (docs/kernels.md "decode --dtype D"): ``full`` stays the
    # float64 trace, but max_delta and matches compare with the full causal attention *in
    # the cast's dtype*, which must agree exactly (bound 0: ``differing`` counts the cells
    # that are not the same value, NaN matching NaN); ``reference`` is float64's decode
    # and ``errors`` each step's error against it.
    cast: Cast = field(default_factory=Cast)
    reference: Decode | None = None
    errors: tuple[StepErrors, ...] = ()
    differing: int = 0

    @property
    def total_cached(self) -> int:
        return sum(step.costs.cached for step in self.steps)

    @property
    def total_recomputed(self) -> int:
        return sum(step.costs.recomputed for step in self.steps)

    @property
    def error(self) -> StageError | None:
        """Every step's heads' output against float64's decode (None in float64)."""
        if self.reference is None:
            return None
        low = np.stack([step.output for step in self.steps])
        return stage_error(low, np.stack([step.output for step in self.reference.steps]))

    @property
    def kv_cache_dtype(self) -> str | None:
        """The ``kv-cache --dtype`` of the same storage (fp32, fp16, bf16), or None for
        float64, which kv-cache does not price (its entries are twice fp32's)."""
        return KV_CACHE_NAME.get(self.cast.dtype)


@dataclass(frozen=True)
class StepErrors:
    """One low-precision step against float64's: its weights, its heads' output, and
    the projected row (with WO)."""

    weights: StageError
    output: StageError
    projected: StageError | None


def decode(model: ModelSpec, tokens: Sequence[str], cast: Cast | None = None) -> Decode:
    """Decode ``tokens`` one at a time through a KV cache (causal self-attention), in
    float64, or by ``cast``'s rule in its dtype (then beside float64's decode)."""
    low = cast is not None and not cast.exact
    with also_counted(decode_parts(twice=low)):
        exact = _decode64(model, tokens)
    if cast is None or cast.exact:
        return exact
    from attntrace.decode.dtype import decode_in  # it reads this module's classes

    return decode_in(model, exact, cast)


def decode_parts(*, twice: bool) -> Extra:
    """What decoding holds besides the full trace it is compared with: the cache and
    every step's rows (about :data:`STEP_SQUARES` n × n matrices a head over the steps,
    and the positions each step's cache held),
    the rounding bound's temporaries (:data:`BOUND_SQUARES` of one head), and
    ``twice``, with a dtype, the dtype's decode and full trace beside float64's."""

    def parts(model: ModelSpec, n: int, m: int) -> dict[str, int]:
        # and each step's tuple of the positions its cache holds: n·m / 2 pointers
        steps = STEP_SQUARES * square_bytes(model, n, m) + FLOAT * n * m // 2
        steps += STEP_ROWS * rows_bytes(model, n, m)  # each step's q, k, v and output
        bound = {"the rounding bound": BOUND_SQUARES * FLOAT * n * m}
        if not twice:
            return {"the steps": steps, **bound}
        return {"the steps": 2 * steps, "the dtype's full trace": trace_bytes(model, n, m), **bound}

    return parts


STEP_SQUARES = 2  # n × n float64 matrices a head, summed over the steps (decode_parts)
STEP_ROWS = 4  # copies of the trace's rows the steps hold (measured 200,000 wide)
BOUND_SQUARES = 9  # n × n matrices decode_bounds holds for a moment, one head at a time


def _decode64(model: ModelSpec, tokens: Sequence[str]) -> Decode:
    """The float64 decode: numpy's arithmetic, compared with the full trace to rounding."""
    if model.context is not None:
        raise InputError(
            "decoding generates one sequence, attending to its own past: there is no "
            "context to cross-attend to",
            source=model.source,
            field="context",
            expected="no context for decode",
            found=repr(model.context),
        )
    words = tuple(tokens)
    full = trace_block(replace(model, causal=True), words)  # checks tokens, positions, overflow
    X = full["X"].data  # [n, d_model]: embeddings (+ positions), row t for step t
    heads, kv_heads, d_k, d_v = model.heads, model.n_kv_heads, model.d_k, model.d_v
    kv_head_of = full.model.kv_head_of  # the K/V head each query head reads
    WQ = [(model.head_weight("WQ", h), model.head_bias("bQ", h)) for h in range(heads)]
    WK = [(model.head_weight("WK", g), model.head_bias("bK", g)) for g in range(kv_heads)]
    WV = [(model.head_weight("WV", g), model.head_bias("bV", g)) for g in range(kv_heads)]
    cache = KVCache(kv_heads, d_k, d_v)
    steps = []
    with (
        np.errstate(over="ignore", invalid="ignore"),
        progress.task(f"decoding {model.name}", len(words), "tokens") as decoding,
    ):
        for t, token in enumerate(words):
            x = X[t]
            # the new token's projections, each head's: [d_model] · [d_model, d] + [d] -> [d]
            q = np.stack([linear(x, W, b) for W, b in WQ])  # [heads, d_k]
            k = np.stack([linear(x, W, b) for W, b in WK])  # [kv_heads, d_k]
            v = np.stack([linear(x, W, b) for W, b in WV])  # [kv_heads, d_v]
            q, k = prepared(model, q, k, t, rms_norm, rope)  # normed, turned: then cached
            dropped = make_room(model, cache, t)
            cache.append(k, v, t)
            # views of the rows so far, kept by the step: later appends write later rows
            keys, values = tuple(cache.keys), tuple(cache.values)
            # each head's one query row against its K/V head's cache: [1, d_k], [rows, d_k],
            # [rows, d_v] -> [1, d_v]
            attended = attend_cache(
                model, attention, q, keys, values, cache.positions, t, kv_head_of, lambda m: m
            )
            output = np.concatenate([a.output for a in attended])  # [heads, d_v]
            # [heads·d_v] · [heads·d_v, d_model] + [d_model] -> [d_model], with WO
            projected = (
                linear(output.reshape(-1), model.WO, model.bias("bO"))
                if model.WO is not None
                else None
            )
            steps.append(
                DecodeStep(
                    t=t,
                    token=token,
                    x=x,
                    q=q,
                    k=k,
                    v=v,
                    keys=keys,
                    values=values,
                    output=output,
                    projected=projected,
                    costs=step_costs(model, t, cache.length),
                    cache_bytes=cache.bytes,
                    positions=cache.positions,
                    dropped=dropped,
                    **stacked(attended),
                )
            )
            decoding.advance()
    deltas, bounds = _compared(steps, full, model)
    return Decode(
        model,
        words,
        tuple(steps),
        full,
        max_delta=max(float(d.max()) for d in deltas),
        bound=max(float(b.max()) for b in bounds),
        matches=all(bool(np.all(d <= b)) for d, b in zip(deltas, bounds, strict=True)),
    )


def _compared(
    steps: Sequence[DecodeStep], full: Trace, model: ModelSpec
) -> tuple[list[Matrix], list[Matrix]]:
    """|decode − full| for every head's output cell (and projected's, with WO), beside
    each cell's float64 rounding bound."""
    # [heads, n, d_v]: each head's full output, row t for step t
    outputs = np.stack([full.stage("output", head=h).data for h in range(model.heads)])
    decoded = np.stack([step.output for step in steps], axis=1)  # [heads, n, d_v]
    head_bounds, projected_bounds = decode_bounds(model, full)
    deltas, bounds = [np.abs(decoded - outputs)], [head_bounds]
    if model.WO is not None and projected_bounds is not None:
        projected = np.stack([step.projected for step in steps if step.projected is not None])
        deltas.append(np.abs(projected - full["projected"].data))
        bounds.append(projected_bounds)
    return deltas, bounds
