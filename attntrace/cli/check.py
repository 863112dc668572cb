"""`check`: a person's own saved arrays against the trace, stage by stage (docs/check.md).

Exit codes as `cmp` and `diff` use them: 0 every given stage matches, 1 one differs,
2 bad input (the arrays' file, the model, the flags).
"""

from __future__ import annotations

from typing import Annotated

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails
from attntrace.cli.model_flags import ModelFlags, model_flags
from attntrace.cli.options import PageExport, TablePrecision, json_flag, sentence_argument
from attntrace.cli.saved import page_target


# --head here compares one head of any model (not run's "with --model"); --help lists
# --set after check's own --rtol, --atol and --layout.
@model_flags("config sample real_model layer head causal context rtol atol layout edits")
def check(
    file: Annotated[
        str,
        typer.Argument(metavar="FILE", help="Your arrays: .npz, .safetensors or .json, by stage."),
    ],
    words: Annotated[
        list[str] | None, sentence_argument("The sentence (default: the model's own).")
    ] = None,
    *,
    chosen: ModelFlags,
    head: Annotated[
        int | None,
        typer.Option(
            min=0, metavar="H", help="Compare this head alone (default: all).", show_default=False
        ),
    ] = None,
    rtol: Annotated[
        float | None,
        typer.Option(
            metavar="R",
            help="Relative tolerance (default: by the arrays' dtype).",
            show_default=False,
        ),
    ] = None,
    atol: Annotated[
        float | None,
        typer.Option(
            metavar="A",
            help="Absolute tolerance (default: by the arrays' dtype).",
            show_default=False,
        ),
    ] = None,
    layout: Annotated[
        str | None,
        typer.Option(
            metavar="L",
            help="heads-first or tokens-first, where a shape reads both ways.",
            show_default=False,
        ),
    ] = None,
    precision: TablePrecision = None,
    as_json: Annotated[bool, json_flag("Write the report as JSON to stdout.")] = False,
    export: PageExport = None,
) -> None:
    """Check your own attention's arrays against the trace; name the first mistake.

    Exit 0 when every stage you gave matches, 1 when one differs, 2 on bad input."""
    from attntrace.api import checked

    chosen.check()
    target = page_target(export)
    sentence = " ".join(words) if words else None
    with bad_input_fails():
        from attntrace.checking.user_arrays import read_user_arrays
        from attntrace.kernel import progress

        with progress.task(f"reading {file}"):
            given = read_user_arrays(file)
        config, model, edits = chosen.model_file()  # stdin's model is read after the arrays
        report = checked(
            given,
            sentence,
            config=config,
            sample=chosen.sample,
            model=model,
            trained=chosen.real_model,
            layer=chosen.layer,
            causal=chosen.causal,
            context=chosen.context,
            head=head,
            rtol=rtol,
            atol=atol,
            layout=layout,
            edits=edits,
            source=file,
        )

    def document() -> dict[str, object]:
        from attntrace.checking.check_json import check_to_dict

        return check_to_dict(report, file)

    def view() -> None:
        from attntrace.checking.views.report import check_view
        from attntrace.cli.pipes import stdout_console

        stdout_console().print(check_view(report, precision, source=file), crop=False)

    def page() -> str:
        from attntrace.page.build import check_page

        return check_page(report, file)

    emit(as_json, document, view, verdict=report.exit_code, export=target, page=page)
