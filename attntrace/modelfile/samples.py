"""The sample models that ship inside the package (``attntrace/samples/``).

A sample is named by its file stem (``cat-eats-fish``); where a stem has a YAML and a
JSON file, the YAML file is the sample and the JSON file (``cat-eats-fish.json``, by
its file name) is the same model for tools that prefer JSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from attntrace.errors import InputError

DEFAULT_SAMPLE = "cat-eats-fish"
_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Sample:
    """A shipped model: its name (the file stem), its file, and the same model in other formats."""

    name: str
    path: Path
    twins: tuple[Path, ...] = ()


def samples_dir() -> Path:
    """The samples folder inside the installed package (a plain path: the package is
    installed as files, and importlib.resources costs start-up time)."""
    return Path(__file__).parent.parent / "samples"


def list_samples() -> list[Sample]:
    """Every shipped sample by name; a stem with YAML and JSON files is one sample."""
    files = [p for p in samples_dir().iterdir() if p.suffix in _SUFFIXES and p.name != INDEX_FILE]
    files.sort(key=lambda p: (p.stem, _SUFFIXES.index(p.suffix)))
    by_stem: dict[str, list[Path]] = {}
    for path in files:
        by_stem.setdefault(path.stem, []).append(path)
    return [Sample(stem, paths[0], tuple(paths[1:])) for stem, paths in by_stem.items()]


def sample_path(name: str) -> Path:
    """The file of sample ``name`` (a stem or a file name); InputError if there is none."""
    samples = list_samples()
    for sample in samples:
        for path in (sample.path, *sample.twins):
            if name == path.name:
                return path
        if name == sample.name:
            return sample.path
    known = ", ".join(s.name for s in samples)
    raise InputError(f"unknown sample {name!r} (samples: {known})")


def fastest_twin(path: Path) -> Path:
    """The JSON twin of a YAML sample where there is one: the same model (a test checks),
    read without loading PyYAML, which keeps the default command quick to start."""
    twin = path.with_suffix(".json")
    return twin if path.suffix != ".json" and twin.exists() else path


@dataclass(frozen=True)
class SampleSummary:
    """What ``attntrace samples`` shows of a sample: sizes, sentence, what it is for."""

    name: str
    d_model: int
    sentence: str
    summary: str
    twins: tuple[str, ...]


def summarize(sample: Sample) -> SampleSummary:
    from attntrace.modelfile.model_file import load_model

    model = load_model(sample.path, source=f"sample {sample.name}")
    # the first sentence: a full stop ends it, but not one of "et al." or "e.g."
    first = re.split(
        r"(?<!\bal\.)(?<!\be\.g\.)(?<=[.?!])\s", model.description.strip(), maxsplit=1
    )[0]
    twins = tuple(path.name for path in sample.twins)
    return SampleSummary(sample.name, model.d_model, model.sentence or "", first, twins)


def sample_text(name: str) -> str:
    """The sample's file as shipped: a model file to start from.

    A YAML file gets a first comment line naming the sample and where it lives; JSON has
    no comments, so a JSON file comes exactly as it is.
    """
    path = sample_path(name)
    text = path.read_text(encoding="utf-8")
    return text if path.suffix == ".json" else f"# attntrace sample {name}: {path}\n{text}"


INDEX_FILE = "index.json"


def summaries() -> list[SampleSummary]:
    """What ``attntrace samples`` lists, from the index shipped beside the samples.

    Read from JSON, so listing the samples loads neither numpy nor PyYAML; a test keeps
    the index equal to what the files say (:func:`build_index`).
    """
    import json

    entries = json.loads((samples_dir() / INDEX_FILE).read_text(encoding="utf-8"))
    return [
        SampleSummary(e["name"], e["d_model"], e["sentence"], e["summary"], tuple(e["twins"]))
        for e in entries
    ]


def build_index() -> str:
    """The index's text, computed from the sample files themselves."""
    import json

    entries = [
        {
            "name": s.name,
            "d_model": s.d_model,
            "sentence": s.sentence,
            "summary": s.summary,
            "twins": list(s.twins),
        }
        for s in (summarize(sample) for sample in list_samples())
    ]
    return json.dumps(entries, indent=2, ensure_ascii=False) + "\n"
