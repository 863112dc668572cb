"""Print pins of every run-time dependency at the floor of its range in pyproject.toml.

``.ci/run`` installs with these as constraints to prove the floors: a range's lowest
version must run the whole suite as its newest does. Each dependency needs a ``>=``
floor; one without is an error, since its floor could not be proven.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def dependencies(pyproject: Path) -> list[str]:
    """The quoted strings of ``[project]``'s ``dependencies = [...]`` (tomllib is not in
    Python 3.10, which the project supports)."""
    text = pyproject.read_text(encoding="utf-8")
    block = re.search(r"^dependencies = \[(.*?)^\]", text, re.MULTILINE | re.DOTALL)
    if block is None:
        sys.exit(f"{pyproject}: no dependencies = [...] list")
    lines = (line.split("#", 1)[0] for line in block[1].splitlines())
    return [quoted for line in lines for quoted in re.findall(r'"([^"]+)"', line)]


def floors(pyproject: Path) -> list[str]:
    pins = []
    for requirement in dependencies(pyproject):
        match = re.match(r"^\s*([A-Za-z0-9_.-]+)\s*(.*)$", requirement)
        assert match is not None, requirement
        name, spec = match.groups()
        floor = re.search(r">=\s*([0-9][^,;\s]*)", spec)
        if floor is None:
            sys.exit(f"{pyproject}: {requirement!r} has no >= floor to test")
        pins.append(f"{name}=={floor[1]}")
    return pins


if __name__ == "__main__":
    print("\n".join(floors(ROOT / "pyproject.toml")))
