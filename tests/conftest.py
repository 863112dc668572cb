"""Shared fixtures and the hypothesis profiles (``HYPOTHESIS_PROFILE=ci`` runs more examples)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from hypothesis import settings

settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# Real models remember which weight files were hashed (attntrace.real.catalog); tests and
# the CLI runs they start keep that note in a folder of their own, not in ~/.cache.
# It is removed when the session ends: it holds Gemma 3's joined weights (253 MB) once a
# test has opened them.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="attntrace-test-cache-")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], ignore_errors=True)
