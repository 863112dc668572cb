"""The direction of imports (DESIGN.md): the compute core never reaches the renderers.

ruff's banned-api catches rich/typer/yaml at any depth; this test also catches the core
importing attntrace.render or attntrace.cli, even inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "attntrace"
# Modules that are not core: the CLI, the renderers, and the one YAML reader.
EDGE = {"cli.py", "__main__.py", "yaml_file.py"}
# trace.py hands a Trace to the renderer for print(trace), Rich and Jupyter display.
DISPLAY_HOOKS = {"trace.py": {"attntrace.render.tables"}}


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


CORE = sorted(p for p in PACKAGE.glob("*.py") if p.name not in EDGE)


@pytest.mark.parametrize("path", CORE, ids=[p.name for p in CORE])
def test_core_modules_import_no_ui(path: Path) -> None:
    allowed = DISPLAY_HOOKS.get(path.name, set())
    forbidden = {
        name
        for name in imported_modules(path)
        if name.split(".")[0] in {"rich", "typer", "yaml"}
        or (name.startswith(("attntrace.render", "attntrace.cli")) and name not in allowed)
    }
    assert forbidden == set(), f"{path.name} imports {sorted(forbidden)}"


def test_the_core_list_is_not_empty() -> None:
    assert {"attention.py", "ops.py", "trace.py", "model_file.py"} <= {p.name for p in CORE}
