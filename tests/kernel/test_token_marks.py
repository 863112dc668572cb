"""What a tokenizer's marks mean, said once where a trained model's tokens are shown."""

from __future__ import annotations

import pytest

from attntrace.kernel.labels import marks_note

BPE = "Ġ = a space before the token (byte-level BPE: GPT-2, SmolLM2)"
NEWLINE = "Ċ = a newline (byte-level BPE)"
PIECE = "▁ = a space before the token (SentencePiece: Gemma)"
WORDPIECE = "## = the token continues the word before it (WordPiece: BERT, MiniLM)"


@pytest.mark.parametrize(
    ("tokens", "said"),
    [
        (["The", "Ġanimal", "Ġit", "."], f"{BPE}."),
        (["a", "Ġb", "Ċ", "c"], f"{BPE}; {NEWLINE}."),
        (["<bos>", "The", "▁animal"], f"{PIECE}."),
        (["[CLS]", "token", "##ization", "[SEP]"], f"{WORDPIECE}."),
        (["cat", "eats", "fish"], ""),  # a model file's words: nothing to explain
        (["The", "animal", "didn't", "the#4"], ""),
        ([], ""),
    ],
    ids=["bpe", "newline", "sentencepiece", "wordpiece", "words", "labels", "none"],
)
def test_only_the_marks_that_occur_are_named(tokens: list[str], said: str) -> None:
    assert marks_note(tokens) == said


def test_the_context_counts_too_and_each_mark_is_named_once() -> None:
    note = marks_note(["Ġa", "Ġb"], ["▁c", "Ġd"])
    assert note == f"{BPE}; {PIECE}."
