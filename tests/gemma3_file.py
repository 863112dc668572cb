"""Where this machine has the Gemma 3 GGUF, for the tests that read its vocabulary."""

from __future__ import annotations

import os
from pathlib import Path

from attntrace.errors import InputError
from attntrace.real.catalog import GEMMA3

GEMMA3_SHA256 = GEMMA3.sha256  # the pinned checksum, named once (real/catalog.py)


def gemma3_gguf() -> Path | None:
    """The Gemma 3 GGUF, wherever this machine has it; None if nowhere: the file named by
    ``$ATTNTRACE_GEMMA3_GGUF``, or else the catalogue's (joined from its packages into the
    session's cache: 253 MB written once). No path of one machine's is looked at: a test
    that passes here must pass on a clean clone."""
    given_path = os.environ.get("ATTNTRACE_GEMMA3_GGUF")
    if given_path and Path(given_path).is_file():
        return Path(given_path)
    entry = GEMMA3
    if not entry.installed:
        return None
    try:
        path = entry.verified_weights()
    except (InputError, OSError):
        return None
    return path if path.is_file() else None
