"""`quiz`: a learner computes a hidden cell of the trace (docs/teaching.md).

Exit codes: 0 every question answered right, 1 one was not (wrong after the last hint,
or the input ended), 2 bad input (the model, the flags, an exercise file), 130 Ctrl-C.
What a person reads (the tables, the prompt, the hints) goes to stdout; with --json it
goes to stderr where a person types at a terminal, and nowhere where the answers come
from a pipe, so stdout holds the one JSON document.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer

from attntrace.cli.exits import bad_input_fails, usage
from attntrace.cli.model_flags import ModelFlags, model_flags
from attntrace.cli.options import TablePrecision, json_flag, sentence_argument

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from attntrace.errors import InputError
    from attntrace.kernel.trace import Trace
    from attntrace.quiz.exercise import Exercise
    from attntrace.quiz.question import Question
    from attntrace.quiz.session import Outcome, Said
    from attntrace.ui.view import View

Stage = Annotated[
    str | None,
    typer.Option(
        metavar="STAGE",
        help="The stage to hide a cell of (softmax, scores, ...; default: by --seed).",
        show_default=False,
    ),
]
Cell = Annotated[
    str | None,
    typer.Option(
        metavar="ROW,COL",
        help="The hidden cell: tokens or 0-based indices (it,animal; the#4,2; 6,1).",
        show_default=False,
    ),
]
Seed = Annotated[
    int | None,
    typer.Option(
        min=0,
        metavar="N",
        help="Chooses what --stage and --cell leave open (default 0).",
        show_default=False,
    ),
]
# quiz's own --config: the answers come from stdin, so the model file cannot (the
# shared flag's help offers "-" for stdin)
QuizConfig = Annotated[
    str | None,
    typer.Option(
        "--config",
        "-c",
        metavar="FILE",
        help="A YAML or JSON model file (not stdin: the answers come from there).",
        show_default=False,
    ),
]
ExerciseFlag = Annotated[
    str | None,
    typer.Option(
        "--exercise",
        metavar="FILE",
        help="Ask an exercise file's questions in order (or a shipped one by name: "
        "worked-example, softmax-walkthrough, it-animal).",
        show_default=False,
    ),
]


@model_flags("config sample real_model layer head causal context edits")
def quiz(
    words: Annotated[
        list[str] | None, sentence_argument("The sentence (default: the model's own).")
    ] = None,
    *,
    chosen: ModelFlags,
    config: QuizConfig = None,
    stage: Stage = None,
    cell: Cell = None,
    seed: Seed = None,
    exercise: ExerciseFlag = None,
    precision: TablePrecision = None,
    as_json: Annotated[
        bool, json_flag("Write the questions, answers and score as JSON to stdout.")
    ] = False,
) -> None:
    """Compute a hidden cell of the trace yourself; wrong answers earn hints.

    The answers are read from stdin, typed or piped:

    echo 0.9983 | attntrace quiz --stage softmax --cell fish,fish

    Exit 0 when right, 1 when not, 2 on bad input."""
    from attntrace.cli.prompts import interrupted
    from attntrace.quiz.question import DEFAULT_SEED
    from attntrace.ui.view import view_from_flags

    chosen = replace(chosen, config=config)
    chosen.check()
    if chosen.config == "-":
        usage("the answers are read from stdin, so the model cannot come from stdin too")
    if exercise is not None:
        given = _flags_given(chosen, words, stage, cell, seed)
        if given is not None:
            usage(f"--exercise names the model and the questions: it does not go with {given}")
    view = view_from_flags(precision, 20, None)
    talk = _talk(as_json)
    with interrupted(end_line=talk is not None):
        if exercise is None:
            with bad_input_fails():
                trace = chosen.trace(" ".join(words) if words else None)
                questions = [_question(trace, stage, cell, seed or DEFAULT_SEED)]
            title = None
        else:
            with bad_input_fails():
                trace, questions, read = _exercise(exercise)
            title = read.title
            _show(talk, _title(read.title, read.description))
        outcomes = [
            _ask(
                trace,
                questions[number - 1 :],
                view,
                talk,
                (number, len(questions)) if title else None,
            )
            for number in range(1, len(questions) + 1)
        ]
    _finish(trace, outcomes, as_json, talk, seed=seed, exercise=exercise, title=title)


def _flags_given(
    chosen: ModelFlags,
    words: list[str] | None,
    stage: str | None,
    cell: str | None,
    seed: int | None,
) -> str | None:
    """The first flag that --exercise leaves no room for, as the user would name it."""
    for flag, value in (
        ("--config", chosen.config),
        ("--sample", chosen.sample),
        ("--model", chosen.real_model),
        ("--layer", chosen.layer),
        ("--head", chosen.head),
        ("--causal", chosen.causal),
        ("--context", chosen.context),
        ("--set", chosen.edits or None),
        ("--stage", stage),
        ("--cell", cell),
        ("--seed", seed),
        ("a sentence", words or None),
    ):
        if value is not None:
            return flag
    return None


def _talk(as_json: bool) -> Console | None:
    """Where the person's side goes: stdout; with --json, stderr at a terminal, else
    nowhere (a script piping answers reads the document)."""
    from rich.console import Console

    from attntrace.cli.pipes import stdout_console
    from attntrace.cli.prompts import stdin_is_terminal

    if not as_json:
        return stdout_console()
    return Console(stderr=True) if stdin_is_terminal() else None


def _question(trace: Trace, stage: str | None, cell: str | None, seed: int) -> Question:
    """--stage and --cell in the trace; a cell as typed, or as the tables show it."""
    from attntrace.quiz.question import choose

    return choose(trace, stage, cell, seed=seed)


def _exercise(name: str) -> tuple[Trace, list[Question], Exercise]:
    """The exercise's model traced and its questions found in the trace, before any is
    asked: a mistake in the file is one line and exit 2, never halfway through."""
    from attntrace.quiz.exercise import read_exercise
    from attntrace.quiz.question import DEFAULT_SEED, choose

    exercise = read_exercise(name)
    model = exercise.model
    flags = ModelFlags(
        config=model.file,
        sample=model.sample,
        real_model=model.real,
        layer=model.layer,
        causal=model.causal,
    )
    with bad_input_fails(name):
        trace = _model_traced(flags, model.sentence, name, model.file)
        questions: list[Question] = []
        for index, asked in enumerate(exercise.questions):
            where = f"questions[{index}]"
            found = choose(
                trace,
                asked.stage,
                asked.cell,
                seed=DEFAULT_SEED,
                head=asked.head,
                field=f"{where}.cell",
                stage_field=f"{where}.stage",
                head_field=f"{where}.head",
            )
            _refuse_order(trace, questions, found, where)
            questions.append(replace(found, hints=asked.hints, points=asked.points))
    return trace, questions, exercise


def _refuse_order(trace: Trace, earlier: list[Question], found: Question, where: str) -> None:
    """An exercise asks each cell once (a second time, the first one's ✓ line is its
    answer), in the trace's order of stages: a question on an earlier stage than one
    before it would be asked with that earlier question's screen showing its operand."""
    from attntrace.errors import InputError

    order = list(dict.fromkeys(stage.name for stage in trace.stages))
    for index, other in enumerate(earlier):
        if (other.stage, other.head, other.row, other.col) == (
            found.stage,
            found.head,
            found.row,
            found.col,
        ):
            raise InputError(f"the same cell as questions[{index}]", field=where)
        if order.index(found.stage) < order.index(other.stage):
            raise InputError(
                f"{found.stage} comes before {other.stage} (questions[{index}]) in the trace: "
                "ask the stages in the trace's order",
                field=f"{where}.stage",
            )


def _model_traced(flags: ModelFlags, sentence: str | None, name: str, file: str | None) -> Trace:
    """The exercise's model traced; a mistake in its model file names the exercise
    too (``ex.yaml: model.file: models/row.yaml: ...``), so the teacher knows which file
    sent them there, and never quotes what the file holds: a file that is no model file
    is said to be one, field path and all. A sentence the model cannot read is named
    ``model.sentence``."""
    from attntrace.errors import InputError

    try:
        return flags.trace(sentence)
    except InputError as error:
        if error.field in FILE_FIELDS:  # the flag's name for it, where the file has its own
            raise InputError(
                error.message,
                source=name,
                field=FILE_FIELDS[error.field],
                expected=error.expected,
                found=error.found,
            ) from None
        if file is not None and error.source is not None and error.source != name:
            raise _model_file_error(error, name) from None
        if sentence is not None and _reads_own_sentence(flags):
            raise InputError(str(error), source=name, field="model.sentence") from None
        if error.source is None or error.source == name:
            raise
        raise InputError(str(error), source=name, field="model") from None


def _model_file_error(error: InputError, name: str) -> InputError:
    """A model file's mistake, never what the file holds: why it could not be read
    (no such file, not UTF-8, malformed YAML at line 3), "not a model file" where its
    top is no model's mapping (a string, unknown fields: their names are the file's
    content), else the field path and what was expected, without what was found."""
    from attntrace.errors import InputError

    where = f"{error.source}: {error.field}" if error.field else f"{error.source}"
    message = error.message or ""
    if error.found is None and "unknown field" not in message:
        text = f"{where}: {message}" if message else where
        return InputError(text, source=name, field="model.file", expected=error.expected)
    if error.field is None:
        return InputError(f"{where}: not a model file", source=name, field="model.file")
    return InputError(where, source=name, field="model.file", expected=error.expected)


def _reads_own_sentence(flags: ModelFlags) -> bool:
    """Whether the model traces its own sentence (then the exercise's is at fault)."""
    from attntrace.errors import InputError

    try:
        flags.trace(None)
    except InputError:
        return False
    return True


# The flags an exercise's model fields stand for, as an error about them names them.
FILE_FIELDS = {"--layer": "model.layer", "--model": "model.real", "--sample": "model.sample"}


def _title(title: str, description: str) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    from attntrace.ui.wrap import Wrapped
    from attntrace.visible import visible

    parts: list[RenderableType] = [Text(visible(title), style="bold magenta")]
    if description:
        parts.append(Wrapped(Text(visible(description.strip()), style="dim")))
    return Group(*parts)


def _ask(
    trace: Trace,
    asked: list[Question],
    view: View,
    talk: Console | None,
    number: tuple[int, int] | None,
) -> Outcome:
    """Draw the first of ``asked``, its later questions' cells kept secret (``·``), read
    answers until it ends, and say how each went."""
    from rich.text import Text

    from attntrace.cli.prompts import LINE_LIMIT, read_line, stdin_is_terminal
    from attntrace.quiz.hints import default_hints
    from attntrace.quiz.session import ask
    from attntrace.quiz.views import coaching
    from attntrace.quiz.views.question import (
        before,
        hidden_block,
        question_line,
        question_view,
        shown_value,
    )
    from attntrace.ui.shown import shown_trace

    question = asked[0]
    shown = shown_trace(trace)  # the text from files made safe: what is drawn
    on_screen = _as_shown(shown, question)
    later = [_as_shown(shown, q) for q in asked[1:]]
    drawn = question_view(shown, on_screen, view)
    value = shown_value(trace, question, view)
    hints = question.hints if question.hints is not None else default_hints(trace, question)
    echo = not stdin_is_terminal()  # a piped answer is written after its prompt

    def show(*renderables: RenderableType, end: str = "\n") -> None:
        _show(talk, *renderables, end=end)

    if number is not None:
        points = question.points
        show(
            Text(""),
            Text(
                f"Question {number[0]} of {number[1]} ({points} point{'' if points == 1 else 's'})",
                style="bold magenta",
            ),
        )
    show(*before(shown, on_screen, drawn, later), hidden_block(shown, on_screen, drawn, later))
    show(Text(""), Text(question_line(shown, on_screen), style="bold"))

    def said(event: Said) -> None:
        if event.kind == "ask":
            show(coaching.prompt(on_screen, typed=not echo), end="")
        elif event.kind == "not-a-number":
            show(coaching.not_a_number(event.text))
        elif event.kind == "correct":
            show(coaching.correct(on_screen, value, view.precision))
        elif event.kind == "hint":
            show(coaching.hint(event.text, event.number, len(hints)))
        else:
            show(Text(""), coaching.worked(shown, on_screen, value, drawn, event.why, later))

    def read() -> str | None:
        from attntrace.errors import InputError
        from attntrace.visible import visible

        try:
            line = read_line()
        except InputError:  # a line past LINE_LIMIT: the prompt's line ended first
            show(Text(""))
            with bad_input_fails():
                raise InputError(
                    f"an answer line longer than {LINE_LIMIT:,} characters "
                    "(an answer is one number a line: 0.9983)",
                    source="stdin",
                ) from None
        if echo:  # as typed, made safe: an escape sequence piped in is shown, not obeyed
            show(Text(f" {visible(line.strip())}" if line and line.strip() else ""))
        return line

    return ask(question, value, hints, read, said, view.precision)


def _show(talk: Console | None, *renderables: RenderableType, end: str = "\n") -> None:
    """Draw on the person's side, if there is one; a reader that leaves (``| head``)
    silences it, and the answers still count (the exit code is the quiz's)."""
    from attntrace.cli.pipes import quiet_pipe

    if talk is None or talk.quiet:
        return
    try:
        with quiet_pipe():  # a full disk: one line, exit 1
            for renderable in renderables:
                talk.print(renderable, crop=False, end=end)
            talk.file.flush()
    except typer.Exit as done:
        if done.exit_code != 0:
            raise
        talk.quiet = True


def _as_shown(shown: Trace, question: Question) -> Question:
    """``question`` labelled as the tables label its row and column."""
    from attntrace.kernel.labels import unique_labels
    from attntrace.quiz.question import stage_of

    stage = stage_of(shown, question)
    return replace(
        question,
        row_label=unique_labels(stage.rows)[question.row],
        col_label=unique_labels(stage.cols)[question.col],
    )


def _finish(
    trace: Trace,
    outcomes: list[Outcome],
    as_json: bool,
    talk: Console | None,
    *,
    seed: int | None,
    exercise: str | None,
    title: str | None,
) -> None:
    """The score (an exercise's, on screen), the JSON document, and the exit code."""
    from attntrace.cli.emit import emit
    from attntrace.quiz.question import DEFAULT_SEED

    verdict = 0 if all(o.correct for o in outcomes) else 1

    def document() -> dict[str, object]:
        from attntrace.quiz.quiz_json import quiz_to_dict

        used = None if exercise is not None else DEFAULT_SEED if seed is None else seed
        return quiz_to_dict(trace, outcomes, seed=used, exercise=exercise, title=title)

    def view() -> None:
        if exercise is not None:
            from rich.text import Text

            from attntrace.quiz.views.coaching import score_line

            _show(talk, Text(""), score_line(outcomes))

    emit(as_json, document, view, verdict=verdict)
