"""A real model's tokenizer tables, cached in the user cache directory by the weight
file's checksum, so a run need not decode and check them from the GGUF every time.

Building SmolLM2's tokenizer from its GGUF meant decoding 98 000 strings of metadata and
checking each of its 48 900 merges (about 0.3 s a run, benchmarks/tokenizer_cache.py);
Gemma 3's means 262 144 strings. The tables depend only on the weight file, so they are
written once, as JSON, to ``cache_dir()/tokenizers/<kind>-<sha256>.json``, keyed by the
catalogue's pinned SHA-256 of a weight file that was verified against it; the next run
opens the GGUF with those arrays stepped over
(:class:`attntrace.real.weights.gguf.GGUFFile`'s ``skip``) and builds the tokenizer from
the file.

The file is the cache's, never trusted: it is read within :data:`MAX_BYTES`, its first line
says the format, the kind, the weight file's SHA-256 and the SHA-256 of the rest (the
tables' JSON), and anything that does not match, or does not parse, or has the wrong shape,
is ignored and rebuilt, never an error. The header also carries a digest of the code
that derives the tables (:func:`code_digest`: the tokenizer modules' own source), so a
change to how they are derived rebuilds them rather than reading an old derivation. The
checks are of integrity, not of authenticity: the cache is the user's own, as their
``verified.json`` is, and a file forged to pass them is trusted as the user's. It is
written to a temporary file then renamed, so a reader sees an old file or a whole new
one. Where the directory cannot be written the tables are simply built again next time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Protocol, TypeVar

from attntrace.errors import InputError
from attntrace.kernel.reading import read_small
from attntrace.real.user_cache import cache_dir
from attntrace.real.weights.gguf import GGUFFile

__all__ = [
    "FORMAT",
    "MAX_BYTES",
    "cache_file",
    "load_tables",
    "open_gguf",
    "save_tables",
]

FORMAT = "attntrace/tokenizer-cache/v1"
# Gemma 3's tables take about 4 MB; a file much larger than any real vocabulary's is not ours.
MAX_BYTES = 64 << 20
_HEX = frozenset("0123456789abcdef")


class Cacheable(Protocol):
    """A tokenizer that can be written as tables (its class rebuilds it from them)."""

    def tables(self) -> dict[str, object]: ...


T = TypeVar("T", bound=Cacheable)


def open_gguf(
    weights: Path,
    verified_sha256: str,
    kind: str,
    arrays: Collection[str],
    from_tables: Callable[[Mapping[str, object], str], T | None],
    from_metadata: Callable[[GGUFFile], T],
) -> tuple[GGUFFile, T]:
    """A weight file verified to have ``verified_sha256``, and its tokenizer: from the
    cache where it holds good tables of ``kind`` (the GGUF then opened with the tokenizer's
    metadata ``arrays`` stepped over), else built by ``from_metadata`` and cached."""
    tables = load_tables(kind, verified_sha256)
    cached = from_tables(tables, str(weights)) if tables is not None else None
    if cached is not None:
        return GGUFFile(weights, skip=arrays), cached
    gguf = GGUFFile(weights)
    tokenizer = from_metadata(gguf)
    save_tables(kind, verified_sha256, tokenizer.tables())
    return gguf, tokenizer


# The modules whose code turns a GGUF's metadata into the cached tables, under real/.
_DERIVING = (
    "tokenizers/bpe.py",
    "tokenizers/sentencepiece.py",
    "tokenizers/tokenizer_cache.py",
    "text.py",
    "weights/gguf.py",
    "weights/gguf_header.py",
    "llama.py",
)


@functools.cache
def code_digest() -> str | None:
    """A SHA-256 of the tokenizers' source, as installed: a cache written by other code
    (another attntrace, or a change to a tokenizer) is stale. About 40 KB read, once.
    None where the source cannot be read: then nothing is cached."""
    digest = hashlib.sha256()
    for name in _DERIVING:
        try:
            digest.update((Path(__file__).parent.parent / name).read_bytes())
        except OSError:  # a zipped or stripped install: no cache is better than a stale one
            return None
    return digest.hexdigest()


def cache_file(kind: str, sha256: str) -> Path:
    """Where the tables of the weight file with this SHA-256 are kept."""
    return cache_dir() / "tokenizers" / f"{kind}-{sha256}.json"


def load_tables(kind: str, sha256: str) -> dict[str, object] | None:
    """The cached tables of ``kind`` for the weight file ``sha256``; None where absent,
    stale (another format, kind or file) or damaged."""
    if not _is_sha256(sha256) or code_digest() is None:
        return None
    try:
        data = read_small(cache_file(kind, sha256), MAX_BYTES)
    except (OSError, InputError):
        return None
    head, newline, body = data.partition(b"\n")
    try:
        header = json.loads(head)
        expected = {"format": FORMAT, "kind": kind, "sha256": sha256, "code": code_digest()}
        if not newline or not isinstance(header, dict):
            return None
        if any(header.get(key) != value for key, value in expected.items()):
            return None
        if header.get("tables_sha256") != hashlib.sha256(body).hexdigest():
            return None
        tables = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return tables if isinstance(tables, dict) else None


def save_tables(kind: str, sha256: str, tables: Mapping[str, object]) -> None:
    """Keep ``tables`` (JSON-able) for the weight file ``sha256``, atomically; a cache that
    cannot be written is skipped silently (the next run builds the tables again)."""
    if not _is_sha256(sha256) or code_digest() is None:
        return
    body = json.dumps(tables, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    header = {
        "format": FORMAT,
        "kind": kind,
        "sha256": sha256,
        "code": code_digest(),
        "tables_sha256": hashlib.sha256(body).hexdigest(),
    }
    data = json.dumps(header).encode("ascii") + b"\n" + body
    if len(data) > MAX_BYTES:
        return
    target = cache_file(kind, sha256)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(data)
        partial.replace(target)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


def _is_sha256(text: str) -> bool:
    return len(text) == 64 and set(text) <= _HEX
