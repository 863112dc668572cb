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
# An exercise is a page of questions: a file past this is no exercise (a 50 MB
# description took 38 s and 717 MB to read, then filled the terminal), refused by its
# size before it is read.
MOST_BYTES = 1 << 20  # 1 MiB
MOST_TITLE = 200  # characters: one line above the questions
MOST_TEXT = 4_000  # characters: a description or a hint, a few paragraphs at most
# The fields a model file has, and an exercise file does not: a model file given as
# --exercise is told to go to --config.
MODEL_FILE_KEYS = frozenset(("embeddings", "weights", "name"))


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
        _refuse_size(path)
        text = read_text(path, EXERCISE_CONTENT)
        if len(text.encode("utf-8", "surrogatepass")) > MOST_BYTES:  # a stream, read
            raise InputError(f"more than {MOST_BYTES >> 20} MiB, over an exercise's limit")
        document = parse_document(text, source, is_json=path.suffix.lower() == ".json")
        return exercise_from(document, source, path.parent)
    except InputError as error:
        raise error.with_source(source) from None


def _refuse_size(path: Path) -> None:
    """A regular file over :data:`MOST_BYTES` refused by its size, unread."""
    try:
        size = path.stat().st_size if path.is_file() else 0
    except OSError:
        return  # read_text says why it cannot be read
    if size > MOST_BYTES:
        raise InputError(
            f"the file is {size:,} bytes, over an exercise's limit of {MOST_BYTES >> 20} MiB"
        )


def exercise_from(document: Any, source: str, folder: Path) -> Exercise:
    """A parsed exercise file checked: ``folder`` is where its model file is found."""
    top = fields.mapping(document, None, "a mapping with model and questions")
    refuse_duplicates(top, None)
    if "questions" not in top and MODEL_FILE_KEYS & set(top):
        raise InputError(
            "this looks like a model file (embeddings, weights), not an exercise: "
            "run it with --config, or name it in an exercise's model.file"
        )
    fields.known_keys(top, TOP_KEYS, None, noun="field")
    fields.required_keys(top, ("model", "questions"), None, noun="field")
    title = _capped(top["title"], "title", MOST_TITLE) if "title" in top else Path(source).stem
    description = _capped(top.get("description", ""), "description", MOST_TEXT)
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


def _capped(value: Any, where: str, most: int) -> str:
    """A text of at most ``most`` characters (what was found is counted, not shown)."""
    found = fields.text(value, where)
    if len(found) > most:
        raise InputError(
            field=where, expected=f"at most {most:,} characters", found=f"{len(found):,}"
        )
    return found


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
        file=None if file is None else _inside(folder, file),
        real=texts.get("real"),
        layer=layer,
        sentence=sentence,
        causal=causal,
    )


def _inside(folder: Path, file: str) -> str:
    """``model.file``, a path relative to the exercise file's folder that stays inside
    it (a subfolder is fine): an exercise travels as a folder, and one handed around
    cannot make attntrace read a file elsewhere (``/etc/passwd``, ``../../.ssh/...``)."""
    where = "model.file"
    expected = "a path relative to the exercise file's folder, inside it (models/row.yaml)"
    if Path(file).is_absolute() or Path(file).drive:
        raise InputError("an absolute path", field=where, expected=expected, found=repr(file))
    path = folder / file
    try:
        inside = path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        inside = False
    if not inside:
        raise InputError(
            "outside the exercise's folder", field=where, expected=expected, found=repr(file)
        )
    return str(path)


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
        for index, hint in enumerate(hints):
            _capped(hint, f"{where}.hints[{index}]", MOST_TEXT)
        if len(hints) > MOST_HINTS:
            raise InputError(
                field=f"{where}.hints",
                expected=f"at most {MOST_HINTS} hints",
                found=str(len(hints)),
            )
    points = fields.whole(question.get("points", 1), f"{where}.points", least=0, most=1000)
    return ExerciseQuestion(stage=stage, cell=cell, head=head, hints=hints, points=points)


def _cell(value: Any, where: str) -> str:
    """``fish,fish`` as written, or ``[fish, fish]`` / ``[2, 2]``: ROW,COL. A list's
    bad element is named by its index (``questions[0].cell[0]``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and len(value) == 2:
        for index, part in enumerate(value):
            if isinstance(part, bool) or not isinstance(part, int | str):
                raise InputError(
                    field=f"{where}[{index}]",
                    expected="a token (a string) or a 0-based index (a whole number)",
                    found=describe(part),
                )
        return ",".join(str(part) for part in value)
    raise InputError(
        field=where,
        expected="ROW,COL (fish,fish) or a list of two tokens or indices",
        found=describe(value),
    )


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
