"""What a student's function is run on: the calls, and the cases judged from them.

A **call** is one ``FUNCTION(X, WQ, WK, WV, causal=...)``: float64 arrays, X
``[n, d_model]``, WQ and WK ``[d_model, d_k]``, WV ``[d_model, d_v]``. A **case** is
what is judged: a sample or a hidden random model (one call, its output held to
attntrace's trace by `check`), or a property seen in outputs alone (a call or two).

The samples are the shipped single-head models without extras (no RoPE, ALiBi, context,
biases or variants), each run as it is and the other way round (causal and not), with X
the sample's own (embeddings, plus its positions). The hidden models come from a fixed
seed, so every machine grades the same numbers: sizes from n = 1 and d_k = 1 up, with
d_model ≠ d_k, d_model ≠ d_v, n ≠ d_k and n ≠ d_v where they can be (so that
÷√d_model, ÷√n, ÷√d_k and ÷√d_v are told apart), and two of large scores: a
causal one whose rows' visible scores all lie below −10⁴ (a mask filled with −1e4
lets hidden keys in) and one whose scores pass exp's overflow at 709 (a softmax
without its row max gives ∞ and NaN).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]

#: The shipped samples a single-head function can be graded on (tests/grading holds
#: this list to every sample that is single-head without extras).
SAMPLES = ("cat-eats-fish", "causal", "it-animal", "positions", "the-cat-sat")

#: The seed of the hidden models: fixed, so a grade is the same on every machine.
SEED = 32

#: The hidden models: (n, d_model, d_k, d_v, causal, kind); kind "plain", or "low"
#: (every visible score below −10⁴ once scaled) or "high" (scores past 709).
RANDOM_SIZES: tuple[tuple[int, int, int, int, bool, str], ...] = (
    (1, 1, 1, 1, False, "plain"),
    (1, 3, 2, 2, True, "plain"),
    (2, 3, 1, 4, True, "plain"),
    (3, 4, 2, 5, False, "plain"),
    (4, 5, 3, 2, True, "plain"),
    (5, 3, 4, 4, False, "plain"),
    (6, 8, 5, 3, True, "plain"),
    (7, 6, 2, 5, False, "plain"),
    (9, 16, 4, 4, True, "plain"),
    (5, 4, 3, 2, True, "low"),
    (4, 5, 2, 3, False, "high"),
)

#: The "low" model's rows, scaled (see _random_call).
LOW_ROW_SCALES = (150.0, 1.0, 3.0, 10.0, 30.0)

#: Which hidden models the properties use (indices into RANDOM_SIZES): one not causal
#: (permutation), one causal (later tokens), both for the hull.
PERMUTED_MODEL = 7
CAUSAL_MODEL = 6


@dataclass(frozen=True, eq=False)
class Call:
    """One call of the student's function."""

    X: Matrix
    WQ: Matrix
    WK: Matrix
    WV: Matrix
    causal: bool

    def arrays(self) -> tuple[Matrix, Matrix, Matrix, Matrix]:
        """Fresh copies, so a student who writes into an input changes no other call."""
        return (self.X.copy(), self.WQ.copy(), self.WK.copy(), self.WV.copy())


@dataclass(frozen=True, eq=False)
class Case:
    """One judged case: its name, kind (sample, random, property), the calls it reads
    (indices into the list of calls), and for a sample or random case the model `check`
    holds the output to: ``sample`` (a shipped sample's name) or ``model`` (a model
    document), with ``causal``."""

    name: str
    kind: str
    calls: tuple[int, ...]
    causal: bool = False
    sample: str | None = None
    model: Mapping[str, Any] | None = field(default=None)
    describe: str = ""  # what a property checks, in words


def sample_call(name: str, causal: bool) -> Call:
    """The sample's X (embeddings, plus positions) and weights, as a student gets them."""
    from attntrace.api import prepared

    inputs = prepared(None, sample=name, causal=causal)
    trace = inputs.trace()
    spec = inputs.spec
    return Call(
        np.array(trace["X"].data, dtype=np.float64),
        np.array(spec.WQ, dtype=np.float64),
        np.array(spec.WK, dtype=np.float64),
        np.array(spec.WV, dtype=np.float64),
        causal,
    )


def _random_call(
    rng: np.random.Generator, n: int, d_model: int, d_k: int, d_v: int, causal: bool, kind: str
) -> Call:
    X = rng.standard_normal((n, d_model))
    WQ = rng.standard_normal((d_model, d_k)) / np.sqrt(d_model)
    WK = rng.standard_normal((d_model, d_k)) / np.sqrt(d_model)
    WV = rng.standard_normal((d_model, d_v))
    if kind == "low":
        # every score negative (X and WQ positive, K = −Q), rows scaled apart: the first
        # row, which sees itself alone, scores about −10⁵ (a −1e4 fill wins over it),
        # the second's best visible score lies between −10⁴ and 0 (a fill of 0 wins, −1e4
        # does not), so a too-small fill and a fill of zero give different outputs
        X, WQ = np.abs(X) + 0.5, np.abs(WQ) + 0.5
        WK = -WQ
        X = X * np.array(LOW_ROW_SCALES[:n])[:, None]
    elif kind == "high":
        X = X * 40.0  # scores in the thousands: exp overflows without the row max
    return Call(X, WQ, WK, WV, causal)


def permutation(n: int) -> npt.NDArray[np.intp]:
    """The reordering of the permutation property: every row moves 2 places down."""
    return np.roll(np.arange(n), 2)


def random_model(index: int, call: Call) -> dict[str, Any]:
    """A hidden model as a model document: a token per row of X (``t0``, ``t1``, ...),
    each its own embedding, so the trace's X is the call's X exactly."""
    tokens = [f"t{i}" for i in range(call.X.shape[0])]
    return {
        "name": f"random-{index + 1}",
        "sentence": " ".join(tokens),
        "causal": call.causal,
        "embeddings": dict(zip(tokens, call.X.tolist(), strict=True)),
        "weights": {"WQ": call.WQ.tolist(), "WK": call.WK.tolist(), "WV": call.WV.tolist()},
    }


def random_name(index: int, call: Call) -> str:
    n, d_model = call.X.shape
    return (
        f"random {index + 1}: n {n}, d_model {d_model}, d_k {call.WQ.shape[1]}, "
        f"d_v {call.WV.shape[1]}, causal={call.causal}"
    )


def build_cases() -> tuple[list[Call], list[Case]]:
    """Every call, and every case judged from them, in the order they are reported:
    the samples, the hidden models, the properties."""
    calls: list[Call] = []
    cases: list[Case] = []
    for name in SAMPLES:
        for causal in (False, True):
            calls.append(sample_call(name, causal))
            cases.append(
                Case(f"{name}, causal={causal}", "sample", (len(calls) - 1,), causal, sample=name)
            )
    rng = np.random.default_rng(SEED)
    first_random = len(calls)
    for index, (n, d_model, d_k, d_v, causal, kind) in enumerate(RANDOM_SIZES):
        call = _random_call(rng, n, d_model, d_k, d_v, causal, kind)
        calls.append(call)
        cases.append(
            Case(
                random_name(index, call),
                "random",
                (len(calls) - 1,),
                causal,
                model=random_model(index, call),
            )
        )
    cases += _property_cases(calls, first_random, rng)
    return calls, cases


def _property_cases(calls: list[Call], first_random: int, rng: np.random.Generator) -> list[Case]:
    """Permutation equivariance, causal outputs blind to later tokens, and the hull."""
    plain = first_random + PERMUTED_MODEL
    base = calls[plain]
    order = permutation(base.X.shape[0])
    calls.append(Call(base.X[order], base.WQ, base.WK, base.WV, False))
    permuted = len(calls) - 1
    causal = first_random + CAUSAL_MODEL
    decoder = calls[causal]
    changed = decoder.X.copy()
    keep = LATER_FROM
    changed[keep:] = rng.standard_normal(changed[keep:].shape)
    calls.append(Call(changed, decoder.WQ, decoder.WK, decoder.WV, True))
    later = len(calls) - 1
    return [
        Case(
            "permutation equivariance",
            "property",
            (plain, permuted),
            describe="without a mask, reordering X's rows reorders the output's rows alike",
        ),
        Case(
            "causal: later tokens change nothing before them",
            "property",
            (causal, later),
            causal=True,
            describe=(
                f"with the mask, rows 0 to {keep - 1} of the output stay the same when "
                f"X's rows from {keep} on change"
            ),
        ),
        Case(
            "each output row inside the hull of V's rows",
            "property",
            (plain, causal),
            describe=(
                "each output row is a weighted average of the rows of V = X·WV it may "
                "see (weights ≥ 0 summing to 1)"
            ),
        ),
    ]


#: The causal property changes X's rows from this one on (the model has 6 tokens).
LATER_FROM = 3
