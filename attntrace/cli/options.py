"""The flags more than one command takes, declared once: the same name, metavar and help.

``--json`` is one flag on six commands, each saying what it writes: :func:`json_flag`
declares it with that command's help. A flag a single command takes stays in that
command's signature. An option without a name of its own here (``Layer``,
``Precision``, ...) is named after the parameter that takes it (``layer`` ->
``--layer``), so the commands keep these parameter names.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

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
# Edits to the model file or sample before it is traced, for `run`, `check` and `diff`
# (docs/check.md: the paths, the values, the order).
Edits = Annotated[
    list[str] | None,
    typer.Option("--set", metavar="PATH=VALUE", show_default=False,
                 help="Edit the model first (repeatable): WQ[0][1]=0.5, embeddings.cat=[1,0], "
                 "causal=true."),
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
# A model file's mask and context, overridden, for `run` and `check`.
Causal = Annotated[
    bool | None,
    typer.Option("--causal/--no-causal",
                 help="Mask later tokens (a decoder), overriding the model file.",
                 show_default=False),
]  # fmt: skip
Context = Annotated[
    str | None,
    typer.Option(metavar="SENTENCE",
                 help="Cross-attention: take K and V from this sentence (overrides the file)."),
]  # fmt: skip
# The loss of `grad` and `train` (docs/learning.md#the-losses).
LossFlag = Annotated[
    str | None,
    typer.Option("--loss", metavar="LOSS", show_default=False,
                 help="attend (−log softmax[from, to]) or mse (against the model's target); "
                 "default: attend with --from/--to, else mse with a target."),
]  # fmt: skip
FromToken = Annotated[
    str | None,
    typer.Option("--from", metavar="TOKEN", show_default=False,
                 help="The attend loss's query token (a token, it#7, or an index)."),
]  # fmt: skip
# --head of grad and train: the attend loss's head (not `run --model`'s head to trace).
LossHead = Annotated[
    int | None,
    typer.Option("--head", min=0, metavar="H", show_default=False,
                 help="The attend loss of head H alone (default: summed over every head)."),
]  # fmt: skip
ToToken = Annotated[
    str | None,
    typer.Option("--to", metavar="TOKEN", show_default=False,
                 help="The key token it should look at."),
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
# --precision for the commands without --map (check, diff): tables only.
TablePrecision = Annotated[
    int | None,
    typer.Option("--precision", min=0, max=15, metavar="N",
                 help="Digits after the point in the tables (default 4).", show_default=False),
]  # fmt: skip
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
PageExport = Annotated[  # decode, flash, grad, check and diff: the explorer page only
    str | None,
    typer.Option("--export", metavar="FILE",
                 help="Also save the explorer page: one self-contained .html file.",
                 show_default=False),
]  # fmt: skip
Export = Annotated[  # a str: a Path would make 'x.svg/' into x.svg and '' into '.'
    str | None,
    typer.Option(
        metavar="FILE",
        help="Also save what is shown as .svg or .txt, or the explorer page as .html.",
        show_default=False,
    ),
]


def sentence_argument(help_text: str) -> Any:
    """``SENTENCE``: the words of run, check, decode and heads (quoted or not, joined with
    spaces); only its help, what the default is, differs
    (``Annotated[list[str] | None, sentence_argument("...")]``)."""
    return typer.Argument(metavar="SENTENCE", help=help_text, show_default=False)


def json_flag(help_text: str) -> Any:
    """``--json``: the same flag on run, softmax, decode, kv-cache, models and heads; only
    its help, what it writes, differs (``Annotated[bool, json_flag("...")]``)."""
    return typer.Option("--json", metavar="", help=help_text)


# The dtype `run` and `decode` compute in (docs/kernels.md, "The casting rule").
DType = Annotated[
    str | None,
    typer.Option("--dtype", metavar="D", show_default=False,
                 help="Compute in float32, float16 or bfloat16 by the frameworks' casting "
                 "rule (default float64)."),
]  # fmt: skip
SoftmaxDType = Annotated[
    str | None,
    typer.Option("--softmax-dtype", metavar="D", show_default=False,
                 help="With --dtype: the softmax's dtype, float32 (default) or D itself."),
]  # fmt: skip
AccumulateFlag = Annotated[
    str | None,
    typer.Option("--accumulate", metavar="WHERE", show_default=False,
                 help="With --dtype: matrix products summed in float32 (default) or dtype."),
]  # fmt: skip
