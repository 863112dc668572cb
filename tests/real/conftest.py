"""Fixtures the readers' tests share: a synthetic GGUF file's writer, a scratch folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from weight_files import Metadata, Tensor, write_gguf


@pytest.fixture
def gguf_path(tmp_path: Path) -> Callable[..., Path]:
    def make(metadata: Metadata, tensors: list[Tensor], **options: Any) -> Path:
        return write_gguf(tmp_path / "model.gguf", metadata, tensors, **options)

    return make


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")
