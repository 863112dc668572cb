"""The reference implementations the families are held to, where this machine has them.

transformers (with torch, CPU) computes each family's attention in float64; the `gguf`
package dequantizes GGUF tensors; `tokenizers` tokenizes; llama.cpp's own converter
(`convert_hf_to_gguf.py`, from the llama-cpp-python sdist, found through
``ATTNTRACE_LLAMA_CPP``) writes GGUF files. None is a run-time dependency. Where one is
missing the test skips, unless ``ATTNTRACE_ORACLES=required`` (as `.ci/run` sets it):
then it fails, so CI cannot pass by skipping.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType

import pytest


def _missing(why: str) -> None:
    if os.environ.get("ATTNTRACE_ORACLES") == "required":
        pytest.fail(f"{why} (ATTNTRACE_ORACLES=required)")
    pytest.skip(why)


def require(module: str) -> ModuleType:
    """``module`` imported, or the test skipped (failed where oracles are required)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        _missing(f"the oracle {module} is not installed: {error}")
        raise  # not reached: skip and fail raise


def llama_cpp() -> Path:
    """llama.cpp's source folder (convert_hf_to_gguf.py, gguf-py/, models/ggml-vocab-*),
    from ``ATTNTRACE_LLAMA_CPP``; .ci/run unpacks it from the llama-cpp-python sdist."""
    where = os.environ.get("ATTNTRACE_LLAMA_CPP")
    folder = Path(where) if where else None
    if folder is None or not (folder / "convert_hf_to_gguf.py").is_file():
        _missing(
            "llama.cpp's converter is not here: set ATTNTRACE_LLAMA_CPP to the llama.cpp "
            "folder of the llama-cpp-python sdist (pip download --no-deps --no-binary "
            ":all: llama-cpp-python)"
        )
    assert folder is not None
    return folder
