"""Rewrite the golden outputs from the code: ``tests/golden/*.txt`` and the examples' outputs.

The golden tests only compare, so they can fail; this is the one way to rewrite what
they compare with, after a change to the output that is meant. It makes each output
through the tests' own functions (``tests/goldens.py``), so it writes exactly what they
compare. Review the diff before committing it: every change in it is a change users see.

Run it from attntrace's own venv (the one the tests run in), from any folder::

    python tools/regenerate_goldens.py            # all three
    python tools/regenerate_goldens.py tables     # tests/golden/*.txt only
    python tools/regenerate_goldens.py readme     # README.md's console blocks only
    python tools/regenerate_goldens.py docs       # docs/*.md's console blocks only

Each example runs in an empty folder of its own, as its test runs it (docs/'s with a
``docs`` link to the repository's, for the files of docs/examples/). An example that cannot
run here (no ``jq``, a real model's weights not installed) is left as it is, and named.
The real models' goldens (``tests/golden/real/``) come from the reference
implementations instead: ``tools/make_goldens.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))  # goldens, helpers and paths, as pytest's pythonpath has them
# As tests/conftest.py does: real models note the files they hashed in a folder of their
# own, never in ~/.cache, so the examples run as they do under the tests.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="attntrace-goldens-cache-")

import goldens  # noqa: E402


def regenerate_tables() -> list[str]:
    """Write every tests/golden/NAME.txt; the names of those that changed."""
    changed = []
    for name in sorted(goldens.CASES):
        result = goldens.table_run(name)
        if result.exit_code != 0:  # a failure's output is no golden
            raise SystemExit(f"{name}: exit {result.exit_code}:\n{result.output}")
        path = goldens.table_path(name)
        text = goldens.table_text(result)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            changed.append(path.name)
        path.write_text(text, encoding="utf-8")
    return changed


def regenerate_examples(page: Path) -> tuple[list[str], list[str]]:
    """Rewrite the output of every console block of ``page`` that can run here, each in
    a folder of its own (``goldens.example_folder``); the commands whose output changed,
    and those left as they were (with why)."""
    skipped: list[str] = []

    def output_of(command: str) -> str | None:
        reason = goldens.why_not_run(command)
        if reason is not None:
            skipped.append(f"{command}  ({reason})")
            return None
        with tempfile.TemporaryDirectory() as empty:
            return goldens.run_shell(command, goldens.example_folder(Path(empty), page))

    old = page.read_text(encoding="utf-8")
    new = goldens.with_outputs(old, output_of)
    page.write_text(new, encoding="utf-8")
    pairs = zip(goldens.console_blocks(old), goldens.console_blocks(new), strict=True)
    return [command for (command, was), (_, now) in pairs if was != now], skipped


def report(name: str, changed: list[str], skipped: list[str]) -> None:
    print(f"{name}: {len(changed)} example(s) changed, {len(skipped)} not run")
    for command in changed:
        print(f"  changed: $ {command}")
    for command in skipped:
        print(f"  not run: $ {command}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "which",
        nargs="?",
        choices=["tables", "readme", "docs"],
        help="only the golden tables, the README or docs/ (default: all three)",
    )
    which = parser.parse_args().which
    if which in (None, "tables"):
        changed = regenerate_tables()
        print(f"tests/golden: {len(goldens.CASES)} written, {len(changed)} changed")
        for name in changed:
            print(f"  changed: {name}")
    if which in (None, "readme"):
        report("README.md", *regenerate_examples(goldens.README))
    if which in (None, "docs"):
        for page in sorted(goldens.DOCS.glob("*.md")):
            report(f"docs/{page.name}", *regenerate_examples(page))


if __name__ == "__main__":
    main()
