"""What ``run`` and ``render`` print: one of the views of a trace, chosen by flags.

- the tables (default): every stage, as an equation of its operands where it fits;
- ``focus``: one token's row as hand arithmetic;
- ``map``: where each token looks, as bars;
- ``overview``: every stage of a small trace on one screen.

Step mode (:mod:`attntrace.forward.views.step`) is the interactive form of the tables.
:meth:`Presentation.from_flags` is the one place that knows which flags go together.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from rich.console import Group, RenderableType
from rich.text import Text

from attntrace.errors import InputError
from attntrace.forward.views.document import header, render_trace, rule_lines
from attntrace.kernel.trace import Stage, Trace
from attntrace.ui.titles import head_label
from attntrace.ui.view import DEFAULT_MAX_HEADS, View, view_from_flags
from attntrace.visible import quoted

if TYPE_CHECKING:
    from attntrace.forward.focus import Focus

DEFAULT_TOP = 3  # keys per token in --map (the views below load only when chosen)

EXPORT_SUFFIXES = (".svg", ".html", ".txt")
MAP_PRECISION = 2  # weights as the article writes them: 0.65


@dataclass(frozen=True)
class Presentation:
    """The display flags of ``run`` and ``render``; none of them changes a number."""

    view: View = field(default_factory=View)
    focus: str | None = None
    map: bool = False
    top: int = DEFAULT_TOP
    map_precision: int = MAP_PRECISION
    overview: bool = False
    step: bool = False
    export: Path | None = None
    rows: str | None = None  # --rows, --cols as typed: the trace resolves them
    cols: str | None = None

    @classmethod
    def from_flags(
        cls,
        *,
        precision: int | None = None,
        focus: str | None = None,
        map_view: bool = False,
        top: int | None = None,
        overview: bool = False,
        max_rows: int = 20,
        max_cols: int | None = None,
        max_heads: int = DEFAULT_MAX_HEADS,
        step: bool = False,
        export: str | Path | None = None,
        rows: str | None = None,
        cols: str | None = None,
    ) -> Presentation:
        """Check the flags against each other; InputError names what does not mix.

        ``precision`` None means each view's own default (4 in tables, 2 in the map);
        ``max_rows``/``max_cols``/``max_heads`` 0 mean all.
        """
        views = [
            name
            for name, on in (
                ("--focus", focus is not None),
                ("--map", map_view),
                ("--overview", overview),
            )
            if on
        ]
        if len(views) > 1:
            raise InputError(f"{' and '.join(views)} are different views: choose one")
        if top is not None and not map_view:
            raise InputError("--top goes with --map (how many keys each token's line shows)")
        if step and (map_view or overview):
            raise InputError(f"--step walks the stage tables: it does not mix with {views[0]}")
        chosen = [flag for flag, value in (("--rows", rows), ("--cols", cols)) if value is not None]
        if chosen and (map_view or (focus is not None and not step)):
            shown = "--map" if map_view else "--focus without --step"
            raise InputError(f"{chosen[0]} chooses the tables' tokens: {shown} draws no tables")
        target = None if export is None else _export_path(str(export))
        view = view_from_flags(precision, max_rows, max_cols, max_heads)
        return cls(
            view=view,
            focus=focus,
            map=map_view,
            top=DEFAULT_TOP if top is None else top,
            map_precision=MAP_PRECISION if precision is None else precision,
            overview=overview,
            step=step,
            export=target,
            rows=rows,
            cols=cols,
        )


def _export_path(given: str) -> Path:
    """``--export FILE`` as a path to write: a .svg, .html or .txt file in a folder that
    exists (a name ending in / is a folder's, and '' no name at all)."""
    return export_path(given, EXPORT_SUFFIXES, "a .svg, .html or .txt file")


def page_path(given: str) -> Path:
    """The ``--export FILE`` of decode, flash, grad, check and diff: the explorer page
    only (their views have no text export), a .html file in a folder that exists."""
    return export_path(given, (".html",), "a .html file (the explorer page)")


def export_path(given: str, suffixes: tuple[str, ...], expected: str) -> Path:
    """``given`` as a file to write, ending in one of ``suffixes``, in a folder that
    exists (a name ending in / is a folder's, and '' no name at all), and checked as
    ``train --save`` checks its file, before any work: a folder, a device, a FIFO or a
    dangling link there is refused, each said as what it is. The path to write: where a
    link there points, so the export is written through it, as ``train --save`` does."""
    from attntrace.modelfile.model_writer import check_destination

    if given.endswith(("/", "\\")) or Path(given).suffix.lower() not in suffixes:
        raise InputError(field="--export", expected=expected, found=quoted(given))
    path = Path(given)
    try:
        missing = not path.is_symlink() and not path.absolute().parent.is_dir()
    except OSError as error:  # a name longer than the file system takes, a loop of links
        raise InputError(
            f"cannot write the file: {error.strerror or error}", source=given
        ) from None
    if missing:
        raise InputError("no such folder to save into", source=given)
    return check_destination(path, field=None, what="the file")


def renderables(
    trace: Trace, how: Presentation, focus: tuple[Focus, ...] | None
) -> Iterator[RenderableType]:
    """The chosen view of ``trace``, for ``console.print`` one after another.

    ``focus`` holds the focused row of each traced head, in order.
    """
    if focus is not None:
        from attntrace.forward.views.focus import focus_panel

        for index, row in enumerate(focus):
            if index:
                yield Text("")
            yield focus_panel(row, trace, how.view)
    elif how.map:
        yield header(trace)
        yield from rule_lines(trace)
        yield Text("Where each token looks: its top keys by attention weight", style="dim")
        yield from attention_maps(trace, how)
    elif how.overview:
        from attntrace.forward.views.overview import overview

        yield from overview(trace, how.view)
    else:
        yield from render_trace(trace, how.view)


def _with_sink(
    trace: Trace, head: int, weights: Stage, masked: npt.NDArray[np.bool_] | None
) -> tuple[Stage, npt.NDArray[np.bool_] | None]:
    """With a sink logit the map ranks the sink's share beside the keys (a column named
    ``sink``), so a row's bars add up to 1 as its weights do (docs/variants.md)."""
    if not any(s.name == "sink" and s.head == head for s in trace.stages):
        return weights, masked
    sink = trace.stage("sink", head=head)
    data = np.hstack([weights.data, sink.data])
    joined = Stage(
        weights.name,
        weights.formula,
        weights.rows,
        (*weights.cols, "sink"),
        data,
        head=weights.head,
        kv_head=weights.kv_head,
    )
    if masked is not None:
        masked = np.hstack([masked, np.zeros((masked.shape[0], 1), dtype=bool)])
    return joined, masked


def attention_maps(trace: Trace, how: Presentation) -> Iterator[RenderableType]:
    """One map per head, side by side where the width allows (a causal mask's hidden
    keys are never listed)."""
    from attntrace.forward.views.attention_map import AttentionMap

    maps: list[RenderableType] = []
    heads = trace.traced_heads
    for head in heads:
        masked = None
        if trace.model.causal:
            masked = np.isneginf(trace.stage("masked", head=head).data)
        weights = trace.stage("softmax", head=head)
        weights, masked = _with_sink(trace, head, weights, masked)
        drawn = AttentionMap(weights, top=how.top, precision=how.map_precision, masked=masked)
        # 'head 2 · K/V head 1', as the tables title it ('' for a one-head model)
        label = Text(head_label(weights, trace.model).strip(), style="bold yellow")
        if len(heads) == 1:  # one head (of one, or of several: then say which)
            yield from (label, drawn) if label.plain else (drawn,)
            return
        maps.append(Group(label, drawn))
    from attntrace.forward.views.overview import Packed

    yield Packed(maps)
