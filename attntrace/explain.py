"""What each stage means, in words: one line for tables, a paragraph for step mode.

Numbers in these texts (√d_k, shapes) are filled in from the trace, never typed.
"""

from __future__ import annotations

import math

from attntrace.trace import Stage, Trace

_ONE_LINE = {
    "X": "One row per token: its embedding vector, the input to attention.",
    "Q": "Queries: what each token is looking for.",
    "K": "Keys: what each token offers to be found by.",
    "V": "Values: what each token passes on when it is attended to.",
    "scores": "Row i, column j: how well query i matches key j (their dot product).",
    "scaled": "The scores divided by √d_k = {sqrt_dk}, so their size does not grow with d_k.",
    "softmax": "Attention weights: each row sums to 1; row i says where token i looks.",
    "output": "Row i: the value rows averaged with row i's weights; token i's new vector.",
}

_PARAGRAPH = {
    "X": (
        "Each of the {n} tokens is looked up in the embedding table and becomes a row of "
        "{d_model} numbers. Everything that follows is computed from these rows."
    ),
    "Q": (
        "Multiplying X [{n} × {d_model}] by the learned matrix WQ [{d_model} × {d_k}] turns "
        "every token into a query of {d_k} numbers. Row i of Q is the question token i asks "
        "of the others."
    ),
    "K": (
        "The same tokens, multiplied by a different matrix WK [{d_model} × {d_k}], become "
        "keys. A query and a key are compared by their dot product, so both have {d_k} numbers."
    ),
    "V": (
        "A third matrix WV [{d_model} × {d_v}] turns each token into a value of {d_v} numbers: "
        "the content that is copied, in proportion to the attention weights, into the output."
    ),
    "scores": (
        "scores[i, j] = Q[i] · K[j], the sum of the element-wise products of query i and key j. "
        "A large score means token i's question matches what token j offers. Q [{n} × {d_k}] "
        "times Kᵀ [{d_k} × {m}] gives one score for every pair of tokens."
    ),
    "scaled": (
        "Dot products of d_k numbers grow with d_k, and large scores push softmax towards a "
        "one-hot row whose gradients vanish. Dividing by √d_k = √{d_k} = {sqrt_dk} keeps them "
        "in a range where softmax still spreads its weight."
    ),
    "softmax": (
        "Each row of scaled scores becomes a probability distribution: exp of each score, "
        "divided by the row's sum of exps. The row max is subtracted first: it cancels out "
        "of the ratio and keeps exp from overflowing. Every row sums to 1."
    ),
    "output": (
        "Row i of the output is Σ_j softmax[i, j] · V[j]: the value rows mixed in the "
        "proportions token i chose. softmax [{n} × {m}] times V [{m} × {d_v}] gives "
        "[{n} × {d_v}]."
    ),
}


def _numbers(trace: Trace) -> dict[str, object]:
    model = trace.model
    return {
        "n": len(trace.tokens),
        "m": len(trace.context_tokens or trace.tokens),
        "d_model": model.d_model,
        "d_k": model.d_k,
        "d_v": model.d_v,
        "sqrt_dk": f"{math.sqrt(model.d_k):.4f}",
    }


def one_line(stage: Stage, trace: Trace) -> str:
    """A sentence on what ``stage`` means, for the caption under its table."""
    return _ONE_LINE.get(stage.name, "").format(**_numbers(trace))


def paragraph(stage: Stage, trace: Trace) -> str:
    """The step-mode explanation of ``stage``."""
    return _PARAGRAPH.get(stage.name, "").format(**_numbers(trace))


def shape_equation(stage: Stage, trace: Trace) -> str:
    """The stage as an equation of shapes: ``X [3 × 2] · WQ [2 × 2] = Q [3 × 2]``."""
    v = _numbers(trace)
    n, m, d_model, d_k, d_v = v["n"], v["m"], v["d_model"], v["d_k"], v["d_v"]
    equations = {
        "X": f"X [{n} × {d_model}]: {n} tokens, {d_model} numbers each",
        "Q": f"X [{n} × {d_model}] · WQ [{d_model} × {d_k}] = Q [{n} × {d_k}]",
        "K": f"X [{m} × {d_model}] · WK [{d_model} × {d_k}] = K [{m} × {d_k}]",
        "V": f"X [{m} × {d_model}] · WV [{d_model} × {d_v}] = V [{m} × {d_v}]",
        "scores": f"Q [{n} × {d_k}] · Kᵀ [{d_k} × {m}] = scores [{n} × {m}]",
        "scaled": f"scores [{n} × {m}] / √{d_k} (= {v['sqrt_dk']}) = scaled [{n} × {m}]",
        "softmax": f"softmax of each row of scaled [{n} × {m}] = softmax [{n} × {m}]",
        "output": f"softmax [{n} × {m}] · V [{m} × {d_v}] = output [{n} × {d_v}]",
    }
    return equations.get(stage.name, f"{stage.name} [{stage.shape[0]} × {stage.shape[1]}]")
