"""Small text helpers the tokenizers and the file readers share.

Each is here once because two modules need exactly the same rule: how a name from a
hostile file is shown in a one-line message, how a table of Unicode ranges is read, how
literal special tokens cut a text, which token ids are real, where two tensors'
bytes overlap, and whether a cached table is a list of strings (or integers).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable

from attntrace.errors import InputError
from attntrace.visible import visible


def shown(name: str) -> str:
    """A weight file's key as a one-line message names it: made visible, a hostile
    file's megabyte-long key cut (:func:`attntrace.visible.visible`)."""
    return visible(name, 80)


def parse_ranges(table: str) -> tuple[list[int], list[tuple[int, int, str]]]:
    """Lines ``KIND 41-5A 61`` (hex code points, single or ranges) as sorted rows
    ``(low, high, kind)``, with their lows for bisecting."""
    rows: list[tuple[int, int, str]] = []
    for line in table.split("\n"):
        kind, *spans = line.split()
        for span in spans:
            low, _, high = span.partition("-")
            rows.append((int(low, 16), int(high or low, 16), kind))
    rows.sort()
    return [row[0] for row in rows], rows


def special_pattern(tokens: Iterable[str]) -> re.Pattern[str] | None:
    """A pattern matching any of ``tokens`` literally, longest first (so that a special
    token that starts another does not cut it short); None for no tokens."""
    specials = sorted({t for t in tokens if t}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, specials))) if specials else None


def split_specials(pattern: re.Pattern[str] | None, text: str) -> list[tuple[str, bool]]:
    """Cut ``text`` at literal special tokens (leftmost, then longest, first): pieces and
    whether each is a special token. Empty text gives no pieces."""
    if pattern is None:
        return [(text, False)] if text else []
    segments: list[tuple[str, bool]] = []
    start = 0
    for match in pattern.finditer(text):
        if start < match.start():
            segments.append((text[start : match.start()], False))
        segments.append((match.group(), True))
        start = match.end()
    if start < len(text):
        segments.append((text[start:], False))
    return segments


def checked_ids(ids: Iterable[int], vocab_size: int) -> list[int]:
    """``ids`` as a list of ints (numpy integers welcome), each from 0 to ``vocab_size - 1``."""
    out: list[int] = []
    for position, token_id in enumerate(ids):
        try:
            index = operator.index(token_id)
        except TypeError:
            index = -1
        if not 0 <= index < vocab_size:
            raise InputError(
                "unknown token id",
                field=f"ids[{position}]",
                expected=f"an integer from 0 to {vocab_size - 1}",
                found=repr(token_id),
            )
        out.append(index)
    return out


def first_overlap(
    spans: Iterable[tuple[int, int, str]],
) -> tuple[str, int, str, int] | None:
    """The first tensor whose bytes begin before the previous one's end, as (its name, its
    begin, the previous name, the previous end); None if none do. ``spans`` are
    (begin, end, name) sorted by begin; an empty tensor occupies no bytes."""
    previous: tuple[str, int] | None = None
    for begin, end, name in spans:
        if begin == end:
            continue
        if previous is not None and begin < previous[1]:
            return name, begin, previous[0], previous[1]
        previous = (name, end)
    return None


def strings(value: object) -> list[str] | None:
    """``value`` if it is a list of strings (checked in C: a cache file may be anything)."""
    return value if isinstance(value, list) and set(map(type, value)) <= {str} else None


def integers(value: object) -> list[int] | None:
    """``value`` if it is a list of integers (not booleans)."""
    return value if isinstance(value, list) and set(map(type, value)) <= {int} else None
