"""BERT's WordPiece tokenizer in pure Python, id for id equal to Hugging Face's.

A real BERT-family model (all-MiniLM-L6-v2) only means something when it sees the ids its
own tokenizer gives, so this module reproduces Hugging Face's fast ``BertTokenizer``
(``tokenizers``' ``BertNormalizer`` + ``BertPreTokenizer`` + ``WordPiece``) without
importing it: clean the text, pad CJK ideographs with spaces, strip accents and lowercase,
split on whitespace and punctuation, then cut every word greedily into the longest
vocabulary pieces (``##`` marks a piece that continues a word). The ids are tested against
the reference's in ``tests/golden/real/tokens.json``.

The normalizer and pre-tokenizer are :mod:`attntrace.real.tokenizers.bert_text`; this module holds
the vocabulary and the greedy longest-match cut.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from attntrace import arguments
from attntrace.errors import InputError
from attntrace.kernel.reading import check_size, naming, open_regular
from attntrace.real.text import checked_ids, special_pattern, split_specials
from attntrace.real.tokenizers.bert_text import (
    basic_tokenize,
    is_chinese_char,
    is_punctuation,
    normalize,
)

__all__ = [
    "DEFAULT_SPECIAL_TOKENS",
    "WordPiece",
    "basic_tokenize",
    "is_chinese_char",
    "is_punctuation",
    "normalize",
]


# The special tokens of BERT's vocabulary that Hugging Face matches whole in raw text
# (added tokens with ``normalized: false``): "a[SEP]b" gives a, [SEP], b.
DEFAULT_SPECIAL_TOKENS: tuple[str, ...] = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class WordPiece:
    """A BERT WordPiece vocabulary and the full text-to-ids pipeline that uses it.

    Built from the vocabulary list alone (id = position, as in ``vocab.txt``), because that
    is what a BERT checkpoint ships; ``[CLS]``, ``[SEP]`` and ``[UNK]`` must be in it.
    """

    def __init__(
        self,
        vocab: Sequence[str],
        *,
        lowercase: bool = True,
        special_tokens: Iterable[str] | None = None,
        max_chars_per_word: int = 100,
        source: str | None = None,
    ) -> None:
        if not vocab:
            raise InputError(
                "empty vocabulary", source=source, expected="one token per line", found="none"
            )
        self._vocab: tuple[str, ...] = tuple(vocab)
        # Later duplicates win, as in Hugging Face's vocabulary reader.
        self._ids: dict[str, int] = {token: i for i, token in enumerate(self._vocab)}
        for required in ("[UNK]", "[CLS]", "[SEP]"):
            if required not in self._ids:
                raise InputError(
                    "not a BERT WordPiece vocabulary",
                    source=source,
                    expected=f"a {required} token",
                    found=f"{len(self._vocab)} tokens without it",
                )
        self.unk_id = self._ids["[UNK]"]
        self.cls_id = self._ids["[CLS]"]
        self.sep_id = self._ids["[SEP]"]
        self.lowercase = lowercase
        self.max_chars_per_word = max_chars_per_word
        wanted = DEFAULT_SPECIAL_TOKENS if special_tokens is None else tuple(special_tokens)
        self._special_pattern = special_pattern(t for t in wanted if t in self._ids)
        # greedy longest-match-first WordPiece, the whole word [UNK] if any part fails;
        # a word met again (the, a, ...) is split once: a bounded memo per tokenizer
        self._word_ids = functools.lru_cache(maxsize=10_000)(self._pieces)

    @classmethod
    def from_vocab_file(cls, path: str | Path, *, lowercase: bool = True) -> WordPiece:
        """Read ``vocab.txt``: one token per line, the id is the line number (from 0)."""
        source = str(path)
        with naming(source, "the vocabulary"):  # a regular file (it is hashed too), in bounds
            with open_regular(path, "a vocabulary file (UTF-8 text, one token per line)") as file:
                size = os.fstat(file.fileno()).st_size
                check_size(size)
                data = file.read(size + 1)
            check_size(len(data), stream=True)  # it grew while being read
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(
                "not a vocabulary file",
                source=source,
                expected="UTF-8 text, one token per line",
                found=f"a byte {data[error.start]:#04x} that is not UTF-8 at offset {error.start}",
            ) from None
        if "\x00" in text:
            raise InputError(
                "not a vocabulary file",
                source=source,
                expected="UTF-8 text, one token per line",
                found="binary data (NUL bytes)",
            )
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        # Trailing whitespace (a CRLF's \r included) is not part of a token.
        return cls([line.rstrip() for line in lines], lowercase=lowercase, source=source)

    @property
    def vocab_size(self) -> int:
        """The number of tokens (ids run from 0 to ``vocab_size - 1``)."""
        return len(self._vocab)

    def token_to_id(self, token: str) -> int | None:
        """The id of a vocabulary string, or None if it is not in the vocabulary."""
        return self._ids.get(token)

    def encode(self, text: str, *, add_special: bool = True) -> list[int]:
        """The ids BERT's tokenizer gives ``text``: ``[CLS]``, the word pieces, ``[SEP]``
        (the word pieces alone where ``add_special`` is false)."""
        arguments.text(text, "text")
        ids = [self.cls_id] if add_special else []
        for segment, is_special in split_specials(self._special_pattern, text):
            if is_special:
                ids.append(self._ids[segment])
                continue
            normalized = normalize(segment, lowercase=self.lowercase)
            for word in basic_tokenize(normalized):
                ids.extend(self._word_ids(word))
        if add_special:
            ids.append(self.sep_id)
        return ids

    def tokenize(self, text: str) -> list[str]:
        """The vocabulary strings of :meth:`encode`, ``[CLS]`` and ``[SEP]`` included."""
        return self.tokens(self.encode(text))

    def tokens(self, ids: Iterable[int]) -> list[str]:
        """The vocabulary string of each id, e.g. ``['[CLS]', 'the', 'animal', ...]``."""
        return [self._vocab[i] for i in checked_ids(ids, len(self._vocab))]

    def vocab_strings(self, ids: Iterable[int]) -> list[str]:
        """:meth:`tokens`, under the name every tokenizer of a model answers to."""
        return self.tokens(ids)

    def _pieces(self, word: str) -> tuple[int, ...]:
        """Greedy longest-match-first WordPiece; the whole word is [UNK] if any part fails."""
        if len(word) > self.max_chars_per_word:
            return (self.unk_id,)
        vocab = self._ids
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found: int | None = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return (self.unk_id,)
            ids.append(found)
            start = end
        return tuple(ids)
