"""An independent casting rule (docs/kernels.md, "The casting rule"), in Python scalars.

Written from the contract alone, without reading attntrace/kernel/precision.py or
kernel/casting.py: every number is a Python float and every operation a loop, so a test that
compares the two compares two implementations, not the code with itself.

Rounding, per format:

- float16 and float32 go through ``struct.pack('<e')`` and ``struct.pack('<f')``, which
  round a double to nearest, ties to even, as IEEE 754 defines; past the range they raise
  OverflowError, which is IEEE's ±inf (float16's boundary is 65,520: the largest, 65,504,
  plus half its spacing of 32; a tie there goes to the even 2¹⁶, i.e. inf).
- bfloat16 is rounded straight from the double with exact fractions. Going through
  float32 first is *not* the nearest bfloat16 of a double: 1 + 2⁻⁸ + 2⁻³⁰ rounds to
  float32's 1 + 2⁻⁸, a bfloat16 tie that goes to the even 1, though the double is above
  the tie and its nearest bfloat16 is 1 + 2⁻⁷.
- :func:`round_fraction` rounds any double to any of the three formats by the same exact
  arithmetic: the tests hold struct's roundings to it too.

Two roundings are not one in general, but for a sum, difference, product or quotient of
two values of a format with p significant bits, rounding the exact result to float64 (53
bits) and then to the format is the same as rounding it once whenever 53 ≥ 2p + 2
(Figueroa 1995): true for float32 (p = 24), float16 (11) and bfloat16 (8). So the
element-wise stages below compute in float64 and round once, exactly as the contract
states. RoPE's x·cos − y·sin is not one operation on two values of the format (it sums
two products), so it is rounded from the exact fraction. exp and sqrt are float64's
(math's), rounded: within an ulp of float64 of the true value, which moves a rounded
result only beside a tie of the format.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

Rows = list[list[float]]

# (significant bits, smallest normal exponent, largest exponent): IEEE 754's binary32 and
# binary16, and Google's bfloat16 (float32's exponent, 8 significant bits).
FORMATS: dict[str, tuple[int, int, int]] = {
    "float32": (24, -126, 127),
    "float16": (11, -14, 15),
    "bfloat16": (8, -126, 127),
}
INF = math.inf


def largest(dtype: str) -> float:
    """(2 − 2^(1−p)) · 2^emax: 65,504 for float16."""
    bits, _, emax = FORMATS[dtype]
    return float((2 - Fraction(2) ** (1 - bits)) * Fraction(2) ** emax)


def round_fraction(x: float | Fraction, dtype: str) -> float:
    """The value of ``dtype`` nearest ``x`` (ties to even), by exact arithmetic: ±inf
    where the rounded magnitude would pass the largest finite value, −0 kept."""
    if dtype == "float64":
        return float(x)
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return x
    if x == 0:
        return x if isinstance(x, float) else 0.0
    negative = x < 0
    exact = abs(Fraction(x))
    bits, emin, _ = FORMATS[dtype]
    # the exponent e with 2^e ≤ |x| < 2^(e+1), floored at emin (subnormals share it)
    e = exact.numerator.bit_length() - exact.denominator.bit_length()
    if Fraction(2) ** e > exact:
        e -= 1
    quantum = Fraction(2) ** (max(e, emin) - bits + 1)
    scaled = exact / quantum
    whole = scaled.numerator // scaled.denominator
    rest = scaled - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    value = whole * quantum
    if value > Fraction(largest(dtype)):
        return -INF if negative else INF
    return -float(value) if negative else float(value)


def _struct_round(x: float, code: str) -> float:
    try:
        rounded: float = struct.unpack("<" + code, struct.pack("<" + code, x))[0]
    except OverflowError:
        return math.copysign(INF, x)
    return rounded


def round_to(x: float, dtype: str) -> float:
    """x as ``dtype`` holds it: struct for float16 and float32, exact for bfloat16."""
    if dtype == "float64":
        return x
    if dtype == "float16":
        return _struct_round(x, "e")
    if dtype == "float32":
        return _struct_round(x, "f")
    return round_fraction(x, dtype)


def round_rows(rows: Rows, dtype: str) -> Rows:
    return [[round_to(x, dtype) for x in row] for row in rows]


def transpose(rows: Rows) -> Rows:
    return [list(column) for column in zip(*rows, strict=True)]


def accumulator(dtype: str, accumulate: str) -> str:
    """Where partial sums live: float32, or the dtype itself (float64 stays float64)."""
    return dtype if accumulate == "dtype" or dtype == "float64" else "float32"


def matmul(a: Rows, b: Rows, dtype: str, accumulate: str = "float32") -> Rows:
    """a · b by rule 2: both rounded to the dtype; each product and each partial sum
    rounded to the accumulator, over k = 0, 1, … in turn from 0; the sum rounded to the
    dtype once at the end."""
    a, b = round_rows(a, dtype), round_rows(b, dtype)
    acc = accumulator(dtype, accumulate)
    inner = len(b)
    out: Rows = []
    for row in a:
        assert len(row) == inner
        line = []
        for j in range(len(b[0])):
            total = 0.0
            for k in range(inner):
                total = round_to(total + round_to(row[k] * b[k][j], acc), acc)
            line.append(round_to(total, dtype))
        out.append(line)
    return out


def add(a: Rows, b: Rows, dtype: str) -> Rows:
    """a + b computed in float64 and rounded to the dtype once (rule 3)."""
    return [
        [round_to(x + y, dtype) for x, y in zip(ra, rb, strict=True)]
        for ra, rb in zip(a, b, strict=True)
    ]


def linear(x: Rows, w: Rows, b: list[float] | None, dtype: str, accumulate: str) -> Rows:
    """x · w by the product rule, then the (rounded) bias added and rounded once."""
    product = matmul(x, w, dtype, accumulate)
    if b is None:
        return product
    bias = [round_to(v, dtype) for v in b]
    return [[round_to(p + c, dtype) for p, c in zip(row, bias, strict=True)] for row in product]


def _exp(z: float) -> float:
    try:
        return math.exp(z)
    except OverflowError:
        return INF


def _divide(a: float, b: float) -> float:
    """IEEE a / b (Python raises on b == 0)."""
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(INF, a) * math.copysign(1.0, b)
    return a / b


def _row_max(row: list[float]) -> float:
    """numpy's max: NaN if any cell is NaN (Python's max depends on the order)."""
    if any(math.isnan(x) for x in row):
        return math.nan
    return max(row)


def softmax_row(
    row: list[float], dtype: str, softmax_dtype: str = "float32", *, stable: bool = True
) -> list[float]:
    """Rule 4: the row rounded to the dtype, taken into the softmax dtype (exact, it is
    no narrower); m = the max (stable) or 0 (naive), z = x − m, e = exp(z), the sum of e
    left to right from 0, w = e / sum, each rounded there; the weights rounded to D."""
    sd = softmax_dtype
    xs = [round_to(round_to(x, dtype), sd) for x in row]
    top = _row_max(xs) if stable else 0.0
    zs = [round_to(x - top, sd) for x in xs]
    es = [round_to(_exp(z), sd) for z in zs]
    total = 0.0
    for e in es:
        total = round_to(total + e, sd)
    return [round_to(round_to(_divide(e, total), sd), dtype) for e in es]


def causal_hidden(i: int, j: int, n: int, m: int) -> bool:
    """Query i may not see key j (j after it, the last query aligned with the last key)."""
    return j > i + (m - n)


def attention(
    Q: Rows,
    K: Rows,
    V: Rows,
    dtype: str,
    softmax_dtype: str = "float32",
    accumulate: str = "float32",
    *,
    causal: bool = False,
) -> dict[str, Rows]:
    """One head by the rule: scores = Q·Kᵀ (product rule), scaled = scores / √d_k rounded
    once, −∞ where causal hides a key, the stable softmax, output = weights · V."""
    n, m, d = len(Q), len(K), len(Q[0])
    scores = matmul(Q, transpose(K), dtype, accumulate)
    root = math.sqrt(d)
    scaled = [[round_to(s / root, dtype) for s in row] for row in scores]
    masked = [
        [-INF if causal and causal_hidden(i, j, n, m) else s for j, s in enumerate(row)]
        for i, row in enumerate(scaled)
    ]
    weights = [softmax_row(row, dtype, softmax_dtype) for row in masked]
    output = matmul(weights, V, dtype, accumulate)
    return {
        "scores": scores,
        "scaled": scaled,
        "masked": masked,
        "softmax": weights,
        "output": output,
    }


def rms_norm(rows: Rows, weight: list[float] | None, eps: float, dtype: str) -> Rows:
    """QK-norm by rule 3 (docs/kernels.md): the rows and the weight rounded to the dtype
    (stored values), each normed value x · w / √(Σ x² / d + ε) computed in float64 (the
    sum of squares left to right) and rounded once. Not one operation on two values, so
    not exactly the nearest value of the exact result: float64's error moves a rounded
    value only beside a tie of the dtype."""
    out: Rows = []
    for row in rows:
        xs = [round_to(x, dtype) for x in row]
        total = 0.0
        for x in xs:
            total += x * x
        root = math.sqrt(total / len(xs) + eps)
        ws = [1.0] * len(xs) if weight is None else [round_to(w, dtype) for w in weight]
        out.append([round_to(x / root * w, dtype) for x, w in zip(xs, ws, strict=True)])
    return out


def variant_attention(
    Q: Rows,
    K: Rows,
    V: Rows,
    dtype: str,
    softmax_dtype: str = "float32",
    accumulate: str = "float32",
    *,
    hidden: list[list[bool]] | None = None,
    bias: Rows | None = None,
    softcap: float | None = None,
    sink_logit: float | None = None,
) -> dict[str, Rows]:
    """One head with the variants, in docs/variants.md's order: scores and scaled as
    :func:`attention`; biased = scaled + the bias (rounded to the dtype first), rounded
    once; capped = C · tanh(x / C) in float64 from the dtype's x, rounded once; −∞ where
    ``hidden``; the stable softmax of the row with the sink logit (rounded to the dtype)
    as one more cell, that cell's weight the sink."""
    n, m, d = len(Q), len(K), len(Q[0])
    scores = matmul(Q, transpose(K), dtype, accumulate)
    root = math.sqrt(d)
    out: dict[str, Rows] = {"scores": scores}
    logits = out["scaled"] = [[round_to(s / root, dtype) for s in row] for row in scores]
    if bias is not None:
        out["alibi"] = round_rows(bias, dtype)
        logits = out["biased"] = add(logits, out["alibi"], dtype)
    if softcap is not None:
        logits = out["capped"] = [
            [round_to(softcap * math.tanh(x / softcap), dtype) for x in row] for row in logits
        ]
    if hidden is not None:
        logits = out["masked"] = [
            [-INF if hidden[i][j] else x for j, x in enumerate(row)] for i, row in enumerate(logits)
        ]
    if sink_logit is None:
        out["softmax"] = [softmax_row(row, dtype, softmax_dtype) for row in logits]
    else:
        sink = round_to(sink_logit, dtype)
        rows = [softmax_row([*row, sink], dtype, softmax_dtype) for row in logits]
        out["softmax"] = [row[:-1] for row in rows]
        out["sink"] = [row[-1:] for row in rows]
    out["output"] = matmul(out["softmax"], V, dtype, accumulate)
    assert len(out["output"]) == n
    assert len(out["scores"][0]) == m
    return out


def rope_angle(position: int, i: int, width: int, base: float) -> float:
    """θ = p · base^(−2i/width), i < width/2 (RoFormer)."""
    frequency: float = math.pow(float(base), -(2 * i) / width)
    return position * frequency


def rope(rows: Rows, positions: list[int], base: float, dtype: str, pairing: str = "half") -> Rows:
    """Rule 3 for RoPE: cos θ and sin θ rounded to the dtype first, each turned value
    x·cos − y·sin (or y·cos + x·sin) rounded once: the nearest value of the dtype to the
    exact result, as the contract says. That is exact fractions, not float64: the two
    products are exact in float64 but their sum is not where they are 2⁵³ apart, and a
    float64 sum that lands on a tie of the dtype then rounds to even, which the exact
    value (off the tie) need not (test_dtype_oracle's test_rope_far_apart_terms)."""
    width = len(rows[0])
    half = width // 2
    out: Rows = []
    for row, position in zip(rows, positions, strict=True):
        row = [round_to(x, dtype) for x in row]
        turned = list(row)
        for i in range(half):
            angle = rope_angle(position, i, width, base)
            c, s = round_to(math.cos(angle), dtype), round_to(math.sin(angle), dtype)
            a, b = (2 * i, 2 * i + 1) if pairing == "interleaved" else (i, i + half)
            x, y = Fraction(row[a]), Fraction(row[b])
            turned[a] = round_fraction(x * Fraction(c) - y * Fraction(s), dtype)
            turned[b] = round_fraction(y * Fraction(c) + x * Fraction(s), dtype)
        out.append(turned)
    return out


def spacing(x: float, dtype: str) -> float:
    """The dtype's ulp at x: 2^(e − p + 1) for |x| in [2^e, 2^(e+1)), the subnormal
    quantum below 2^emin."""
    bits, emin, _ = FORMATS[dtype]
    if x == 0 or math.isinf(x) or math.isnan(x):
        return float(Fraction(2) ** (emin - bits + 1))
    e = max(math.frexp(abs(x))[1] - 1, emin)
    return math.ldexp(1.0, e - bits + 1)
