"""`attntrace flash`, drawn: every tile of one head's FlashAttention pass, then whether it
matches standard attention and the memory story (docs/kernels.md, "attntrace flash").

A computed tile is a compact block: its heading (which queries × which keys, by token),
S_ij beside the per-row state (the tile's row max, m old → new, the rescale factor, ℓ
old → new), then O_i after it; a skipped tile is one line. Past ``max_tiles`` tiles
(``--max-tiles``) the blocks would run to thousands of lines, so every tile is one line
instead, those lines cut to the first and last ``view.max_rows`` as a table's rows are.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from rich.console import Group, RenderableType
from rich.text import Text

from attntrace.forward.views.document import sentence_line
from attntrace.forward.views.overview import Packed
from attntrace.kernel import masks
from attntrace.kernel.labels import marks_note, unique_labels
from attntrace.kernel.trace import Stage
from attntrace.kernels.flash import BOTH, FUTURE, OUT_OF_WINDOW, Tile, Traffic
from attntrace.kernels.flash_report import GPT2_HEAD, HBM_ITEMSIZE, FlashReport
from attntrace.ui.numbers import difference_bound, format_number
from attntrace.ui.shown import labels as shown_labels
from attntrace.ui.shown import model_name, pad, quoted, shortened
from attntrace.ui.stage_table import StageTable
from attntrace.ui.view import DEFAULT_VIEW, View
from attntrace.ui.wrap import Facts, Wrapped

DEFAULT_MAX_TILES = 16  # tiles drawn in full; past it, one line each
SPAN_TOKENS = 3  # a block of up to this many tokens is named token by token
TOKEN_CELLS = 16  # a token named in a heading: at most this many cells
STATE_COLUMNS = ("row max", "m old", "m new", "rescale", "ℓ old", "ℓ new")
VARIANT_NAMES = {1: "FlashAttention (v1)", 2: "FlashAttention-2"}
VARIANT_RULES = {
    2: "P̃ = exp(S − m_new) · ℓ_new = rescale·ℓ_old + rowsum(P̃) · O ← rescale·O + P̃·V_j, "
    "kept unnormalised and divided by ℓ once, after the row block's last tile",
    1: "P̃ = exp(S − row max) · ℓ_new = rescale·ℓ_old + exp(row max − m_new)·rowsum(P̃) · "
    "O ← (ℓ_old·rescale·O + exp(row max − m_new)·P̃·V_j) / ℓ_new, kept normalised",
}
SKIPPED = "skipped: every key after every query"
# why a tile was skipped (kernels/flash), in the words of its line
SKIPPED_BECAUSE = {
    FUTURE: SKIPPED,
    OUT_OF_WINDOW: "skipped: every key out of the window",
    BOTH: "skipped: every key after the query or out of the window",
}


def skipped_text(tile: Tile) -> str:
    """A skipped tile's line: why none of its cells is computed."""
    return SKIPPED_BECAUSE.get(tile.why or FUTURE, SKIPPED)


def score_formula(report: FlashReport) -> str:
    """``S_ij = Q_i·K_jᵀ / √d_k`` with what the variants add, in the full softmax's order."""
    model = report.trace.model
    variants = model.variants
    formula = f"Q_i·K_jᵀ / √{model.d_k}"
    if model.positions == "alibi":
        slope = masks.slope_text(variants.slopes(model.heads)[report.head])
        formula = f"{formula} − {slope}·|i − j|"
    if variants.softcap is not None:
        cap = f"{variants.softcap:g}"
        formula = f"{cap}·tanh(({formula}) / {cap})"
    return f"S_ij = {formula}"


def variant_facts(report: FlashReport) -> tuple[str, ...]:
    """The header's words for the variants that are on (docs/variants.md)."""
    model = report.trace.model
    variants = model.variants
    facts = []
    if variants.window is not None:
        facts.append(
            f"window {variants.window}" + (f", sinks {variants.sinks}" if variants.sinks else "")
        )
    if model.positions == "alibi":
        facts.append("ALiBi")
    if variants.qk_norm:
        facts.append("QK-norm")
    if variants.softcap is not None:
        facts.append(f"softcap {variants.softcap:g}")
    logits = variants.sink_logits(model.heads)
    if logits is not None:
        facts.append(f"sink logit {logits[report.head]:g}")
    return tuple(facts)


class Labels:
    """The query and key tokens as the tables label them (visible, told apart)."""

    def __init__(self, report: FlashReport) -> None:
        trace = report.trace
        keys = trace.tokens if trace.context_tokens is None else trace.context_tokens
        self.queries = tuple(unique_labels(shown_labels(trace.tokens)))
        self.keys = tuple(unique_labels(shown_labels(keys)))
        self.dims = trace.stage("output", head=report.head).cols


def span(tokens: Sequence[str], start: int, stop: int) -> str:
    """``"the" "cat" (0–1)``, or ``"the" … "mat" (0–63)`` for a longer block."""
    named = [quoted(shortened(token, TOKEN_CELLS)) for token in tokens[start:stop]]
    words = " ".join(named) if len(named) <= SPAN_TOKENS else f"{named[0]} … {named[-1]}"
    where = f"{start}" if stop - start == 1 else f"{start}–{stop - 1}"
    return f"{words} ({where})"


def header(report: FlashReport, view: View = DEFAULT_VIEW) -> Iterator[RenderableType]:
    """The model, the head, the variant, the blocks; the update rule; the tokens."""
    record, model = report.record, report.trace.model
    q_blocks = -(-len(record.m) // record.block_q)
    k_blocks = -(-record.keys // record.block_k)
    kv = f" (K/V head {report.kv_head})" if model.kv_heads != model.heads else ""
    facts = (
        f"head {report.head} of {model.heads}{kv}",
        f"variant {record.variant}: {VARIANT_NAMES[record.variant]}",
        "causal" if record.causal else "not causal",
        f"blocks of {record.block_q} queries × {record.block_k} keys",
        f"{q_blocks} × {k_blocks} tiles",
        *variant_facts(report),
        "float64",
    )
    yield Facts(model_name(model.name), facts)
    yield Wrapped(Text(VARIANT_RULES[record.variant], style="cyan"))
    if record.sink is not None:
        yield Wrapped(
            Text(
                "the sink logit s starts each row's m (gpt-oss's Triton kernel); "
                "after the last tile output = O ÷ (ℓ + exp(s − m))",
                style="cyan",
            )
        )
    labels = Labels(report)
    yield Wrapped(Text(f"queries: {sentence_line(labels.queries, view)}", style="dim"))
    if report.trace.context_tokens is not None:
        yield Wrapped(Text(f"keys: {sentence_line(labels.keys, view)}", style="dim"))
    marks = marks_note(report.trace.tokens, report.trace.context_tokens or ())
    if marks:  # a trained model's tokens: what Ġ or ▁ in them mean, once
        yield Wrapped(Text(marks, style="dim"))


def tile_heading(tile: Tile, labels: Labels) -> Text:
    """``tile (i, j): queries "the" "cat" (0–1) × keys "sat" "on" (2–3)``."""
    return Text.assemble(
        (f"tile ({tile.i}, {tile.j})", "bold magenta"),
        f": queries {span(labels.queries, *tile.rows)} × keys {span(labels.keys, *tile.cols)}",
    )


def tile_block(report: FlashReport, tile: Tile, labels: Labels, view: View) -> RenderableType:
    """One tile: S_ij and the per-row state side by side where they fit, then O_i."""
    if tile.skipped:  # one line: the indices, not the tokens
        where = f" · queries {_range(tile.rows)} × keys {_range(tile.cols)} · "
        return Wrapped(
            Text.assemble(
                (f"tile ({tile.i}, {tile.j})", "bold magenta"), where, (skipped_text(tile), "dim")
            )
        )
    assert tile.scores is not None
    assert tile.block_max is not None
    assert tile.rescale is not None
    rows = labels.queries[tile.rows[0] : tile.rows[1]]
    cols = labels.keys[tile.cols[0] : tile.cols[1]]
    scores = Stage("S_ij", "", rows, cols, tile.scores)
    columns = (tile.block_max, tile.m_old, tile.m_new, tile.rescale, tile.l_old, tile.l_new)
    state = Stage("state", "", rows, STATE_COLUMNS, np.column_stack(columns))
    normalised = "normalised" if report.record.variant == 1 else "unnormalised"
    output = Stage("O_i", "", rows, labels.dims, tile.output)
    return Group(
        Wrapped(tile_heading(tile, labels)),
        Packed(
            [
                Group(Text(score_formula(report), style="bold"), StageTable(scores, view)),
                Group(
                    Text("per row: rescale = exp(m_old − m_new)", style="bold"),
                    StageTable(state, view),
                ),
            ]
        ),
        Text(""),
        Text(f"O_i after the tile ({normalised})", style="bold"),
        StageTable(output, view),
    )


def tile_line(tile: Tile, view: View, widths: tuple[int, int, int] = (0, 0, 0)) -> Text:
    """One line for one tile: where it is (padded to ``widths``: the tile, its queries,
    its keys), and how far it moved its rows' state."""
    name, rows, cols = f"({tile.i}, {tile.j})", _range(tile.rows), _range(tile.cols)
    where = Text.assemble(
        (pad(name, widths[0]), "bold magenta"),
        f"  q {pad(rows, widths[1])} × k {pad(cols, widths[2])}  ",
    )
    if tile.skipped:
        return Text.assemble(where, (skipped_text(tile), "dim"))
    assert tile.rescale is not None
    assert tile.scores is not None
    rose = int(np.count_nonzero(tile.m_new > tile.m_old))
    parts = [f"m rose {rose}/{tile.rows[1] - tile.rows[0]}"]
    seen = np.isfinite(tile.m_old)  # rows with something summed to rescale
    if seen.any():
        parts.append(
            f"min rescale {format_number(float(tile.rescale[seen].min()), view.precision)}"
        )
    else:
        parts.append("first keys")
    masked = int(np.count_nonzero(np.isneginf(tile.scores)))
    if masked:
        parts.append(f"{masked:,} masked")
    return Text.assemble(where, "  ".join(parts))


def _range(bounds: tuple[int, int]) -> str:
    start, stop = bounds
    return f"{start}" if stop - start == 1 else f"{start}–{stop - 1}"


def tiles_section(
    report: FlashReport, view: View, max_tiles: int | None = DEFAULT_MAX_TILES
) -> Iterator[RenderableType]:
    """Every tile as a block, or, past ``max_tiles`` (None: no limit), as a line each."""
    tiles, labels = report.record.tiles, Labels(report)
    if max_tiles is None or len(tiles) <= max_tiles:
        for tile in tiles:
            yield Text("")
            yield tile_block(report, tile, labels, view)
        return
    yield Text("")
    yield Wrapped(
        Text(
            f"{len(tiles):,} tiles, more than --max-tiles {max_tiles}: one line each (q: query "
            "rows, k: keys, 0-based; m rose: the rows whose running max this tile raised). "
            "--max-tiles 0 draws every tile in full; --step walks them one per screen.",
            style="dim",
        )
    )
    half = len(tiles) if view.max_rows >= len(tiles) else max(1, view.max_rows // 2)
    shown = (
        list(range(len(tiles)))
        if half >= len(tiles)
        else (list(range(half)) + list(range(len(tiles) - half, len(tiles))))
    )
    widths = (
        max(len(f"({t.i}, {t.j})") for t in tiles),
        max(len(_range(t.rows)) for t in tiles),
        max(len(_range(t.cols)) for t in tiles),
    )
    for index, position in enumerate(shown):
        if index and position != shown[index - 1] + 1:
            left = position - shown[index - 1] - 1
            yield Text(f"… {left:,} tiles more (--max-rows 0 lists them all)", style="dim")
        yield Wrapped(tile_line(tiles[position], view, widths))


def summary(report: FlashReport, view: View) -> Iterator[RenderableType]:
    """The count of tiles, the output against standard attention, the memory story."""
    record, labels = report.record, Labels(report)
    reasons = [
        (record.skipped_for(why), words)
        for why, words in (
            (FUTURE, "every key after every query"),
            (OUT_OF_WINDOW, "every key out of the window"),
            (BOTH, "every key later or out of the window"),
        )
    ]
    found = [(count, words) for count, words in reasons if count]
    # one reason goes unnumbered, as it always read; several each with its count
    said = found[0][1] if len(found) == 1 else "; ".join(f"{c:,} {w}" for c, w in found)
    skipped = f", {record.skipped:,} skipped ({said})" if record.skipped else ""
    counts = f"{report.computed:,} computed{skipped}, of {len(record.tiles):,}"
    yield Wrapped(Text.assemble(("tiles: ", "bold"), counts))
    yield Text("")
    if record.sink is not None:
        yield Text(
            "output = O ÷ (ℓ + exp(s − m)): the sink takes weight, passes no value", style="bold"
        )
    else:
        yield Text("output = O ÷ ℓ", style="bold")
    yield StageTable(Stage("output", "", labels.queries, labels.dims, record.output), view)
    if record.sink is not None:
        yield Text("sink: the weight each row gave the sink logit", style="bold")
        yield StageTable(Stage("sink", "", labels.queries, ("sink",), record.sink[:, None]), view)
    yield Text.assemble(
        ("matches standard attention: ", "bold green"),
        f"max |Δ| {difference_bound(report.max_abs_difference)}",
    )
    yield Text("")
    yield from memory_lines(report)


def memory_lines(report: FlashReport) -> Iterator[RenderableType]:
    """The bytes never stored, and the HBM traffic of both algorithms (Theorem 2)."""
    n, m = len(report.record.m), report.record.keys
    bq, bk = min(report.record.block_q, n), min(report.record.block_k, m)
    yield Wrapped(
        Text.assemble(
            ("never stored: ", "bold"),
            f"the {n} × {m} scores and weights, 2·{n}·{m}·8 = {report.standard_bytes:,} bytes at "
            f"float64; the tiled pass holds one {bq} × {bk} tile ({report.tile_bytes:,} bytes), "
            "plus m, ℓ and O",
        )
    )
    elements = report.sram_bytes // HBM_ITEMSIZE
    source = (
        f", by Theorem 2 of arXiv 2205.14135: FlashAttention's loop order (its "
        "Algorithm 1); FlashAttention-2's, over query blocks, moves the same "
        f"Θ(N²d²/M) (elements of {HBM_ITEMSIZE} bytes: fp16)"
    )
    yield Wrapped(Text.assemble(("HBM traffic", "bold"), source))
    plural = "" if elements == 1 else "s"
    yield Text(f"  SRAM {report.sram_bytes:,} bytes: M = {elements:,} element{plural}")
    cases = (
        ("this input", n, report.trace.model.d_k, report.this_input),
        ("a GPT-2 head", *GPT2_HEAD, report.gpt2_head),
    )
    for name, big_n, d, traffic in cases:
        yield from _traffic_lines(name, big_n, d, traffic)


def _traffic_lines(name: str, n: int, d: int, traffic: Traffic) -> Iterator[RenderableType]:
    passes = -(-n // traffic.block_k)
    yield Wrapped(
        Text(
            f"  {name}, N = {n:,}, d = {d} (B_r × B_c = {traffic.block_q:,} × "
            f"{traffic.block_k:,}, T_c = {passes:,}):"
        )
    )
    rows = (
        ("standard", "4·N·d + 4·N²", traffic.standard),
        ("tiled", "2·N·d + T_c·(3·N·d + 4·N)", traffic.tiled),
    )
    counts = [f"{count:,}" for _, _, count in rows]
    sizes = [f"{count * HBM_ITEMSIZE:,}" for _, _, count in rows]
    wide, big = max(map(len, counts)), max(map(len, sizes))
    for (label, formula, _), count, size in zip(rows, counts, sizes, strict=True):
        yield Text(
            f"    {pad(label, 9)}{pad(formula, 26)} {pad(count, wide, right=True)} "
            f"elements  {pad(size, big, right=True)} bytes"
        )
    ratio = traffic.standard / traffic.tiled
    yield Text(f"    standard / tiled = {ratio:.2f}", style="bold")


def render_flash(
    report: FlashReport, view: View = DEFAULT_VIEW, max_tiles: int | None = DEFAULT_MAX_TILES
) -> Iterator[RenderableType]:
    """The whole view: header, tiles, summary."""
    yield from header(report, view)
    yield from tiles_section(report, view, max_tiles)
    yield Text("")
    yield from summary(report, view)
