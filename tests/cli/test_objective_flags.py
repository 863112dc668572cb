"""--loss, --from, --to and --head made one Objective (cli/objective_flags): the default
rules of docs/learning.md#the-losses, and each flag that does not fit as one usage line."""

from __future__ import annotations

import pytest
import typer

from attntrace.cli.objective_flags import objective_from_flags
from attntrace.learning.objective import Objective


@pytest.mark.parametrize(
    ("flags", "has_target", "expected"),
    [
        ((None, "it", "animal", None), False, Objective("attend", "it", "animal")),
        ((None, "it", "animal", 2), True, Objective("attend", "it", "animal", 2)),
        ((None, None, None, None), True, Objective("mse")),
        (("attend", "it", "animal", None), True, Objective("attend", "it", "animal")),
        (("mse", None, None, None), True, Objective("mse")),
    ],
)
def test_the_default_loss_follows_the_flags(
    flags: tuple[str | None, str | None, str | None, int | None],
    has_target: bool,
    expected: Objective,
) -> None:
    assert objective_from_flags(*flags, has_target=has_target) == expected


@pytest.mark.parametrize(
    ("flags", "has_target", "line"),
    [
        ((None, None, None, None), False, "choose a loss: --from TOKEN --to TOKEN"),
        (("hinge", None, None, None), True, "--loss: expected attend or mse, got 'hinge'"),
        ((None, "it", None, None), False, "the attend loss needs both tokens: add --to TOKEN"),
        ((None, None, "it", None), False, "the attend loss needs both tokens: add --from TOKEN"),
        (("attend", None, None, None), True, "add --from TOKEN"),
        (("mse", "it", None, None), True, "--from name the attend loss's tokens"),
        (("mse", None, None, 1), True, "--head chooses the attend loss's head"),
    ],
)
def test_flags_that_name_no_loss_are_one_usage_line(
    flags: tuple[str | None, str | None, str | None, int | None],
    has_target: bool,
    line: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(typer.Exit) as ended:
        objective_from_flags(*flags, has_target=has_target)
    assert ended.value.exit_code == 2
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1
    assert stderr.startswith("attntrace: error: ")
    assert line in stderr


def test_a_head_with_another_use_is_left_to_it_under_mse() -> None:
    # grad --focus --head 1 under mse: the head is the focus's, the loss reads every head
    objective = objective_from_flags("mse", None, None, 1, has_target=True, head_elsewhere=True)
    assert objective == Objective("mse")
    # under the attend loss the head is still the loss's
    attend = objective_from_flags(None, "it", "animal", 1, has_target=False, head_elsewhere=True)
    assert attend == Objective("attend", "it", "animal", 1)
