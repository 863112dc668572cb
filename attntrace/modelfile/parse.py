"""Model-file text -> plain data (dicts, lists, str, int, float, bool, None).

JSON is parsed here; YAML in :mod:`attntrace.modelfile.yaml_file` (imported only for YAML, so
JSON model files and saved traces never load PyYAML). A key given twice is recorded in
:class:`ParsedMapping` and reported by validation, which knows the field path. Every
failure is an :class:`InputError`.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from attntrace.errors import InputError, parsed_integer


class ParsedMapping(dict[str, Any]):
    """A parsed mapping that remembers the keys it saw twice (and where, for YAML).

    The parser cannot know a mapping's field path; validation does, so duplicates are
    recorded here and reported there: ``model.json: embeddings: duplicate key 'cat'``.
    The first value of a duplicated key is kept.
    """

    def __init__(self) -> None:
        super().__init__()
        self.duplicates: list[tuple[str, int | None]] = []

    def add(self, key: str, value: Any, line: int | None = None) -> None:
        if key in self:
            self.duplicates.append((key, line))
        else:
            self[key] = value


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a document is parsed: parsing
    makes millions of lists (a tall matrix is a list per row) and no cycle, and the
    collector, run every few hundred new containers over all that survived, would take
    more than half the time of a 30 MB file (2.4 s rather than 5.4)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_document(text: str, source: str, *, is_json: bool) -> Any:
    """Parse YAML or JSON text into plain Python data (PyYAML is loaded only for YAML)."""
    with _collector_paused():
        if is_json:
            return _parse_json(text, source)
        from attntrace.modelfile.yaml_file import parse_yaml

        return parse_yaml(text, source)


# ---------------------------------------------------------------------------- JSON


def _parse_json(text: str, source: str) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> ParsedMapping:
        mapping = ParsedMapping()
        for key, value in items:
            mapping.add(key, value)
        return mapping

    try:
        # NaN and Infinity become floats, so validation rejects them with a field path.
        # 10**5000 written out is a LongInteger, not Python's ValueError for long ints
        return json.loads(
            text, object_pairs_hook=pairs, parse_constant=float, parse_int=parsed_integer
        )
    except json.JSONDecodeError as error:
        before, after = text[: error.pos].rstrip(), text[error.pos : error.pos + 1]
        # after is '' where the text ends (cut off after a comma): no hint, and no IndexError
        hint = " (a trailing comma?)" if before.endswith(",") and after in ("]", "}") else ""
        # json says "Unterminated string starting at" and leaves the where to the position,
        # which the line gives first: the sentence ends where the string does not
        what = error.msg.replace("starting at", "that starts there and is never closed")
        raise InputError(
            f"line {error.lineno}, column {error.colno}: malformed JSON: {what}{hint}",
            source=source,
        ) from None
    except RecursionError:
        raise InputError("malformed JSON: nested too deeply", source=source) from None
