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
# A capability's views (its views/ folder) may import the toolkit (ui) as well; nothing
# else of a capability may.
ROOMS: dict[str, set[str]] = {
    "base": set(),
    "kernel": set(),
    "modelfile": {"kernel"},
    # the shared Rich toolkit
    "ui": {"kernel"},
    "forward": {"kernel", "modelfile"},
    "decode": {"kernel", "forward"},
    # user_arrays reads a person's .safetensors with real's reader
    "checking": {"kernel", "modelfile", "forward", "real"},
    "learning": {"kernel", "forward"},
    # a student's function judged case by case, each failure diagnosed by check
    "grading": {"kernel", "modelfile", "forward", "checking", "api"},
    # a learner's answer for a hidden cell of the trace, and exercise files
    "quiz": {"kernel", "modelfile", "forward", "real"},
    "kernels": {"kernel", "forward"},
    "real": {"kernel", "forward"},
    # the explorer page: each capability's JSON documents and each stage's words
    "page": {"kernel", "forward", "decode", "checking", "learning", "kernels"},
    # print(trace) and Jupyter: a trace's or a check report's tables, and the page
    "display": {"kernel", "forward", "checking", "ui", "page"},
    "api": {"kernel", "modelfile", "forward", "checking", "real"},
    # attntrace/testing.py: check's report as an AssertionError, drawn by its view
    "testing": {"api", "kernel", "checking"},
    # the full-screen explorer: a trace, decode's cache and grad's gradients, drawn with
    # Textual and the toolkit
    "explore": {
        "kernel",
        "modelfile",
        "forward",
        "decode",
        "learning",
        "kernels",
        "real",
        "ui",
    },
    "cli": {
        "explore",
        "kernel",
        "modelfile",
        "ui",
        "forward",
        "decode",
        "checking",
        "grading",
        "quiz",
        "learning",
        "kernels",
        "real",
        "page",
        "api",
    },
    # attntrace/__init__.py: the public names, lazily; the display hook, with the page in
    # Jupyter
    "package": {"api", "kernel", "modelfile", "display", "page"},
    "main": {"cli"},
}
# The rooms whose modules may import Rich and the toolkit: besides these, a capability's
# views/ folder. (testing.py draws check's report as an AssertionError's text.)
DRAWS = {"ui", "display", "testing", "cli", "explore"}
# Third-party packages only some rooms may import ("views": any capability's views/).
# testing.py draws through check's view, never with Rich itself.
THIRD_PARTY = {
    "rich": (DRAWS - {"testing"}) | {"views"},
    "typer": {"cli"},
    "yaml": {"modelfile/yaml_file.py"},
    # the explorer alone draws full-screen; the CLI imports it inside `explore`
    "textual": {"explore"},
    # Hugging Face's tokenizer, for a model's tokenizer.json (an extra: attntrace[hf])
    "tokenizers": {"real/tokenizers/hf_json.py"},
}


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


def draws(key: str, room: str) -> bool:
    """Whether the module at ``key`` is a view or the toolkit: it may use Rich."""
    return room in DRAWS or "views" in key.split("/")[:-1]


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
        allowed = THIRD_PARTY[top]
        return bool(allowed & {room, key}) or ("views" in allowed and draws(key, room))
    if top != "attntrace":
        return True
    target = room_of_module(name)
    if target == "ui" or ".views" in name:
        # the toolkit and any view are for views, the toolkit and the drawing rooms
        return draws(key, room) and (target in ROOMS[room] | {room, "base", "ui"})
    return target in ROOMS[room] | {room, "base"}


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
    module.write_text("def f():\n    from attntrace.ui import stage_table\n", encoding="utf-8")
    assert "attntrace.ui" in imported_modules(module)
    assert not may_import("kernel/bad.py", "kernel", "attntrace.ui")
    assert not may_import("kernel/bad.py", "kernel", "rich.table")
    assert not may_import("modelfile/model_file.py", "modelfile", "yaml")
    assert may_import("modelfile/yaml_file.py", "modelfile", "yaml")
    assert may_import("ui/stage_table.py", "ui", "attntrace.kernel.trace")
    # a capability's computation draws nothing; its views may
    assert not may_import("decode/decoder.py", "decode", "rich.table")
    assert not may_import("decode/decoder.py", "decode", "attntrace.ui")
    assert may_import("decode/views/decode.py", "decode", "attntrace.ui.numbers")
    assert may_import("decode/views/decode.py", "decode", "attntrace.forward.views.step")
    assert not may_import("decode/decoder.py", "decode", "attntrace.forward.views.step")
    # imports go one way: the kernel imports no capability, a capability not the page
    assert not may_import("kernel/trace.py", "kernel", "attntrace.forward.dtype")
    assert not may_import("forward/attention.py", "forward", "attntrace.decode.decoder")
    assert not may_import("forward/attention.py", "forward", "attntrace.page.build")
    # Textual is the explorer's alone: not the CLI's, not a view's
    assert may_import("explore/app.py", "explore", "textual.app")
    assert not may_import("cli/explore.py", "cli", "textual.app")
    assert not may_import("forward/views/step.py", "forward", "textual.widgets")
    assert may_import("explore/app.py", "explore", "attntrace.ui.shown")
    assert not may_import("explore/app.py", "explore", "attntrace.cli.exits")


def test_no_subpackage_shadows_a_public_name() -> None:
    """``attntrace.check`` is the API's function: a subpackage or module of that name
    would replace it on the package as soon as anything imported it."""
    import attntrace

    children = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()}
    assert set(attntrace.__all__) & children == set()
