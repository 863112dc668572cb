"""The KV cache memory calculator's tables: one model as MHA, as it is, and as MQA.

Every row of a table takes the same layout, the widest that fits the terminal (one
line, or the same words broken between columns), so the columns stay columns; the
header and the formula break between their terms (inside one only if it is wider than a
line of its own).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.text import Text

from attntrace.decode.kv_memory import (
    BYTES_PER_VALUE,
    PRESETS,
    Shape,
    Variant,
    WindowParts,
    human_bytes,
    kv_cache_bytes,
    window_parts,
)
from attntrace.ui.fitted import Fitted
from attntrace.ui.shown import pad
from attntrace.ui.wrap import INDENT, Terms, Wrapped  # INDENT: of a row's later lines too


def counted(count: int, noun: str) -> str:
    """``1 token``, ``4,096 tokens``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _column(cells: Sequence[str], right: bool = False) -> list[str]:
    """``cells`` padded to the widest of them."""
    width = max(cell_len(cell) for cell in cells)
    return [pad(cell, width, right=right) for cell in cells]


def _rows(layouts: Sequence[Sequence[Text]]) -> Fitted:
    """Every row in the same layout: the first in which every row fits the width."""
    return Fitted(tuple(Text("\n").join(rows) for rows in layouts))


def memory_view(
    name: str, shape: Shape, variants: list[Variant], tokens: int, batch: int, dtype: str
) -> Group:
    """The formula with this model's numbers, then the variants side by side."""
    per_value = BYTES_PER_VALUE[dtype]
    same = shape.heads == 1  # MHA and MQA are one model: one K/V head either way
    attention = "MHA = MQA" if same else shape.attention
    header = [("", Text(name, style="bold magenta"))] + [
        (joiner, Text(term, style="dim"))
        for joiner, term in (
            (" · ", counted(shape.layers, "layer")),
            (" · ", counted(shape.heads, "query head")),
            (" · ", f"{counted(shape.kv_heads, 'K/V head')} ({attention})"),
            (" · ", f"head dim {shape.head_dim:,}"),
            *([(" · ", window_words(shape))] if shape.window is not None else []),
            (" · ", f"KV cache of {counted(tokens, 'token')}"),
            (" ", f"× batch {batch:,}"),
        )
    ]
    # a continued formula starts with its operator: '× 1', not a bare '1'
    formula = [
        "= 2 (K, V)",
        f"× {counted(shape.layers, 'layer')}",
        "× K/V heads",
        f"× {shape.head_dim:,}",
        f"× {per_value} B ({dtype})",
        f"× {counted(tokens, 'token')}",
        f"× {batch:,}",
    ]
    if shape.window is not None:  # the layers' tokens summed: min(tokens, N) on a local one
        local, held = shape.windowed_layers, min(tokens, shape.window)
        layered = f"× ({local:,} × {held:,}"
        rest = shape.layers - local
        formula = [
            "= 2 (K, V)",
            "× K/V heads",
            f"× {shape.head_dim:,}",
            f"× {per_value} B ({dtype})",
            *([layered, f"+ {rest:,} × {tokens:,})"] if rest else [f"{layered})"]),
            f"token-layers × {batch:,}",
        ]
    lines: list[RenderableType] = [
        Terms(tuple(header)),
        Terms(tuple((" ", Text(term, style="dim")) for term in formula)),
        Text(""),
    ]
    shown = [Variant("MHA = MQA (this model)", 1, variants[0].bytes, True)] if same else variants
    lines.append(_rows(_variant_layouts(shown)))
    if same:
        lines.append(Text("1 query head: MHA and MQA are the same", style="dim"))
    parts = window_parts(shape, tokens, batch, dtype)
    if parts is not None and parts.global_layers:  # local and global layers, priced apart
        lines += [Text(""), _parts_lines(parts, tokens)]
    per_token = next(v for v in variants if v.is_model)
    if shape.window is not None:  # past the window a token adds only to the global layers
        lines += [
            Text(""),
            Wrapped(Text(per_token_words(shape, dtype), style="dim")),
            Wrapped(Text(growth_words(shape, tokens), style="dim")),
        ]
        return Group(*lines)
    lines += [
        Text(""),
        Text(
            f"per token (batch 1): {counted(per_token.bytes // (tokens * batch), 'byte')}",
            style="dim",
        ),
    ]
    return Group(*lines)


def per_token_words(shape: Shape, dtype: str) -> str:
    """What one token adds to a windowed cache (batch 1): on every layer while the cache
    is below the window; past it, on the global layers alone (nothing where all slide)."""
    assert shape.window is not None
    below = kv_cache_bytes(shape, shape.kv_heads, 1, 1, dtype)  # 1 token: below any window
    past = kv_cache_bytes(shape, shape.kv_heads, shape.window + 1, 1, dtype) - kv_cache_bytes(
        shape, shape.kv_heads, shape.window, 1, dtype
    )
    after = counted(past, "byte") if past else "none"
    return f"per token (batch 1): {counted(below, 'byte')} up to the window, {after} past it"


def window_words(shape: Shape) -> str:
    """``window 512 on 15 of 18 layers`` (``window 4,096 on every layer``)."""
    assert shape.window is not None
    local = shape.windowed_layers
    where = "every layer" if local == shape.layers else f"{local} of {shape.layers} layers"
    return f"window {shape.window:,} on {where}"


def _parts_lines(parts: WindowParts, tokens: int) -> Fitted:
    """The model's cache in its two parts, a line each, and their total (the size on a
    line of its own where a line is too narrow for both)."""
    rows = [
        (
            "local",
            f"{counted(parts.local_layers, 'layer')} × {counted(parts.held, 'token')}",
            parts.local_bytes,
        ),
        (
            "global",
            f"{counted(parts.global_layers, 'layer')} × {counted(tokens, 'token')}",
            parts.global_bytes,
        ),
        ("total", "this model", parts.total),
    ]
    names = _column([name for name, _, _ in rows])
    whats = _column([what for _, what, _ in rows])
    sizes = _column([human_bytes(size) for _, _, size in rows], right=True)
    wide, narrow = [], []
    for name, what, size in zip(names, whats, sizes, strict=True):
        wide.append(Text.assemble((name, "bold"), "  ", what, "  ", (size, "bold cyan")))
        narrow.append(
            Text.assemble(
                (name, "bold"), "  ", what.rstrip(), "\n", INDENT, (size.strip(), "bold cyan")
            )
        )
    return _rows([wide, narrow])


def growth_words(shape: Shape, tokens: int) -> str:
    """Where a windowed cache stops growing, and what a token adds past that."""
    assert shape.window is not None
    rest = shape.layers - shape.windowed_layers
    if tokens <= shape.window:  # the window never cuts in: every layer holds every token
        return (
            f"the window of {counted(shape.window, 'token')} does not cut in at "
            f"{counted(tokens, 'token')}: every layer holds every token"
        )
    if not rest:
        return (
            f"the cache stops growing at {counted(shape.window, 'token')}: past the "
            "window each new token's row replaces the oldest"
        )
    return (
        f"the local layers' cache stops growing at {counted(shape.window, 'token')}; "
        f"past it a token adds to the {counted(rest, 'global layer')} alone"
    )


def _variant_layouts(variants: Sequence[Variant]) -> list[list[Text]]:
    """The rows on one line each; or with the exact bytes and the saving on a second
    line; or three or four short lines, for narrow terminals."""
    mha = variants[0].bytes
    labels = _column([v.label for v in variants])
    digits = max(len(f"{v.kv_heads:,}") for v in variants)
    heads = _column(
        [f"{v.kv_heads:>{digits},} K/V head{'' if v.kv_heads == 1 else 's'}" for v in variants]
    )
    sizes = _column([human_bytes(v.bytes) for v in variants], right=True)
    # under a KiB the size is already exact: no second '512 B'
    exact = (
        _column([f"{v.bytes:,} B" for v in variants], right=True)
        if mha >= 1024
        else ["" for _ in variants]
    )
    # kv_heads divides heads, so every saving is a whole factor
    shares = [
        ""
        if len(variants) == 1
        else "baseline"
        if v.bytes == mha
        else f"{mha // v.bytes:,}× smaller"
        for v in variants
    ]
    layouts: list[list[Text]] = [[], [], [], [], []]
    for label, kv, size, exact_bytes, share in zip(
        labels, heads, sizes, exact, shares, strict=True
    ):
        bold = Text(label, style="bold")
        alone = Text(label.rstrip(), style="bold")  # on a line of its own, unpadded
        cyan = Text(size, style="bold cyan")
        rest = Text("  ".join(part for part in (exact_bytes, share) if part), style="dim")
        wide = Text.assemble(bold, "  ", kv, "  ", cyan)
        layouts[0].append(Text.assemble(wide, "  ", rest) if rest else wide)
        layouts[1].append(Text.assemble(wide, "\n", INDENT, rest) if rest else wide)
        short = Text.assemble(alone, "\n", INDENT, kv, "  ", cyan)
        if rest:
            short = Text.assemble(short, "\n", INDENT, rest)
        layouts[2].append(short)
        # narrowest: the exact bytes and the saving a line each, the bytes (up to 37
        # characters) unindented if they must be
        for indent, layout in ((INDENT, layouts[3]), ("", layouts[4])):
            lines = [alone, Text.assemble(INDENT, kv, "  ", cyan)]
            lines += [Text(indent + exact_bytes, style="dim")] if exact_bytes else []
            lines += [Text(INDENT + share, style="dim")] if share else []
            layout.append(Text("\n").join(lines))
    return layouts


def presets_view() -> Group:
    """Every preset with its shapes, and its head dim beside d_model / heads."""
    about = "presets (from each model's config.json), each head dim beside d_model / heads"
    shapes = list(PRESETS.values())
    names = _column(list(PRESETS))
    layers = _column([counted(s.layers, "layer") for s in shapes], right=True)
    heads = _column([counted(s.heads, "head") for s in shapes], right=True)
    kv_heads = _column([f"{s.kv_heads} K/V ({s.attention})" for s in shapes], right=True)
    head_dims = _column([str(s.head_dim) for s in shapes], right=True)
    d_models = _column([str(s.d_model) for s in shapes], right=True)
    layouts: list[list[Text]] = [[], []]
    for index, shape in enumerate(shapes):
        assert shape.d_model is not None
        derived, rest = divmod(shape.d_model, shape.heads)
        agree = derived == shape.head_dim and not rest
        # gemma-7b: its config's head dim is 256, not 3072 / 16 = 192
        head_dim = Text.assemble(
            f"head dim {head_dims[index]} ",
            ("=" if agree else "≠", "" if agree else "yellow"),
            f" {d_models[index]} / {shape.heads}",
            ("" if agree else f" = {shape.d_model / shape.heads:g}", "yellow"),
        )
        size = Text(f"{layers[index]}  {heads[index]}  {kv_heads[index]}")
        name = names[index]
        layouts[0].append(Text.assemble((name, "bold"), "  ", size, "  ", head_dim))
        # narrow: the name alone, then the sizes and the head dim a line each
        layouts[1].append(
            Text.assemble((name.rstrip(), "bold"), "\n", INDENT, size, "\n", INDENT, head_dim)
        )
    return Group(Text(about, style="dim"), Text(""), _rows(layouts))
