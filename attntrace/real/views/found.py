"""`attntrace models`' second part: the models found in the Hugging Face cache and Ollama's store.

Everything here came from folder names and files someone else wrote, so every name,
family and reason is escaped (:mod:`attntrace.ui.shown`) before it is laid out. Wide
enough, the models are a table, one row each, the reason a model cannot be traced
wrapping under its own column; narrower, each is its name on a line (what to type
after ``--model``, folded rather than cut) and its facts under it, broken between
facts, never inside one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.text import Text

from attntrace.ui.shown import label, listed_name, listed_text
from attntrace.ui.wrap import Terms, Wrapped, wrap

if TYPE_CHECKING:
    from attntrace.real.disk.listing import Found, Scan

HEADERS = ("name", "family", "layers × heads", "size", "format")
#: The least width the table leaves its last column (why a model cannot be traced);
#: where the other columns leave less, each model is shown on lines of its own.
REASON_ROOM = 38
GAP = 2
TRACEABLE = "✓ traceable"
# A hash in a reason (a blob's 64 hex digits) is cut to its first 12: enough to find it.
_HASH = re.compile(r"[0-9a-f]{20,}")


def size_text(count: int) -> str:
    """``1.2 GB``, ``988 MB``, ``512 B``: decimal units, as ``ollama list`` and the
    Hugging Face hub show a model's size; one decimal under 10, none from 10 on."""
    if count < 1000:
        return f"{count} B"
    value = float(count)
    for unit in ("kB", "MB", "GB", "TB", "PB"):
        value /= 1000
        shown = f"{value:.1f}" if value < 9.95 else f"{value:.0f}"
        if float(shown) < 1000 or unit == "PB":
            return f"{shown} {unit}"
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Row:
    """One found model as the view shows it: each field escaped, unknowns ``?``."""

    name: str
    family: str
    shape: str  # 24 × 14 (2 K/V)
    long_shape: str  # 24 layers × 14 heads (2 K/V), or "" where none is known
    size: str
    format: str
    traceable: bool
    why_not: str

    @property
    def status(self) -> Text:
        if self.traceable:
            return Text(TRACEABLE, style="green")
        return Text(f"✗ {self.why_not}", style="yellow")

    def cells(self) -> tuple[str, str, str, str, str]:
        return (self.name, self.family, self.shape, self.size, self.format)


def row(found: Found) -> Row:
    """``found`` made safe to print."""
    layers, heads, kv = found.layers, found.heads, found.kv_heads
    grouped = kv is not None and heads is not None and kv != heads
    short = f"{_or_unknown(layers)} × {_or_unknown(heads)}" + (f" ({kv} K/V)" if grouped else "")
    counted = [f"{n} {what}" for n, what in ((layers, "layers"), (heads, "heads")) if n]
    long = " × ".join(counted) + (f" ({kv} K/V)" if grouped else "")
    why = _HASH.sub(lambda m: m[0][:12] + "…", listed_text(found.why_not))
    known = found.size > 0 or found.format != "?"
    return Row(
        listed_name(found.name),
        "?" if found.family is None else label(found.family),
        short if layers is not None or heads is not None else "?",
        long,
        size_text(found.size) if known else "?",
        listed_text(found.format),
        found.traceable,
        why,
    )


def _or_unknown(count: int | None) -> str:
    return "?" if count is None else str(count)


@dataclass(frozen=True)
class FoundModels:
    """The found models: a table where it fits, else a name line and a facts line each."""

    rows: tuple[Row, ...]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        if self.table_width() <= width:
            yield self.table()
            return
        for shown in self.rows:
            yield from wrap(Text(shown.name, style="bold"), width)
            yield from _facts(shown, width)

    def table_width(self) -> int:
        """The width the table needs: its columns' widest cells, their gaps, and the
        whole of each reason, or at least :data:`REASON_ROOM` for them."""
        columns = [HEADERS, *(r.cells() for r in self.rows)]
        fixed = sum(max(cell_len(cells[i]) for cells in columns) for i in range(len(HEADERS)))
        reason = max(cell_len(r.status.plain) for r in self.rows)
        return fixed + GAP * len(HEADERS) + min(reason, REASON_ROOM)

    def table(self) -> RenderableType:
        from rich.table import Table

        table = Table(
            box=None, padding=(0, GAP, 0, 0), pad_edge=False, header_style="bold", expand=False
        )
        for header in HEADERS:
            table.add_column(header, no_wrap=True, justify="right" if header == "size" else "left")
        table.add_column("", overflow="fold", ratio=1)  # a reason wraps under itself
        for shown in self.rows:
            table.add_row(
                Text(shown.name, style="bold"),
                shown.family,
                Text(shown.shape, style="cyan"),
                shown.size,
                shown.format,
                shown.status,
            )
        return table


def _facts(shown: Row, width: int) -> Iterator[Text]:
    """``  qwen2 · 24 layers × 14 heads (2 K/V) · 988 MB · safetensors · ✓ traceable``,
    the unknown ones left out, broken between facts (a reason between its words)."""
    facts = [
        (shown.family, ""),
        (shown.long_shape, "cyan"),
        (shown.size, ""),
        (shown.format, ""),
    ]
    terms = [Text(text, style=style) for text, style in facts if text and text != "?"]
    terms.append(shown.status)
    joined = tuple((" · " if index else "", term) for index, term in enumerate(terms))
    for line in Terms(joined).lines(max(1, width - 2)):
        yield from wrap(Text("  ") + line, width)  # a word wider than the line, folded


def found_lines(scan: Scan, cap: int) -> Iterator[RenderableType]:
    """A heading, the models (:class:`FoundModels`), and where they were looked for;
    where none was found, that and how to trace a model kept elsewhere."""
    hub, ollama = (listed_text(str(path)) for path in scan.looked_in)
    cut = (
        Text(f"; stopped after {cap:,} entries, so there may be more", style="yellow")
        if scan.cut_short
        else Text()
    )
    if not scan.found:
        yield Wrapped(
            Text("On this machine: no models in the Hugging Face cache or Ollama's store.")
        )
        yield Wrapped(
            Text.assemble(
                "Looked in ",
                (hub, "bold"),
                " (the Hugging Face cache; HF_HUB_CACHE or HF_HOME moves it) and ",
                (ollama, "bold"),
                " (Ollama's store; OLLAMA_MODELS moves it)",
                cut,
                ".",
            )
        )
        yield Wrapped(
            Text(
                "To trace a model kept elsewhere: --model PATH, a .gguf file or a folder "
                "with config.json and .safetensors files.",
                style="dim",
            )
        )
        return
    places = Text.assemble(
        (hub, "bold"), " (the Hugging Face cache) and ", (ollama, "bold"), " (Ollama's store)"
    )
    yield Wrapped(Text.assemble(("On this machine", "bold"), _counted(scan.found), ":"))
    yield Text()
    yield FoundModels(tuple(row(found) for found in scan.found))
    yield Text()
    yield Wrapped(Text.assemble("Looked in ", places, cut, ".", style="dim"))
    if any(found.traceable for found in scan.found):
        yield Wrapped(Text("Trace one: attntrace run --model NAME", style="dim"))


def _counted(found: Sequence[Found]) -> str:
    """``, 4 models (3 in the Hugging Face cache, 1 in Ollama's store)``, or where all
    are in one store, ``, 3 models in the Hugging Face cache``."""
    hub = sum(1 for f in found if f.store == "hf-cache")
    counts = ((hub, "the Hugging Face cache"), (len(found) - hub, "Ollama's store"))
    total = f"{len(found)} model{'s' if len(found) != 1 else ''}"
    places = [(count, where) for count, where in counts if count]
    if len(places) == 1:
        return f", {total} in {places[0][1]}"
    return f", {total} ({', '.join(f'{count} in {where}' for count, where in places)})"
