"""What loading a model file takes, counted before the work (issue 29).

The estimate of parsing (:func:`parsed_bytes`) must hold above what parsing really
allocates (measured here by tracemalloc, not computed by the code under test), for the
shapes of text that cost the most per byte; a file past the budget is refused before
it is parsed; text matrices become the numbers they hold, whichever path they take.
"""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from catalogue import invoke

from attntrace.kernel import frozen
from attntrace.modelfile import model_file
from attntrace.modelfile.model_budget import parsed_bytes
from attntrace.modelfile.model_matrices import matrix
from attntrace.modelfile.parse import parse_document

TEXTS = {
    "tall-json": "[" + ",".join("[0.25]" for _ in range(20_000)) + "]",
    "ints-json": "[" + ",".join("[1]" for _ in range(20_000)) + "]",
    "empty-lists-json": "[" + ",".join("[]" for _ in range(20_000)) + "]",
    "square-json": json.dumps(
        np.round(np.random.default_rng(0).normal(size=(150, 150)), 6).tolist()
    ),
    "mappings-json": "[" + ",".join("{}" for _ in range(10_000)) + "]",
    "keyed-json": "{" + ",".join(f'"k{i}": [{i}.5]' for i in range(10_000)) + "}",
    "strings-json": "[" + ",".join('"ab"' for _ in range(20_000)) + "]",
    "tall-yaml": "".join("- [0.25]\n" for _ in range(5_000)),
    "block-yaml": "".join("- - 0.25\n  - 1.5\n" for _ in range(3_000)),
    "flow-yaml": "[" + ", ".join("0.25" for _ in range(10_000)) + "]\n",
    "mapping-yaml": "".join(f"k{i}: {{a: 1}}\n" for i in range(3_000)),
}


@pytest.mark.parametrize("name", list(TEXTS))
def test_the_parse_estimate_holds_above_what_parsing_allocates(name: str) -> None:
    text = TEXTS[name]
    is_json = name.endswith("json")
    tracemalloc.start()
    try:
        parse_document(text, "model", is_json=is_json)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak + len(text) <= parsed_bytes(text, is_json=is_json)


def _never_parsed(*_: object, **__: object) -> None:
    raise AssertionError("the text was parsed before its cost was counted")


def test_a_file_whose_parse_is_past_the_budget_is_refused_unparsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200,000 one-number rows (1.6 MB of text) take some 30 MB parsed: over 8 MiB."""
    monkeypatch.chdir(tmp_path)
    rows = ",".join("[1]" for _ in range(200_000))
    Path("model.json").write_text(
        '{"embeddings": {"cat": [1, 2]}, "weights": {"WQ": [' + rows + "]}}", encoding="utf-8"
    )
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "8")
    monkeypatch.setattr(model_file, "parse_document", _never_parsed)
    result = invoke(("cat", "--config", "model.json"))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert re.fullmatch(
        r"attntrace: error: model\.json: reading the model file would take about [\d,]+ MiB "
        r"\(its parsed text [\d,]+ MiB\), over the memory budget of 8 MiB \(shorten the "
        r"input, or set ATTNTRACE_MAX_MEMORY_MB\)\n",
        result.stderr,
    ), result.stderr


ROWS: dict[str, Any] = {
    "floats": [[0.5, -1.25], [3.0, 4.5]],
    "ints": [[1, -2], [2**60, 7]],
    "mixed": [[1, 2.5], [-3, 0.125]],
    "numpy-scalars": [[np.float32(0.5), np.int64(-2)], [np.float16(3), np.uint8(4)]],
}


@pytest.mark.parametrize("name", list(ROWS))
def test_a_text_matrix_holds_the_numbers_written(name: str) -> None:
    """Plain rows go to numpy at once, numpy's scalars row by row: the same numbers."""
    rows = ROWS[name]
    expected = [[float(x) for x in row] for row in rows]
    made = matrix(rows, "weights.WQ")
    assert made.dtype == np.float64
    assert made.tolist() == expected
    assert not made.flags.writeable


def test_a_tall_matrix_is_frozen_once_not_per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """A matrix of 10,000 rows is frozen once, not 10,000 times (each freeze is two
    weakref registrations: the 31 MB tall model spent most of its 45 s in them)."""
    from attntrace.modelfile import model_matrices

    calls: list[int] = []
    real = frozen.freeze

    def counted(array: Any, **flags: Any) -> Any:
        calls.append(array.size)
        return real(array, **flags)

    monkeypatch.setattr(model_matrices, "freeze", counted)
    made = matrix([[float(i)] for i in range(10_000)], "weights.WQ")
    assert calls == [10_000]
    assert made.tolist() == [[float(i)] for i in range(10_000)]


def test_an_embedding_table_is_frozen_once_not_per_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """1,000 tokens of 3 numbers: one frozen table whose rows the tokens name."""
    from attntrace.modelfile import model_matrices
    from attntrace.modelfile.npy_files import NpyReader

    calls: list[int] = []
    real = frozen.freeze

    def counted(array: Any, **flags: Any) -> Any:
        calls.append(array.size)
        return real(array, **flags)

    monkeypatch.setattr(model_matrices, "freeze", counted)
    given = {f"t{i}": [i, i + 0.5, -i] for i in range(1000)}
    table = model_matrices.embeddings_table(given, None, NpyReader(None, None))
    assert calls == [3000]
    assert {token: row.tolist() for token, row in table.items()} == {
        token: [float(x) for x in row] for token, row in given.items()
    }
