"""Lines broken where a reader expects them: between words or terms, never inside one.

Rich wraps at every space, so at 40 columns a title could end ``[3 ×`` and the next line
start ``2]``, and a header ``3 K/V`` over ``heads``: two halves of one fact. Here:

- :class:`Wrapped`: text broken only at spaces outside the units that read as one word
  (a bracketed shape), its styles kept; only a single word wider than the whole line is
  folded.
- :class:`Facts` and :class:`Terms`: a line of terms (``name · fact · fact``, a formula's
  ``× 32 layers``) broken only between its terms, by :func:`between_terms`. A header's
  facts simply go on on the next line; a formula's broken line ends with its ``·`` and
  the next is indented, and a term too wide for a line of its own breaks between words.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

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
INDENT = "  "  # of a continued line of terms


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


@dataclass(frozen=True)
class Term:
    """One term of a line of terms, in the forms it takes there."""

    joined: Text  # after the term before it, on the same line: ' · 3 tokens'
    alone: Text  # starting a line: '3 tokens', or indented, '  × 32 layers'
    mark: Text = field(default_factory=Text)  # ends a line broken before it: '·', or nothing
    starts: bool = False  # starts a line even where it would fit after the one before


def between_terms(first: Text, terms: Sequence[Term], width: int) -> list[Text]:
    """``first``, then ``terms``, as many on a line as fit ``width`` with room for the
    mark that ends a line broken after them; a line is never broken while it is blank."""
    lines = [first.copy()]
    for index, term in enumerate(terms):
        after = terms[index + 1].mark.plain if index + 1 < len(terms) else ""
        fits = cell_len(lines[-1].plain + term.joined.plain + after) <= width
        if not term.starts and (fits or not lines[-1].plain.strip()):
            lines[-1].append(term.joined)
        else:
            lines[-1].append(term.mark)
            lines.append(term.alone.copy())
    return lines


@dataclass(frozen=True)
class Facts:
    """``name · fact · fact``, wrapped between facts, never inside one (``3 K/V heads``
    split over two lines reads as nonsense)."""

    name: str
    facts: tuple[str, ...]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        facts = [
            Term(Text(" · " + fact, style="dim"), Text(fact, style="dim")) for fact in self.facts
        ]
        yield from between_terms(Text(self.name, style="bold magenta"), facts, options.max_width)


@dataclass(frozen=True)
class Terms:
    """Terms, each after its joiner, as many on a line as fit. A line broken after a
    ``" · "`` ends with the ``·``; a continued line is indented and starts with its next
    term whole (a term too wide for a line of its own is broken between its words)."""

    terms: tuple[tuple[str, Text], ...]  # (joiner, term); the first joiner is not shown

    def lines(self, width: int) -> list[Text]:
        pieces: list[tuple[str, Text, bool]] = []  # (joiner, term or word, starts a line)
        for index, (joiner, term) in enumerate(self.terms):
            # on a line of its own, a term may still have to end with the next one's '·'
            following = self.terms[index + 1][0] if index + 1 < len(self.terms) else ""
            if cell_len(INDENT + term.plain + following.rstrip()) <= width:
                pieces.append((joiner, term, False))
                continue
            # too wide: on lines of its own, broken between words, an operator kept with
            # what follows it ('× 33,581,…,727', then 'tokens')
            words = re.split(r"(?<=\S\S) ", term.plain)
            pieces += [
                (joiner if i == 0 else " ", Text(word, style=term.style), i == 0)
                for i, word in enumerate(words)
            ]
        rest = [
            Term(
                Text.assemble(joiner, term, style=term.style),
                Text.assemble(INDENT, term, style=term.style),
                Text(joiner.rstrip(), style=term.style),
                starts,
            )
            for joiner, term, starts in pieces[1:]
        ]
        return between_terms(pieces[0][1], rest, width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.lines(options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max(cell_len(line.plain) for line in self.lines(options.max_width))
        return Measurement(min(widest, options.max_width), min(widest, options.max_width))


# Where a term too wide for its line may be broken: after a vector's commas.
_TERM_BREAK = re.compile(r"(?<=,) ")


@dataclass(frozen=True)
class Hanging:
    """``lead`` then ``terms`` (each with its joiner: ``' = 0.15 × [..]'``), as many on
    a line as fit; a continued line starts under the first term, so that its ``=``
    stands under the one above, and nothing starts a line at the left edge. A term too
    wide for a line of its own breaks after a comma of its vector, and goes on under the
    vector's first entry: a number is never cut, a vector never left as a fragment."""

    lead: Text
    terms: tuple[Text, ...]

    def lines(self, width: int) -> list[Text]:
        width = max(1, width)
        hang = cell_len(self.lead.plain)
        if hang > width // 2:  # a long lead: continue four cells in, as a paragraph would
            hang = min(4, width // 4)
        lines, broken = [self.lead.copy()], False  # broken: the last term was
        for term in self.terms:
            # by the line before it, or under the first term, or four cells in: whole
            # if it fits, else broken in its vector where every piece then fits
            joined = None if broken else Text.assemble(lines[-1], term)
            starts = [Text.assemble(" " * hang, term), Text.assemble(" " * min(4, hang), term)]
            tries = [
                (keep, _fitted(whole, width, at))
                for keep, whole, at in (
                    (True, joined, len(lines[-1].plain)),  # never in the terms before
                    (False, starts[0], 0),
                    (False, starts[1], 0),
                )
                if whole is not None
            ]
            fitting = [
                (keep, pieces)
                for keep, pieces in tries
                if all(cell_len(piece.plain) <= width for piece in pieces)
            ]
            # a term whole on one line first, by the line before it or under it
            whole_first = sorted(fitting, key=lambda tried: len(tried[1]) > 1)
            keep, pieces = whole_first[0] if whole_first else tries[-1]
            lines[-1:] = pieces if keep else [lines[-1], *pieces]
            broken = len(pieces) > 1
        out: list[Text] = []
        for line in lines:
            line.rstrip()
            out += _folded(line, width)
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.lines(options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = cell_len((self.lead + Text("").join(self.terms)).plain)
        return Measurement(min(widest, options.max_width), min(widest, options.max_width))


def _fitted(line: Text, width: int, after: int) -> list[Text]:
    """``line`` whole where it fits ``width``, else broken in a vector past ``after``."""
    return [line] if cell_len(line.plain) <= width else _broken_vector(line, width, after)


def _broken_vector(line: Text, width: int, after: int = 0) -> list[Text]:
    """``line`` broken after the commas of its vectors (those past ``after``), continued
    under the entry after the last ``[`` before the break, in as few lines as fit
    ``width`` and as even as they can be (no line left with one entry)."""
    pieces = _greedy(line, width, width // 2, after)
    if any(cell_len(piece.plain) > width for piece in pieces):
        return pieces  # a part with no comma to break at: folded by the caller
    for narrower in range(width - 1, 0, -1):
        tried = _greedy(line, narrower, width // 2, after)
        if len(tried) > len(pieces) or any(cell_len(t.plain) > narrower for t in tried):
            break
        pieces = tried
    return pieces


def _greedy(line: Text, width: int, deepest: int, after: int = 0) -> list[Text]:
    """``line`` broken after the last comma past ``after`` that fits, then the next, and
    so on (a continued line indented at most ``deepest`` cells)."""
    plain = line.plain
    breaks = [m.end() for m in _TERM_BREAK.finditer(plain) if m.end() > after]
    pieces: list[Text] = []
    start, indent = 0, 0
    while cell_len(" " * indent + plain[start:]) > width:
        fitting = [b for b in breaks if b > start and indent + cell_len(plain[start:b]) <= width]
        if not fitting:
            break
        end = fitting[-1]
        piece = line[start:end]
        piece.rstrip()
        pieces.append(Text.assemble(" " * indent, piece))
        opening = plain.rfind("[", start, end)
        if opening >= 0:  # the next piece goes on under this vector's first entry
            indent = min(indent + cell_len(plain[start:opening]) + 1, deepest)
        start = end
    pieces.append(Text.assemble(" " * indent, line[start:]))
    return pieces


@dataclass(frozen=True)
class Hung:
    """``text`` broken between words (as :class:`Wrapped`), each continued line
    ``indent`` cells in: a heading's second line reads as its continuation, not as a
    fragment at the left edge."""

    text: Text
    indent: int = 2

    def lines(self, width: int) -> list[Text]:
        width = max(1, width)
        first = next(iter(wrap(self.text, width)), Text())
        plain = self.text.plain
        start = len(first.plain)
        while start < len(plain) and plain[start] == " ":
            start += 1
        if start >= len(plain):
            return [first]
        inset = min(self.indent, width // 2)
        rest = wrap(self.text[start:], width - inset)
        return [first, *(Text.assemble(" " * inset, line) for line in rest)]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.lines(options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Wrapped(self.text).__rich_measure__(console, options)
