"""--loss, --from, --to and --head, as `grad` and `train` take them, made one
:class:`attntrace.learning.objective.Objective` by the default rules of
docs/learning.md#the-losses (attend with --from/--to, else mse with a target).

The flags are checked here, by their names, before anything is computed; whether the
tokens are in the sentence is the objective's to say, once the sentence is known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attntrace.cli.exits import usage

if TYPE_CHECKING:
    from attntrace.learning.objective import Objective


def objective_from_flags(
    loss: str | None,
    from_token: str | None,
    to_token: str | None,
    head: int | None,
    *,
    has_target: bool,
    head_elsewhere: bool = False,
) -> Objective:
    """The loss the flags name; a usage error (exit 2) where they name none, or one
    that does not take them. ``head_elsewhere``: --head has another use too (grad's
    --focus), so under mse, which reads every head, it is left to that use rather than
    refused (the objective then has no head)."""
    from attntrace.learning.objective import LOSS_KINDS, Objective

    tokens = [
        flag for flag, value in (("--from", from_token), ("--to", to_token)) if value is not None
    ]
    if loss is None:
        if tokens:
            loss = "attend"
        elif has_target:
            loss = "mse"
        else:
            usage(
                "choose a loss: --from TOKEN --to TOKEN (the attend loss), or --loss mse "
                "with a target: in the model file"
            )
    if loss not in LOSS_KINDS:
        usage(f"--loss: expected {' or '.join(LOSS_KINDS)}, got {loss!r}")
    if loss == "attend" and len(tokens) < 2:
        missing = "--to" if tokens == ["--from"] else "--from"
        usage(f"the attend loss needs both tokens: add {missing} TOKEN")
    if loss == "mse" and tokens:
        usage(
            f"{' and '.join(tokens)} name the attend loss's tokens: --loss mse reads the "
            "model's target instead"
        )
    if loss == "mse" and head is not None:
        if not head_elsewhere:
            usage("--head chooses the attend loss's head: --loss mse reads every head")
        head = None
    return Objective(loss, from_token, to_token, head)


def check_head(head: int | None, heads: int) -> None:
    """--head names one of the model's heads: an :class:`InputError` naming the flag
    (``--head: expected a head from 0 to 0, got 1``) where it does not, before anything
    is computed."""
    from attntrace.errors import InputError

    if head is not None and head >= heads:
        raise InputError(field="--head", expected=f"a head from 0 to {heads - 1}", found=str(head))
