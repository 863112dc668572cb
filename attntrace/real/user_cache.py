"""The user cache directory attntrace keeps what it can rebuild in: $XDG_CACHE_HOME/attntrace.

One root for every cached thing (the verified-file fingerprints, a weight file assembled
from several packages), so a user who wants them elsewhere sets one variable, and one
``rm -r`` clears them all.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/attntrace, or ~/.cache/attntrace; a relative XDG_CACHE_HOME is
    ignored, as the XDG Base Directory spec says (it would land in the current folder)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "attntrace"
