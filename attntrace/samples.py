"""The sample models that ship inside the package (``attntrace/samples/``).

A sample is named by its file stem (``cat-eats-fish``) or its file name
(``cat-eats-fish.json``); where a stem has both, the YAML file is the sample and the
JSON file is the same model for tools that prefer JSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from attntrace.errors import InputError

DEFAULT_SAMPLE = "cat-eats-fish"
_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Sample:
    name: str
    path: Path


def samples_dir() -> Path:
    return Path(str(resources.files("attntrace") / "samples"))


def list_samples() -> list[Sample]:
    """Every shipped sample file, YAML before JSON for the same stem, by name."""
    files = [p for p in samples_dir().iterdir() if p.suffix in _SUFFIXES]
    files.sort(key=lambda p: (p.stem, _SUFFIXES.index(p.suffix)))
    return [Sample(p.name if _has_sibling(p, files) else p.stem, p) for p in files]


def _has_sibling(path: Path, files: list[Path]) -> bool:
    """True for the JSON twin of a YAML sample: it is then named with its suffix."""
    return path.suffix == ".json" and any(
        p.stem == path.stem and p.suffix != ".json" for p in files
    )


def sample_path(name: str) -> Path:
    """The file of sample ``name`` (a stem or a file name); InputError if there is none."""
    samples = list_samples()
    for sample in samples:
        if name in (sample.name, sample.path.name, sample.path.stem):
            return sample.path
    known = ", ".join(s.name for s in samples)
    raise InputError(f"unknown sample {name!r} (samples: {known})", field="--sample")


@dataclass(frozen=True)
class SampleSummary:
    """What ``attntrace samples`` shows of a sample: sizes, sentence, what it is for."""

    name: str
    d_model: int
    sentence: str
    summary: str


def summarize(sample: Sample) -> SampleSummary:
    from attntrace.model_file import load_model

    model = load_model(sample.path, source=f"sample {sample.name}")
    first = re.split(r"(?<=[.?!])\s", model.description.strip(), maxsplit=1)[0]
    return SampleSummary(sample.name, model.d_model, model.sentence or "", first)
