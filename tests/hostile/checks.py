"""Checks of a successful run's output, for the kinds that expect one: each returns what
is wrong, or None."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from hostile.runner import Ran

Check = Callable[[Ran], "str | None"]
REPLACEMENT = "\ufffd"


def holds(*texts: str) -> Check:
    """stdout (UTF-8) holds each of ``texts``."""

    def check(ran: Ran) -> str | None:
        out = ran.stdout.decode("utf-8", "replace")
        missing = [text for text in texts if text not in out]
        return f"stdout lacks {missing}" if missing else None

    return check


def matches(pattern: str, *, absent: str | None = None) -> Check:
    def check(ran: Ran) -> str | None:
        out = ran.stdout.decode("utf-8", "replace")
        if not re.search(pattern, out):
            return f"stdout does not match {pattern!r}"
        if absent is not None and absent in out:
            return f"stdout holds {absent!r}"
        return None

    return check


def no_escape(ran: Ran) -> str | None:
    """No raw ESC (or other C0 control but newline and tab) reaches the terminal."""
    raw = sorted({f"0x{byte:02x}" for byte in ran.stdout if byte < 0x20 and byte not in (9, 10)})
    return f"raw control bytes in stdout: {raw}" if raw else None


def strings(document: Any) -> list[str]:
    if isinstance(document, str):
        return [document]
    if isinstance(document, dict):
        return [s for key, value in document.items() for s in [*strings(key), *strings(value)]]
    if isinstance(document, list):
        return [s for value in document for s in strings(value)]
    return []


def replaced_in(text: bytes, where: str) -> str | None:
    """``text`` is UTF-8 and holds U+FFFD but no lone surrogate (the house rule)."""
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"{where} is not UTF-8: {error}"
    if re.search(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}", decoded):
        return f"{where} holds an escaped lone surrogate"
    if REPLACEMENT not in decoded:
        return f"{where} holds no U+FFFD"
    return None


def json_replaced(ran: Ran) -> str | None:
    """stdout is one JSON document whose strings hold U+FFFD, not a lone surrogate."""
    problem = replaced_in(ran.stdout, "stdout")
    if problem:
        return problem
    try:
        document = json.loads(ran.stdout)
    except ValueError as error:
        return f"stdout is not JSON: {error}"
    if not any(REPLACEMENT in s for s in strings(document)):
        return "no string of the JSON holds U+FFFD"
    return None


def file_replaced(name: str) -> Check:
    """The written file ``name`` is UTF-8 with U+FFFD, and reads back (JSON or YAML)."""

    def check(ran: Ran) -> str | None:
        path = ran.folder / name
        if not path.is_file():
            return f"{name} was not written"
        data = path.read_bytes()
        problem = replaced_in(data, name)
        if problem or not name.endswith((".json", ".yaml")):
            return problem
        import yaml

        try:
            document = json.loads(data) if name.endswith(".json") else yaml.safe_load(data)
        except (ValueError, yaml.YAMLError) as error:
            return f"{name} does not read back: {error}"
        return None if any(REPLACEMENT in s for s in strings(document)) else f"{name}: no U+FFFD"

    return check


def file_lacks(name: str, *texts: str) -> Check:
    """The written file ``name`` exists and holds none of ``texts`` (raw HTML, ...)."""

    def check(ran: Ran) -> str | None:
        path = ran.folder / name
        if not path.is_file():
            return f"{name} was not written"
        page = path.read_text(encoding="utf-8", errors="replace")
        found = [text for text in texts if text in page]
        return f"{name} holds {found}" if found else None

    return check


def file_utf8(name: str) -> Check:
    """The written file ``name`` is UTF-8, with no lone surrogate escaped into it."""

    def check(ran: Ran) -> str | None:
        path = ran.folder / name
        if not path.is_file():
            return f"{name} was not written"
        try:
            path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as error:
            return f"{name} is not UTF-8: {error}"
        return None

    return check


def file_written(name: str) -> Check:
    def check(ran: Ran) -> str | None:
        path = ran.folder / name
        return None if path.exists() and path.stat().st_size > 0 else f"{name} was not written"

    return check


def prints(expected: bytes) -> Check:
    def check(ran: Ran) -> str | None:
        return None if ran.stdout == expected else f"stdout is {ran.stdout[:200]!r}"

    return check
