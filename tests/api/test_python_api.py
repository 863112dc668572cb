"""The Python API as a notebook user meets it: each public name, its errors, its records.

A session imports attntrace, traces a model file, a sample, a dict and a ModelSpec,
looks at stages, shows the trace (print, Rich, Jupyter), makes mistakes and reads one
line about each. Every array a trace holds is read-only, and the caller's own arrays
are neither frozen nor shared behind their back.
"""

from __future__ import annotations

import copy
import io
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from naive import naive_attention
from paths import ROOT
from rich.console import Console
from tolerances import FLOAT64

import attntrace
from attntrace import InputError, ModelSpec, Stage, Trace, load_model, trace_attention
from attntrace.core.spec import GivenInputs
from attntrace.core.trace import ModelInfo
from attntrace.files.replay import load_trace
from attntrace.files.samples import list_samples
from attntrace.files.serialize import dump_bytes
from attntrace.real.catalog import CATALOG

MODEL_FILE = """\
name: tiny
sentence: a b c
embeddings:
  a: [1, 0.5]
  b: [-0.25, 2]
  c: [0.75, -1]
weights:
  WQ: [[1, 2], [0.5, -1]]
  WK: [[0, 1], [1, 0.25]]
  WV: [[2, 0], [1, 3]]
"""
EMBEDDINGS: dict[str, list[float]] = {"a": [1.0, 0.5], "b": [-0.25, 2.0], "c": [0.75, -1.0]}
WQ: list[list[float]] = [[1.0, 2.0], [0.5, -1.0]]
WK: list[list[float]] = [[0.0, 1.0], [1.0, 0.25]]
WV: list[list[float]] = [[2.0, 0.0], [1.0, 3.0]]


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(MODEL_FILE, encoding="utf-8")
    return path


def tiny_spec(**changes: Any) -> ModelSpec:
    """The tiny model, built from Python with numpy arrays (``changes`` replace fields)."""
    fields: dict[str, Any] = {
        "embeddings": {t: np.array(v, dtype=float) for t, v in EMBEDDINGS.items()},
        "WQ": np.array(WQ, dtype=float),
        "WK": np.array(WK, dtype=float),
        "WV": np.array(WV, dtype=float),
    }
    return ModelSpec(**{**fields, **changes})


def arrays_of(trace: Trace) -> Iterator[tuple[str, np.ndarray[Any, Any]]]:
    for stage in (*trace.stages, *trace.weights):
        yield f"{stage.name} head={stage.head} kv={stage.kv_head}", stage.data


def one_line(error: BaseException) -> str:
    text = str(error)
    assert text, "an empty message"
    assert "\n" not in text, repr(text)
    assert text.strip() == text, repr(text)
    return text


# --------------------------------------------------------------------- a session


def test_the_exported_names_are_the_documented_ones() -> None:
    expected = ["InputError", "ModelSpec", "Stage", "Trace", "__version__", "load_model",
                "trace_attention"]  # fmt: skip
    assert dir(attntrace) == expected == sorted(attntrace.__all__)
    for name in expected:
        assert getattr(attntrace, name) is not None
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### What `attntrace` exports", 1)[1].split("\n## ", 1)[0]
    for name in expected:
        assert f"**`{name}" in section, f"{name} is exported but not documented"


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
    assert "<" in bundle["text/html"]
    assert "output" in bundle["text/html"]


# --------------------------------------------------------------------- read-only records


def sample_traces() -> list[tuple[str, Callable[[], Trace]]]:
    def sample(name: str) -> Callable[[], Trace]:
        return lambda: trace_attention(sample=name)

    made = [(s.name, sample(s.name)) for s in list_samples()]
    made += [
        ("ModelSpec", lambda: trace_attention("a b c", model=tiny_spec())),
        ("learned positions", lambda: trace_attention("a b", model=tiny_spec(
            positions=np.array([[0.5, 0.0], [0.0, 0.5]])))),
        ("biases and WO", lambda: trace_attention("a b", model=tiny_spec(
            WO=np.eye(2), biases={"bQ": np.ones(2), "bO": np.ones(2)}))),
        ("given X", lambda: trace_attention("a b", model=tiny_spec(
            given=GivenInputs(np.array([[1.0, 2.0], [3.0, 4.0]]), "X = given")))),
        ("saved and read back", lambda: load_trace(
            dump_bytes(trace_attention(sample="gqa")).decode(), "t.json")),
        ("cut to heads", lambda: trace_attention(sample="gqa").only_heads([1, 3])),
    ]  # fmt: skip
    return made


@pytest.mark.parametrize(("what", "make"), sample_traces(), ids=lambda x: x if
                         isinstance(x, str) else "")  # fmt: skip
def test_every_array_a_trace_holds_is_read_only(what: str, make: Callable[[], Trace]) -> None:
    trace = make()
    assert isinstance(trace.tokens, tuple)
    assert isinstance(trace.stages, tuple)
    for label, data in arrays_of(trace):
        assert not data.flags.writeable, f"{what}: {label} is writeable"
        with pytest.raises(ValueError, match="read-only"):
            data[0, 0] = 1.0
        with pytest.raises(ValueError, match="read-only"):
            data += 1.0
    for stage in trace.stages:
        assert isinstance(stage.rows, tuple)
        assert isinstance(stage.cols, tuple)


def test_a_trace_stays_read_only_when_copied_or_pickled() -> None:
    trace = trace_attention(sample="two-heads")
    for other in (copy.deepcopy(trace), pickle.loads(pickle.dumps(trace)), copy.copy(trace)):
        for (label, data), (_, original) in zip(arrays_of(other), arrays_of(trace), strict=True):
            assert not data.flags.writeable, label
            np.testing.assert_array_equal(data, original)
    spec = pickle.loads(pickle.dumps(tiny_spec()))
    assert not spec.WQ.flags.writeable
    assert not spec.embeddings["a"].flags.writeable


def test_the_callers_arrays_stay_theirs() -> None:
    """Arrays given to ModelSpec, model=, GivenInputs and Stage stay writeable, and
    changing them afterwards changes neither the spec nor the trace made from it."""
    embeddings = {t: np.array(v, dtype=float) for t, v in EMBEDDINGS.items()}
    wq, wk, wv = np.array(WQ, float), np.array(WK, float), np.array(WV, float)
    spec = ModelSpec(embeddings, wq, wk, wv)
    trace = trace_attention("a b c", model=spec)
    weights = {"WQ": wq, "WK": wk, "WV": wv}
    by_dict = trace_attention("a b c", model={"embeddings": embeddings, "weights": weights})
    before = [data.copy() for _, data in arrays_of(trace)]
    for array in (wq, wk, wv, *embeddings.values()):
        assert array.flags.writeable
    wq[:] = 99.0
    embeddings["a"][:] = 99.0
    embeddings["d"] = np.array([1.0, 1.0])
    assert spec.resolve("d") is None
    np.testing.assert_array_equal(spec.WQ, WQ)
    np.testing.assert_array_equal(spec.embeddings["a"], EMBEDDINGS["a"])
    for check in (trace, by_dict, trace_attention("a b c", model=spec)):
        for (label, data), old in zip(arrays_of(check), before, strict=True):
            np.testing.assert_array_equal(data, old, err_msg=label)

    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    given = GivenInputs(x, "X = given")
    assert x.flags.writeable
    assert not np.shares_memory(given.X, x)
    rows = np.array([[1.0, 2.0]])
    stage = Stage("X", "X = mine", ["t"], ["d0", "d1"], rows)  # type: ignore[arg-type]
    assert rows.flags.writeable
    assert not stage.data.flags.writeable
    rows[0, 0] = 5.0
    assert stage.data[0, 0] == 1.0
    assert stage.rows == ("t",)
    assert stage.cols == ("d0", "d1")


def test_the_package_shares_its_own_frozen_arrays_instead_of_copying() -> None:
    """Read-only costs no copy where the array is attntrace's own: the weights a trace
    carries are views of the spec's matrices, and X given is the spec's X."""
    spec = tiny_spec(given=GivenInputs(np.array([[1.0, 2.0], [3.0, 4.0]]), "X = given"))
    trace = trace_attention("a b", model=spec)
    wq = trace.weight("WQ", head=0)
    assert wq is not None
    assert np.shares_memory(wq.data, spec.WQ)
    assert trace["X"].data is spec.given.X  # type: ignore[union-attr]
    again = Stage("X", "X", trace["X"].rows, trace["X"].cols, trace["X"].data)
    assert again.data is trace["X"].data


def test_a_frozen_array_is_still_checked_for_what_it_holds() -> None:
    """Sharing the package's arrays skips the copy, not the check: a causal trace's
    masked stage (read-only, with −∞) is no matrix of positions."""
    masked = trace_attention("a b", model=tiny_spec(causal=True))["masked"].data
    with pytest.raises(InputError) as caught:
        tiny_spec(positions=masked)
    assert one_line(caught.value) == (
        "positions[0][1]: expected a finite number, got a non-finite number (-inf)"
    )


def test_showing_a_trace_in_every_view_changes_no_number() -> None:
    from attntrace.core.focus import focus_row
    from attntrace.render.present import Presentation, renderables

    trace = trace_attention(sample="it-animal")
    before = [data.copy() for _, data in arrays_of(trace)]
    console = Console(file=io.StringIO(), width=120, color_system="truecolor")
    for how in (Presentation(), Presentation(map=True), Presentation(overview=True),
                Presentation(focus="it")):  # fmt: skip
        focus = None if how.focus is None else (focus_row(trace, how.focus),)
        for renderable in renderables(trace, how, focus):
            console.print(renderable)
    dump_bytes(trace)
    str(trace)
    trace._repr_mimebundle_()
    for (label, data), old in zip(arrays_of(trace), before, strict=True):
        np.testing.assert_array_equal(data, old, err_msg=label)


# --------------------------------------------------------------------- wrong types


def _trace() -> Trace:
    return trace_attention("cat eats fish")


WRONG_TYPES: list[tuple[str, Callable[[], object], str]] = [
    ("sentence int", lambda: trace_attention(5),  # type: ignore[arg-type]
     "sentence must be a str or None, got int"),
    ("sentence bytes", lambda: trace_attention(b"cat"),  # type: ignore[arg-type]
     "sentence must be a str or None, got bytes"),
    ("sentence list", lambda: trace_attention(["cat", "eats"]),  # type: ignore[arg-type]
     "sentence must be a str or None, got list"),
    ("model a file name", lambda: trace_attention("cat", model="ok.yaml"),  # type: ignore[arg-type]
     "model must be a ModelSpec or a mapping of model fields, got str: give a model file "
     "as config='ok.yaml'"),
    ("model a Path", lambda: trace_attention("cat", model=Path("ok.yaml")),  # type: ignore[arg-type]
     "model must be a ModelSpec or a mapping of model fields, got PosixPath: give a model "
     "file as config=PosixPath('ok.yaml')"),
    ("model a real model's name", lambda: trace_attention("cat", model="smollm2"),  # type: ignore[arg-type]
     "model must be a ModelSpec or a mapping of model fields, got str: a trained model's "
     "layer is attntrace.real.layer.trace_layer('smollm2', sentence, layer)"),
    ("model a list", lambda: trace_attention("cat", model=[1]),  # type: ignore[arg-type]
     "model must be a ModelSpec or a mapping of model fields, got list"),
    ("config int", lambda: trace_attention("cat", config=5),  # type: ignore[arg-type]
     "config must be a file name (str or pathlib.Path) or None, got int"),
    ("sample int", lambda: trace_attention("cat", sample=5),  # type: ignore[arg-type]
     "sample must be a str or None, got int"),
    ("causal str", lambda: trace_attention("cat", causal="yes"),  # type: ignore[arg-type]
     "causal must be a bool or None, got str"),
    ("causal int", lambda: trace_attention("cat", causal=1),  # type: ignore[arg-type]
     "causal must be a bool or None, got int"),
    ("context int", lambda: trace_attention("cat", context=5),  # type: ignore[arg-type]
     "context must be a str or None, got int"),
    ("load_model int", lambda: load_model(5),  # type: ignore[arg-type]
     "path must be a file name (str or pathlib.Path), got int"),
    ("load_model None", lambda: load_model(None),  # type: ignore[arg-type]
     "path must be a file name (str or pathlib.Path), got NoneType"),
    ("load_model source", lambda: load_model("x.yaml", source=5),  # type: ignore[arg-type]
     "source must be a str or None, got int"),
    ("ModelSpec lists", lambda: tiny_spec(WQ=WQ),
     "ModelSpec.WQ must be a numpy array of real numbers (a matrix), got list"),
    ("ModelSpec int matrix", lambda: tiny_spec(WK=5),
     "ModelSpec.WK must be a numpy array of real numbers (a matrix), got int"),
    ("ModelSpec complex", lambda: tiny_spec(WV=np.eye(2) * 1j),
     "ModelSpec.WV must be a numpy array of real numbers (a matrix), got ndarray of "
     "complex128"),
    ("ModelSpec vector list", lambda: tiny_spec(embeddings={"a": [1.0, 2.0]}),
     "ModelSpec.embeddings['a'] must be a numpy array of real numbers (a vector), got list"),
    ("ModelSpec embeddings list", lambda: tiny_spec(embeddings=[np.ones(2)]),
     "ModelSpec.embeddings must be a mapping of str to numpy vectors (a dict), got list"),
    ("ModelSpec token int", lambda: tiny_spec(embeddings={1: np.ones(2)}),
     "ModelSpec.embeddings keys must be str, got int"),
    ("ModelSpec heads float", lambda: tiny_spec(heads=2.0),
     "ModelSpec.heads must be an int, got float"),
    ("ModelSpec heads str", lambda: tiny_spec(heads="2"),
     "ModelSpec.heads must be an int, got str"),
    ("ModelSpec causal int", lambda: tiny_spec(causal=1),
     "ModelSpec.causal must be a bool, got int"),
    ("ModelSpec positions int", lambda: tiny_spec(positions=5),
     "ModelSpec.positions must be None, 'sinusoidal', 'rope' or a numpy array of position "
     "vectors, got int"),
    ("ModelSpec rope_base str", lambda: tiny_spec(rope_base="10000"),
     "ModelSpec.rope_base must be a real number (int or float), got str"),
    ("ModelSpec biases list", lambda: tiny_spec(biases=[np.ones(2)]),
     "ModelSpec.biases must be a mapping of str to numpy vectors (a dict), got list"),
    ("ModelSpec name int", lambda: tiny_spec(name=5),
     "ModelSpec.name must be a str, got int"),
    ("ModelSpec given array", lambda: tiny_spec(given=np.ones((2, 2))),
     "ModelSpec.given must be a GivenInputs or None, got ndarray of float64"),
    ("Stage data list", lambda: Stage("X", "X", ("a",), ("d0",), [[1.0]]),  # type: ignore[arg-type]
     "Stage.data must be a numpy array of real numbers, got list"),
    ("Stage rows str", lambda: Stage("X", "X", "ab", ("d0",), np.ones((2, 1))),  # type: ignore[arg-type]
     "Stage.rows must be a tuple (or list) of str, got str"),
    ("Stage rows of ints", lambda: Stage("X", "X", (1, 2), ("d0",), np.ones((2, 1))),  # type: ignore[arg-type]
     "Stage.rows[0] must be a str, got int"),
    ("Stage head str", lambda: Stage("X", "X", ("a",), ("d0",), np.ones((1, 1)), head="0"),  # type: ignore[arg-type]
     "Stage.head must be an int or None, got str"),
    ("Trace model", lambda: Trace(5, ("a",), ()),  # type: ignore[arg-type]
     "Trace.model must be a ModelInfo, got int"),
    ("Trace stages", lambda: Trace(ModelInfo("m", 1, 1, 1), ("a",), (5,)),  # type: ignore[arg-type]
     "Trace.stages[0] must be a Stage, got int"),
    ("Trace tokens str", lambda: Trace(ModelInfo("m", 1, 1, 1), "a", ()),  # type: ignore[arg-type]
     "Trace.tokens must be a tuple (or list) of str, got str"),
    ("trace[int]", lambda: _trace()[5],  # type: ignore[index]
     "a stage key must be a name or (name, head), as trace['softmax', 0], got int"),
    ("stage(int)", lambda: _trace().stage(5),  # type: ignore[arg-type]
     "name must be a str, got int"),
    ("stage head str", lambda: _trace().stage("softmax", head="0"),  # type: ignore[arg-type]
     "head must be an int or None, got str"),
    ("only_heads int", lambda: _trace().only_heads(0),  # type: ignore[arg-type]
     "heads must be a sequence of head numbers (ints), got int"),
    ("weight int", lambda: _trace().weight(5),  # type: ignore[arg-type]
     "name must be a str, got int"),
    ("weight_for str", lambda: _trace().weight_for("Q"),  # type: ignore[arg-type]
     "stage must be a Stage, got str"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "call", "message"), WRONG_TYPES, ids=[w[0] for w in WRONG_TYPES])
def test_a_wrong_type_is_a_type_error_naming_the_argument(
    what: str, call: Callable[[], object], message: str
) -> None:
    with pytest.raises(TypeError) as caught:
        call()
    assert type(caught.value) is TypeError, f"{what}: {caught.value!r}"
    assert one_line(caught.value) == message


# --------------------------------------------------------------------- bad values


def _cut() -> Trace:
    return trace_attention(sample="gqa").only_heads([1])


BAD_VALUES: list[tuple[str, Callable[[], object], str]] = [
    ("unknown token", lambda: trace_attention("cat wolf"),
     "sample cat-eats-fish: embeddings: unknown token 'wolf' (vocabulary: cat, eats, fish)"),
    ("empty sentence", lambda: trace_attention("  "),
     "sentence: empty sentence: expected at least one token, got '  '"),
    ("empty config", lambda: trace_attention("cat", config=""),
     "config: expected a file name, got ''"),
    ("two models", lambda: trace_attention("cat", config="x.yaml", sample="causal"),
     "give one of model, config and sample, not config and sample"),
    ("unknown sample", lambda: trace_attention(sample="nope"),
     "unknown sample 'nope' (samples: cat-eats-fish, causal, cross, gqa, it-animal, "
     "positions, rope, the-cat-sat, two-heads)"),
    ("causal with a context", lambda: trace_attention(sample="cross", causal=True),
     "causal: a causal mask hides later tokens of the same sequence, but this model "
     "cross-attends to a context: expected causal=False (or no context), got causal=True"),
    ("context with a causal model", lambda: trace_attention(sample="causal", context="the"),
     "context: cross-attention lets every query see every context token, but the model is "
     "causal (a decoder): expected causal=False with context, got context='the'"),
    ("unknown context token", lambda: trace_attention("cat", context="cat wolf"),
     "context: unknown token 'wolf' (vocabulary: cat, eats, fish)"),
    ("empty load_model", lambda: load_model(" "),
     "path: expected a file name, got ' '"),
    ("missing file", lambda: load_model("no/such.yaml"),
     "no/such.yaml: no such file"),
    ("NaN", lambda: tiny_spec(WQ=np.array([[1.0, np.nan], [0.0, 1.0]])),
     "weights.WQ[0][1]: expected a finite number, got a non-finite number (nan)"),
    ("inf in embeddings", lambda: tiny_spec(embeddings={"a": np.array([1.0, np.inf])}),
     "embeddings.a[1]: expected a finite number, got a non-finite number (inf)"),
    ("3-D weight", lambda: tiny_spec(WQ=np.ones((2, 2, 1))),
     "weights.WQ: expected a matrix (2-D array), got a 3-D array of 2 × 2 × 1"),
    ("empty weight", lambda: tiny_spec(WQ=np.ones((2, 0))),
     "weights.WQ: expected at least one number, got 2 × 0"),
    ("token with a space", lambda: tiny_spec(embeddings={"a b": np.ones(2)}),
     "embeddings: expected non-empty tokens without spaces (a sentence is split on "
     "whitespace), got a string 'a b'"),
    ("ragged embeddings", lambda: tiny_spec(embeddings={"a": np.ones(2), "b": np.ones(3)}),
     "embeddings.b: expected a vector of 2 numbers (d_model, the length of 'a'), got 3 "
     "numbers"),
    ("no embeddings", lambda: tiny_spec(embeddings={}),
     "embeddings: expected a non-empty mapping of token -> vector, got an empty mapping"),
    ("heads 0", lambda: tiny_spec(heads=0),
     "heads: expected a whole number ≥ 1, got 0"),
    ("rope base inf", lambda: tiny_spec(positions="rope", rope_base=float("inf")),
     "rope_base: expected a number > 1 (10000 in RoFormer and LLaMA), got a non-finite "
     "number (inf)"),
    ("a head the trace does not hold", lambda: _trace().only_heads([5]),
     "heads: expected heads this trace holds (0), got 5"),
    ("a head cut away", lambda: _cut().only_heads([0]),
     "heads: expected heads this trace holds (1), got 0"),
    ("no heads", lambda: _trace().only_heads([]),
     "heads: expected at least one of the traced heads (0), got none"),
    ("Stage shape", lambda: Stage("X", "X", ("a", "b"), ("d0",), np.ones((1, 1))),
     "Stage.data: expected 2 × 1 (len(rows) × len(cols)), got 1 × 1"),
    ("Stage head -1", lambda: Stage("X", "X", ("a",), ("d0",), np.ones((1, 1)), head=-1),
     "Stage.head: expected None or a whole number ≥ 0, got -1"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "call", "message"), BAD_VALUES, ids=[w[0] for w in BAD_VALUES])
def test_a_bad_value_is_one_input_error_line(
    what: str, call: Callable[[], object], message: str
) -> None:
    with pytest.raises(InputError) as caught:
        call()
    assert one_line(caught.value) == message


def test_an_unknown_stage_is_a_key_error_naming_those_there_are() -> None:
    trace = _trace()
    with pytest.raises(KeyError, match=r"no stage 'nope' in this trace \(stages: X, Q, K, V,"):
        trace["nope"]
    with pytest.raises(KeyError, match="no stage 'softmax' for head 3 in this trace"):
        trace["softmax", 3]


def test_numpy_numbers_and_integer_arrays_are_numbers() -> None:
    """np.int64 heads, np.True_, integer matrices: what numpy code hands over works, and
    traces as the float64 model does."""
    floats = trace_attention("a b", model=tiny_spec(causal=True))
    # integer arrays and numpy scalars on purpose (numpy 1.24's stubs see the int arrays)
    integers: list[Any] = [np.array(w) * k for w, k in ((WQ, 2), (WK, 4), (WV, 1))]
    wq, wk, wv = integers
    ints = trace_attention("a b", model=ModelSpec(
        {"a": np.array([2, 1]), "b": np.array([-1, 4])}, wq, wk, wv,
        heads=np.int64(1), causal=np.True_))  # type: ignore[arg-type]  # fmt: skip
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


# --------------------------------------------------------------------- a real model's layer

missing = [m.install for m in CATALOG if not m.installed]
needs_weights = pytest.mark.skipif(
    bool(missing), reason=f"a real model's weights are not installed: {'; '.join(missing)}"
)


@needs_weights
def test_a_real_layer_from_python_is_a_read_only_trace() -> None:
    from attntrace.real.layer import open_model, trace_layer

    trace = trace_layer("minilm", "The cat sat", layer=1, head=2)
    assert trace.traced_heads == [2]
    assert all(not data.flags.writeable for _, data in arrays_of(trace))
    model = open_model("MiniLM")  # case-insensitive, as --model
    assert model is open_model("minilm")
    ids = model.tokenizer.encode("The cat sat")
    np.testing.assert_allclose(trace["X"].data, model.layer_input(ids, 1), **FLOAT64)
    whole = model.run(ids, 2)[1][2]  # layer 1, head 2: [n, n]
    np.testing.assert_allclose(trace["softmax", 2].data, whole, **FLOAT64)


def _layer(*args: Any, **kwargs: Any) -> object:
    from attntrace.real.layer import trace_layer

    return trace_layer(*args, **kwargs)


def _opened(name: Any) -> object:
    from attntrace.real.layer import open_model

    return open_model(name)


def _run(*args: Any, **kwargs: Any) -> object:
    from attntrace.real.layer import open_model

    return open_model("minilm").run(*args, **kwargs)


def _layer_input(*args: Any) -> object:
    from attntrace.real.layer import open_model

    return open_model("minilm").layer_input(*args)


REAL_ERRORS: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    ("name int", lambda: _layer(5), TypeError, "name must be a str, got int"),
    ("sentence int", lambda: _layer("minilm", 5), TypeError,
     "sentence must be a str or None, got int"),
    ("layer str", lambda: _layer("minilm", None, "1"), TypeError, "layer must be an int, got str"),
    ("layer bool", lambda: _layer("minilm", None, True), TypeError,
     "layer must be an int, got bool"),
    ("head float", lambda: _layer("minilm", None, 0, 1.0), TypeError,
     "head must be an int or None, got float"),
    ("unknown model", lambda: _layer("gpt5"), InputError,
     "name: expected minilm or smollm2 (see `attntrace models`), got 'gpt5'"),
    ("layer out of range", lambda: _layer("minilm", layer=6), InputError,
     "layer: expected a layer from 0 to 5 (minilm has 6), got 6"),
    ("head out of range", lambda: _layer("smollm2", head=9), InputError,
     "head: expected a head from 0 to 8 (smollm2 has 9), got 9"),
    ("empty sentence", lambda: _layer("minilm", " "), InputError,
     "sentence: empty sentence: expected at least one token, got none from ' '"),
    ("open_model list", lambda: _opened(["minilm"]), TypeError, "name must be a str, got list"),
    ("open_model unknown", lambda: _opened("bert"), InputError,
     "name: expected minilm or smollm2 (see `attntrace models`), got 'bert'"),
    ("encode int", lambda: _opened("minilm").tokenizer.encode(5), TypeError,  # type: ignore[attr-defined]
     "text must be a str, got int"),
    ("run ids str", lambda: _run("the cat", 1), TypeError,
     "ids must be a sequence of token ids (ints), got str"),
    ("run id out of range", lambda: _run([101, 10**9], 1), InputError,
     "ids[1]: unknown token id: expected an integer from 0 to 30521, got 1000000000"),
    ("run no ids", lambda: _run([], 1), InputError,
     "ids: expected 1 to 512 token ids for minilm, got 0"),
    ("run too many layers", lambda: _run([101], 7), InputError,
     "layers: expected a number from 0 to 6 (minilm has 6 layers), got 7"),
    ("run rows", lambda: _run([101, 102], 1, rows=[2]), InputError,
     "rows[0]: expected a query position from 0 to 1, got 2"),
    ("layer_input layer", lambda: _layer_input([101], 6), InputError,
     "layer: expected a number from 0 to 5 (minilm has 6 layers), got 6"),
]  # fmt: skip


@needs_weights
@pytest.mark.parametrize(("what", "call", "kind", "message"), REAL_ERRORS,
                         ids=[w[0] for w in REAL_ERRORS])  # fmt: skip
def test_the_real_layer_functions_check_their_arguments(
    what: str, call: Callable[[], object], kind: type[Exception], message: str
) -> None:
    with pytest.raises(kind) as caught:
        call()
    assert type(caught.value) is kind, f"{what}: {caught.value!r}"
    assert one_line(caught.value) == message


def test_numpy_scalars_in_a_model_dict_are_numbers_and_a_longdouble_past_float64_is_refused(
) -> None:  # fmt: skip
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
