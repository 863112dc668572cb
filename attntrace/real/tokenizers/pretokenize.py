"""Byte-level BPE pre-tokenizers: text cut into the pieces BPE merges within, no regex package.

:mod:`re` has no ``\\p{L}``, so each regex of the reference is written as a scanner over
Unicode categories. SmolLM2's (llama.cpp's "smollm") splits off every number character
(``\\p{N}``) on its own, then splits each piece by GPT-2's regex::

    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+

GPT-2's alone is "gpt-2"; Llama 3's and Qwen 2's differ, and
:mod:`attntrace.real.tokenizers.bpe_pre` names them all by a GGUF's ``tokenizer.ggml.pre``.
The pieces are tested against the reference's in ``tests/golden/real/tokens.json`` and
against ``tokenizers`` itself in ``tests/real/test_gguf_vocab*.py``.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_right

from attntrace.real.text import parse_ranges

__all__ = [
    "LETTER",
    "NUMBER",
    "OTHER",
    "SPACE",
    "char_classes",
    "gpt2_split",
    "pre_tokenize",
    "split_digits",
]

# Unicode White_Space, which is what ``\s`` matches in the reference's regex engine
# (Oniguruma). Unlike str.isspace(), it leaves out the separators \x1c-\x1f.
_WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

# Character classes of the scanner.
LETTER, NUMBER, SPACE, OTHER = 0, 1, 2, 3
_LETTER, _NUMBER, _SPACE, _OTHER = LETTER, NUMBER, SPACE, OTHER


# Letters (L) and numbers (N) newer than Python's Unicode 14, which the reference's regex
# engine and Rust's char tables know (Unicode 16-17); unicodedata calls them unassigned.
# Measured against tokenizers 0.23 code point by code point.
_NEWER_LETTERS_AND_NUMBERS = """
L 1C89-1C8A A7CB-A7CD A7DA-A7DC 105C0-105F3 10D4A-10D65 10D6F-10D85 10EC2-10EC4 1123F-11240
L 11380-11389 1138B 1138E 11390-113B5 113B7 113D1 113D3 11BC0-11BE0 11F02 11F04-11F10
L 11F12-11F33 1342F 13441-13446 13460-143FA 16100-1611D 16D40-16D6C 18CFF 1B132 1B155
L 1DF25-1DF2A 1E030-1E06D 1E4D0-1E4EB 1E5D0-1E5ED 1E5F0 2B739 2EBF0-2EE5D 31350-323AF
N 10D40-10D49 116D0-116E3 11BF0-11BF9 11DE0-11DE9 11F50-11F59 16130-16139 16D70-16D79
N 16FF4-16FF6 1CCF0-1CCF9 1D2C0-1D2D3 1E4F0-1E4F9 1E5F1-1E5FA
"""


_NEWER_STARTS, _NEWER = parse_ranges(_NEWER_LETTERS_AND_NUMBERS.strip())


def _char_class(char: str) -> int:
    if char in _WHITE_SPACE:
        return _SPACE
    category = unicodedata.category(char)
    if category == "Cn":
        code = ord(char)
        at = bisect_right(_NEWER_STARTS, code) - 1
        if at >= 0 and code <= _NEWER[at][1]:
            category = _NEWER[at][2]
    major = category[0]
    if major == "L":
        return _LETTER
    if major == "N":
        return _NUMBER
    return _OTHER


# Memo of each character's class: text reuses few distinct characters.
_CLASS_OF: dict[str, int] = {chr(c): _char_class(chr(c)) for c in range(128)}


def char_classes(text: str) -> list[int]:
    """Each character's class: :data:`LETTER` (``\\p{L}``), :data:`NUMBER` (``\\p{N}``),
    :data:`SPACE` (``\\s``) or :data:`OTHER`, as the reference's regex engine sees it."""
    memo = _CLASS_OF
    out: list[int] = []
    for char in text:
        kind = memo.get(char)
        if kind is None:
            kind = memo[char] = _char_class(char)
        out.append(kind)
    return out


def split_digits(text: str) -> list[str]:
    """Split off every number character (``\\p{N}``) as a piece of its own.

    ``"In 2024!"`` -> ``['In ', '2', '0', '2', '4', '!']``: SmolLM2 reads digits one by one.
    """
    classes = char_classes(text)
    if _NUMBER not in classes:
        return [text] if text else []
    pieces: list[str] = []
    start = 0
    for i, kind in enumerate(classes):
        if kind == _NUMBER:
            if start < i:
                pieces.append(text[start:i])
            pieces.append(text[i])
            start = i + 1
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def gpt2_split(text: str) -> list[str]:
    """Split ``text`` as GPT-2's pre-tokenization regex does (see the module docstring).

    A space sticks to the word, number or symbol run after it (``' the'``); a run of
    whitespace gives all but its last character when a word follows, so ``"a  b"`` ->
    ``['a', ' ', ' b']``; English contractions (lower case only) are pieces of their own.
    """
    classes = char_classes(text)
    n = len(text)
    pieces: list[str] = []
    i = 0
    while i < n:
        char = text[i]
        if char == "'" and i + 1 < n:
            if text[i + 1] in "stmd":
                pieces.append(text[i : i + 2])
                i += 2
                continue
            if text[i + 1 : i + 3] in ("re", "ve", "ll"):
                pieces.append(text[i : i + 3])
                i += 3
                continue
        start = i
        kind = classes[i]
        if char == " " and i + 1 < n and classes[i + 1] != _SPACE:
            # " ?\p{L}+", " ?\p{N}+" and " ?[^\s\p{L}\p{N}]+": the space joins the run.
            i += 1
            kind = classes[i]
        j = i + 1
        while j < n and classes[j] == kind:
            j += 1
        if kind == _SPACE and j < n and j - i >= 2:
            # "\s+(?!\S)": leave the last whitespace character to the word that follows.
            j -= 1
        pieces.append(text[start:j])
        i = j
    return pieces


def pre_tokenize(text: str) -> list[str]:
    """SmolLM2's pre-tokenization: :func:`split_digits`, then :func:`gpt2_split` on each piece."""
    return [piece for part in split_digits(text) for piece in gpt2_split(part)]
