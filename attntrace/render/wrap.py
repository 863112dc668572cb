"""Text wrapped at word boundaries, never inside a shape such as ``[3 × 2]``.

Rich wraps at every space, so at 40 columns a title could end ``[3 ×`` and the next line
start ``2]``: two halves of one fact. :class:`Wrapped` breaks lines only at spaces
outside the units that read as one word (a bracketed shape), keeps the styles of the
text, and folds only a single word wider than the whole line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text

# What a line is never broken inside: a shape, [3 × 2], [n × d_k], a short aside,
# (position 2), (K/V head 1), and a size with its unit, 3.50 GiB, 512 B. (A vector,
# [0.5, 0.25, …], breaks after its commas: kept whole it would be folded mid-number.)
UNBROKEN = re.compile(
    r"\[[^\[\]\s]+ × [^\[\]\s]+\]|\([^()\n]{1,20}?\)|\d[\d,.]* (?:[KMGTPEZY]iB|B)\b"
)


@dataclass(frozen=True)
class Wrapped:
    """``text`` wrapped to the width it is given (its own line breaks kept)."""

    text: Text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from wrap(self.text, options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        lines = self.text.plain.split("\n")
        widest_word = max((cell_len(word) for line in lines for word in _words(line)), default=0)
        widest_line = max(cell_len(line) for line in lines)
        return Measurement(min(widest_word, options.max_width), widest_line)


def wrap(text: Text, width: int) -> Iterator[Text]:
    """The lines of ``text`` at ``width`` cells: each of its lines broken at spaces
    outside :data:`UNBROKEN`, trailing spaces dropped."""
    width = max(1, width)
    for line in text.split("\n", allow_blank=True):
        yield from _wrap_line(line, width)


def _wrap_line(line: Text, width: int) -> Iterator[Text]:
    plain = line.plain
    if cell_len(plain) <= width:
        yield line
        return
    offsets: list[int] = []
    start, has_word = 0, False  # where the current output line starts; a word on it yet
    for word_start, word_end in _word_spans(plain):
        if has_word and cell_len(plain[start:word_end]) > width:
            offsets.append(word_start)
            start = word_start
        has_word = True
    for piece in line.divide(offsets):
        piece.rstrip()
        yield from _folded(piece, width)


def _folded(piece: Text, width: int) -> Iterator[Text]:
    """A line still too wide holds one word wider than the line: cut it by cells."""
    plain = piece.plain
    if cell_len(plain) <= width:
        yield piece
        return
    cuts, used = [], 0
    for index, ch in enumerate(plain):
        size = cell_len(ch)
        if used + size > width and used:
            cuts.append(index)
            used = 0
        used += size
    yield from piece.divide(cuts)


def _word_spans(plain: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each word: a run without spaces, a shape counting as one."""
    kept = [(m.start(), m.end()) for m in UNBROKEN.finditer(plain)]
    index, length = 0, len(plain)
    while index < length:
        while index < length and plain[index] == " ":
            index += 1
        if index >= length:
            return
        start = index
        while index < length and (plain[index] != " " or _inside(index, kept)):
            index += 1
        yield start, index


def _inside(index: int, spans: list[tuple[int, int]]) -> bool:
    return any(start < index < end for start, end in spans)


def _words(line: str) -> Iterator[str]:
    for start, end in _word_spans(line):
        yield line[start:end]
