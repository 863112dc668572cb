"""The KV cache memory calculator's tables: one model as MHA, as it is, and as MQA."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from attntrace.kv_memory import BYTES_PER_VALUE, PRESETS, Shape, Variant, human_bytes
from attntrace.render.fitted import Fitted


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
    """Every preset with its shapes and head dim = d_model / heads, where they agree."""
    about = "presets (from each model's config.json); head dim = d_model / heads"
    lines: list[RenderableType] = [Text(about, style="dim"), Text("")]
    width = max(len(name) for name in PRESETS)
    for name, shape in PRESETS.items():
        assert shape.d_model is not None
        derived = shape.d_model // shape.heads
        note = "" if derived == shape.head_dim else (
            f" (cfg {shape.head_dim})"
        )  # fmt: skip
        sizes = Text(f"{shape.layers:>3} layers  {shape.heads:>3} heads  {shape.kv_heads:>3} K/V "
                     f"({shape.attention})")  # fmt: skip
        head_dim = Text.assemble(
            f"head dim {shape.d_model:>5} / {shape.heads:<3} = {derived:<4}", (note, "yellow")
        )
        # narrow: the name alone, then the sizes and the head dim a line each
        wide = Text.assemble((f"{name:<{width}}  ", "bold"), sizes, "  ", head_dim)
        narrow = Text.assemble((name, "bold"), "\n  ", sizes, "\n  ", head_dim)
        lines.append(Fitted((wide, narrow)))
    return Group(*lines)
