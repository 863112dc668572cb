"""The byte-level BPE pre-tokenizers by name: a GGUF file's ``tokenizer.ggml.pre``.

llama.cpp's converter names the pre-tokenizer of a GPT-2-style vocabulary by the hash
of what it does to a test text (``convert_hf_to_gguf.py``'s ``get_vocab_base_pre``), and
``src/llama-vocab.cpp`` gives each name its regexes. The names of the families attntrace
traces, and a few that share their regexes, map here onto four scanners:

- **llama3** (Llama 3, 3.1, 3.2; "llama-bpe"), Hugging Face's regex::

      (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}
      | ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+

  with ``ignore_merges`` (a piece that is a token is taken whole, unmerged);
- **qwen2** (Qwen 2, 2.5, 3): the same with ``\\p{N}`` one at a time, merges always;
- **gpt-2** (GPT-2, Phi-2, MPT, OLMo): GPT-2's regex
  (:func:`attntrace.real.tokenizers.pretokenize.gpt2_split`);
- **smollm** (SmolLM, StarCoder, Refact, Command-R): every digit alone, then GPT-2's;
- **default** (a converter that knew no better): llama.cpp's own four regexes, each
  cutting the pieces the one before left (punctuation runs, GPT-2's, number runs, then
  ASCII digits in threes). No Hugging Face tokenizer does this; it is llama.cpp's.

Each scanner is a loop over the characters' classes, not a regex: :mod:`re` has no
``\\p{L}``, and the third-party ``regex`` package is not a dependency.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from attntrace.real.tokenizers.pretokenize import (
    LETTER,
    NUMBER,
    OTHER,
    SPACE,
    char_classes,
    gpt2_split,
    pre_tokenize,
)

__all__ = ["PRE_TOKENIZERS", "PreTokenizer", "default_split", "llama3_split", "qwen2_split"]

# The contractions' second letters, any case as (?i) matches them: U+017F (long s) folds to s.
_ONE = frozenset("sStTmMdD\u017f")
_TWO = frozenset(a + b for a in "rR" for b in "eE") | frozenset(a + b for a in "vV" for b in "eE")
_TWO |= frozenset(a + b for a in "lL" for b in "lL")
_NEWLINES = "\r\n"


def _contraction(text: str, i: int) -> int:
    """The length of a contraction (``'s``, ``'LL``...) at ``i``, or 0."""
    if text[i] != "'" or i + 1 >= len(text):
        return 0
    if text[i + 1 : i + 3] in _TWO:
        return 3
    return 2 if text[i + 1] in _ONE else 0


def _run(classes: list[int], start: int, kind: int) -> int:
    """The end of the run of ``kind`` characters from ``start``."""
    end = start
    n = len(classes)
    while end < n and classes[end] == kind:
        end += 1
    return end


def _whitespace_end(text: str, i: int, end: int) -> int:
    """Where a whitespace run ``text[i:end]`` is cut: ``\\s*[\\r\\n]+`` (through its last
    newline), else ``\\s+(?!\\S)`` (all but its last character before a non-space), else
    ``\\s+``."""
    for q in range(end - 1, i - 1, -1):
        if text[q] in _NEWLINES:
            return q + 1
    if end == len(text) or end - i == 1:
        return end
    return end - 1


def _split_llama3(text: str, max_digits: int) -> list[str]:
    classes = char_classes(text)
    n = len(text)
    pieces: list[str] = []
    i = 0
    while i < n:
        kind = classes[i]
        size = _contraction(text, i)
        if size:
            end = i + size
        elif kind == LETTER:
            end = _run(classes, i, LETTER)
        elif kind != NUMBER and text[i] not in _NEWLINES and i + 1 < n and classes[i + 1] == LETTER:
            end = _run(classes, i + 1, LETTER)  # [^\r\n\p{L}\p{N}]?\p{L}+
        elif kind == NUMBER:
            end = min(_run(classes, i, NUMBER), i + max_digits)
        elif kind == OTHER or (text[i] == " " and i + 1 < n and classes[i + 1] == OTHER):
            end = _run(classes, i + 1 if kind == SPACE else i, OTHER)
            while end < n and text[end] in _NEWLINES:  # [\r\n]*
                end += 1
        else:
            end = _whitespace_end(text, i, _run(classes, i, SPACE))
        pieces.append(text[i:end])
        i = end
    return pieces


def llama3_split(text: str) -> list[str]:
    """Llama 3's pre-tokenization (the module docstring's regex): a letter run takes one
    non-letter before it (``' Hello'``, ``'(normal'``), numbers go in threes, a symbol run
    takes the newlines after it, and a whitespace run ends at its last newline."""
    return _split_llama3(text, 3)


def qwen2_split(text: str) -> list[str]:
    """Qwen 2's pre-tokenization: Llama 3's, numbers one at a time."""
    return _split_llama3(text, 1)


def _cut(pieces: list[str], matches: Callable[[str], list[tuple[int, int]]]) -> list[str]:
    """llama.cpp's ``unicode_regex_split`` step: each piece cut into the spans a regex
    matches and the gaps between them, both kept."""
    out: list[str] = []
    for piece in pieces:
        start = 0
        for low, high in matches(piece):
            if start < low:
                out.append(piece[start:low])
            out.append(piece[low:high])
            start = high
        if start < len(piece):
            out.append(piece[start:])
    return out


def _runs(piece: str, inside: Callable[[str], bool]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(piece):
        if inside(piece[i]):
            j = i + 1
            while j < len(piece) and inside(piece[j]):
                j += 1
            spans.append((i, j))
            i = j
        else:
            i += 1
    return spans


def _is_punctuation(char: str) -> bool:  # [\p{P}\$\+<=>\^~\|]
    return char in "$+<=>^~|" or unicodedata.category(char)[0] == "P"


def _is_number(char: str) -> bool:  # \p{N}
    return char_classes(char)[0] == NUMBER


def _ascii_triples(piece: str) -> list[tuple[int, int]]:  # [0-9][0-9][0-9]
    spans: list[tuple[int, int]] = []
    i = 0
    while i + 3 <= len(piece):
        if all("0" <= c <= "9" for c in piece[i : i + 3]):
            spans.append((i, i + 3))
            i += 3
        else:
            i += 1
    return spans


def default_split(text: str) -> list[str]:
    """llama.cpp's "default" BPE pre-tokenization: four regexes in turn, each cutting the
    pieces the last one left."""
    pieces = _cut([text] if text else [], lambda p: _runs(p, _is_punctuation))
    pieces = [part for piece in pieces for part in gpt2_split(piece)]
    pieces = _cut(pieces, lambda p: _runs(p, _is_number))
    return _cut(pieces, _ascii_triples)


@dataclass(frozen=True)
class PreTokenizer:
    """A named pre-tokenizer: how text is cut, and whether a piece that is already a token
    is taken whole before any merge (Hugging Face's BPE ``ignore_merges``)."""

    name: str
    split: Callable[[str], list[str]]
    ignore_merges: bool = False


_LLAMA3 = PreTokenizer("llama3", llama3_split, ignore_merges=True)
_QWEN2 = PreTokenizer("qwen2", qwen2_split)
_GPT2 = PreTokenizer("gpt-2", gpt2_split)
_SMOLLM = PreTokenizer("smollm", pre_tokenize)
_DEFAULT = PreTokenizer("default", default_split)

#: ``tokenizer.ggml.pre`` -> pre-tokenizer, as llama.cpp's ``llama_vocab::impl::load``
#: maps the names (llama-vocab.cpp); dbrx and smaug-bpe share Llama 3's regex, not its
#: ``ignore_merges``.
PRE_TOKENIZERS: dict[str, PreTokenizer] = {
    **dict.fromkeys(("llama3", "llama-v3", "llama-bpe", "falcon3"), _LLAMA3),
    **dict.fromkeys(("dbrx", "smaug-bpe"), PreTokenizer("llama3", llama3_split)),
    **dict.fromkeys(("qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"), _QWEN2),
    **dict.fromkeys(("gpt-2", "phi-2", "mpt", "olmo"), _GPT2),
    **dict.fromkeys(("smollm", "starcoder", "refact", "command-r", "codeshell"), _SMOLLM),
    "default": _DEFAULT,
}
