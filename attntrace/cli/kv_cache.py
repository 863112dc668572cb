"""`kv-cache`: how much memory a KV cache takes, for a published model's shape or yours."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from attntrace.cli.exits import bad_input_fails
from attntrace.cli.pipes import quiet_pipe, stdout_console


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
    as_json: Annotated[
        bool, typer.Option("--json", metavar="", help="Write the numbers as JSON.")
    ] = False,
) -> None:
    """How much memory a KV cache takes: the model as MHA, as it is, and as MQA."""
    from attntrace.core.kv_memory import BYTES_PER_VALUE, explicit_shape, variants
    from attntrace.core.kv_memory import preset as preset_shape
    from attntrace.errors import InputError

    shape_flags = (layers, heads, kv_heads, head_dim, d_model)
    with bad_input_fails():
        if preset is None and all(flag is None for flag in shape_flags):
            if tokens is not None or batch != 1 or dtype != "fp16":
                raise InputError(
                    "give --preset NAME or the model's shape (--layers, --heads, "
                    "--head-dim) for --tokens, --batch and --dtype to apply to"
                )
            with quiet_pipe():
                if as_json:
                    from attntrace.files.serialize import plain_dumps, presets_to_dict

                    sys.stdout.write(plain_dumps(presets_to_dict()) + "\n")
                    return
                from attntrace.render.kv_memory import presets_view

                stdout_console().print(presets_view())
            return
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
    with quiet_pipe():
        if as_json:
            from attntrace.files.serialize import kv_memory_to_dict, plain_dumps

            document = kv_memory_to_dict(name, shape, found, count, batch, dtype)
            sys.stdout.write(plain_dumps(document) + "\n")
            return
        from attntrace.render.kv_memory import memory_view

        stdout_console().print(memory_view(name, shape, found, count, batch, dtype))
