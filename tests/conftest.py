"""Shared fixtures and the hypothesis profiles (``HYPOTHESIS_PROFILE=ci`` runs more examples)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings

settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=300, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# Real models remember which weight files were hashed (attntrace.real.catalog); tests and
# the CLI runs they start keep that note in a folder of their own, not in ~/.cache.
# It is removed when the session ends: it holds Gemma 3's joined weights (253 MB) once a
# test has opened them.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="attntrace-test-cache-")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], ignore_errors=True)
# `attntrace models` lists the Hugging Face cache and Ollama's store: the tests (and the
# docs' examples they run) see two empty ones, in that folder, whatever this machine holds.
for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME"):
    os.environ.pop(variable, None)  # the cache is then $XDG_CACHE_HOME/huggingface/hub
os.environ["OLLAMA_MODELS"] = str(Path(os.environ["XDG_CACHE_HOME"]) / "ollama" / "models")
