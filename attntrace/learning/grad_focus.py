"""One query row's softmax backward, broken into the arithmetic a person would do by hand.

``grad --focus`` (docs/learning.md) takes a row of one head from the softmax weights a
and their gradient dA (that row of ``d_softmax``) to the gradient of the scaled scores,
dS = J·dA, where J = diag(a) − a·aᵀ is the softmax's Jacobian: every entry of J, every
term Jⱼₖ·dAₖ, each dSⱼ as the sum of its terms, and the shortcut aⱼ·(dAⱼ − Σₖ aₖ·dAₖ)
that gives the same number without J. It is the backward twin of
:mod:`attntrace.forward.focus`.

The pieces are recomputed here from the row's a and dA alone (not read from the
backward pass), so the view can set them beside the ``d_scaled`` stage as a check. Each
sum is :func:`math.fsum` of the terms shown: the exactly rounded sum, whatever their
order, so the written terms add up to the written total as far as float64 goes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attntrace.kernel import fields
from attntrace.kernel.labels import unique_labels
from attntrace.learning.grad_trace import GradTrace


@dataclass(frozen=True)
class JacobianFocus:
    """Row ``index`` of head ``head``, through the softmax backward by hand.

    The tuples run over the m keys, in key order; ``jacobian[j][k]`` is Jⱼₖ and
    ``terms[j][k]`` is Jⱼₖ·dAₖ. ``masked[k]`` is whether the causal mask hides key k
    (its weight is 0, so J's row and column k are 0). ``stage_d_scaled`` and
    ``stage_d_scores`` are the backward pass's own rows, for the check.
    """

    index: int
    token: str  # the query token, as given
    label: str  # as the tables label it: fish, or fish#4 where it repeats
    head: int
    kv_head: int
    heads: int  # the model's query heads (a view names the head where there are several)
    d_k: int
    keys: tuple[str, ...]  # the key tokens as given (a view makes them visible)
    key_labels: tuple[str, ...]  # as the tables label them
    weights: tuple[float, ...]  # a: the row of the head's softmax
    d_weights: tuple[float, ...]  # dA: the row of the head's d_softmax
    jacobian: tuple[tuple[float, ...], ...]  # J = diag(a) − a·aᵀ, m × m
    terms: tuple[tuple[float, ...], ...]  # Jⱼₖ·dAₖ
    d_scaled: tuple[float, ...]  # dSⱼ = Σₖ Jⱼₖ·dAₖ
    inner: float  # Σₖ aₖ·dAₖ
    inner_terms: tuple[float, ...]  # aₖ·dAₖ
    shortcut: tuple[float, ...]  # aⱼ·(dAⱼ − Σₖ aₖ·dAₖ)
    masked: tuple[bool, ...]
    stage_d_scaled: tuple[float, ...]  # the d_scaled stage's row
    stage_d_scores: tuple[float, ...]  # the d_scores stage's row (d_scaled / √d_k)
    # The stage the softmax backward lands on: d_scaled, or the gradient of what the
    # softmax read under a variant (d_capped under a softcap, d_biased under ALiBi);
    # stage_d_scaled is that stage's row.
    landed: str = "d_scaled"

    @property
    def sqrt_dk(self) -> float:
        return math.sqrt(self.d_k)

    @property
    def size(self) -> int:
        """m, the number of keys."""
        return len(self.keys)


def jacobian_focus(grad: GradTrace, row: int, head: int) -> JacobianFocus:
    """Row ``row`` of head ``head`` of ``grad`` through the softmax backward by hand.

    Raises :class:`InputError` for a row or head out of range (0-based).
    """
    trace = grad.forward
    heads = trace.model.heads
    head = fields.index(head, "head", heads, "a head")
    row = fields.index(row, "row", len(trace.tokens), "a query token's position")
    keys = trace.tokens if trace.context_tokens is None else trace.context_tokens
    a = tuple(float(x) for x in trace.stage("softmax", head=head).data[row])
    d_a = tuple(float(x) for x in grad.stage("d_softmax", head=head).data[row])
    hidden = trace.softmax_input(head).data[row]
    masked = tuple(bool(x == -math.inf) for x in hidden)
    landed = next(name for name in ("d_capped", "d_biased", "d_scaled") if name in grad.names)
    m = len(a)
    jacobian = tuple(
        tuple((a[j] if j == k else 0.0) - a[j] * a[k] for k in range(m)) for j in range(m)
    )
    terms = tuple(tuple(jacobian[j][k] * d_a[k] for k in range(m)) for j in range(m))
    inner_terms = tuple(a[k] * d_a[k] for k in range(m))
    inner = math.fsum(inner_terms)
    return JacobianFocus(
        index=row,
        token=trace.tokens[row],
        label=unique_labels(trace.tokens)[row],
        head=head,
        kv_head=trace.model.kv_head_of(head),
        heads=heads,
        d_k=trace.model.d_k,
        keys=tuple(keys),
        key_labels=tuple(unique_labels(keys)),
        weights=a,
        d_weights=d_a,
        jacobian=jacobian,
        terms=terms,
        d_scaled=tuple(math.fsum(line) for line in terms),
        inner=inner,
        inner_terms=inner_terms,
        shortcut=tuple(a[j] * (d_a[j] - inner) for j in range(m)),
        masked=masked,
        stage_d_scaled=tuple(float(x) for x in grad.stage(landed, head=head).data[row]),
        stage_d_scores=tuple(float(x) for x in grad.stage("d_scores", head=head).data[row]),
        landed=landed,
    )
