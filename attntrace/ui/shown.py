"""The user's text as the renderers show it: escaped, cut to a sane length, padded by cells.

Tokens, names, descriptions, formulas of a saved trace: all of it came from a file or
an argument, so none of it reaches the terminal raw. :func:`shown_trace` turns a trace
into the one the views draw (the same numbers, the labels and names through
:func:`attntrace.visible.visible`); the views of other results (decode, the head
ranking) call :func:`label` and :func:`model_name` on what they print. Columns line up by
display width, as Rich measures a cell (猫 takes two), never by ``len``: :func:`pad`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from rich.cells import cell_len

from attntrace.kernel.labels import Dims
from attntrace.visible import folded, visible
from attntrace.visible import quoted as visible_quoted

if TYPE_CHECKING:  # `attntrace models` lists names without loading numpy
    from attntrace.kernel.precision_record import LowPrecision
    from attntrace.kernel.trace import Stage, Trace

# How many characters of each are shown: a table's label column must leave room for
# numbers, a header must stay a line; the JSON keeps every character.
LABEL_LIMIT = 40
NAME_LIMIT = 80
FORMULA_LIMIT = 200
DESCRIPTION_LIMIT = 2000
# A model found on disk is named whole, to be pasted after --model: ORG/NAME@COMMIT of
# huggingface_hub's longest parts is 234 characters.
LISTED_LIMIT = 240
LISTED_TEXT_LIMIT = 500


def label(token: str) -> str:
    """A token (or a dimension's label) as a row or column of a table shows it."""
    return visible(token, LABEL_LIMIT)


def model_name(text: str) -> str:
    """A model's name, as a header shows it."""
    return visible(text, NAME_LIMIT)


def listed_name(text: str) -> str:
    """The name of a model `attntrace models` found (from a folder's name), as it shows it."""
    return visible(text, LISTED_LIMIT)


def listed_text(text: str) -> str:
    """A path, or the reason a found model cannot be traced (it may quote a file's name),
    on one line: a newline in a name is shown as ``\\n``, not obeyed."""
    return visible(text, LISTED_TEXT_LIMIT)


def description(text: str) -> str:
    """A description, on one line: its line breaks and indents are layout, not words."""
    return visible(" ".join(text.split()), DESCRIPTION_LIMIT)


def labels(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """Each token's :func:`label`; tokens that differ but read the same (é composed and
    e + U+0301) are told apart by their position, ``é#3`` and ``é#4``, as a repeated
    token is (:func:`attntrace.kernel.labels.unique_labels`). Dimension labels are shown
    as they are, the same tuple."""
    if isinstance(tokens, Dims):
        return tokens
    shown = [label(token) for token in tokens]
    spellings: dict[str, set[str]] = {}
    for token in tokens:
        spellings.setdefault(folded(token), set()).add(token)
    return tuple(
        f"{text}#{index}" if len(spellings[folded(token)]) > 1 else text
        for index, (token, text) in enumerate(zip(tokens, shown, strict=True))
    )


def quoted(token: str) -> str:
    """``'fish'``: a token named in a heading, cut as a table's label is."""
    return visible_quoted(token, LABEL_LIMIT)


def shown_trace(trace: Trace) -> Trace:
    """``trace`` as the views show it: every token, label, name, formula and the
    description made visible; the arrays are the same objects, not copies."""
    model = trace.model
    cache: dict[tuple[str, ...], tuple[str, ...]] = {}

    def shown(tokens: tuple[str, ...]) -> tuple[str, ...]:  # stages share their rows
        if tokens not in cache:
            cache[tokens] = labels(tokens)
        return cache[tokens]

    shown_model = replace(
        model, name=model_name(model.name), description=description(model.description)
    )
    context = trace.context_tokens
    return replace(
        trace,
        model=shown_model,
        tokens=shown(trace.tokens),
        context_tokens=None if context is None else shown(context),
        stages=tuple(_stage(stage, shown) for stage in trace.stages),
        weights=tuple(_stage(weight, shown) for weight in trace.weights),
        precision=None if trace.precision is None else _precision(trace.precision),
    )


def _precision(record: LowPrecision) -> LowPrecision:
    """A --dtype trace's lines made visible (from a file, they are a stranger's text)."""
    first = record.overflow
    errors = {(label(name), head): error for (name, head), error in record.errors.items()}
    return replace(
        record,
        errors=errors,
        overflow=None
        if first is None
        else replace(
            first, stage=label(first.stage), sentence=visible(first.sentence, 2 * FORMULA_LIMIT)
        ),
    )


def _stage(stage: Stage, shown: Callable[[tuple[str, ...]], tuple[str, ...]]) -> Stage:
    return replace(
        stage,
        name=label(stage.name),
        formula=visible(stage.formula, FORMULA_LIMIT),
        rows=shown(stage.rows),
        cols=shown(stage.cols),
    )


def shortened(label: str, cells: int) -> str:
    """``label`` in at most ``cells`` display cells: its middle given up for ``…``, its
    start and its ``#N`` (the position that tells repeats apart) kept."""
    if cell_len(label) <= cells:
        return label
    stem, mark, position = label.rpartition("#")
    suffix = mark + position if mark and position.isdecimal() else ""
    stem = stem if suffix else label
    room = max(1, cells - cell_len(suffix) - 1)
    kept = ""
    for ch in stem:
        if cell_len(kept + ch) > room:
            break
        kept += ch
    return kept + "…" + suffix


def pad(text: str, width: int, *, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` display cells: on the right (left-aligned,
    the default) or on the left (``right=True``, right-aligned)."""
    fill = " " * max(0, width - cell_len(text))
    return fill + text if right else text + fill
