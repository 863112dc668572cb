"""Row and column labels: tokens a reader can tell apart, and dimensions d0, d1, ..."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache


class Dims(tuple[str, ...]):
    """Dimension labels d0, d1, ...: a tuple (equal to the plain one) known to hold
    distinct plain-ASCII labels, so that nothing needs to tell them apart or escape them
    again (:func:`unique_labels`, the views' shown labels): a model 800,000 dimensions
    wide held a dictionary of them per stage for that."""

    __slots__ = ()


def unique_labels(labels: Sequence[str]) -> list[str]:
    """Labels a reader can tell apart: a repeated token gets its 0-based position, ``the#4``."""
    if isinstance(labels, Dims):
        return list(labels)  # distinct already: a copy of the pointers, not a count of them
    return list(_unique(tuple(labels)))


@lru_cache(maxsize=256)
def _unique(labels: tuple[str, ...]) -> tuple[str, ...]:
    """Cached: every stage of a trace shares the same token tuple.

    A label made so may itself be a token of the sentence (``fish#2`` written beside
    ``fish`` twice): a label that still repeats takes its position once more, until none
    repeats (``fish#2#1`` for the written one, ``fish#2#2`` for the third fish)."""
    shown = list(labels)
    for _ in range(8):  # each pass parts what repeats; written tokens rarely need two
        counts = Counter(shown)
        if len(counts) == len(shown):
            break
        shown = [f"{label}#{i}" if counts[label] > 1 else label for i, label in enumerate(shown)]
    else:  # an adversarial sentence: the position alone tells them apart
        shown = [f"{label}@{i}" for i, label in enumerate(shown)]
    return tuple(shown)


@lru_cache(maxsize=64)
def dims(width: int, start: int = 0) -> Dims:
    """Column labels for an axis over dimensions: d0, d1, ... (from ``start``), made once
    for each width and start, so a trace's stages share them."""
    return Dims(f"d{i}" for i in range(start, start + width))


# The marks a trained model's tokenizer writes into its tokens, and what each means, in
# the order they are explained. A token is marked where it starts with the mark and has
# more after it (a lone `Ġ` is a space token, but still says what Ġ is).
TOKEN_MARKS = (
    ("Ġ", "a space before the token (byte-level BPE: GPT-2, SmolLM2)"),
    ("Ċ", "a newline (byte-level BPE)"),
    ("▁", "a space before the token (SentencePiece: Gemma)"),
    ("##", "the token continues the word before it (WordPiece: BERT, MiniLM)"),
)


def marks_note(*token_lists: Sequence[str]) -> str:
    """One line saying what the tokenizer marks in ``token_lists`` mean (``Ġ``, ``▁``,
    ``##``), or '' where none occurs: a reader who never met byte-level BPE sees
    ``Ġanimal`` in every header. Only the marks that occur are named."""
    seen = {
        mark
        for tokens in token_lists
        for token in tokens
        for mark, _ in TOKEN_MARKS
        if token.startswith(mark) or (mark == "Ċ" and mark in token)
    }
    said = [f"{mark} = {meaning}" for mark, meaning in TOKEN_MARKS if mark in seen]
    return "; ".join(said) + "." if said else ""
