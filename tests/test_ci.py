"""CI proves both ends of the dependency ranges: every run-time dependency has a floor
that .ci/run installs and tests."""

from __future__ import annotations

import importlib.util
import re

from paths import ROOT


def test_every_run_time_dependency_is_pinned_at_its_floor_for_the_lowest_run() -> None:
    spec = importlib.util.spec_from_file_location("lowest", ROOT / ".ci" / "lowest.py")
    assert spec is not None
    assert spec.loader is not None
    lowest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lowest)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = pyproject.split("dependencies = [", 1)[1].split("\n]", 1)[0]
    named = re.findall(r'^\s*"([A-Za-z0-9_.-]+)>=([^,"]+)', block, re.MULTILINE)
    assert {name for name, _ in named} == {"numpy", "typer", "rich", "PyYAML", "orjson", "textual"}
    assert lowest.floors(ROOT / "pyproject.toml") == [f"{n}=={v}" for n, v in named]
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install -q -c "$logs/floors.txt"' in run
    assert 'python3 .ci/lowest.py > "$logs/floors.txt"' in run


def test_ci_runs_the_long_runs_the_readme_command_leaves_out() -> None:
    """The README's command deselects the long runs; .ci/run runs them after it, and the
    floors' leg runs everything."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"-m", "not long"' in pyproject
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pytest -m long $ignored;" in run
    assert "pytest -m long -p no:cacheprovider $oracles" in run
    assert 'HYPOTHESIS_PROFILE=dev pytest -m "long or not long"' in run
