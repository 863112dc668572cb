"""Step mode's hints say only what its keys do (issue 30, "Hints and keys disagree"):
the prompt offers a key only where it acts, a key says one thing wherever it has
nothing to do, and the numbers the help offers are the ones the screens count."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import invoke

ROOT = Path(__file__).resolve().parents[2]


def prompts(output: str) -> dict[str, str]:
    """Each screen's heading (``Stage 17 of 17 · projected``) to the prompt under it."""
    found = re.findall(r"(Stage \d+ of \d+ · \S+)(?:.|\n)*?\n(\([^\n]*\)) > ", output)
    return dict(found)


def test_h_is_offered_only_on_a_stage_of_one_head() -> None:
    out = invoke("run", "-s", "two-heads", "--step", input="scores\n1\n17\nq\n").stdout
    shown = prompts(out)
    assert "h next head" in shown["Stage 5 of 17 · scores"]
    for shared in ("Stage 1 of 17 · X", "Stage 17 of 17 · projected"):
        assert "h" not in shown[shared].replace("help", ""), shared


def test_h_on_a_one_head_model_says_one_thing_everywhere() -> None:
    out = invoke("run", "--step", input="h\n5\nh\nq\n").stdout
    said = re.findall(r"help\) > h\n(.*)\n", out)
    assert said == ["this model has one head", "this model has one head"]


def test_decode_h_says_what_the_docs_say() -> None:
    """docs/cli.md said decode --step takes "the same keys" as run's, h among them, and
    h was an unknown key."""
    out = invoke("decode", "-s", "causal", "--step", input="h\nq\n").stdout
    assert "unknown key" not in out
    assert "every head" in re.findall(r"help\) > h\n(.*)\n", out)[0]
    docs = " ".join((ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split())
    assert "pages through its steps with the same keys" not in docs


def _jump_range(out: str) -> tuple[int, int]:
    first, last = re.search(r"(\d+)-(\d+): jump", out).groups()  # type: ignore[union-attr]
    return int(first), int(last)


def test_flash_help_jumps_over_the_tiles_it_counts() -> None:
    out = invoke("flash", "--step", input="?\n5\nsummary\nq\n").stdout
    total = int(re.search(r"Tile 1 of (\d+) computed", out).group(1))  # type: ignore[union-attr]
    assert _jump_range(out) == (1, total)
    assert f"no tile {total + 1}: tiles are numbered 1 to {total}" in out
    assert "tiles: " in out.split("help) > summary")[1]  # the summary page


def test_decode_help_jumps_over_the_steps_it_counts() -> None:
    out = invoke("decode", "-s", "causal", "--step", input="?\n7\nq\n").stdout
    total = int(re.search(r"Step 1 of (\d+) ", out).group(1))  # type: ignore[union-attr]
    assert _jump_range(out) == (1, total)
    assert f"no step {total + 1}: steps are numbered 1 to {total}" in out
