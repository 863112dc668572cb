"""The command line: parse flags, load -> compute -> render or serialize, map errors.

Exit codes (SPEC.md section 5): 0 success, 2 bad usage or bad input (one line on
stderr, no traceback), 1 a bug, 130 interrupted. Output into a pipe that closes early
(``| head``) ends quietly with 0. Heavy modules (numpy, PyYAML, the renderers) are
imported inside the commands, so ``--help`` and ``--version`` stay fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from attntrace import __version__
from attntrace.cli.exits import bad_input_fails, flags_choose, usage
from attntrace.cli.pipes import drop_stdout, quiet_pipe, stdout_console
from attntrace.cli.process import (
    FULL,
    exit_now,
    run_app,
    sane_terminal_size,
    stdout_is_devnull,
    streams_open,
)
from attntrace.cli.progress import progress_after, progress_shown
from attntrace.cli.prompts import interrupted, prompt_console, read_line, stdin_is_terminal
from attntrace.cli.show import presentation, show

if TYPE_CHECKING:
    from attntrace.core.spec import ModelSpec
    from attntrace.core.trace import Trace

app = typer.Typer(
    name="attntrace",
    help="Trace scaled dot-product attention stage by stage: every matrix, labelled by token.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# The model, for `run` and `decode`.
Config = Annotated[
    str | None,
    typer.Option("--config", "-c", metavar="FILE", help="A YAML or JSON model file (- for stdin)."),
]
Sample = Annotated[
    str | None,
    typer.Option("--sample", "-s", metavar="NAME", help="A shipped sample (see `samples`)."),
]
# A real trained model's layer, for `run` and `decode` (issue 7).
RealModelName = Annotated[
    str | None,
    typer.Option("--model", "-m", metavar="NAME",
                 help="A real trained model (see `attntrace models`).", show_default=False),
]  # fmt: skip
Layer = Annotated[
    int | None,
    typer.Option(min=0, metavar="L", help="With --model: the layer to trace (default 0).",
                 show_default=False),
]  # fmt: skip
Head = Annotated[
    int | None,
    typer.Option(min=0, metavar="H", help="With --model: this head alone (default: all).",
                 show_default=False),
]  # fmt: skip
# Display flags shared by `run` and `render`: none of them changes a number.
Step = Annotated[
    bool, typer.Option("--step", metavar="", help="One stage per screen, with a prompt.")
]
Precision = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=15,
        metavar="N",
        help="Digits after the point (default: 4 in tables, 2 in --map).",
        show_default=False,
    ),
]
FocusFlag = Annotated[
    str | None,
    typer.Option(
        "--focus",
        metavar="TOKEN",
        help="One token's row by hand (a token, fish#4, or a 0-based index).",
    ),
]
Map = Annotated[
    bool, typer.Option("--map", metavar="", help="Where each token looks: weights as bars.")
]
Top = Annotated[
    int | None,
    typer.Option(
        min=1,
        metavar="K",
        help="With --map: how many keys per token (default 3).",
        show_default=False,
    ),
]
Overview = Annotated[
    bool, typer.Option("--overview", metavar="", help="Every stage at once, compactly.")
]
MaxRows = Annotated[int, typer.Option(min=0, metavar="N", help="Rows shown per table (0: all).")]
MaxCols = Annotated[
    int | None,
    typer.Option(min=0, metavar="N", help="Columns shown per table (0: all; default: fit).",
                 show_default=False),
]  # fmt: skip
MaxHeads = Annotated[
    int,
    typer.Option(min=0, metavar="N", help="Heads shown in the tables, first and last (0: all)."),
]
Export = Annotated[  # a str: a Path would make 'x.svg/' into x.svg and '' into '.'
    str | None,
    typer.Option(
        metavar="FILE", help="Also save what is shown as .svg, .html or .txt.", show_default=False
    ),
]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"attntrace {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """attntrace: softmax(Q·Kᵀ/√d_k)·V, one stage at a time."""
    # main() has done it for a process; a test runs the app without main()
    sane_terminal_size()
    with bad_input_fails():  # a bad ATTNTRACE_PROGRESS_AFTER is refused by every command
        progress_after()


@app.command()
def run(
    words: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="SENTENCE",
            help="The input sentence (quoted or not); default: the model file's `sentence`.",
            show_default=False,
        ),
    ] = None,
    config: Config = None,
    sample: Sample = None,
    real_model: RealModelName = None,
    layer: Layer = None,
    head: Head = None,
    causal: Annotated[
        bool | None,
        typer.Option(
            "--causal/--no-causal",
            help="Mask later tokens (a decoder), overriding the model file.",
            show_default=False,
        ),
    ] = None,
    context: Annotated[
        str | None,
        typer.Option(
            metavar="SENTENCE",
            help="Cross-attention: take K and V from this sentence (overrides the file).",
        ),
    ] = None,
    step: Step = False,
    as_json: Annotated[
        bool,
        typer.Option("--json", metavar="", help="Write the whole trace as JSON to stdout."),
    ] = False,
    precision: Precision = None,
    focus: FocusFlag = None,
    map_view: Map = False,
    top: Top = None,
    overview: Overview = False,
    max_rows: MaxRows = 20,
    max_cols: MaxCols = None,
    max_heads: MaxHeads = 4,
    export: Export = None,
    only_stages: Annotated[
        str | None,
        typer.Option(
            "--stages",
            metavar="NAMES",
            help="With --json: only these stages, comma-separated (e.g. softmax,output).",
        ),
    ] = None,
    only_heads: Annotated[
        str | None,
        typer.Option(
            "--heads",
            metavar="LIST",
            help="With --json: only these heads' stages, comma-separated (e.g. 0,3).",
        ),
    ] = None,
) -> None:
    """Trace attention over SENTENCE: X, Q, K, V, scores, scaled, softmax, output.

    The model: a model file (--config), a sample (--sample), the worked
    example, or a layer of a trained model (--model; see `attntrace models`)."""
    from attntrace.api import traced

    display = [flag for flag, on in (("--step", step), ("--export", export is not None),
               ("--focus", focus is not None), ("--map", map_view), ("--overview", overview))
               if on]  # fmt: skip
    if as_json and display:
        usage(f"--json writes the whole trace for programs: it does not mix with {display[0]}")
    filters = [flag for flag, value in (("--stages", only_stages), ("--heads", only_heads))
               if value is not None]  # fmt: skip
    if not as_json and filters:
        usage(f"{flags_choose(filters)} what --json writes: add --json")
    # --json never loads the renderers (nor Rich): the display flags are checked only
    # when something is displayed.
    how = None if as_json else presentation(
        precision=precision, focus=focus, map_view=map_view, top=top, overview=overview,
        max_rows=max_rows, max_cols=max_cols, max_heads=max_heads, step=step, export=export,
    )  # fmt: skip
    refuse_two_models(config, sample, real_model, layer, head)
    if step and config == "-":
        usage("--step reads its keys from stdin, so the model cannot come from stdin too")
    if head is not None and only_heads is not None:
        usage("--head already cuts the trace to one head: --heads has nothing left to choose")
    if real_model is not None and (causal is not None or context is not None):
        usage("--causal and --context change a model file: a real model has its own mask")
    sentence = " ".join(words) if words else None
    with bad_input_fails():
        if real_model is not None:
            from attntrace.real.layer import layer_trace

            with progress_shown():
                trace = layer_trace(real_model, sentence, layer or 0, head)
        else:
            model = stdin_model(config)
            trace = traced(sentence, config=None if model is not None else config,
                           sample=sample, model=model, causal=causal, context=context)  # fmt: skip
    if how is None:
        from attntrace.files.serialize import dump_bytes

        with bad_input_fails():
            stages, heads = json_filters(trace, only_stages, only_heads)
        with quiet_pipe():  # plain dicts to stdout: the renderers are not even imported
            sys.stdout.flush()
            sys.stdout.buffer.write(dump_bytes(trace, stages=stages, heads=heads) + b"\n")
        return
    show(trace, how)


def stdin_model(config: str | None) -> ModelSpec | None:
    """The model file on stdin for ``--config -``; None for any other --config."""
    if config != "-":
        return None
    from attntrace.files.model_file import load_model_stdin

    return load_model_stdin()


def refuse_two_models(
    config: str | None,
    sample: str | None,
    real_model: str | None = None,
    layer: int | None = None,
    head: int | None = None,
) -> None:
    """A usage error naming the flags (choose_model would name its Python arguments)."""
    given = [flag for flag, value in (("--config", config), ("--sample", sample),
             ("--model", real_model)) if value is not None]  # fmt: skip
    if len(given) > 1:
        usage(f"{given[0]} and {given[1]} both name a model: give one of them")
    parts = [flag for flag, value in (("--layer", layer), ("--head", head)) if value is not None]
    if real_model is None and parts:
        usage(f"{flags_choose(parts)} part of a real model: add --model NAME")


def json_filters(
    trace: Trace, stages: str | None, heads: str | None
) -> tuple[list[str] | None, list[int] | None]:
    """--stages NAMES and --heads LIST, checked against the trace."""
    from attntrace.errors import InputError

    names = None if stages is None else [n.strip() for n in stages.split(",") if n.strip()]
    known = list(dict.fromkeys(trace.names))
    if names == []:
        raise InputError(field="--stages", expected=f"names from {', '.join(known)}",
                         found=repr(stages))  # fmt: skip
    for name in names or []:
        if name not in known:
            raise InputError(field="--stages", expected=f"names from {', '.join(known)}",
                             found=repr(name))  # fmt: skip
    numbers = None
    if heads is not None:
        parts = [p.strip() for p in heads.split(",") if p.strip()]
        last = trace.model.heads - 1
        if not all(p.isdecimal() and int(p) <= last for p in parts) or not parts:
            raise InputError(field="--heads", expected=f"head numbers from 0 to {last}, "
                             "comma-separated", found=repr(heads))  # fmt: skip
        numbers = sorted({int(p) for p in parts})  # 1,1 is head 1
    return names, numbers


@app.command()
def render(
    source: Annotated[
        str, typer.Argument(metavar="TRACE", help="A saved `run --json` trace, or - for stdin.")
    ],
    step: Step = False,
    precision: Precision = None,
    focus: FocusFlag = None,
    map_view: Map = False,
    top: Top = None,
    overview: Overview = False,
    max_rows: MaxRows = 20,
    max_cols: MaxCols = None,
    max_heads: MaxHeads = 4,
    export: Export = None,
) -> None:
    """Show a saved trace (from `run --json`) as `run` would, without recomputing it."""
    from attntrace.files.reading import read_stdin, read_text
    from attntrace.files.replay import SAVED_TRACE, load_trace

    how = presentation(
        precision=precision, focus=focus, map_view=map_view, top=top, overview=overview,
        max_rows=max_rows, max_cols=max_cols, max_heads=max_heads, step=step, export=export,
    )  # fmt: skip
    if step and source == "-":
        usage("--step reads its keys from stdin, so the trace cannot come from stdin too")
    name = "stdin" if source == "-" else source
    with bad_input_fails(name):
        text = read_stdin(SAVED_TRACE) if source == "-" else read_text(Path(source), SAVED_TRACE)
        trace = load_trace(text, name)
    show(trace, how)


@app.command(context_settings={"ignore_unknown_options": True})
def softmax(
    values: Annotated[
        list[str],
        typer.Argument(metavar="V1 V2 ...", help="One row of scores; negative numbers work."),
    ],
    as_json: Annotated[
        bool, typer.Option("--json", metavar="", help="Write the numbers as JSON.")
    ] = False,
    precision: Annotated[
        int, typer.Option(min=0, max=15, metavar="N", help="Digits after the point.")
    ] = 2,
) -> None:
    """The softmax walkthrough of one row: exp, sum, shares, and why the max is subtracted."""
    from attntrace.core.softmax_walk import parse_values, walk

    with bad_input_fails():
        steps = walk(parse_values(values))
    with quiet_pipe():
        if as_json:
            from attntrace.files.serialize import walk_dumps

            sys.stdout.write(walk_dumps(steps) + "\n")
            return
        from attntrace.render.softmax_walk import walkthrough

        stdout_console().print(walkthrough(steps, precision), crop=False)  # a number whole


@app.command()
def decode(
    words: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="SENTENCE",
            help="The sentence to decode token by token; default: the model file's.",
            show_default=False,
        ),
    ] = None,
    config: Config = None,
    sample: Sample = None,
    real_model: RealModelName = None,
    layer: Layer = None,
    head: Head = None,
    step: Annotated[
        bool, typer.Option("--step", metavar="", help="One decoding step per screen.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", metavar="", help="Write every step's numbers as JSON.")
    ] = False,
    precision: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=15,
            metavar="N",
            help="Digits after the point (default 4).",
            show_default=False,
        ),
    ] = None,
    max_rows: MaxRows = 20,
    max_cols: MaxCols = None,
) -> None:
    """Decode SENTENCE one token at a time through a KV cache; compare with full attention.

    With --model, a layer of a real decoder (smollm2) replays its own KV cache."""
    from attntrace.api import choose_model, sentence_tokens
    from attntrace.core.kvcache import decode as run_decode

    if step and as_json:
        usage("--json writes every step for programs: it does not mix with --step")
    if head is not None and as_json:
        usage("decode --json writes every head's numbers: leave out --head (pick with jq)")
    refuse_two_models(config, sample, real_model, layer, head)
    if step and config == "-":
        usage("--step reads its keys from stdin, so the model cannot come from stdin too")
    sentence = " ".join(words) if words else None
    with bad_input_fails():
        if real_model is not None:
            from attntrace.real.layer import decoder_layer

            with progress_shown():
                model, tokens = decoder_layer(real_model, sentence, layer or 0, head)
                result = run_decode(model, tokens)
        else:
            piped = stdin_model(config)
            model = choose_model(None if piped is not None else config, sample, piped)
            tokens = tuple(sentence_tokens(sentence, model))
            result = run_decode(model, tokens)
    if as_json:
        from attntrace.files.serialize import decode_to_dict, plain_dumps

        with quiet_pipe():
            sys.stdout.write(plain_dumps(decode_to_dict(result)) + "\n")
        return
    from attntrace.render.decode import screens

    view = presentation(precision=precision, max_rows=max_rows, max_cols=max_cols).view
    pages = screens(result, view, head)
    console = stdout_console()
    with quiet_pipe():
        if not step:
            for index, page in enumerate(pages):
                if index:
                    console.print()
                page(console)
            return
        from attntrace.render.step import page_through

        with interrupted():
            page_through(console, pages, read_line, echo=not stdin_is_terminal(),
                         prompt_console=prompt_console())  # fmt: skip


@app.command("kv-cache")
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


@app.command("models")
def models_command(
    as_json: Annotated[
        bool, typer.Option("--json", metavar="", help="Write the list as JSON.")
    ] = False,
) -> None:
    """List the real trained models attntrace can trace, installed or not."""
    from attntrace.real.catalog import CATALOG

    with quiet_pipe():
        if as_json:
            from attntrace.files.serialize import models_to_dict, plain_dumps

            sys.stdout.write(plain_dumps(models_to_dict(CATALOG)) + "\n")
            return
        from attntrace.render.real import RightTrimmed, model_table

        stdout_console().print(RightTrimmed(model_table(CATALOG)))


@app.command("heads")
def heads_command(
    words: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="SENTENCE",
            help="The sentence (default: the animal sentence).",
            show_default=False,
        ),
    ] = None,
    real_model: Annotated[
        str, typer.Option("--model", "-m", metavar="NAME", help="A real model (see `models`).")
    ] = "minilm",
    query: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="TOKEN",
            show_default=False,
            help="The query token or its position (default sentence: it).",
        ),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            "--to",
            metavar="TOKEN",
            show_default=False,
            help="The key token or its position (default sentence: animal).",
        ),
    ] = None,
    top: Annotated[
        int, typer.Option(min=0, metavar="N", help="How many heads to list (0: all).")
    ] = 10,
    as_json: Annotated[
        bool, typer.Option("--json", metavar="", help="Write every head's weight as JSON.")
    ] = False,
) -> None:
    """Rank every layer × head by the weight one token puts on another.

    The heads worth stepping through with `run --model --layer --head`."""
    from attntrace.real.layer import rank_heads

    with bad_input_fails(), progress_shown():
        ranking = rank_heads(real_model, " ".join(words) if words else None, query, key)
    with quiet_pipe():
        if as_json:
            from attntrace.files.serialize import plain_dumps, ranking_to_dict

            sys.stdout.write(plain_dumps(ranking_to_dict(ranking)) + "\n")
            return
        from attntrace.render.real import ranking_lines

        console = stdout_console()
        for line in ranking_lines(ranking, top):
            console.print(line, soft_wrap=True)  # the next: line must paste as one line


@app.command("samples")
def samples_command(
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="[NAME]",
            help="Print this sample's model file (to read, or to start your own from).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """List the sample models that ship with attntrace, or print one of them."""
    from attntrace.files.samples import sample_text, summaries

    if name is not None:
        with bad_input_fails():
            text = sample_text(name)
        with quiet_pipe():
            sys.stdout.write(text)
        return

    from attntrace.render.listing import sample_lines

    with quiet_pipe():
        console = stdout_console()
        for line in sample_lines(summaries()):
            console.print(line, no_wrap=True, overflow="ellipsis")


def main() -> None:
    """Console-script entry point."""
    if not streams_open():
        exit_now(1)
    sane_terminal_size()  # for --help too, which typer draws before any command runs
    try:
        code = run_app(app)
    except SystemExit as done:
        # Rich (printing --help) answers a closed pipe by pointing stdout at /dev/null and
        # exiting 1; a reader that left early is no failure: exit 0, as everywhere else.
        # Only Rich's own exit is read this way, not a code attntrace returned.
        if done.code == 1 and stdout_is_devnull():
            raise SystemExit(0) from None
        raise
    except OSError as error:
        if error.errno not in FULL:  # not the output's fault: a bug, with its traceback
            raise
        # the commands' output is guarded by quiet_pipe; this is typer's --help, --version
        drop_stdout()
        sys.stderr.write(f"attntrace: error: cannot write the output: {error.strerror}\n")
        code = 1
    exit_now(code)
