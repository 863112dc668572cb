"""docs/ holds together: every relative link (and #anchor) in it and in the README
resolves, docs/README.md names every page, and docs/json.md names every schema file; and
its examples are real: every ``console`` block is run and compared, every ``pycon`` block
runs as a doctest."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest
from goldens import console_blocks, example_folder, run_shell, why_not_run
from helpers import WEIGHTS_MISSING
from paths import ROOT

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def anchors(page: Path) -> set[str]:
    """The #fragments of a page's headings, as GitHub makes them."""
    found: set[str] = set()
    for heading in re.findall(
        r"^#+ (.+)$", FENCED.sub("", page.read_text(encoding="utf-8")), re.MULTILINE
    ):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug if slug not in found else f"{slug}-1")
    return found


def links(page: Path) -> list[str]:
    prose = FENCED.sub("", page.read_text(encoding="utf-8"))
    return [t for t in LINK.findall(prose) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", [*PAGES, ROOT / "README.md"], ids=lambda p: p.name)
def test_every_link_resolves(page: Path) -> None:
    for target in links(page):
        path, _, fragment = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        assert destination.exists(), f"{page.name}: {target} leads nowhere"
        if fragment and destination.suffix == ".md":
            assert fragment in anchors(destination), f"{page.name}: no heading for {target}"


def test_the_index_names_every_page() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    assert [p.name for p in PAGES if p.name != "README.md" and p.name not in index] == []


def test_the_index_names_every_json_document() -> None:
    """docs/README.md's entry for json.md names each document json.md's table lists (its
    ``attntrace/NAME/vN``), so the index cannot fall behind a new document."""
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    entry = index[index.index("- [json.md](json.md)") :].split("\n- ", 1)[0]
    table = (DOCS / "json.md").read_text(encoding="utf-8").split("\n## ", 1)[0]
    documents = set(re.findall(r"`attntrace/([a-z-]+)/v\d+`", table))
    assert len(documents) >= 13
    assert sorted(name for name in documents if f"`{name}`" not in entry) == []


def test_json_md_names_every_schema_file() -> None:
    text = (DOCS / "json.md").read_text(encoding="utf-8")
    schemas = sorted((ROOT / "attntrace" / "schema").glob("*.schema.json"))
    assert schemas
    assert [s.name for s in schemas if s.name not in text] == []


def docs_examples() -> list[tuple[str, str, str]]:
    """Each ``console`` block of docs/ as (page, command, what it prints)."""
    return [
        (page.name, command, output)
        for page in PAGES
        for command, output in console_blocks(page.read_text(encoding="utf-8"))
    ]


@pytest.mark.parametrize(("page", "command", "output"), docs_examples(), ids=lambda x: x[:40])
def test_docs_console_example(page: str, command: str, output: str, tmp_path: Path) -> None:
    """docs/ shows real output: each block is run in an empty folder with a ``docs`` link
    (its commands name docs/examples/ files), as the README's are, and compared."""
    reason = why_not_run(command)
    if reason is not None:
        pytest.skip(reason)
    folder = example_folder(tmp_path, DOCS / page)
    assert run_shell(command, folder) == output, f"{page}: {command}"


PYCON_BLOCK = re.compile(r"```pycon\n(.*?)```", re.DOTALL)


def docs_python_examples() -> list[tuple[str, str]]:
    """Each ``pycon`` block of docs/ as (page, the block)."""
    return [
        (page.name, block)
        for page in PAGES
        for block in PYCON_BLOCK.findall(page.read_text(encoding="utf-8"))
    ]


@pytest.mark.parametrize(("page", "block"), docs_python_examples(), ids=lambda x: x[:40])
def test_docs_python_example(page: str, block: str) -> None:
    """Each ``pycon`` block of docs/ is a doctest, run in a fresh namespace as a new
    session, as the README's are."""
    if "attntrace.real" in block and WEIGHTS_MISSING is not None:
        pytest.skip(WEIGHTS_MISSING)
    test = doctest.DocTestParser().get_doctest(block, {}, page, str(DOCS / page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert len(test.examples) >= 5


def test_the_python_examples_are_there() -> None:
    """The session of the plain API (forward.md) and the one of the real models' layers
    (real-models.md), each the only ``pycon`` block of its page."""
    blocks: dict[str, list[str]] = {}
    for page, block in docs_python_examples():
        blocks.setdefault(page, []).append(block)
    assert len(blocks["forward.md"]) == 1
    assert "from attntrace import trace_attention" in blocks["forward.md"][0]
    assert "trace_attention(5)" in blocks["forward.md"][0]
    assert len(blocks["real-models.md"]) == 1
    assert "from attntrace.real.layer import" in blocks["real-models.md"][0]


def test_docs_show_examples() -> None:
    """The pages that promise examples have them (a regex gone wrong would find none)."""
    pages = {page for page, _, _ in docs_examples()}
    assert {"cli.md", "json.md", "model-file.md"} <= pages
    assert len(docs_examples()) >= 20


def architecture_trees() -> set[str]:
    """Every module docs/architecture.md's trees name, as a path under attntrace/.

    Each fenced tree starts at a folder (``kernel/``) or at ``attntrace/`` itself; a
    deeper ``name/`` line opens a subfolder; a line names one module or several
    (``a.py, b.py``) before its description."""
    note = (DOCS / "architecture.md").read_text(encoding="utf-8")
    named: set[str] = set()
    for block in re.findall(r"^```\n(.*?)^```", note[note.index("## The map") :], re.S | re.M):
        folders: list[tuple[int, str]] = []  # (indent, name) of the open folders
        for line in block.splitlines():
            indent = len(line) - len(line.lstrip())
            folders = [(i, name) for i, name in folders if i < indent]
            folder = re.match(r"^\s*(\w+)/(\s|$)", line)
            if folder:
                folders.append((indent, folder[1]))
                continue
            names = re.split(r"\s{2,}", line.strip())[0]
            prefix = "/".join(name for _, name in folders if name != "attntrace")
            named.update(f"{prefix}/{m}".lstrip("/") for m in re.findall(r"\w+\.py", names))
    return named


def test_the_architecture_note_names_every_module() -> None:
    """docs/architecture.md's map names each module of the package in its folder's tree,
    so it cannot drift from the code as modules are added or moved."""
    package = ROOT / "attntrace"
    modules = {
        p.relative_to(package).as_posix()
        for p in package.rglob("*.py")
        if p.name != "__init__.py" or p.parent == package
    }
    assert len(modules) > 50
    named = architecture_trees()
    assert sorted(modules - named) == [], "docs/architecture.md's map does not name these"
    assert sorted(named - modules) == [], "docs/architecture.md's map names modules not there"
