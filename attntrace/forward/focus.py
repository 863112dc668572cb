"""One query token's row, broken into the arithmetic a person would do by hand.

The rows are read from a :class:`Trace` (Q, K, V, scores, scaled, softmax, output);
the breakdown recomputes only the pieces a person writes down to get them: the terms
of each dot product, the max-shifted exps and their sum, the weighted value rows.
Tests check every piece against an independent loop implementation.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError
from attntrace.kernel import masks
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Trace
from attntrace.visible import quoted


@dataclass(frozen=True)
class DotProduct:
    """``query · key = Σ q_i × k_i``: one score of the focused row."""

    key: str
    query_row: tuple[float, ...]
    key_row: tuple[float, ...]
    score: float  # the trace's scores[i, j]

    @property
    def products(self) -> tuple[float, ...]:
        return tuple(q * k for q, k in zip(self.query_row, self.key_row, strict=True))


@dataclass(frozen=True)
class SoftmaxRow:
    """One key's line in the softmax table: its input, minus the row max, exp, share.

    ``scaled`` is softmax's input: the scaled score, or −∞ where a causal mask hides it.
    """

    key: str
    scaled: float
    shifted: float  # scaled − row max (−∞ for a masked key)

    @property
    def masked(self) -> bool:
        return self.scaled == -math.inf

    exp: float  # exp(shifted)
    weight: float  # the trace's softmax[i, j] = exp / Σ exp


@dataclass(frozen=True)
class WeightedValue:
    """``weight × V[key]``: one term of the output row."""

    key: str
    weight: float
    value_row: tuple[float, ...]

    @property
    def product(self) -> tuple[float, ...]:
        return tuple(self.weight * v for v in self.value_row)


@dataclass(frozen=True)
class Focus:
    """The focused token's row of every stage, as hand arithmetic."""

    index: int
    label: str  # the token as the tables label it: fish, or fish#4 where it repeats
    note: str  # which occurrence, where the token repeats; else ""
    d_k: int
    head: int | None  # the head shown, where the model has several
    score_inputs: tuple[str, str]  # what the dot products are of: Q, K or Q_rope, K_rope
    softmax_source: str  # the stage softmax was applied to: scaled, or masked
    dots: tuple[DotProduct, ...]
    softmax: tuple[SoftmaxRow, ...]
    exp_sum: float
    terms: tuple[WeightedValue, ...]
    output: tuple[float, ...]
    # docs/variants.md: why each key is hidden (None: visible), which are kept as sinks,
    # and the head's sink logit (its exp joins exp_sum; its weight passes no value)
    hidden_why: tuple[str | None, ...] = ()
    sinks_kept: tuple[bool, ...] = ()
    sink_logit: float | None = None
    sink_weight: float | None = None  # the trace's sink[i, 0]
    # the focused row of the stages between scaled and the mask: alibi, biased, capped
    between: tuple[tuple[str, tuple[float, ...]], ...] = ()
    softcap: float | None = None  # C of the capped stage
    windowed: bool = False  # a sliding window: hidden keys say which reason hides them
    # a row's hidden keys counted by reason, in words (masks.hidden_counts): a long row
    # writes out only its largest weights, and these say what the others are
    hidden_counts: tuple[str, ...] = ()

    @property
    def sqrt_dk(self) -> float:
        return math.sqrt(self.d_k)

    @property
    def row_max(self) -> float:
        """M, subtracted before exp: the row's max, or the sink logit where it is larger."""
        top = max(row.scaled for row in self.softmax)
        return top if self.sink_logit is None else max(top, self.sink_logit)

    @property
    def sink_exp(self) -> float | None:
        """exp(sink_logit − M): the sink's term of the denominator."""
        return None if self.sink_logit is None else math.exp(self.sink_logit - self.row_max)


def _exactly(token: str, which: str) -> bool:
    return token == which


def _canonically(token: str, which: str) -> bool:
    """The same letters however spelled: é composed, or e and a combining accent (NFC)."""
    return unicodedata.normalize("NFC", token) == unicodedata.normalize("NFC", which)


def _word(token: str) -> str:
    """A token without its leading space mark: byte-level BPE spells a word after a space
    ``Ġanimal`` (SmolLM2), SentencePiece ``▁animal`` (Gemma 3)."""
    return token.removeprefix("Ġ").removeprefix("\u2581")


def _as_a_word(token: str, which: str) -> bool:
    return _word(token) == which


def _without_case(token: str, which: str) -> bool:
    return token.lower() == which.lower()


def _as_a_word_without_case(token: str, which: str) -> bool:
    return _word(token).lower() == which.lower()


# How a token given by name is matched, first rule with a match first.
_MATCHING_RULES: tuple[Callable[[str, str], bool], ...] = (
    _exactly,
    _canonically,
    _as_a_word,
    _without_case,
    _as_a_word_without_case,
)


def resolve_focus(trace: Trace, which: str) -> tuple[int, str]:
    """The 0-based row of the trace ``which`` names (see :func:`resolve_position`)."""
    return resolve_position(trace.tokens, which, "--focus")


def resolve_position(tokens: Sequence[str], which: str, flag: str) -> tuple[int, str]:
    """The 0-based position ``which`` names among ``tokens``, and a note where a repeated
    token was meant (``flag`` names the option in errors).

    ``which`` is a 0-based index (``2``), a table label (``the#4``) or a token, matched
    exactly, then spelled otherwise (NFC: é either way), then without a space mark
    (``Ġ``, ``▁``), then both again without case; a token that repeats means its first
    occurrence. A label exactly as the tables show it wins, then a token exactly as
    written (``fish#2`` may be a token itself), then a label read as token and position.
    """
    matches = _matches(tokens, which, flag)
    if len(matches) == 1:
        return matches[0], ""
    positions = ", ".join(map(str, matches))
    return matches[0], (
        f"{quoted(which)} is at positions {positions}: this is position {matches[0]} "
        f"({flag} {matches[1]} for the next)"
    )


def _matches(tokens: Sequence[str], which: str, flag: str) -> list[int]:
    """Every position ``which`` names by the first rule that finds one
    (:func:`resolve_position`), in order; an :class:`InputError` where none does."""
    tokens = list(tokens)
    listing = ", ".join(f"{i}:{t}" for i, t in enumerate(unique_labels(tokens)))
    if re.fullmatch(r"-?[0-9]+", which.strip()):
        index = int(which.strip())
        if not 0 <= index < len(tokens):
            raise InputError(
                field=flag,
                expected=f"a token or an index from 0 to {len(tokens) - 1}",
                found=f"{index} (tokens: {listing})",
            )
        return [index]
    rules = _MATCHING_RULES
    labels = unique_labels(tokens)  # one per position: at most one matches
    for rule in rules[:2]:  # exactly as the tables label it, or the same spelled otherwise
        shown = [i for i, label in enumerate(labels) if rule(label, which)]
        if shown:
            return shown[:1]
    matches = [i for i, t in enumerate(tokens) if t == which]  # a token as written
    if not matches:
        token, _, position = which.rpartition("#")  # ##ing#4: the last # numbers it
        at = int(position) if re.fullmatch(r"[0-9]+", position) else None
        if at is not None and at < len(tokens) and any(rule(tokens[at], token) for rule in rules):
            return [at]  # a table label, typed otherwise: The#7
        candidates = ([i for i, t in enumerate(tokens) if rule(t, which)] for rule in rules)
        matches = next((found for found in candidates if found), [])
    if matches:
        return matches
    raise InputError(
        field=flag,
        expected="a token of the sentence or its 0-based index",
        found=f"{quoted(which)} (tokens: {listing})",
    )


def resolve_positions(tokens: Sequence[str], which: str, flag: str) -> tuple[list[int], list[str]]:
    """The 0-based positions a comma-separated list of tokens names (``--cols it,street``),
    in the sentence's order, each item read as :func:`resolve_position` reads one; a
    token that repeats, written without its position (``the``, not ``the#4``), means
    every occurrence. A token that is itself a comma is named by its index.

    And a note for each item that named different tokens (``THE``, where the sentence
    has ``The`` and ``the``, each only without case): as ``--focus`` does, the first is
    taken (every occurrence of it), and the note says which and how to name the next."""
    items = [item.strip() for item in which.split(",")]
    if not which.strip() or any(not item for item in items):
        raise InputError(
            field=flag,
            expected="tokens separated by commas (it,street or the#4 or 3)",
            found=quoted(which),
        )
    found: set[int] = set()
    notes: list[str] = []
    for item in items:
        matches = _matches(tokens, item, flag)
        taken = [i for i in matches if tokens[i] == tokens[matches[0]]]
        found.update(taken)
        left = [i for i in matches if i not in taken]
        if left:
            where = "position" if len(taken) == 1 else "positions"
            notes.append(
                f"{flag} {quoted(item)} is at positions {', '.join(map(str, matches))}: it "
                f"takes {where} {', '.join(map(str, taken))} ({quoted(tokens[taken[0]])}; "
                f"{flag} {left[0]} for the next)"
            )
    return sorted(found), notes


def focus_row(trace: Trace, which: str, head: int = 0) -> Focus:
    """Break row ``which`` of ``head`` (see :func:`resolve_focus`) into hand arithmetic."""
    index, note = resolve_focus(trace, which)
    return focus_at(trace, index, head, note)


def focus_at(trace: Trace, index: int, head: int = 0, note: str = "") -> Focus:
    """Break row ``index`` of ``head`` into hand arithmetic, for a caller that resolved
    the row already (``note`` says which of a repeated token it is).

    Softmax's input is what it was really applied to: the masked row under a causal
    mask, where a later key's −∞ gives exp 0 and weight 0.
    """

    def row(name: str) -> npt.NDArray[Any]:
        return trace.stage(name, head=head).data

    keys = unique_labels(trace.stage("scores", head=head).cols)  # as the tables label them
    q_name, k_name = trace.model.score_inputs  # under RoPE, the turned rows
    q, k, v = row(q_name)[index], row(k_name), row("V")
    scores = row("scores")[index]
    inputs = trace.softmax_input(head).data[index]  # scaled, or masked under a causal mask
    weights = row("softmax")[index]
    model = trace.model
    logits = model.variants.sink_logits(model.heads)
    sink_logit = None if logits is None else logits[head]
    top = inputs.max() if sink_logit is None else max(float(inputs.max()), sink_logit)
    shifted = inputs - top
    exps = np.exp(shifted)
    sink_exp = 0.0 if sink_logit is None else math.exp(sink_logit - top)
    window, sinks = model.variants.window, model.variants.sinks
    cross = trace.context_tokens is not None
    why = tuple(
        None
        if cross
        else masks.why_hidden(index, j, causal=model.causal, window=window, sinks=sinks)
        for j in range(len(keys))
    )
    kept = tuple(masks.kept_as_sink(index, j, window=window, sinks=sinks) for j in range(len(keys)))
    return Focus(
        index=index,
        label=unique_labels(trace.tokens)[index],
        note=note,
        d_k=trace.model.d_k,
        head=head if trace.model.heads > 1 else None,
        score_inputs=(q_name, k_name),
        softmax_source=trace.model.softmax_source,
        dots=tuple(
            DotProduct(key, _floats(q), _floats(k[j]), float(scores[j]))
            for j, key in enumerate(keys)
        ),
        softmax=tuple(
            SoftmaxRow(key, float(inputs[j]), float(shifted[j]), float(exps[j]), float(weights[j]))
            for j, key in enumerate(keys)
        ),
        exp_sum=float(exps.sum()) + sink_exp,
        terms=tuple(
            WeightedValue(key, float(weights[j]), _floats(v[j])) for j, key in enumerate(keys)
        ),
        output=_floats(row("output")[index]),
        hidden_why=why,
        sinks_kept=kept,
        sink_logit=sink_logit,
        sink_weight=None if sink_logit is None else float(row("sink")[index, 0]),
        softcap=model.variants.softcap,
        windowed=window is not None,
        hidden_counts=()
        if cross
        else masks.hidden_counts(index, len(keys), causal=model.causal, window=window, sinks=sinks),
        between=tuple(
            (name, _floats(row(name)[index]))
            for name in ("alibi", "biased", "capped")
            if any(st.name == name and st.head == head for st in trace.stages)
        ),
    )


def _floats(row: npt.NDArray[Any]) -> tuple[float, ...]:
    return tuple(float(x) for x in row)
