"""Where this machine has the Gemma 3 GGUF, for the tests that read its vocabulary."""

from __future__ import annotations

import os
from pathlib import Path

from attntrace.errors import InputError

GEMMA3_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def gemma3_gguf() -> Path | None:
    """The Gemma 3 GGUF, wherever this machine has it; None if nowhere."""
    given_path = os.environ.get("ATTNTRACE_GEMMA3_GGUF")
    candidates = [Path(given_path)] if given_path else []
    try:
        from attntrace.real import catalog

        entry = getattr(catalog, "GEMMA3", None)
        if entry is not None and entry.installed:
            candidates.append(entry.verified_weights())
    except (ImportError, InputError, OSError):
        pass
    candidates.append(Path("/tmp/gemma3-tok.gguf"))
    return next((p for p in candidates if p.is_file()), None)
