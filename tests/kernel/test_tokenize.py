"""Tokenizing (docs/model-file.md#tokens): whitespace, edge punctuation, contractions kept."""

from __future__ import annotations

import pytest

from attntrace.kernel.tokenize import tokenize


@pytest.mark.parametrize(
    ("sentence", "tokens"),
    [
        ("cat eats fish", ["cat", "eats", "fish"]),
        ("  cat\teats\n fish  ", ["cat", "eats", "fish"]),
        ("tired.", ["tired", "."]),
        ("didn't", ["didn't"]),
        ('"(it was tired.)"', ['"', "(", "it", "was", "tired", ".", ")", '"']),
        ("Hello, world!", ["Hello", ",", "world", "!"]),
        ("a.b", ["a.b"]),
        ("...", [".", ".", "."]),
        ("e.g.", ["e.g", "."]),
        ("well-known; ok?", ["well-known", ";", "ok", "?"]),
        ("", []),
        ("   ", []),
    ],
)
def test_tokenize(sentence: str, tokens: list[str]) -> None:
    assert tokenize(sentence) == tokens


def test_the_it_animal_sentence() -> None:
    assert tokenize("The animal didn't cross the street because it was tired.") == [
        "The",
        "animal",
        "didn't",
        "cross",
        "the",
        "street",
        "because",
        "it",
        "was",
        "tired",
        ".",
    ]
