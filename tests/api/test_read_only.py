"""Every array a trace holds is read-only, and the caller's own arrays are neither
frozen nor shared behind their back; the package's own frozen arrays are shared, not
copied, and still checked."""

from __future__ import annotations

import copy
import io
import pickle
from collections.abc import Callable

import numpy as np
import pytest
from helpers import needs_weights
from rich.console import Console
from tiny_model import (
    EMBEDDINGS,
    WK,
    WQ,
    WV,
    arrays_of,
    one_line,
    tiny_spec,
)
from tolerances import FLOAT64

from attntrace import InputError, ModelSpec, Stage, Trace, trace_attention
from attntrace.forward.replay import load_trace
from attntrace.forward.trace_json import dump_bytes
from attntrace.kernel.spec import GivenInputs
from attntrace.modelfile.samples import list_samples


def sample_traces() -> list[tuple[str, Callable[[], Trace]]]:
    def sample(name: str) -> Callable[[], Trace]:
        return lambda: trace_attention(sample=name)

    made = [(s.name, sample(s.name)) for s in list_samples()]
    made += [
        ("ModelSpec", lambda: trace_attention("a b c", model=tiny_spec())),
        (
            "learned positions",
            lambda: trace_attention(
                "a b", model=tiny_spec(positions=np.array([[0.5, 0.0], [0.0, 0.5]]))
            ),
        ),
        (
            "biases and WO",
            lambda: trace_attention(
                "a b", model=tiny_spec(WO=np.eye(2), biases={"bQ": np.ones(2), "bO": np.ones(2)})
            ),
        ),
        (
            "given X",
            lambda: trace_attention(
                "a b",
                model=tiny_spec(given=GivenInputs(np.array([[1.0, 2.0], [3.0, 4.0]]), "X = given")),
            ),
        ),
        (
            "saved and read back",
            lambda: load_trace(dump_bytes(trace_attention(sample="gqa")).decode(), "t.json"),
        ),
        ("cut to heads", lambda: trace_attention(sample="gqa").only_heads([1, 3])),
    ]
    return made


@pytest.mark.parametrize(
    ("what", "make"), sample_traces(), ids=lambda x: x if isinstance(x, str) else ""
)
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
    from attntrace.forward.focus import focus_row
    from attntrace.forward.views.present import Presentation, renderables

    trace = trace_attention(sample="it-animal")
    before = [data.copy() for _, data in arrays_of(trace)]
    console = Console(file=io.StringIO(), width=120, color_system="truecolor")
    for how in (
        Presentation(),
        Presentation(map=True),
        Presentation(overview=True),
        Presentation(focus="it"),
    ):
        focus = None if how.focus is None else (focus_row(trace, how.focus),)
        for renderable in renderables(trace, how, focus):
            console.print(renderable)
    dump_bytes(trace)
    str(trace)
    trace._repr_mimebundle_()
    for (label, data), old in zip(arrays_of(trace), before, strict=True):
        np.testing.assert_array_equal(data, old, err_msg=label)


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
