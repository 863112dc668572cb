"""The KV cache memory calculator's tables: one model as MHA, as it is, and as MQA.

The presets take one layout for all their rows, the widest that fits the terminal, so
the columns stay columns.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.text import Text

from attntrace.kv_memory import BYTES_PER_VALUE, PRESETS, Shape, Variant, human_bytes
from attntrace.render.fitted import Fitted

INDENT = "  "  # of a row's later lines


def counted(count: int, noun: str) -> str:
    """``1 token``, ``4,096 tokens``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _column(cells: Sequence[str], right: bool = False) -> list[str]:
    """``cells`` padded to the widest of them."""
    width = max(cell_len(cell) for cell in cells)
    return [cell.rjust(width) if right else cell.ljust(width) for cell in cells]


def _rows(layouts: Sequence[Sequence[Text]]) -> Fitted:
    """Every row in the same layout: the first in which every row fits the width."""
    return Fitted(tuple(Text("\n").join(rows) for rows in layouts))


def memory_view(
    name: str, shape: Shape, variants: list[Variant], tokens: int, batch: int, dtype: str
) -> Group:
    """The formula with this model's numbers, then the variants side by side."""
    per_value = BYTES_PER_VALUE[dtype]
    lines: list[RenderableType] = [
        Text.assemble((name, "bold magenta"), (
            f" · {shape.layers} layers · {shape.heads} query heads · {shape.kv_heads} K/V "
            f"head{'s' if shape.kv_heads > 1 else ''} ({shape.attention}) · head dim "
            f"{shape.head_dim} · KV cache of {tokens:,} tokens × batch {batch}", "dim")),
        Text(f"= 2 (K, V) × {shape.layers} layers × K/V heads × {shape.head_dim} × "
             f"{per_value} B ({dtype}) × {tokens:,} tokens × {batch}", style="dim"),
        Text(""),
    ]  # fmt: skip
    mha = variants[0].bytes
    width = max(len(v.label) for v in variants)
    digits = len(f"{mha:,}")
    for variant in variants:
        share = f"{mha / variant.bytes:.3g}× smaller" if variant.bytes != mha else "baseline"
        label = Text(variant.label, style="bold")
        heads = Text(f"{variant.kv_heads:>3} K/V head{'s' if variant.kv_heads > 1 else ' '}  ")
        size = Text(f"{human_bytes(variant.bytes):>11}", style="bold cyan")
        exact = Text(f"{variant.bytes:>{digits},} B  {share}", style="dim")
        wide = Text.assemble(label, " " * (width - len(variant.label) + 2), heads, size, "  ",
                             exact)  # fmt: skip
        # narrow: the label alone, then the rest in two lines, never '4.00' over 'GiB'
        narrow = Text.assemble(label, "\n  ", heads, size, "\n  ", exact)
        lines.append(Fitted((wide, narrow)))
    per_token = next(v for v in variants if v.is_model)
    lines += [
        Text(""),
        Text(f"per token (batch 1): {per_token.bytes // (tokens * batch):,} bytes", style="dim"),
    ]
    return Group(*lines)


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
            f"head dim {head_dims[index]} ", ("=" if agree else "≠", "" if agree else "yellow"),
            f" {d_models[index]} / {shape.heads}",
            ("" if agree else f" = {shape.d_model / shape.heads:g}", "yellow"),
        )  # fmt: skip
        size = Text(f"{layers[index]}  {heads[index]}  {kv_heads[index]}")
        name = names[index]
        layouts[0].append(Text.assemble((name, "bold"), "  ", size, "  ", head_dim))
        # narrow: the name alone, then the sizes and the head dim a line each
        layouts[1].append(Text.assemble((name.rstrip(), "bold"), "\n", INDENT, size, "\n",
                                        INDENT, head_dim))  # fmt: skip
    return Group(Text(about, style="dim"), Text(""), _rows(layouts))
