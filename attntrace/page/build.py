"""A command's result as one self-contained HTML file: the explorer's script and style, and
the command's JSON documents embedded (docs/page.md).

The page is written here and drawn in the browser by the scripts in ``js/`` (joined in
:data:`SCRIPTS`' order into one ``<script>``). Each document is the one the command's
``--json`` writes, byte for byte, in a ``<script type="application/json">`` block named
for what it is (``trace``, ``decode``, ``flash``, ``grad``, ``check``, ``diff``), so what
the page shows is what a script reads; beside them, each stage's words as the terminal
says them (``captions``), and the terminal's line on the tokenizer's marks (``Ġ``,
``▁``: kernel/labels.marks_note) in ``#app``'s ``data-marks``. A block of more than a
megabyte (a real model's weights) is packed, its numbers as deflated binary
(packing.py), which the script inflates and ``packing.page_documents`` gives back
exactly. A trace too big to open quickly
(:data:`PAGE_NUMBERS`) keeps its first heads, as ``--head`` would cut it: the document
then says which heads are here (``heads_traced``), and the page says how many were left
out. Any other page over
:data:`PAGE_BYTES` is refused with one line, before anything is written.

Nothing from a document is ever written into the HTML as markup: every ``<`` in the
JSON, and every character a terminal would act on, is written as its JSON escape (so no
token can close the block or reach a terminal that prints the file), and the script puts
text on the page with ``textContent`` only. The title is escaped by :func:`html.escape`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from attntrace.errors import InputError
from attntrace.kernel.labels import marks_note
from attntrace.visible import is_visible, visible, well_formed

if TYPE_CHECKING:
    from attntrace.checking.diff import TraceDiff
    from attntrace.checking.report import CheckReport
    from attntrace.decode.decoder import Decode
    from attntrace.kernel.trace import Trace
    from attntrace.kernels.flash_report import FlashReport
    from attntrace.learning.grad_trace import GradTrace

#: Numbers a trace's page embeds at most: about 38 MB of JSON, which a browser opens in
#: well under a second (benchmarks/page.py). A bigger trace keeps its first heads that
#: fit, at least one. (Gemma 3's weights alone are 1.64 million numbers: its short
#: sentences fit whole.)
PAGE_NUMBERS = 2_000_000
#: Bytes of JSON any page holds at most; a bigger one is refused (exit 2).
PAGE_BYTES = 64 << 20
#: The page's scripts, joined in this order: the shared pieces, the views, then main.
SCRIPTS = ("common.js", "packed.js", "trace.js", "decode.js", "flash.js", "report.js", "main.js")

__all__ = [
    "PAGE_BYTES",
    "PAGE_NUMBERS",
    "check_page",
    "decode_page",
    "diff_page",
    "flash_page",
    "grad_page",
    "page_heads",
    "page_html",
    "stage_captions",
    "trace_page",
]


def trace_page(trace: Trace, limit: int = PAGE_NUMBERS) -> str:
    """The explorer page of ``trace``: every head where the trace fits ``limit`` numbers,
    else its first heads that do (:func:`page_heads`)."""
    from attntrace.forward.trace_json import dump_bytes

    heads = page_heads(trace, limit)
    shown = trace if heads is None else trace.only_heads(heads)  # the stages dump_bytes keeps
    blocks = {"trace": dump_bytes(trace, heads=heads), "captions": _json(stage_captions(shown))}
    left_out = len(trace.traced_heads) - len(shown.traced_heads)
    title = _title("", trace.model.name)
    return page_html(blocks, title=title, heads_left_out=left_out, marks=_marks(trace))


def decode_page(result: Decode) -> str:
    """``decode``'s page: every step's q, k, v, the cache, the weights and the output."""
    from attntrace.decode.decode_json import decode_to_dict

    document = decode_to_dict(result)
    blocks = {"decode": _as_written(document)}
    title = _title("decode", document["model"]["name"])
    return page_html(blocks, title=title, marks=marks_note(result.tokens))


def flash_page(report: FlashReport) -> str:
    """``flash``'s page: the grid of tiles, each tile's m, ℓ and O, the result."""
    from attntrace.kernels.flash_json import flash_dump_bytes

    title = _title("flash", report.trace.model.name)
    return page_html({"flash": flash_dump_bytes(report)}, title=title, marks=_marks(report.trace))


def grad_page(grad: GradTrace) -> str:
    """``grad``'s page: the forward trace's stages, then every gradient, with their words."""
    from attntrace.forward.trace_json import dump_bytes
    from attntrace.learning.grad_json import grad_dump_bytes
    from attntrace.learning.grad_words import stage_caption, stage_paragraph

    forward = grad.forward
    words = [
        {"one_line": stage_caption(s, grad), "paragraph": stage_paragraph(s, grad)}
        for s in grad.stages
    ]
    blocks = {
        "trace": dump_bytes(forward),
        "captions": _json(stage_captions(forward)),
        "grad": grad_dump_bytes(grad),
        "grad_captions": _json(words),
    }
    return page_html(blocks, title=_title("grad", forward.model.name), marks=_marks(forward))


def check_page(report: CheckReport, source: str | None) -> str:
    """``check``'s page: each stage's verdict, the first difference and the diagnosis."""
    from attntrace.checking.check_json import check_to_dict

    document = check_to_dict(report, source)
    marks = marks_note(report.tokens, report.context_tokens or ())
    title = _title("check", report.model.name)
    return page_html({"check": _as_written(document)}, title=title, marks=marks)


def diff_page(diff: TraceDiff, sources: tuple[str, str], edits: Sequence[str]) -> str:
    """``diff``'s page: each stage compared, with both traces and the cells that changed."""
    import numpy as np

    from attntrace.checking.check_json import diff_to_dict
    from attntrace.forward.trace_json import dump_bytes

    compared = [*diff.stages, *(diff.weights if diff.weights_compared else ())]
    cells = [None if s.changed is None else np.argwhere(s.changed).tolist() for s in compared]
    blocks = {
        "diff": _as_written(diff_to_dict(diff, sources, edits)),
        "trace": dump_bytes(diff.a),
        "trace_b": dump_bytes(diff.b),
        "changed": _json(cells),
    }
    return page_html(blocks, title=_title("diff", diff.b.model.name))


def page_heads(trace: Trace, limit: int = PAGE_NUMBERS) -> list[int] | None:
    """None where the whole trace fits ``limit`` numbers (or where cutting it would keep
    every head anyway); else its first traced heads whose cut trace fits, at least one.

    Each count is of the trace as ``--head`` cuts it (the shared inputs, those heads'
    stages, WQ's slices and the K/V heads' WK and WV they read; no concat or WO), so
    GQA's shared K/V weights are counted once."""
    if _numbers(trace) <= limit:
        return None
    heads = trace.traced_heads
    kept = 1
    while kept < len(heads) and _numbers(trace.only_heads(heads[: kept + 1])) <= limit:
        kept += 1
    return None if kept == len(heads) else list(heads[:kept])


def _numbers(trace: Trace) -> int:
    return sum(s.data.size for s in trace.stages) + sum(w.data.size for w in trace.weights)


def stage_captions(trace: Trace) -> list[dict[str, str]]:
    """Each stage's words, as the terminal's tables and step mode say them, in the
    document's order: its one-line caption and its paragraph."""
    from attntrace.forward.words import one_line, paragraph

    return [
        {"one_line": one_line(stage, trace), "paragraph": paragraph(stage, trace)}
        for stage in trace.stages
    ]


def page_html(
    blocks: Mapping[str, bytes], *, title: str, heads_left_out: int = 0, marks: str = ""
) -> str:
    """The page: each of ``blocks`` (a JSON document, UTF-8, by the name the script reads
    it by) embedded, drawn by the explorer's scripts. ``marks`` is the terminal's line on
    the tokenizer's marks (kernel/labels.marks_note), shown under the sentence; '' where
    the tokens have none. Over :data:`PAGE_BYTES` of JSON it is refused, naming the size."""
    size = sum(len(block) for block in blocks.values())
    if size > PAGE_BYTES:
        most = f"a page of at most {PAGE_BYTES >> 20} MB"
        found = f"{size / 2**20:,.0f} MB of numbers: trace fewer tokens"
        raise InputError(field="--export", expected=most, found=found)
    embedded = "\n".join(
        f'<script type="application/json" id="{name}">{_script_safe(_packed(block))}</script>'
        for name, block in blocks.items()
    )
    return _TEMPLATE.format(
        title=html.escape(title, quote=True),
        style=_asset("explorer.css"),
        script=_scripts(),
        documents=embedded,
        left_out=int(heads_left_out),
        marks=html.escape(marks, quote=True),
    )


def _packed(block: bytes) -> bytes:
    """A big block packed (its numbers as binary, deflated: page/packing.py), which the
    page's script inflates; a small one as it is."""
    from attntrace.page import packing

    return packing.pack(block) if len(block) > packing.PACK_AT else block


def _marks(trace: Trace) -> str:
    """The terminal's line on what ``Ġ``, ``▁`` or ``##`` in the trace's tokens mean
    (diff's terminal says none, nor does its page)."""
    return marks_note(trace.tokens, trace.context_tokens or ())


def _title(command: str, name: str) -> str:
    # a lone surrogate as U+FFFD, as in the documents, not as the terminal's \udcff
    return f"attntrace {command + ' ' if command else ''}· {visible(well_formed(name), 80)}"


def _json(data: Any) -> bytes:
    import orjson

    return orjson.dumps(data)


def _as_written(document: Any) -> bytes:
    """A document as its command's ``--json`` writes it (Python's json: decode, check
    and diff), so that the page holds those very bytes."""
    from attntrace.kernel.documents import plain_dumps

    return plain_dumps(document).encode()


def _script_safe(json_bytes: bytes) -> str:
    """JSON that can sit inside a ``<script>`` block, and that shows nothing raw when the
    file itself is read: ``<``, and every character :func:`attntrace.visible.visible`
    would escape, can only stand inside a string there, so each is written as its JSON
    escape (``\\u003c``, ``\\u001b``), which reads back as the same character."""
    text = json_bytes.decode("utf-8").replace("<", "\\u003c")
    return _UNUSUAL.sub(_json_escape, text)


_UNUSUAL = re.compile(r"[^\x20-\x7e\n]")  # rare in a document: checked one by one


def _json_escape(match: re.Match[str]) -> str:
    ch = match.group()
    if is_visible(ch):  # 猫, é, ·, ×, √: shown as they are
        return ch
    return "".join(f"\\u{unit:04x}" for unit in _utf16(ch))


def _utf16(ch: str) -> list[int]:
    data = ch.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


@cache
def _scripts() -> str:
    joined = "\n".join([_heat_scale(), *(_asset(f"js/{name}") for name in SCRIPTS)])
    if "</script" in joined.lower() or "<!--" in joined:  # would end the block early
        raise AssertionError("the page's script holds </script or <!--")
    return joined


def _heat_scale() -> str:
    """The heatmap's colour scale as the terminal's (kernel/display.py), for common.js's
    heatShade: one table of stops, so a weight is the same colour on both."""
    from attntrace.kernel.display import DARK_TEXT_ABOVE, WEIGHT_DECIMALS, WEIGHT_STOPS

    scale = {
        "stops": WEIGHT_STOPS,
        "decimals": WEIGHT_DECIMALS,
        "dark_text_above": DARK_TEXT_ABOVE,
    }
    return f"const HEAT = Object.freeze({_json(scale).decode()});"


@cache
def _asset(name: str) -> str:
    return files("attntrace.page").joinpath(name).read_text(encoding="utf-8")


# {{ and }} are braces; the scripts read the documents' blocks and draw into #app.
_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="attntrace">
<title>{title}</title>
<style>
{style}
</style>
</head>
<body>
<main id="app" data-heads-left-out="{left_out}" data-marks="{marks}">
<noscript>This page draws attntrace's result with JavaScript; the result itself is the
JSON in this file's <code>script</code> blocks (the documents <code>--json</code>
writes; a big one packed: <code>python -m attntrace.page.packing FILE.html</code> writes it
out).</noscript>
</main>
{documents}
<script>
{script}
</script>
</body>
</html>
"""
