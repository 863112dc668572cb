"""One file of a model on disk, checked before anything trusts it.

A Hugging Face cache entry's files are symlinks into ``blobs/``; an interrupted download
or a hand-cleaned cache leaves links to nothing. An Ollama manifest or a config.json
may be anything a stranger put there: a FIFO, ``/dev/zero``, megabytes of garbage. So
each file is looked at before it is read: a dangling link, a missing file, a FIFO or a
device is one :class:`InputError` line naming the file and what it should be, and a
JSON file is read to a bound (:func:`attntrace.kernel.reading.read_small`, which opens
without waiting, so a FIFO cannot hang the reading).
"""

from __future__ import annotations

import errno
import json
import stat
from pathlib import Path
from typing import Any

from attntrace.errors import InputError
from attntrace.kernel.reading import file_kind, naming, open_regular, read_small

#: The largest JSON file of a model read (config.json is a few KB; the largest shard
#: index, of a model in hundreds of shards, a few hundred KB; an Ollama manifest ~1 KB).
JSON_LIMIT = 16 << 20

GGUF_MAGIC = b"GGUF"


def dangling(path: Path) -> bool:
    """Whether ``path`` is a symlink whose target is missing."""
    return path.is_symlink() and not path.exists()


def link_target(path: Path) -> str:
    """Where the link ``path`` points, as written in it (for messages)."""
    try:
        return str(path.readlink())
    except OSError:
        return "?"


def refusal(
    message: str,
    source: Path | str,
    *,
    expected: str | None = None,
    found: str | None = None,
    fetch: str | None = None,
) -> InputError:
    """One line about ``source``; where a command fetches the model (again), it ends
    the line, what was expected and found going before it, so the command can be
    copied whole."""
    if fetch is None:
        return InputError(message, source=str(source), expected=expected, found=found)
    if expected is not None:
        message += f" (expected {expected}" + (f", got {found})" if found else ")")
    elif found is not None:
        message += f" (got {found})"
    return InputError(f"{message}; fetch it with: {fetch}", source=str(source))


def _loops(path: Path) -> bool:
    """Whether following the link ``path`` goes round in a circle (ELOOP)."""
    try:
        path.stat()
    except OSError as error:
        return error.errno == errno.ELOOP
    return False


def dangling_error(path: Path, fetch: str | None = None) -> InputError:
    """The one line for a link to nothing: which link, where it pointed, what to do
    (a link that leads back to itself is said as the loop it is)."""
    if _loops(path):
        return refusal(f"symlink loop: {link_target(path)} leads back to itself", path, fetch=fetch)
    return refusal(
        f"dangling symlink to {link_target(path)} (the file it points to is missing: "
        "an interrupted download, or a cleaned cache?)",
        path,
        fetch=fetch,
    )


def regular_file(path: Path, what: str, fetch: str | None = None) -> Path:
    """``path`` if it is (or links to) a regular file; else one InputError naming it:
    a dangling link, no such file, a directory, a FIFO, a device."""
    if dangling(path):
        raise dangling_error(path, fetch)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise refusal("no such file", path, expected=what, fetch=fetch) from None
    except OSError as error:
        raise InputError(
            f"cannot read it: {error.strerror or error}", source=str(path), expected=what
        ) from None
    if not stat.S_ISREG(mode):
        raise InputError(f"{file_kind(mode)}, not a regular file", source=str(path), expected=what)
    return path


def read_json(path: Path, what: str, limit: int = JSON_LIMIT) -> Any:
    """The JSON in the regular file ``path``, read to ``limit`` bytes; one InputError
    naming the file and ``what`` it should be where it is not that (truncated, not
    UTF-8, not JSON, a FIFO, too large)."""
    regular_file(path, what)
    with naming(str(path)):
        data = read_small(path, limit)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise InputError(
            f"not UTF-8 text (byte {error.start})", source=str(path), expected=what
        ) from None
    except json.JSONDecodeError as error:
        found = (
            "an empty file"
            if not data.strip()
            else f"{error.msg} (line {error.lineno}, column {error.colno})"
        )
        raise InputError(
            "not JSON (truncated?)", source=str(path), expected=what, found=found
        ) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", source=str(path), expected=what) from None


def read_json_object(path: Path, what: str, limit: int = JSON_LIMIT) -> dict[str, Any]:
    """:func:`read_json`, which must give an object (``{...}``)."""
    value = read_json(path, what, limit)
    if not isinstance(value, dict):
        raise InputError(
            "not a JSON object", source=str(path), expected=what, found=type(value).__name__
        )
    return value


def is_gguf(path: Path) -> bool:
    """Whether the regular file ``path`` starts with GGUF's magic (four bytes read)."""
    try:
        with open_regular(path, "a GGUF file") as file:
            return file.read(4) == GGUF_MAGIC
    except (OSError, InputError):
        return False


def gguf_file(path: Path, fetch: str | None = None) -> Path:
    """``path`` checked to be a GGUF file: regular, and its first four bytes ``GGUF``."""
    regular_file(path, "a GGUF file", fetch)
    with naming(str(path)), open_regular(path, "a GGUF file") as file:
        magic = file.read(4)
    if magic != GGUF_MAGIC:
        raise InputError(
            "not a GGUF file", source=str(path), expected=f"{GGUF_MAGIC!r}", found=repr(magic)
        )
    return path
