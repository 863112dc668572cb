"""Which mistake explains the first stage that differs: each mistake of the catalogue
(:mod:`attntrace.checking.mistakes`) that applies is recomputed through the block, and
the one that reproduces the given stage, on every head given, without changing a stage
that matched, is the diagnosis; among several, the one that also reproduces the most
later stages. A right stage saved transposed, or saved under another stage's name
(the scaled scores as ``scores``), is a diagnosis of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from attntrace.checking.mistakes import Mistake, catalogue
from attntrace.checking.recompute import Computed, Recipe, recompute
from attntrace.checking.report import Diagnosis
from attntrace.checking.tolerance import matches, tolerance_for
from attntrace.kernel.ops import Matrix
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.stage_names import ORDER

if TYPE_CHECKING:
    from attntrace.checking.compare import Check, Placed

#: The diagnosis of a right stage saved with its last two axes swapped.
SAVED_TRANSPOSED = "saved-transposed"

#: The diagnosis of a stage that holds another stage of the trace (the scaled scores
#: saved as ``scores``, as many tutorials name them).
SAVED_AS_ANOTHER = "saved-as-another-stage"

#: What a stage does to the one before it, to say which step a stage saved as its
#: neighbour has already taken (or not yet).
STEPS = {
    "X": "the positions",
    "Q_norm": "QK-norm",
    "K_norm": "QK-norm",
    "Q_rope": "RoPE",
    "K_rope": "RoPE",
    "scaled": "÷ √d_k",
    "biased": "ALiBi's bias",
    "capped": "the cap",
    "masked": "the mask",
    "softmax": "softmax",
    "projected": "WO",
}


def diagnose(
    check: Check, model: ModelSpec, placed: Mapping[str, Placed], stage: str
) -> Diagnosis | None:
    """The mistake whose recomputed stage reproduces the given one for every head
    given; among several, the one that also reproduces the most later stages."""
    trace = check.trace
    inputs = {"X": trace.stage("X").data}
    if trace.context_tokens is not None:
        inputs["X_keys"] = trace.stage("X_context").data
    if "embeddings" in trace.names:
        inputs["embeddings"] = trace.stage("embeddings").data
    if "embeddings_context" in trace.names:
        inputs["embeddings_context"] = trace.stage("embeddings_context").data
    spot = placed[stage]
    n, m = len(trace.tokens), len(trace.context_tokens or trace.tokens)
    later = [p for name, p in placed.items() if ORDER.index(name) > ORDER.index(stage)]
    earlier = [p for name, p in placed.items() if ORDER.index(name) < ORDER.index(stage)]
    scored: list[tuple[int, Mistake]] = []
    largest = _largest(check.expected.heads.get("scaled", []))
    cross = trace.context_tokens is not None
    for mistake in catalogue(model, n, m, largest_logit=largest, cross=cross):
        computed = recompute(model, inputs, mistake.recipe, dtype=spot.given.dtype)
        if mistake.cause == "mask-fill-too-small" and _same_weights(check, computed):
            continue  # the fill hid every cell it should: no mistake to name
        # the stages before it matched, so a mistake that changes one of them is not
        # the cause (no scaling changes scaled; a cap of the unscaled scores does not)
        if check.reproduces(spot, computed) and all(
            _unchanged(check, p, computed, mistake.recipe) for p in earlier
        ):
            scored.append((sum(check.reproduces(p, computed) for p in later), mistake))
    if not scored:
        return _transposed(check, spot) or _another_stage(check, spot)
    best = max(score for score, _ in scored)
    best_ones = [m for score, m in scored if score == best]
    first = best_ones[0]
    # one cause by several recipes (Q made with WK or with WV, equal here): say each
    ways = list(dict.fromkeys(m.message for m in best_ones if m.cause == first.cause))
    causes = list(dict.fromkeys(m.cause for m in best_ones))
    return Diagnosis(first.cause, said_once(ways), tuple(causes[1:]))


#: The most words in which ways of one cause may differ and still be said as one.
SLOT = 3


def said_once(ways: Sequence[str]) -> str:
    """Ways of one cause said once each: those that differ only in a value (a fill, a
    weight) as one sentence naming the values, ``filled with −1e4, −1e5 or −65504
    instead of −∞``; the others joined by ``; or``."""
    groups: list[list[list[str]]] = []
    for way in ways:
        words = way.split(" ")
        group = next((g for g in groups if _slot([*g, words]) is not None), None)
        if group is None:
            groups.append([words])
        else:
            group.append(words)
    return "; or ".join(_in_one(group) for group in groups)


def _slot(sentences: Sequence[list[str]]) -> tuple[int, int] | None:
    """The words every sentence starts and ends with (two at least), where what lies
    between is one to :data:`SLOT` words in each (the value), else None."""
    shortest = min(len(s) for s in sentences)
    start = 0
    while start < shortest and len({s[start] for s in sentences}) == 1:
        start += 1
    end = 0
    while end < shortest - start and len({s[len(s) - 1 - end] for s in sentences}) == 1:
        end += 1
    if start + end >= 2 and all(1 <= len(s) - start - end <= SLOT for s in sentences):
        return start, end
    return None


def _in_one(group: Sequence[list[str]]) -> str:
    """One sentence for sentences that differ in one slot: its values as ``a, b or c``."""
    if len(group) == 1:
        return " ".join(group[0])
    slot = _slot(group)
    assert slot is not None
    start, end = slot
    values = [" ".join(s[start : len(s) - end]) for s in group]
    said = f"{', '.join(values[:-1])} or {values[-1]}"
    first = group[0]
    return " ".join([*first[:start], said, *first[len(first) - end :]])


def _transposed(check: Check, spot: Placed) -> Diagnosis | None:
    """``saved-transposed``: the stage was right, but saved with its last two axes
    swapped (``K.transpose(-2, -1)``, ``attn.T``), a mistake of saving, not of
    computing."""
    name, expected = spot.stage, check.expected
    flipped = Computed(
        shared={k: v.T for k, v in expected.shared.items() if k == name},
        heads={k: [m.T for m in v] for k, v in expected.heads.items() if k == name},
        kv={k: [m.T for m in v] for k, v in expected.kv.items() if k == name},
    )
    if not check.reproduces(spot, flipped):
        return None
    return Diagnosis(
        SAVED_TRANSPOSED,
        f"{name} is right but was saved transposed (its "
        "last two axes swapped); save the stage itself",
    )


def _another_stage(check: Check, spot: Placed) -> Diagnosis | None:
    """``saved-as-another-stage``: the array holds another stage of the trace of the
    same kind (per head, per K/V head or shared), on every head given: a right stage
    saved under the wrong name. The nearest such stage in computation order is named."""
    name, expected = spot.stage, check.expected
    kinds = {"shared": list(expected.shared), "kv_head": list(expected.kv)}
    pool = kinds.get(spot.per, list(expected.heads))
    present = [s for s in ORDER if s in expected.shared or s in expected.heads]
    here = ORDER.index(name)
    for other in sorted(pool, key=lambda s: (abs(ORDER.index(s) - here), ORDER.index(s))):
        if other == name:
            continue
        held = Computed(
            shared={name: expected.shared[other]} if other in expected.shared else {},
            heads={name: expected.heads[other]} if other in expected.heads else {},
            kv={name: expected.kv[other]} if other in expected.kv else {},
        )
        if check.reproduces(spot, held):
            return Diagnosis(
                SAVED_AS_ANOTHER,
                f"{name} holds what the trace calls {other}"
                f"{_step(present, name, other)}: save it as `{other}`",
            )
    return None


def _step(present: Sequence[str], name: str, other: str) -> str:
    """`` (÷ √d_k already applied)``: the step between two neighbouring stages, or
    nothing for stages further apart."""
    one, two = present.index(name), present.index(other)
    step = STEPS.get(present[max(one, two)])
    if abs(one - two) != 1 or step is None:
        return ""
    return f" ({step} already applied)" if two > one else f" ({step} not yet applied)"


def _largest(logits: Sequence[Matrix]) -> float:
    """The largest finite |scaled score| over the heads (0 for none)."""
    top = 0.0
    for matrix in logits:
        size = np.abs(matrix)
        top = max(top, float(np.max(size, where=np.isfinite(size), initial=0.0)))
    return top


def _same_weights(check: Check, computed: Computed) -> bool:
    """Whether ``computed``'s weights are the trace's on every head, to float64's
    tolerance: a finite mask fill that hid every cell changed nothing."""
    tolerance = tolerance_for("float64")
    expected = check.expected.heads["softmax"]
    return all(
        matches(e, c, tolerance) for e, c in zip(expected, computed.heads["softmax"], strict=True)
    )


def _joined(matrices: Sequence[Matrix], split: str) -> Matrix:
    """Heads put back side by side, ``[r, heads·d]``, the way ``split`` took them apart
    (a ``[n, d, heads]`` reshape takes head h's columns h, h + heads, ...)."""
    if split == "dims-then-heads":
        return np.stack(matrices, axis=-1).reshape(len(matrices[0]), -1)
    return np.concatenate(matrices, axis=1)


def _unchanged(
    check: Check, spot: Placed, computed: Computed, recipe: Recipe | None = None
) -> bool:
    """Whether ``computed`` (a mistake's block) leaves the stage of ``spot`` as the
    trace has it, on the heads the person gave, within the person's tolerance (a
    stage the recipe does not compute is left as it was).

    An array saved side by side, ``[r, heads·d]``, may be the projection saved before
    the heads were split (``q_proj(x)``, then a wrong ``.view(B, T, d, H)``): the same
    under any split, so it is also judged as saved, joined back by the recipe's own
    split."""
    name, tolerance = spot.stage, check.tolerance(spot.given)
    if name not in computed.shared and name not in computed.heads:
        return True
    split = Recipe().split if recipe is None else recipe.split
    if spot.form == "side-by-side" and split != Recipe().split:
        pair = (
            _joined(check.expected.matrix_list(name, spot.per), Recipe().split),
            _joined(computed.matrix_list(name, spot.per), split),
        )
        if pair[0].shape == pair[1].shape and matches(*pair, tolerance):
            return True  # else as split (K and V saved after repeat_kv, side by side)
    for index in spot.indices:
        pair = (
            check.expected.matrix(name, spot.per, index),
            computed.matrix(name, spot.per, index),
        )
        if pair[0].shape != pair[1].shape:
            return False
        if not matches(*pair, tolerance, masked=name == "masked"):
            return False
    return True
