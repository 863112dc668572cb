"""Attention's operations in a low-precision dtype, by one stated casting rule.

:mod:`attntrace.kernel.precision` rounds and multiplies; this module says how each stage
of attention is computed from those pieces (docs/kernels.md, "The casting rule"), once,
so that ``run --dtype``, ``decode --dtype`` and every later user compute a stage alike:

- a stored matrix (embeddings, positions, weights, biases, a given X) is rounded to
  the dtype, as a checkpoint cast to it holds it;
- a matrix product is :func:`~attntrace.kernel.precision.matmul_in`: products and
  partial sums in float32 (``accumulate="float32"``) or in the dtype, left to right,
  and the sum rounded to the dtype once;
- an element-wise stage (a bias or a position added, RoPE's turn, the division by
  √d_k) is computed in float64 from the dtype's values and rounded once: the nearest
  value of the dtype to the exact result (for one addition or division, what the
  hardware gives; RoPE's cos and sin are rounded to the dtype first);
- the softmax is :func:`~attntrace.kernel.precision.softmax_in`, stable, in
  ``softmax_dtype``.

Values that overflow become ±inf and go on as IEEE arithmetic takes them (inf − inf is
NaN): nothing is refused here, since showing where that happens is the point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError
from attntrace.kernel import ops, precision
from attntrace.kernel.ops import Attention, Mask, Matrix, rope_angles
from attntrace.kernel.precision import ACCUMULATE, DTYPES, Accumulate, DTypeName

# The short names kv-cache --dtype and the frameworks use, taken for the long ones.
ALIASES: dict[str, DTypeName] = {
    "fp64": "float64",
    "fp32": "float32",
    "fp16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
}


def _dtype_name(field: str, value: str) -> DTypeName:
    """A dtype's name as given (``float16``, or ``fp16``), as precision names it."""
    for name in DTYPES:
        if name == value:
            return name
    if value in ALIASES:
        return ALIASES[value]
    raise InputError(
        field=field, expected=f"one of {', '.join(DTYPES)} (or fp32, fp16, bf16)", found=repr(value)
    )


@dataclass(frozen=True)
class Cast:
    """Where a computation rounds: the ``dtype`` values are held in, the dtype the
    softmax runs in, and where matrix products accumulate (``"float32"`` or
    ``"dtype"``). float64 is the plain trace: nothing rounded."""

    dtype: DTypeName = "float64"
    softmax_dtype: DTypeName = "float64"
    accumulate: Accumulate = "float32"

    @classmethod
    def of(
        cls, dtype: str, softmax_dtype: str | None = None, accumulate: str | None = None
    ) -> Cast:
        """The cast a user names; the defaults are the frameworks': softmax in float32
        (float64 under float64), products accumulated in float32. ``softmax_dtype`` may
        be float32 or the dtype itself (a softmax narrower than its inputs, or wider than
        float32, is no framework's); float64 takes no other choice."""
        name = _dtype_name("dtype", dtype)
        wide: DTypeName = "float64" if name == "float64" else "float32"
        soft = wide if softmax_dtype is None else _dtype_name("softmax_dtype", softmax_dtype)
        if soft not in (wide, name):
            choices = {"float64": "float64", "float32": "float32"}.get(name, f"float32 or {name}")
            raise InputError(
                field="softmax_dtype", expected=f"{choices} (with dtype {name})", found=repr(soft)
            )
        acc = "float32" if accumulate is None else ALIASES.get(accumulate, accumulate)
        if acc not in ACCUMULATE:
            raise InputError(
                field="accumulate", expected=f"one of {', '.join(ACCUMULATE)}", found=repr(acc)
            )
        chosen: Accumulate = "float32" if acc == "float32" else "dtype"
        return cls(name, soft, chosen)

    @property
    def exact(self) -> bool:
        """Whether nothing is rounded (float64: the ordinary trace)."""
        return self.dtype == "float64"

    @property
    def rule(self) -> str:
        """The casting rule in one sentence, as the views and the JSON state it."""
        if self.exact:
            return "float64 throughout (numpy's arithmetic)"
        into = self.accumulates_in
        return (
            f"values rounded to {self.dtype}; matrix products accumulated in {into}, "
            f"rounded to {self.dtype} once; element-wise stages rounded once; "
            f"softmax in {self.softmax_dtype}"
        )

    @property
    def accumulates_in(self) -> DTypeName:
        """The dtype a matrix product's running sum is kept in."""
        if self.exact:
            return "float64"
        return "float32" if self.accumulate == "float32" else self.dtype

    @property
    def storage_bytes(self) -> int:
        """Bytes a value of the dtype takes in memory (a KV cache's entries)."""
        return precision.FORMATS[self.dtype].storage_bytes

    def round(self, values: npt.ArrayLike) -> Matrix:
        """``values`` as the dtype holds them (a stored matrix cast to it)."""
        return precision.round_to(values, self.dtype)

    def matmul(self, a: Matrix, b: Matrix) -> Matrix:
        """``a · b`` by the rule (both rounded to the dtype first)."""
        return precision.matmul_in(a, b, self.dtype, self.accumulate)

    def add(self, a: npt.ArrayLike, b: npt.ArrayLike) -> Matrix:
        """``a + b`` (both the dtype's values) rounded once."""
        return precision.add_in(self.round(a), self.round(b), self.dtype)

    def linear(self, x: Matrix, w: Matrix, b: Matrix | None = None) -> Matrix:
        """``x · w + b``: the product by the rule, then the bias added and rounded once
        (two roundings, as a framework running the product and the addition as two
        kernels)."""
        product = self.matmul(x, w)
        return product if b is None else self.add(product, b)

    def rope(
        self,
        rows: Matrix,
        positions: npt.NDArray[np.int64],
        frequencies: Matrix,
        pairing: str = "half",
    ) -> Matrix:
        """:func:`attntrace.kernel.ops.rope` on the dtype's values, with cos and sin rounded
        to the dtype and each turned value x·cos ∓ y·sin rounded once from its exact
        value; dimensions past the turned pairs (a partial rotary width) kept as held."""
        x = self.round(rows)
        half = len(frequencies)
        angles = rope_angles(positions, frequencies)
        cos, sin = self.round(np.cos(angles)), self.round(np.sin(angles))
        with np.errstate(over="ignore", invalid="ignore"):
            if pairing == "interleaved":
                first, second = x[:, 0 : 2 * half : 2], x[:, 1 : 2 * half : 2]
                turned = np.array(x)
                turned[:, 0 : 2 * half : 2] = self._turn(first * cos, -(second * sin))
                turned[:, 1 : 2 * half : 2] = self._turn(second * cos, first * sin)
            else:
                first, second = x[:, :half], x[:, half : 2 * half]
                turned = np.concatenate(
                    [
                        self._turn(first * cos, -(second * sin)),
                        self._turn(second * cos, first * sin),
                        x[:, 2 * half :],
                    ],
                    1,
                )
        return turned

    def _turn(self, a: Matrix, b: Matrix) -> Matrix:
        """a + b rounded once to the dtype, a and b exact float64 products of two of its
        values (2p ≤ 48 bits). Not round(a + b): where a and b are more than 2⁵³ apart and
        a is a tie of the dtype, float64's sum lands on the tie and goes to even, though
        the exact sum is off it (found by the oracle, tests/forward/test_dtype_oracle.py)."""
        return precision.add_in(a, b, self.dtype)

    def rms_norm(self, rows: Matrix, weight: Matrix | None, eps: float) -> Matrix:
        """RMSNorm of the dtype's rows (QK-norm), the weight rounded to the dtype as a
        stored vector, each normed value computed exactly and rounded once: as RoPE's
        turn, one rounding from the exact value (docs/variants.md, "--dtype")."""
        x = self.round(rows)
        normed = ops.rms_norm(x, None if weight is None else self.round(weight), eps)
        return self.round(normed)

    def attention(
        self,
        Q: Matrix,
        K: Matrix,
        V: Matrix,
        *,
        causal: bool = False,
        mask: Mask | None = None,
        bias: Matrix | None = None,
        softcap: float | None = None,
        sink_logit: float | None = None,
    ) -> Attention:
        """:func:`attntrace.kernel.ops.attention` by the rule, one head ``[n, d]``: scores by
        the product rule, scaled = scores / √d_k rounded once, a bias added and rounded
        once, a cap C·tanh(x/C) computed exactly and rounded once, the mask, the stable
        softmax in ``softmax_dtype`` (a sink logit, rounded to the dtype, as one more
        column of it), output by the product rule."""
        Q, K, V = self.round(Q), self.round(K), self.round(V)
        return ops.attention(
            Q,
            K,
            V,
            causal=causal,
            mask=mask,
            bias=bias,
            softcap=softcap,
            sink_logit=sink_logit,
            steps=_Rounded(self),
        )


@dataclass(frozen=True)
class _Rounded(ops.Steps):
    """:func:`attntrace.kernel.ops.attention`'s steps by ``cast``'s rule, one head
    ``[n, d]``, every input already the dtype's values (:meth:`Cast.attention`)."""

    cast: Cast

    def scores(self, Q: Matrix, K: Matrix) -> Matrix:
        cast = self.cast  # [n, d_k] · [d_k, m] -> [n, m]
        return precision.matmul_in(Q, K.T, cast.dtype, cast.accumulate, in_dtype=True)

    def scale(self, scores: Matrix, d_k: int) -> Matrix:
        with np.errstate(over="ignore", invalid="ignore"):
            return self.cast.round(scores / math.sqrt(d_k))

    def bias(self, logits: Matrix, bias: Matrix) -> Matrix:
        with np.errstate(over="ignore", invalid="ignore"):
            return self.cast.add(logits, bias)

    def cap(self, logits: Matrix, softcap: float, scores: Matrix) -> Matrix:
        with np.errstate(over="ignore", invalid="ignore"):
            return self.cast.round(softcap * np.tanh(logits / softcap))

    def softmax(
        self, logits: Matrix, sink_logit: npt.ArrayLike | None
    ) -> tuple[Matrix, Matrix | None]:
        """The stable softmax in ``softmax_dtype``; a sink logit, rounded to the dtype, as
        one more column of it, dropped after."""
        cast = self.cast
        if sink_logit is not None:
            column = np.full((logits.shape[0], 1), cast.round(sink_logit))
            logits = np.concatenate([logits, column], axis=1)
        weights = precision.softmax_in(
            logits, cast.dtype, cast.softmax_dtype, stable=True, in_dtype=True
        )
        if sink_logit is None:
            return weights, None
        return weights[:, :-1], weights[:, -1:]

    def output(self, weights: Matrix, V: Matrix) -> Matrix:
        cast = self.cast  # [n, m] · [m, d_v] -> [n, d_v]
        return precision.matmul_in(weights, V, cast.dtype, cast.accumulate, in_dtype=True)


@dataclass(frozen=True)
class StageError:
    """A low-precision stage against its float64 twin.

    ``max_abs`` and ``max_rel`` are over the cells both hold finite (or both −∞, which
    agree): ``max_rel`` divides by |float64 value| where it is not 0. They are None where
    no cell compares. ``inf`` and ``nan`` count the :func:`fresh_cells`: ±inf or NaN in
    the dtype where float64 held something else (a masked −∞ in both is no overflow)."""

    max_abs: float | None
    max_rel: float | None
    inf: int
    nan: int

    @property
    def overflowed(self) -> bool:
        return self.inf > 0 or self.nan > 0


def fresh_cells(low: npt.ArrayLike, exact: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """The cells the dtype holds as ±inf or NaN where float64 holds something else: a
    finite value, the other infinity, or an infinity where the dtype made NaN. A cell
    the same in both (a mask's −∞, a NaN float64 made too) is no overflow of the dtype's.
    What the stage errors count and the first overflow finds. (The views mark every
    non-finite cell that is not a mask, fresh or carried on from float64's own.)"""
    a = np.asarray(low, dtype=np.float64)
    b = np.asarray(exact, dtype=np.float64)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    fresh: npt.NDArray[np.bool_] = ~np.isfinite(a) & ~same
    return fresh


def stage_error(low: npt.ArrayLike, exact: npt.ArrayLike) -> StageError:
    """How far ``low`` (the dtype's stage) is from ``exact`` (float64's), cell by cell.

    Measured a block of rows at a time: the differences and their ratios are three
    matrices of the stage's size, which at a 9,300-token trace were three more of its
    largest matrices held at once."""
    a = np.asarray(low, dtype=np.float64)
    b = np.asarray(exact, dtype=np.float64)
    if a.shape != b.shape:
        raise InputError(field="stage", expected=f"shape {b.shape}", found=str(a.shape))
    if a.ndim < 2:
        return _block_error(a, b)
    block = max(1, _ERROR_CELLS // max(1, math.prod(a.shape[1:])))
    parts = [_block_error(a[i : i + block], b[i : i + block]) for i in range(0, len(a), block)]
    if len(parts) == 1:
        return parts[0]
    absolute = [p.max_abs for p in parts if p.max_abs is not None]
    relative = [p.max_rel for p in parts if p.max_rel is not None]
    return StageError(
        max(absolute) if absolute else None,
        max(relative) if relative else None,
        sum(p.inf for p in parts),
        sum(p.nan for p in parts),
    )


_ERROR_CELLS = 1 << 18  # cells stage_error measures at once


def _block_error(a: Matrix, b: Matrix) -> StageError:
    """:func:`stage_error` of one block of rows (or of a whole vector)."""
    with np.errstate(invalid="ignore", over="ignore"):
        delta = np.abs(a - b)  # NaN wherever either is not finite (inf − inf too)
    if np.isfinite(delta).all():  # every cell finite in both (the usual stage): no masks
        inf, nan, both = 0, 0, None
    else:
        both = np.isfinite(a) & np.isfinite(b)
        fresh = fresh_cells(a, b)
        inf = int(np.count_nonzero(fresh & np.isinf(a)))
        nan = int(np.count_nonzero(fresh & np.isnan(a)))
        if not both.any():
            return StageError(None, None, inf, nan)
        delta, b = delta[both], b[both]
    if delta.size == 0:  # an empty block of an empty stage: nothing compares
        return StageError(None, None, inf, nan)
    ref = np.abs(b)
    nonzero = ref != 0.0
    # a subnormal float64 value (a weight of 1e-314) the dtype rounds to 0.5 is off by a
    # factor past float64's range: that relative error is inf, not a warning
    with np.errstate(over="ignore"):
        if nonzero.all():
            rel: float | None = float(np.max(delta / ref))
        else:
            rel = float(np.max(delta[nonzero] / ref[nonzero])) if nonzero.any() else None
    return StageError(float(np.max(delta)), rel, inf, nan)
