"""The model file's text: YAML and JSON syntax, and YAML that is not plain data.

The bad-input catalogue's room for :mod:`attntrace.modelfile.parse` and
:mod:`attntrace.modelfile.yaml_file` (the contract and the tools are in
``tests/catalogue.py``): malformed YAML or JSON named by line and column, tags that
would build objects, keys that are not plain strings, merge keys (not in YAML 1.2).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from catalogue import GOOD, Case, W, case, check_rejected, nested

# YAML merge keys (<<) do not exist in YAML 1.2, which the loader follows: refused.
MERGE = (
    "YAML merge keys (<<) are not supported in model files (YAML 1.2 has none): "
    "write the keys out, or share a whole matrix with an alias (WK: *wq)"
)
TAG_REFUSED = "is not allowed: a model file holds plain data (mappings, lists, numbers, strings)"
BAD_KEY = "a mapping key must be a plain string"

REJECTED = [
    # --- syntax
    case(
        "yaml-unclosed-bracket",
        "embeddings: [1, 2\n",
        "model.yaml: line 2, column 1: malformed YAML: did not find expected ',' or ']'",
    ),
    case(
        "yaml-bad-indent",
        "embeddings:\n  cat: [1, 2]\n bad: x\n",
        "model.yaml: line 3, column 2: malformed YAML: did not find expected key",
    ),
    case(
        "yaml-tab-indent",
        "embeddings:\n\tcat: [1, 2]\n",
        "model.yaml: line 2, column 1: malformed YAML: found character that cannot start "
        "any token (a tab: YAML indents with spaces only)",
    ),
    case(
        "yaml-two-documents",
        GOOD + "---\nname: second\n",
        "model.yaml: line 9, column 1: malformed YAML: "
        "expected one document, found a second one (after ---)",
    ),
    case(
        "yaml-nested-too-deeply",
        nested(100_000),
        None,
        contains=("model.yaml: ", "malformed YAML: "),
    ),
    case(
        "json-trailing-comma",
        '{"embeddings": {"cat": [1, 2],}}',
        "model.json: line 1, column 31: malformed JSON: "
        "Expecting property name enclosed in double quotes (a trailing comma?)",
        suffix=".json",
    ),
    case(
        "yaml-control-character",
        "embeddings:\n  cat: [1, 2]\x01\n" + W,
        "model.yaml: line 2, column 14: malformed YAML: character #x0001 is not printable, "
        "and YAML allows only printable ones",
    ),
    case(
        "yaml-control-character-after-non-ascii",  # libyaml counts bytes: −∞ is 6 of them
        "# −∞ first\nembeddings:\n  cat: [1, 2]\x7f\n" + W,
        "model.yaml: line 3, column 14: malformed YAML: character #x007f is not printable, "
        "and YAML allows only printable ones",
    ),
    case(
        "json-cut-off-after-a-comma",
        '{"embeddings": {"cat": [1, 2]},',
        "model.json: line 1, column 32: malformed JSON: "
        "Expecting property name enclosed in double quotes",
        suffix=".json",
    ),
    case(
        "json-cut-off-inside-a-list",
        '{"embeddings": {"cat": [1, 2,',
        "model.json: line 1, column 30: malformed JSON: Expecting value",
        suffix=".json",
    ),
    case(
        "json-cut-off-inside-a-string",  # json's own words end "starting at": a sentence cut
        '{"embeddings": {"ca',
        "model.json: line 1, column 17: malformed JSON: "
        "Unterminated string that starts there and is never closed",
        suffix=".json",
    ),
    case(
        "json-file-holding-yaml",
        GOOD,
        "model.json: line 1, column 1: malformed JSON: Expecting value",
        suffix=".json",
    ),
    case(
        "json-nested-too-deeply",
        nested(100_000),
        "model.json: malformed JSON: nested too deeply",
        suffix=".json",
    ),
    # --- YAML that would build objects, or is not plain data
    case(
        "yaml-tag-object-apply",
        'name: !!python/object/apply:os.system ["echo hi"]\n' + GOOD,
        f"model.yaml: line 1, column 7: YAML tag !!python/object/apply:os.system {TAG_REFUSED}",
    ),
    case(
        "yaml-tag-name",
        "name: !!python/name:os.system\n" + GOOD,
        f"model.yaml: line 1, column 7: YAML tag !!python/name:os.system {TAG_REFUSED}",
    ),
    case(
        "yaml-tag-tuple-vector",
        "embeddings:\n  cat: !!python/tuple [1, 2]\n" + W,
        f"model.yaml: line 2, column 8: YAML tag !!python/tuple {TAG_REFUSED}",
    ),
    case(
        "yaml-tag-custom",
        "name: !custom x\n" + GOOD,
        f"model.yaml: line 1, column 7: YAML tag !custom {TAG_REFUSED}",
    ),
    case(
        "yaml-tag-on-a-key",
        "embeddings:\n  !!python/name:os.system cat: [1, 2]\n  eats: [3, 1]\n  fish: [2, 4]\n" + W,
        f"model.yaml: line 2, column 3: YAML tag !!python/name:os.system {TAG_REFUSED}",
    ),
    case(
        "yaml-custom-tag-on-a-key",
        "embeddings:\n  cat: [1, 2]\n  !custom eats: [3, 1]\n" + W,
        f"model.yaml: line 3, column 3: YAML tag !custom {TAG_REFUSED}",
    ),
    case(
        "yaml-complex-key",
        "embeddings:\n  ? [a, b]\n  : [3, 1]\n" + W,
        f"model.yaml: line 2: {BAD_KEY}, got a list",
    ),
    case(
        "yaml-mapping-key",
        "embeddings:\n  ? {a: 1}\n  : [3, 1]\n" + W,
        f"model.yaml: line 2: {BAD_KEY}, got a mapping",
    ),
    case(
        "yaml-complex-key-not-first-line",
        "embeddings:\n  cat: [1, 2]\n  eats: [3, 1]\n  ? [a, b]\n  : [2, 4]\n" + W,
        f"model.yaml: line 4: {BAD_KEY}, got a list",
    ),
    # An alias has no position of its own (PyYAML shares the anchored node), so the
    # message names the mapping it is used in.
    case(
        "yaml-alias-key-line",
        "description: &k [1, 2]\nembeddings:\n  *k : [3, 1]\n" + W,
        f"model.yaml: in the mapping at line 3: {BAD_KEY}, got an alias of a list",
    ),
    case(
        "yaml-alias-key-not-first",
        "description: &k [1, 2]\nembeddings:\n  cat: [1, 2]\n  *k : [3, 1]\n" + W,
        f"model.yaml: in the mapping at line 3: {BAD_KEY}, got an alias of a list",
    ),
    # --- YAML merge keys: not in YAML 1.2, refused with a way out
    case(
        "yaml-merge-of-a-scalar",
        "embeddings:\n  <<: [1, 2]\n" + W,
        f"model.yaml: line 2: {MERGE}",
    ),
    case(
        "yaml-merge-of-a-mapping",
        "base: &base {cat: [1, 2]}\nembeddings:\n  <<: *base\n  eats: [3, 1]\n" + W,
        f"model.yaml: line 3: {MERGE}",
    ),
]


@pytest.mark.parametrize("case", REJECTED)
def test_malformed_text_is_one_clear_line_and_exit_2(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """YAML or JSON that does not parse, or is not plain data."""
    check_rejected(case, tmp_path, monkeypatch)
