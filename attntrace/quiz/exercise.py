"""Exercise files: a teacher's questions, in order, on one model (docs/teaching.md).

YAML (through :mod:`attntrace.modelfile.parse`, so PyYAML's safe YAML 1.2 loader) or
JSON, checked here field by field: every mistake is one :class:`InputError` naming the
file, the field path (``questions[1].cell``), what was expected and what was found.
``attntrace/schema/exercise-v1.schema.json`` describes the same format for editors.
The three shipped exercises (``exercises/``) are run by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attntrace.errors import InputError, describe
from attntrace.kernel import fields
from attntrace.kernel.reading import read_text
from attntrace.modelfile.model_matrices import refuse_duplicates
from attntrace.modelfile.parse import parse_document
from attntrace.modelfile.samples import sample_path

EXERCISE_CONTENT = "an exercise file (YAML or JSON: model, questions)"
TOP_KEYS = ("title", "description", "model", "questions")
MODEL_KEYS = ("sample", "file", "real", "layer", "sentence", "causal")
MODEL_SOURCES = ("sample", "file", "real")
QUESTION_KEYS = ("stage", "cell", "head", "hints", "points")
MOST_QUESTIONS = 100
MOST_HINTS = 10


@dataclass(frozen=True)
class ExerciseModel:
    """The model the questions are asked of: a sample by name, a model file (a path
    made absolute, from the exercise file's folder) or a real model (``--model``'s
    forms) and its layer; the sentence and causal mask, where the file overrides them."""

    sample: str | None = None
    file: str | None = None
    real: str | None = None
    layer: int | None = None
    sentence: str | None = None
    causal: bool | None = None


@dataclass(frozen=True)
class ExerciseQuestion:
    """One question as the file asks it: a stage and a cell (ROW,COL, as --cell), the
    head (None: chosen as --seed chooses it), the teacher's hints (None: the
    defaults) and its points."""

    stage: str
    cell: str
    head: int | None = None
    hints: tuple[str, ...] | None = None
    points: int = 1


@dataclass(frozen=True)
class Exercise:
    source: str  # the file as named on the command line, for messages
    title: str
    description: str
    model: ExerciseModel
    questions: tuple[ExerciseQuestion, ...]

    @property
    def total(self) -> int:
        return sum(q.points for q in self.questions)


def exercises_dir() -> Path:
    """The shipped exercises, inside the installed package."""
    return Path(__file__).parent / "exercises"


def shipped_names() -> list[str]:
    """The shipped exercises' names (their files' stems), sorted."""
    return sorted(p.stem for p in exercises_dir().glob("*.yaml"))


def exercise_path(name: str) -> Path:
    """``--exercise NAME``: a shipped exercise by name (``worked-example``), else a
    file's path; a name that is neither is an :class:`InputError` listing the shipped."""
    shipped = exercises_dir() / f"{name}.yaml"
    if name in shipped_names():
        return shipped
    path = Path(name)
    if not path.exists() and not path.is_symlink():
        raise InputError(
            "no such file, nor a shipped exercise",
            field="--exercise",
            expected=f"a file, or one of {', '.join(shipped_names())}",
            found=repr(name),
        )
    return path


def read_exercise(name: str) -> Exercise:
    """The exercise ``--exercise NAME`` names, read and checked; any mistake in it is an
    :class:`InputError` naming the file."""
    path = exercise_path(name)
    source = name
    try:
        text = read_text(path, EXERCISE_CONTENT)
        document = parse_document(text, source, is_json=path.suffix.lower() == ".json")
        return exercise_from(document, source, path.parent)
    except InputError as error:
        raise error.with_source(source) from None


def exercise_from(document: Any, source: str, folder: Path) -> Exercise:
    """A parsed exercise file checked: ``folder`` is where its model file is found."""
    top = fields.mapping(document, None, "a mapping with model and questions")
    refuse_duplicates(top, None)
    fields.known_keys(top, TOP_KEYS, None, noun="field")
    fields.required_keys(top, ("model", "questions"), None, noun="field")
    title = fields.text(top.get("title", Path(source).stem), "title")
    description = fields.text(top.get("description", ""), "description")
    listed = fields.items(top["questions"], "questions", expected="a non-empty list of questions")
    if len(listed) > MOST_QUESTIONS:
        raise InputError(
            field="questions",
            expected=f"at most {MOST_QUESTIONS} questions",
            found=str(len(listed)),
        )
    return Exercise(
        source=source,
        title=title,
        description=description,
        model=_model(top["model"], folder),
        questions=tuple(_question(q, f"questions[{i}]") for i, q in enumerate(listed)),
    )


def _model(value: Any, folder: Path) -> ExerciseModel:
    model = fields.mapping(value, "model", "a mapping: sample, file or real")
    refuse_duplicates(model, "model")
    fields.known_keys(model, MODEL_KEYS, "model", noun="field")
    given = [key for key in MODEL_SOURCES if key in model]
    if len(given) != 1:
        raise InputError(
            field="model",
            expected="one of sample, file or real",
            found=" and ".join(given) if given else "none of them",
        )
    texts = {key: fields.text(model[key], f"model.{key}") for key in given}
    layer = fields.optional_whole(model.get("layer"), "model.layer")
    if layer is not None and "real" not in model:
        raise InputError("layer goes with real (a trained model's layer)", field="model.layer")
    causal = model.get("causal")
    if causal is not None:
        causal = fields.flag(causal, "model.causal")
        if "real" in model:
            raise InputError("a real model has its own mask", field="model.causal")
    sentence = model.get("sentence")
    if sentence is not None:
        sentence = fields.text(sentence, "model.sentence")
    if "sample" in texts:
        try:
            sample_path(texts["sample"])
        except InputError as error:
            raise InputError(error.message, field="model.sample") from None
    file = texts.get("file")
    return ExerciseModel(
        sample=texts.get("sample"),
        file=None if file is None else str(folder / file),
        real=texts.get("real"),
        layer=layer,
        sentence=sentence,
        causal=causal,
    )


def _question(value: Any, where: str) -> ExerciseQuestion:
    question = fields.mapping(value, where, "a mapping: stage, cell, hints, points")
    refuse_duplicates(question, where)
    fields.known_keys(question, QUESTION_KEYS, where, noun="field")
    fields.required_keys(question, ("stage", "cell"), where, noun="field")
    stage = fields.text(question["stage"], f"{where}.stage", expected="a stage's name")
    cell = _cell(question["cell"], f"{where}.cell")
    head = fields.optional_whole(question.get("head"), f"{where}.head")
    hints = None
    if "hints" in question:
        hints = fields.texts(
            question["hints"], f"{where}.hints", expected="a list of hints (strings)", empty=True
        )
        if len(hints) > MOST_HINTS:
            raise InputError(
                field=f"{where}.hints",
                expected=f"at most {MOST_HINTS} hints",
                found=str(len(hints)),
            )
    points = fields.whole(question.get("points", 1), f"{where}.points", least=0, most=1000)
    return ExerciseQuestion(stage=stage, cell=cell, head=head, hints=hints, points=points)


def _cell(value: Any, where: str) -> str:
    """``fish,fish`` as written, or ``[fish, fish]`` / ``[2, 2]``: ROW,COL."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and len(value) == 2:
        parts = [_part(v) for v in value]
        if all(p is not None for p in parts):
            return ",".join(p for p in parts if p is not None)
    raise InputError(
        field=where,
        expected="ROW,COL (fish,fish) or a list of two tokens or indices",
        found=describe(value),
    )


def _part(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | str):
        return str(value)
    return None


def model_named(model: ExerciseModel) -> Mapping[str, Any]:
    """The model as the JSON document names it."""
    return {
        "sample": model.sample,
        "file": model.file,
        "real": model.real,
        "layer": model.layer,
        "sentence": model.sentence,
        "causal": model.causal,
    }
