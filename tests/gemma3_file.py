"""Where this machine has the Gemma 3 GGUF, for the tests that read its vocabulary."""

from __future__ import annotations

import os
from pathlib import Path

from attntrace.errors import InputError

GEMMA3_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def gemma3_gguf() -> Path | None:
    """The Gemma 3 GGUF, wherever this machine has it; None if nowhere: the file named by
    ``$ATTNTRACE_GEMMA3_GGUF``, ``/tmp/gemma3-tok.gguf``, or else the catalogue's (joined
    from its packages into the session's cache: 253 MB written, so tried last)."""
    given_path = os.environ.get("ATTNTRACE_GEMMA3_GGUF")
    for path in ([Path(given_path)] if given_path else []) + [Path("/tmp/gemma3-tok.gguf")]:
        if path.is_file():
            return path
    from attntrace.real import catalog

    entry = getattr(catalog, "GEMMA3", None)
    if entry is None or not entry.installed:
        return None
    try:
        path = entry.verified_weights()
    except (InputError, OSError):
        return None
    return path if path.is_file() else None
