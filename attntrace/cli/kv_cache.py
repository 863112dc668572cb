"""`kv-cache`: how much memory a KV cache takes, for a published model's shape or yours."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails, usage
from attntrace.cli.options import json_flag
from attntrace.cli.pipes import stdout_console


def kv_cache(
    preset: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="A published model's shape (see the list without it)."),
    ] = None,
    layers: Annotated[int | None, typer.Option(metavar="N", help="Transformer layers.")] = None,
    heads: Annotated[int | None, typer.Option(metavar="N", help="Query heads.")] = None,
    kv_heads: Annotated[
        int | None, typer.Option("--kv-heads", metavar="N", help="K/V heads (default: heads).")
    ] = None,
    head_dim: Annotated[
        int | None, typer.Option("--head-dim", metavar="N", help="Width of one head.")
    ] = None,
    d_model: Annotated[
        int | None,
        typer.Option("--d-model", metavar="N", help="Instead of --head-dim: d_model / heads."),
    ] = None,
    tokens: Annotated[
        int | None,
        typer.Option(metavar="N", help="Tokens cached (default: the preset's context)."),
    ] = None,
    batch: Annotated[int, typer.Option(metavar="N", help="Sequences at once.")] = 1,
    dtype: Annotated[str, typer.Option(metavar="TYPE", help="fp32, fp16, bf16 or int8.")] = "fp16",
    as_json: Annotated[bool, json_flag("Write the numbers as JSON.")] = False,
) -> None:
    """How much memory a KV cache takes: the model as MHA, as it is, and as MQA."""
    from attntrace.core.kv_memory import BYTES_PER_VALUE, explicit_shape, variants
    from attntrace.core.kv_memory import preset as preset_shape
    from attntrace.errors import InputError

    shape_flags = (layers, heads, kv_heads, head_dim, d_model)
    if preset is None and all(flag is None for flag in shape_flags):
        if tokens is not None or batch != 1 or dtype != "fp16":
            usage("give --preset NAME or the model's shape (--layers, --heads, --head-dim) "
                  "for --tokens, --batch and --dtype to apply to")  # fmt: skip
        emit(as_json, _presets_document, _presets_view)
        return
    with bad_input_fails():
        if preset is not None and any(flag is not None for flag in shape_flags):
            raise InputError("--preset gives the model's shape: drop --layers, --heads, ...")
        if dtype not in BYTES_PER_VALUE:
            raise InputError(field="--dtype", expected=", ".join(BYTES_PER_VALUE),
                             found=repr(dtype))  # fmt: skip
        shape = (preset_shape(preset) if preset is not None
                 else explicit_shape(layers, heads, kv_heads, head_dim, d_model))  # fmt: skip
        count = tokens if tokens is not None else shape.context
        if count is None:
            raise InputError("give --tokens N: how many tokens the cache holds")
        for flag, value in (("--tokens", count), ("--batch", batch)):
            if value < 1:
                raise InputError(field=flag, expected="a whole number ≥ 1", found=str(value))
        found = variants(shape, count, batch, dtype)  # refuses 1024 YiB or more
    name = preset or "your model"

    def document() -> dict[str, Any]:
        from attntrace.files.serialize import kv_memory_to_dict

        return kv_memory_to_dict(name, shape, found, count, batch, dtype)

    def view() -> None:
        from attntrace.render.kv_memory import memory_view

        stdout_console().print(memory_view(name, shape, found, count, batch, dtype))

    emit(as_json, document, view)


def _presets_document() -> dict[str, Any]:
    """Without a model: every preset's shape, for --json."""
    from attntrace.files.serialize import presets_to_dict

    return presets_to_dict()


def _presets_view() -> None:
    """Without a model: the presets to choose from."""
    from attntrace.render.kv_memory import presets_view

    stdout_console().print(presets_view())
