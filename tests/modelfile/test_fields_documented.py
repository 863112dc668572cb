"""docs/model-file.md's field table names every top-level field the reader knows, and its
count in words is the table's (issue 29, §4: it said "fourteen" where the error lists 24)."""

from __future__ import annotations

import re

from paths import ROOT

from attntrace.modelfile.model_file import KNOWN_FIELDS

WORDS = {"Twenty-four": 24}


def test_the_field_table_and_its_count_are_the_readers() -> None:
    text = (ROOT / "docs" / "model-file.md").read_text(encoding="utf-8")
    section = text[text.index("top-level fields (the table below)") - 40 :]
    table = section[: section.index("\n\n", section.index("| field |"))]
    documented = [
        name
        for row in table.splitlines()
        if row.startswith("| `")
        for name in re.findall(r"`([a-z_]+)`", row.split("|")[1])
    ]
    assert sorted(documented) == sorted(KNOWN_FIELDS)
    said = re.search(r"([A-Z][a-z-]+) top-level fields", section)
    assert said is not None
    assert WORDS[said.group(1)] == len(KNOWN_FIELDS)
