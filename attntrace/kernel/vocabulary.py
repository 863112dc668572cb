"""What an unknown-token error says: which tokens, the vocabulary, and why they missed.

An unknown token is the commonest mistake with a hand-written model, so the message
names each unknown token once, lists the vocabulary (its first 20 entries), says where
punctuation at a word's edge is a token of its own, and points out a token that looks
like a known one but is spelled with other code points. The lookup itself (exact, then
lower-case) is :meth:`attntrace.kernel.spec.ModelSpec.resolve`.
"""

from __future__ import annotations

from collections.abc import Sequence

from attntrace.kernel.tokenize import EDGE_PUNCTUATION
from attntrace.visible import code_points, lookalikes, quoted

# How many vocabulary entries the message lists before it abbreviates.
VOCABULARY_SHOWN = 20


def unknown_tokens(unknown: Sequence[str], vocabulary: Sequence[str]) -> str:
    """``unknown token 'dog' (vocabulary: cat, eats, fish)``, with the hints that apply."""
    punctuation = [t for t in unknown if t in EDGE_PUNCTUATION]
    hint = (
        f"; {', '.join(quoted(t) for t in punctuation)}: punctuation at a word's edge "
        "is a token of its own, so the embeddings need it too"
        if punctuation
        else ""
    ) + _lookalikes(unknown, tuple(vocabulary))
    return (
        f"unknown token{'s' if len(unknown) > 1 else ''} "
        + ", ".join(quoted(t) for t in unknown)
        + f" (vocabulary: {_listed(vocabulary)}){hint}"
    )


def _lookalikes(unknown: Sequence[str], vocabulary: tuple[str, ...]) -> str:
    """``; 'é' (U+0065 U+0301) looks like the vocabulary's 'é' (U+00E9) but is spelled
    with other code points``, for each unknown token that reads as a known one."""
    return "".join(
        f"; {quoted(token)} ({code_points(token)}) looks like the vocabulary's {quoted(twin)} "
        f"({code_points(twin)}) but is spelled with other code points"
        for token, twin in lookalikes(list(unknown), vocabulary).items()
    )


def _listed(vocabulary: Sequence[str]) -> str:
    shown = ", ".join(vocabulary[:VOCABULARY_SHOWN])
    hidden = len(vocabulary) - VOCABULARY_SHOWN
    return f"{shown}, … and {hidden} more" if hidden > 0 else shown
