"""A saved trace's variant settings are checked against its stages by ``render``: a file
whose window, sinks or ALiBi slopes were edited is refused, not drawn with the wrong
reasons (a key said to be "later" when it is out of the window), and a window or sink
count past any sentence is one error line, never orjson's 64-bit overflow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import invoke, one_line_error


def _saved(sample: str, *flags: str) -> dict[str, object]:
    result = invoke("run", "--sample", sample, "--json", *flags)
    assert result.exit_code == 0, result.stderr
    document: dict[str, object] = json.loads(result.stdout)
    return document


def _render(document: dict[str, object]) -> object:
    return invoke("render", "-", input=json.dumps(document))


@pytest.mark.parametrize(("key", "value"), [("window", 100), ("window", 1), ("sinks", 0)])
def test_an_edited_mask_is_refused(key: str, value: int) -> None:
    document = _saved("window")
    model = document["model"]
    assert isinstance(model, dict)
    if value == 0:
        del model[key]
    else:
        model[key] = value
    one_line_error(_render(document), "masked", "the model's mask")  # type: ignore[arg-type]


def test_an_edited_alibi_slope_is_refused() -> None:
    document = _saved("alibi")
    model = document["model"]
    assert isinstance(model, dict)
    model["alibi_slopes"][0] *= 3
    one_line_error(_render(document), "alibi", "−m·|i − j|")  # type: ignore[arg-type]


@pytest.mark.parametrize("sample", ["window", "alibi", "gemma-like", "sink-logit"])
@pytest.mark.parametrize("dtype", [None, "float16"])
def test_an_unedited_trace_renders(sample: str, dtype: str | None) -> None:
    document = _saved(sample, *(("--dtype", dtype) if dtype else ()))
    assert _render(document).exit_code == 0  # type: ignore[attr-defined]


def test_a_window_past_any_sentence_is_one_line(tmp_path: Path) -> None:
    model = tmp_path / "huge-window.yaml"
    model.write_text(
        "embeddings: {a: [1, 0], b: [0, 1]}\n"
        "weights: {WQ: [[1, 0], [0, 1]], WK: [[1, 0], [0, 1]], WV: [[1, 0], [0, 1]]}\n"
        "causal: true\nwindow: 99999999999999999999999999\n"
    )
    one_line_error(invoke("run", "-c", str(model), "a", "b", "--json"), "window", "at most")
    document = _saved("window")
    model_section = document["model"]
    assert isinstance(model_section, dict)
    model_section["window"] = 2**40
    one_line_error(_render(document), "model.window", "at most")  # type: ignore[arg-type]
