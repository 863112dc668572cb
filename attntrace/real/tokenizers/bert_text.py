"""BERT's text clean-up and first split, as Hugging Face's BertNormalizer and BertPreTokenizer.

Clean the text, pad CJK ideographs with spaces, strip accents and lowercase (normalize),
then split on whitespace and punctuation (basic_tokenize); WordPiece then cuts each word.

The reference classifies characters with the ``unicode_categories`` crate, whose tables
are older than Python's :mod:`unicodedata`; ``_REFERENCE_CATEGORIES`` lists the ranges
where the two disagree, so that newer characters are treated as the reference treats them.
(One difference is left: Python's NFD splits U+11938 DIVES AKURU VOWEL SIGN O in two, the
reference keeps it whole; neither form is in any BERT vocabulary, so the ids agree.)
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

from attntrace.real.text import parse_ranges

__all__ = ["basic_tokenize", "is_chinese_char", "is_punctuation", "normalize"]


# Where the reference's character tables (older than Python's Unicode 14) disagree with
# :mod:`unicodedata`, measured against tokenizers 0.23 code point by code point: the
# category the reference sees. "Cn" (unassigned there) means neither dropped as a format
# character (Cf), stripped as an accent (Mn) nor split off as punctuation (P*).
_REFERENCE_CATEGORIES = """
Cn 061D 07FD 0890-0891 0898-089F 08CA-08E2 09FD-09FE 0A76 0AFA-0AFF 0B55 0C04 0C3C 0C77 0C84
Cn 0D00 0D3B-0D3C 0D81 0EBA 180F 1885-1886 1ABF-1ACE 1B7D-1B7E 1DF6-1DFB 2E43-2E4F 2E52-2E5D
Cn A82C A8C5 A8FF A9BD 10D24-10D27 10EAB-10EAD 10F46-10F50 10F55-10F59 10F82-10F89 11070
Cn 11073-11074 110C2 110CD 111CF 1123E 1133B 11438-1143F 11442-11444 11446 1144B-1144F
Cn 1145A-1145B 1145D-1145E 11660-1166C 116B9 1182F-11837 11839-1183B 1193B-1193C 1193E
Cn 11943-11946 119D4-119D7 119DA-119DB 119E0 119E2 11A01-11A0A 11A33-11A38 11A3B-11A47
Cn 11A51-11A56 11A59-11A5B 11A8A-11A96 11A98-11A9C 11A9E-11AA2 11C30-11C36 11C38-11C3D 11C3F
Cn 11C41-11C45 11C70-11C71 11C92-11CA7 11CAA-11CB0 11CB2-11CB3 11CB5-11CB6 11D31-11D36 11D3A
Cn 11D3C-11D3D 11D3F-11D45 11D47 11D90-11D91 11D95 11D97 11EF3-11EF4 11EF7-11EF8 11FFF
Cn 12FF1-12FF2 13430-13438 16E97-16E9A 16F4F 16FE2 16FE4 1CF00-1CF2D 1CF30-1CF46 1E000-1E006
Cn 1E008-1E018 1E01B-1E021 1E023-1E024 1E026-1E02A 1E130-1E136 1E2AE 1E2EC-1E2EF 1E944-1E94A
Cn 1E95E-1E95F
Po 166D 111C9
Mn 1734
"""


_OVERRIDE_STARTS, _OVERRIDES = parse_ranges(_REFERENCE_CATEGORIES.strip())

# Capital letters newer than Unicode 14 whose lowercase the reference (Rust's std) knows.
_NEWER_LOWERCASE: dict[str, str] = {
    "\u1c89": "\u1c8a",
    "\ua7cb": "\u0264",
    "\ua7cc": "\ua7cd",
    "\ua7ce": "\ua7cf",
    "\ua7d2": "\ua7d3",
    "\ua7d4": "\ua7d5",
    "\ua7da": "\ua7db",
    "\ua7dc": "\u019b",
    **{chr(c): chr(c + 0x20) for c in range(0x10D50, 0x10D66)},
    **{chr(c): chr(c + 0x1B) for c in range(0x16EA0, 0x16EB9)},
}

# Ideograph blocks BERT pads with spaces; 0x2B920 (not 0x2B820) is the reference's bound.
_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)

# Unicode White_Space characters that are not control characters: each becomes one space.
# (Tab, newline and carriage return are control characters kept as whitespace; other
# controls such as \x0b, \x0c and \x85 are dropped by the clean-up, as in the reference.)
_WHITESPACE = frozenset(
    "\t\n\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

_ASCII_PUNCTUATION = frozenset(chr(c) for c in (*range(33, 48), *range(58, 65), *range(91, 97)))
_ASCII_PUNCTUATION |= frozenset(chr(c) for c in range(123, 127))
_ASCII_CONTROLS = frozenset(chr(c) for c in (*range(32), 127))
# An ASCII chunk (no spaces left) cut into words: each punctuation mark alone, runs between.
_ASCII_WORDS = re.compile(r"[!-/:-@\[-`{-~]|[^!-/:-@\[-`{-~]+")


def _category(char: str) -> str:
    """The general category of ``char`` as the reference's tables give it."""
    code = ord(char)
    at = bisect_right(_OVERRIDE_STARTS, code) - 1
    if at >= 0 and code <= _OVERRIDES[at][1]:
        return _OVERRIDES[at][2]
    return unicodedata.category(char)


def _lower(char: str) -> str:
    return _NEWER_LOWERCASE.get(char) or char.lower()


def is_chinese_char(char: str) -> bool:
    """Whether BERT pads ``char`` with spaces (a CJK ideograph, one token each)."""
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK_RANGES)


def is_punctuation(char: str) -> bool:
    """BERT's punctuation: ASCII 33-47, 58-64, 91-96, 123-126 or a Unicode ``P*`` category."""
    return char in _ASCII_PUNCTUATION or _category(char)[0] == "P"


def _is_dropped(char: str) -> bool:
    """Whether the clean-up removes ``char``: NUL, U+FFFD and control/format/private chars."""
    if char in "\t\n\r":
        return False
    if char in "\x00\ufffd":
        return True
    return _category(char) in ("Cc", "Cf", "Co", "Cs")


# What each character becomes, memoized (text reuses few distinct characters; the bound
# keeps hostile text from growing the memos without end).
_MEMO_LIMIT = 1 << 16
_CLEANED: dict[str, str] = {}
_FOLDED: dict[str, str] = {}


def _clean(char: str) -> str:
    """The clean-up of one character: dropped, a space, padded (CJK) or kept."""
    if _is_dropped(char):
        out = ""
    elif char in _WHITESPACE:
        out = " "
    elif is_chinese_char(char):
        out = f" {char} "
    else:
        out = char
    if len(_CLEANED) < _MEMO_LIMIT:
        _CLEANED[char] = out
    return out


def _fold(char: str) -> str:
    """One decomposed character without accents, lowercased."""
    out = "" if _category(char) == "Mn" else _lower(char)
    if len(_FOLDED) < _MEMO_LIMIT:
        _FOLDED[char] = out
    return out


def normalize(text: str, *, lowercase: bool = True) -> str:
    """BERT's normalizer: clean, space out CJK ideographs, strip accents and lowercase.

    Accents are stripped (NFD, then nonspacing marks dropped) when ``lowercase`` is true, as
    for uncased models. Lowercasing is character by character, as in the reference: a final
    capital sigma becomes σ, not ς.
    """
    if text.isascii():
        chars = [
            " " if c in _WHITESPACE else c
            for c in text
            if c not in _ASCII_CONTROLS or c in "\t\n\r"
        ]
        cleaned = "".join(chars)
        return cleaned.lower() if lowercase else cleaned
    memo = _CLEANED
    cleaned = "".join([memo[c] if c in memo else _clean(c) for c in text])
    if not lowercase:
        return cleaned
    decomposed = unicodedata.normalize("NFD", cleaned)
    folded = _FOLDED
    return "".join([folded[c] if c in folded else _fold(c) for c in decomposed])


def basic_tokenize(normalized: str) -> list[str]:
    """Split normalized text into words: on whitespace, and every punctuation mark alone."""
    words: list[str] = []
    for chunk in normalized.split(" "):
        if not chunk:
            continue
        if chunk.isalnum():
            words.append(chunk)
            continue
        if chunk.isascii():
            words.extend(_ASCII_WORDS.findall(chunk))
            continue
        start = 0
        for i, char in enumerate(chunk):
            if char in _WHITESPACE:
                if start < i:
                    words.append(chunk[start:i])
                start = i + 1
            elif is_punctuation(char):
                if start < i:
                    words.append(chunk[start:i])
                words.append(char)
                start = i + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words
