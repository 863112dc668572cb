"""Text from a file, a saved trace or an argument, made safe to show on a terminal.

A token, a model's name or a sentence is the user's data: ``"\\x1b[2J"`` as a token would
clear the screen when a table shows it, ``"\\u202e"`` would turn the rest of the line
around, a zero-width space would make two tokens look the same. So every such string
is shown through :func:`visible`, which writes each character a terminal would act on,
or would not show, as its escape (``\\x1b``, ``\\u202e``, ``\\u200b``; a tab, a newline
and a carriage return as ``\\t``, ``\\n``, ``\\r``): control
characters (C0, DEL, C1), format characters (bidirectional overrides and isolates,
zero-width ones), line and paragraph separators, spaces other than the plain space,
private-use and unassigned code points, the blank Hangul fillers, and a combining mark
with nothing to combine with. Everything else (猫, 食べる, 🐟, é in either spelling) is
shown as it is. JSON output keeps the exact string; only what is shown is escaped.

A backslash is shown as it is, so a token spelled ``\\x1b`` (four characters) looks
like one holding ESC; the JSON tells them apart.
"""

from __future__ import annotations

import re
import unicodedata

# Printable by Python's rule, but shown as nothing: the Hangul fillers.
_BLANK = frozenset("\u115f\u1160\u3164\uffa0")
ELLIPSIS = "…"


def visible(text: str, limit: int | None = None) -> str:
    """``text`` with every character a terminal would act on or not show escaped.

    Longer than ``limit`` characters (once escaped), it is cut and ends with ``…``, so a
    5 MB name never fills the screen; an escape is never cut in two.
    """
    if text.isascii() and text.isprintable() and (limit is None or len(text) <= limit):
        return text  # the common case, at C speed: a million labels d0, d1, ... of a wide model
    head = text if limit is None else text[: limit + 1]  # escapes only lengthen
    pieces = [_shown(ch, at_start=index == 0) for index, ch in enumerate(head)]
    if limit is None or (len(text) <= limit and sum(map(len, pieces)) <= limit):
        return "".join(pieces)
    kept: list[str] = []
    length = 0
    for piece in pieces:
        if length + len(piece) > limit - 1:
            break
        kept.append(piece)
        length += len(piece)
    return "".join(kept) + ELLIPSIS


def _shown(ch: str, *, at_start: bool) -> str:
    if (ch.isprintable() or ch == " ") and ch not in _BLANK:
        if at_start and unicodedata.category(ch) in ("Mn", "Me"):  # an accent on nothing
            return _escape(ch)
        return ch
    return _escape(ch)


_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}  # as Python and C write them


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def quoted(text: str, limit: int | None = None) -> str:
    """``'fish'``: a token or a typed value named in a message or a heading, in single
    quotes, as :func:`visible` shows it (``repr`` would double an escape's backslash and
    switch to double quotes for ``don't``, so one token would read two ways)."""
    return f"'{visible(text, limit)}'"


def is_visible(text: str) -> bool:
    """Whether ``text`` shows as it is: :func:`visible` would change nothing."""
    return visible(text) == text


def code_points(text: str) -> str:
    """``U+0065 U+0301``: how a string is spelled, for telling look-alikes apart."""
    return " ".join(f"U+{ord(ch):04X}" for ch in text)


def lookalikes(texts: list[str], candidates: tuple[str, ...]) -> dict[str, str]:
    """For each of ``texts`` that reads the same as one of ``candidates`` but is spelled
    with other code points (é composed or as e + U+0301, fullwidth ｃａｔ, a zero-width
    space inside), that candidate. The candidates are folded once (an error path: a
    vocabulary of 50,000 tokens takes a quarter of a second)."""
    wanted = {folded(text): text for text in texts}
    found: dict[str, str] = {}
    for candidate in candidates:
        text = wanted.get(folded(candidate))
        if text is not None and text != candidate and text not in found:
            found[text] = candidate
    return found


def folded(text: str) -> str:
    """NFKC (é either way, ｃ as c, ﬁ as fi), without the format characters nobody sees."""
    if text.isascii():  # NFKC keeps ASCII as it is, and it holds no format character
        return text
    kept = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return unicodedata.normalize("NFKC", kept)


_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """``text`` with each lone surrogate (``"\\udcff"``: from a JSON escape, or a sentence
    byte that is not UTF-8, which Python decodes as one) replaced by U+FFFD, the
    replacement character: no UTF-8 file, JSON document or page can hold a surrogate, so
    every document attntrace writes holds this instead (docs/json.md), as ``check``,
    ``decode`` and ``diff`` always did. ASCII text is returned as it is, at once."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)
