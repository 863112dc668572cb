"""Sentence -> tokens, as docs/model-file.md#tokens says.

Split on whitespace; punctuation from ``.,!?;:"()`` at either end of a word becomes a
token of its own, one character at a time; punctuation inside a word stays
(``didn't`` is one token).
"""

from __future__ import annotations

EDGE_PUNCTUATION = frozenset('.,!?;:"()')


def tokenize(sentence: str) -> list[str]:
    """Split ``sentence`` into tokens.

    ``'(it was tired.)'`` -> ``['(', 'it', 'was', 'tired', '.', ')']``.
    """
    tokens: list[str] = []
    for word in sentence.split():
        start, end = 0, len(word)
        while start < end and word[start] in EDGE_PUNCTUATION:
            start += 1
        while end > start and word[end - 1] in EDGE_PUNCTUATION:
            end -= 1
        tokens.extend(word[:start])
        if start < end:
            tokens.append(word[start:end])
        tokens.extend(word[end:])
    return tokens
