"""The Python API as a notebook user meets it: the public names, a session, numbers.

A session imports attntrace, traces a model file, a sample, a dict and a ModelSpec,
looks at stages and shows the trace (print, Rich, Jupyter); what numpy code hands over
(np.int64, np.True_, integer arrays, np.float32) works as numbers.
"""

from __future__ import annotations

import html
import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from naive import naive_attention
from paths import ROOT
from rich.console import Console
from tiny_model import (
    EMBEDDINGS,
    MODEL_FILE,
    WK,
    WQ,
    WV,
    arrays_of,
    tiny_spec,
)
from tolerances import FLOAT64

import attntrace
from attntrace import InputError, ModelSpec, load_model, trace_attention
from attntrace.forward.trace_json import dump_bytes


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(MODEL_FILE, encoding="utf-8")
    return path


def test_the_exported_names_are_the_documented_ones() -> None:
    expected = [
        "InputError",
        "ModelSpec",
        "Stage",
        "Trace",
        "__version__",
        "check",
        "load_model",
        "trace_attention",
    ]
    assert dir(attntrace) == expected == sorted(attntrace.__all__)
    for name in expected:
        assert getattr(attntrace, name) is not None
    # the reference (docs/forward.md) and the README's short list both name each one
    for page in (ROOT / "docs" / "forward.md", ROOT / "README.md"):
        text = page.read_text(encoding="utf-8")
        section = text.split("### What `attntrace` exports", 1)[1].split("\n## ", 1)[0]
        for name in expected:
            assert f"**`{name}" in section, f"{name} is exported but not in {page.name}"


def test_a_notebook_session(model_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What a user types in a notebook, checked against an independent computation."""
    spec = load_model(model_file)
    by_spec = trace_attention(model=spec)  # the file's own sentence
    by_path = trace_attention("a b c", config=model_file)
    by_str = trace_attention("a b c", config=str(model_file))
    weights = {"WQ": WQ, "WK": WK, "WV": WV}
    by_dict = trace_attention("a b c", model={"embeddings": EMBEDDINGS, "weights": weights})
    expected = naive_attention([EMBEDDINGS[t] for t in "abc"], WQ, WK, WV)
    for trace in (by_spec, by_path, by_str, by_dict):
        assert trace.tokens == ("a", "b", "c")
        assert trace.names == list(expected)
        for name, rows in expected.items():
            np.testing.assert_allclose(trace[name].data, rows, **FLOAT64)
        assert all(not data.flags.writeable for _, data in arrays_of(trace))

    trace = by_spec
    np.testing.assert_allclose(trace["softmax"].data.sum(axis=1), 1.0, **FLOAT64)
    assert trace.weight_for(trace["Q"]) is trace.weight("WQ", head=0)
    assert repr(trace["output"]) == "<Stage output head=0 3×2: output = softmax · V>"

    print(trace)
    printed = capsys.readouterr().out
    assert "softmax = exp(scaled − row max) / row sum" in printed
    assert max(len(line) for line in printed.splitlines()) <= 80

    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(trace)  # what rich.print(trace) does
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "output = softmax · V" in shown

    bundle = trace._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert "output = softmax · V" in bundle["text/plain"]
    # the explorer page, in a frame of its own (docs/page.md), holding the trace's JSON
    pattern = r'<iframe title="attntrace explorer" sandbox="allow-scripts" srcdoc="([^"]*)" '
    frame = re.fullmatch(pattern + r'style="[^"]*"></iframe>', bundle["text/html"])
    assert frame is not None, bundle["text/html"][:200]
    page = html.unescape(frame[1])
    assert page.startswith("<!DOCTYPE html>")
    assert page.rstrip().endswith("</html>")
    assert trace._repr_html_() == bundle["text/html"]
    embedded = re.search(r'<script type="application/json" id="trace">(.*?)</script>', page)
    assert embedded is not None
    assert json.loads(embedded[1]) == json.loads(dump_bytes(trace))


def test_numpy_numbers_and_integer_arrays_are_numbers() -> None:
    """np.int64 heads, np.True_, integer matrices: what numpy code hands over works, and
    traces as the float64 model does."""
    floats = trace_attention("a b", model=tiny_spec(causal=True))
    # integer arrays and numpy scalars on purpose (numpy 1.24's stubs see the int arrays)
    integers: list[Any] = [np.array(w) * k for w, k in ((WQ, 2), (WK, 4), (WV, 1))]
    wq, wk, wv = integers
    ints = trace_attention(
        "a b",
        model=ModelSpec(
            {"a": np.array([2, 1]), "b": np.array([-1, 4])},
            wq,
            wk,
            wv,
            # numpy 1.24's stubs refuse the first, newer numpy's the second
            heads=np.int64(1),  # type: ignore[arg-type, unused-ignore]
            causal=np.True_,  # type: ignore[arg-type, unused-ignore]
        ),
    )
    assert ints.model.causal is True
    assert ints.model.heads == 1
    assert all(data.dtype == np.float64 for _, data in arrays_of(ints))
    assert floats.names == ints.names
    np.testing.assert_allclose(ints["X"].data, [[2.0, 1.0], [-1.0, 4.0]])
    assert trace_attention("a b", model=tiny_spec(positions="none")).names[0] == "X"


def test_a_spec_equals_only_itself() -> None:
    """A spec holds arrays: equality is identity (as for a Trace), never numpy's
    'truth value of an array is ambiguous'."""
    one, two = tiny_spec(), tiny_spec()
    assert one == one
    assert one != two
    assert len({one, two}) == 2


def test_numpy_scalars_in_a_model_dict_are_numbers_and_a_longdouble_past_float64_is_refused() -> (
    None
):
    """A dict built by numpy code holds np.float32 and np.int64, not Python floats; a
    longdouble of 1e400 is finite in its own type but not in float64, which the trace
    computes in: refused when the spec is made, with no overflow warning."""
    weights = {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[1, 0], [0, 1]]}
    embeddings = {"a": [np.float32(1), np.float32(2)], "b": [np.int64(3), 1]}
    trace = trace_attention("a b", model={"embeddings": embeddings, "weights": weights})
    np.testing.assert_allclose(trace["X"].data, [[1.0, 2.0], [3.0, 1.0]], **FLOAT64)
    huge = np.eye(2, dtype=np.longdouble) * np.longdouble("1e400")
    if not np.isfinite(huge).all():  # a platform whose longdouble is float64 holds no 1e400
        pytest.skip("longdouble is float64 here")
    with pytest.raises(InputError, match=r"^weights\.WQ\[0\]\[0\]: expected a finite number"):
        ModelSpec({"a": np.ones(2)}, huge, np.eye(2), np.eye(2))
