"""`kv-cache`: how much memory a KV cache takes, for a published model's shape, a model's
own config (--model: :mod:`attntrace.cli.kv_model`) or a shape given by flags."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails, usage
from attntrace.cli.model_flags import MODEL_FORMS, model_names
from attntrace.cli.options import completion, json_flag
from attntrace.cli.pipes import stdout_console

if TYPE_CHECKING:
    from attntrace.decode.kv_memory import Shape


def _presets() -> list[str]:
    from attntrace.decode.kv_memory import PRESETS

    return list(PRESETS)


def _models() -> list[str]:
    """--model's values, for completion: the presets, then what run --model takes."""
    return _presets() + model_names()


def _kv_dtypes() -> list[str]:
    from attntrace.decode.kv_memory import BYTES_PER_VALUE

    return list(BYTES_PER_VALUE)


def kv_cache(
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            metavar="MODEL",
            help=f"A preset, or a model priced from its own config: {MODEL_FORMS}.",
            show_default=False,
            autocompletion=completion(_models),
        ),
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="A published model's shape (see the list without a model).",
            autocompletion=completion(_presets),
        ),
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
        typer.Option(metavar="N", help="Tokens cached (default: the model's context)."),
    ] = None,
    batch: Annotated[int, typer.Option(metavar="N", help="Sequences at once.")] = 1,
    dtype: Annotated[
        str,
        typer.Option(
            metavar="TYPE",
            help="fp32, fp16, bf16 or int8 (or float32, ...).",
            autocompletion=completion(_kv_dtypes),
        ),
    ] = "fp16",
    window: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="A sliding window: each layer's cache keeps at most N "
            "tokens (a model's local layers only).",
        ),
    ] = None,
    no_window: Annotated[
        bool, typer.Option("--no-window", help="Price a windowed model's cache in full.")
    ] = False,
    as_json: Annotated[bool, json_flag("Write the numbers as JSON.")] = False,
) -> None:
    """How much memory a KV cache takes: the model as MHA, as it is, and as MQA."""
    from attntrace.decode.kv_memory import BYTES_PER_VALUE, KV_CACHE_NAME, MAX_CACHE_BYTES, variants
    from attntrace.errors import InputError

    dtype = KV_CACHE_NAME.get(dtype, dtype)  # the names run --dtype and decode --dtype take
    shape_flags = (layers, heads, kv_heads, head_dim, d_model)
    if model is not None and preset is not None:
        usage("--model and --preset both name a model: give one of them")
    preset = model if preset is None else preset
    if preset is None and all(flag is None for flag in shape_flags):
        if tokens is not None or batch != 1 or dtype != "fp16" or window is not None or no_window:
            usage(
                "give --model MODEL or the model's shape (--layers, --heads, --head-dim) "
                "for --tokens, --batch, --dtype and --window to apply to"
            )
        emit(as_json, _presets_document, _presets_view)
        return
    with bad_input_fails():
        if dtype not in BYTES_PER_VALUE:
            raise InputError(
                field="--dtype", expected=", ".join(BYTES_PER_VALUE), found=repr(dtype)
            )
        if preset is not None and any(value is not None for value in shape_flags):
            named = "--preset" if model is None else "--model"
            raise InputError(f"{named} gives the model's shape: drop --layers, --heads, ...")
        name, shape = (
            named_shape(model, preset)
            if preset is not None
            else ("your model", explicit_shape(layers, heads, kv_heads, head_dim, d_model))
        )
        shape = windowed(shape, window, no_window)
        count = tokens if tokens is not None else shape.context
        if count is None:
            raise InputError("give --tokens N: how many tokens the cache holds")
        for flag, value in (("--tokens", count), ("--batch", batch)):
            if value < 1:
                raise InputError(field=flag, expected="a whole number ≥ 1", found=str(value))
        found = variants(shape, count, batch, dtype)  # refuses 1024 YiB or more
        # a window caps the bytes, not the count: bound the count itself too, or a number
        # of thousands of digits would be printed whole
        if count >= MAX_CACHE_BYTES:
            raise InputError(
                field="--tokens",
                expected=f"fewer than {MAX_CACHE_BYTES:,}",
                found=f"a {len(str(count)):,}-digit number",
            )

    def document() -> dict[str, Any]:
        from attntrace.decode.decode_json import kv_memory_to_dict

        return kv_memory_to_dict(name, shape, found, count, batch, dtype)

    def view() -> None:
        from attntrace.decode.views.kv_memory import memory_view

        stdout_console().print(memory_view(name, shape, found, count, batch, dtype))

    emit(as_json, document, view)


def _presets_document() -> dict[str, Any]:
    """Without a model: every preset's shape, for --json."""
    from attntrace.decode.decode_json import presets_to_dict

    return presets_to_dict()


def _presets_view() -> None:
    """Without a model: the presets to choose from."""
    from attntrace.decode.views.kv_memory import presets_view

    stdout_console().print(presets_view())


def windowed(shape: Shape, window: int | None, no_window: bool) -> Shape:
    """The shape with --window's N (on a preset's local layers, or every layer of a shape
    from flags), or with no window at all (--no-window)."""
    from dataclasses import replace

    from attntrace.errors import InputError

    if window is not None and no_window:
        raise InputError("--window N prices a windowed cache, --no-window a full one: give one")
    if no_window:
        return replace(shape, window=None, local_layers=None)
    if window is None:
        return shape
    from attntrace.kernel.variants import MOST_POSITIONS

    if window < 1:
        raise InputError(
            field="--window", expected="a whole number of tokens ≥ 1", found=str(window)
        )
    if window > MOST_POSITIONS:  # as a model file's window: longer than any sentence
        digits = len(str(window))  # typer parsed it: at most Python's 4,300 digits
        found = f"{window:,}" if digits <= 30 else f"a {digits:,}-digit number"
        raise InputError(
            field="--window", expected=f"at most {MOST_POSITIONS:,} tokens", found=found
        )
    return replace(shape, window=window)


def named_shape(model: str | None, preset: str) -> tuple[str, Shape]:
    """The name and shape of --model's model (a preset, a catalogued model, a model on
    disk: :mod:`attntrace.cli.kv_model`), else of --preset's."""
    if model is not None:
        from attntrace.cli.kv_model import model_shape

        return model_shape(model)
    return preset, preset_shape(preset)


def preset_shape(name: str) -> Shape:
    """The shape of the published model ``name`` (--preset)."""
    from attntrace.decode.kv_memory import PRESETS
    from attntrace.errors import InputError

    if name not in PRESETS:
        raise InputError(
            field="--preset", expected=f"one of {', '.join(PRESETS)}", found=repr(name)
        )
    return PRESETS[name]


def explicit_shape(
    layers: int | None,
    heads: int | None,
    kv_heads: int | None,
    head_dim: int | None,
    d_model: int | None,
) -> Shape:
    """A shape from flags: layers and heads, with head_dim or d_model (head_dim = d_model /
    heads); kv_heads defaults to heads."""
    from attntrace.decode.kv_memory import Shape
    from attntrace.errors import InputError

    if layers is None or heads is None or (head_dim is None and d_model is None):
        missing = [
            flag for flag, value in (("--layers", layers), ("--heads", heads)) if value is None
        ] + (["--head-dim (or --d-model)"] if head_dim is d_model is None else [])
        raise InputError(f"give --model MODEL, or the model's shape: missing {', '.join(missing)}")
    kv = heads if kv_heads is None else kv_heads
    for flag, value in (
        ("--layers", layers),
        ("--heads", heads),
        ("--kv-heads", kv),
        ("--head-dim", head_dim),
        ("--d-model", d_model),
    ):
        if value is not None and value < 1:
            raise InputError(field=flag, expected="a whole number ≥ 1", found=str(value))
    if heads % kv:
        raise InputError(
            field="--kv-heads", expected=f"a divisor of --heads ({heads})", found=str(kv)
        )
    if head_dim is not None and d_model is not None and d_model != heads * head_dim:
        raise InputError(
            field="--d-model",
            expected=f"--heads × --head-dim = {heads} × "
            f"{head_dim} = {heads * head_dim}, or only one of the two",
            found=str(d_model),
        )
    if head_dim is None:
        d_model = d_model or 0  # given: the first check refused neither
        if d_model % heads:
            raise InputError(
                field="--d-model",
                expected=f"a multiple of --heads ({heads}), so head_dim = d_model / heads is whole",
                found=str(d_model),
            )
        head_dim = d_model // heads
    return Shape(layers, heads, kv, head_dim, d_model)
