"""The direction of imports (docs/architecture.md): each room imports only the rooms below it.

ruff's banned-api catches rich/typer/yaml at any depth; this test checks every module of
every subpackage against the room table, even imports inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from paths import ROOT

PACKAGE = ROOT / "attntrace"

# The top-level modules everything may use: the error type, safe text, argument checks
# (and the package's __version__).
BASE = {"errors", "visible", "arguments", "environment"}
# Each room, and the rooms its modules may import (besides itself, the base and numpy).
ROOMS: dict[str, set[str]] = {
    "base": set(),
    "core": set(),
    # serialize writes the real models' `models`/`heads` documents; user_arrays reads
    # a person's .safetensors with real's reader
    "files": {"core", "real"},
    "real": {"core", "files"},
    "render": {"core", "files", "real"},
    # the explorer page: the trace's JSON (files), each stage's words (render/explain)
    "page": {"core", "files", "render"},
    "api": {"core", "files", "real"},
    # attntrace/testing.py: check's report as an AssertionError, drawn by the renderer
    "testing": {"api", "core", "render"},
    "cli": {"core", "files", "real", "render", "api", "page"},
    # attntrace/__init__.py: the public names, lazily, and the renderer a Trace is shown by
    "package": {"api", "core", "files", "render", "page"},
    "main": {"cli"},
}
# Third-party packages only some rooms may import.
THIRD_PARTY = {"rich": {"render", "cli"}, "typer": {"cli"}, "yaml": {"files/yaml_file.py"}}


def room_of_module(name: str) -> str:
    """The room of a dotted module name inside attntrace."""
    parts = name.split(".")
    if len(parts) == 1:
        return "package"
    if parts[1] in BASE or parts[1] == "__version__":
        return "base"
    if parts[1] == "__main__":
        return "main"
    return parts[1]


def room_of_path(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    if len(relative.parts) > 1:
        return relative.parts[0]
    name = relative.stem
    return {"__init__": "package", "__main__": "main"}.get(name, "base" if name in BASE else name)


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "attntrace":
                names.update(f"attntrace.{alias.name}" for alias in node.names)
            else:
                names.add(node.module)
    return names


def may_import(key: str, room: str, name: str) -> bool:
    """Whether the module at ``key`` (in ``room``) may import the module ``name``."""
    top = name.split(".")[0]
    if top in THIRD_PARTY:
        return bool(THIRD_PARTY[top] & {room, key})
    if top != "attntrace":
        return True
    return room_of_module(name) in ROOMS[room] | {room, "base"}


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_each_module_imports_only_the_rooms_below_it(path: Path) -> None:
    key = path.relative_to(PACKAGE).as_posix()
    room = room_of_path(path)
    assert room in ROOMS, f"{key} is in no room: add it to ROOMS and docs/architecture.md"
    forbidden = {name for name in imported_modules(path) if not may_import(key, room, name)}
    assert forbidden == set(), f"{key} ({room}) imports {sorted(forbidden)}"


def test_every_room_holds_modules() -> None:
    """The table and the package agree: no room without modules, no module in no room."""
    assert {room_of_path(p) for p in MODULES} == set(ROOMS)
    assert len(MODULES) > 50


def test_a_forbidden_import_is_caught(tmp_path: Path) -> None:
    """The checker itself: a core module importing the renderer is named."""
    module = tmp_path / "bad.py"
    module.write_text("def f():\n    from attntrace.render import stage_table\n", encoding="utf-8")
    assert "attntrace.render" in imported_modules(module)
    assert not may_import("core/bad.py", "core", "attntrace.render")
    assert not may_import("core/bad.py", "core", "rich.table")
    assert not may_import("files/model_file.py", "files", "yaml")
    assert may_import("files/yaml_file.py", "files", "yaml")
    assert may_import("render/stage_table.py", "render", "attntrace.core.trace")
