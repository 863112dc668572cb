"""A document written in pieces (attntrace.kernel.documents.StreamedJSON) is byte for
byte what orjson writes of it whole, and whatever orjson would refuse is refused before
a piece is made.

The pieces are made small here (a few dozen bytes), so that every way of cutting (blocks
of rows, a row cut into blocks, a list or dict opened up) runs on small documents.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attntrace.kernel import documents
from attntrace.kernel.documents import JSON_PIECE_BYTES, LowCells, StreamedJSON


def whole(document: Any) -> bytes:
    """orjson's bytes of ``document`` in one call; a LowCells as its cells are spelled
    (null for −∞, "inf", "nan", else the float), written out here."""

    def spelled(x: float) -> float | str | None:
        if math.isnan(x):
            return "nan"
        if x == math.inf:
            return "inf"
        return None if x == -math.inf else x

    def default(value: Any) -> Any:
        if isinstance(value, LowCells):
            return np.vectorize(spelled, otypes=[object])(value.data).tolist()
        raise TypeError

    return orjson.dumps(document, default=default, option=orjson.OPT_SERIALIZE_NUMPY)


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> int:
    """Pieces of at most 40 bytes (gathered up to 16): every document here is cut."""
    monkeypatch.setattr(documents, "_HALF", 40)
    monkeypatch.setattr(documents, "_GATHER", 16)
    return 40


FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=7)
ARRAYS = st.one_of(
    hnp.arrays(np.float64, SHAPES, elements=FLOATS),
    hnp.arrays(np.float32, SHAPES, elements=st.floats(width=32)),
    hnp.arrays(np.float16, SHAPES, elements=st.floats(width=16)),
    hnp.arrays(np.longdouble, SHAPES, elements=st.floats(-1, 1)),  # orjson refuses these
    hnp.arrays(np.int64, SHAPES),
    hnp.arrays(np.bool_, SHAPES),
    hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2), elements=FLOATS).map(
        lambda a: a.T  # not C-ordered where it has 2 rows and 2 columns: orjson refuses it
    ),
)
ROWS = hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=7)
LOW = hnp.arrays(np.float64, ROWS, elements=FLOATS).map(LowCells)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    FLOATS,
    st.integers(-(2**64), 2**65),  # past orjson's 64 bits too
    st.text(),  # lone surrogates and control characters too
    ARRAYS,
    LOW,
)
DOCUMENTS = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.text(), st.integers()), inner, max_size=6),
    ),
    max_leaves=30,
)


@given(DOCUMENTS)
def test_the_pieces_are_what_orjson_writes_whole_or_nothing(document: Any) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(documents, "_HALF", 40)
        patch.setattr(documents, "_GATHER", 16)
        try:
            expected = whole(document)
        except orjson.JSONEncodeError:
            with pytest.raises(orjson.JSONEncodeError):
                StreamedJSON(document)  # refused before a single piece is made
            return
        assert b"".join(StreamedJSON(document)) == expected


@given(hnp.arrays(np.float64, ROWS, elements=FLOATS))
def test_no_piece_of_numbers_is_longer_than_the_bound(data: np.ndarray[Any, Any]) -> None:
    """Numbers only (a string is written whole): each piece within the bound."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(documents, "_HALF", 40)
        patch.setattr(documents, "_GATHER", 16)
        pieces = list(StreamedJSON({"data": data, "low": LowCells(data)}))
    assert all(len(piece) <= 40 for piece in pieces)


def test_a_big_matrix_is_written_in_pieces_of_at_most_the_bound() -> None:
    """A 1,000 × 1,000 matrix at its longest (-2.2250738585072014e-308 in every cell,
    24 bytes): 25 MB of text, never more than JSON_PIECE_BYTES in one piece."""
    data = np.full((1000, 1000), -2.2250738585072014e-308)
    pieces = list(StreamedJSON([data]))
    assert len(pieces) > 2
    assert max(len(piece) for piece in pieces) <= JSON_PIECE_BYTES // 2
    assert b"".join(pieces) == whole([data])


@pytest.mark.parametrize(
    "document",
    [
        {"token": "\udcff"},  # a lone surrogate
        {"\ud800": 1},
        {1: "a key that is no string"},
        [2**64],
        {"data": np.zeros((3, 3)).T.copy(order="F")[:, :2]},  # not C-ordered
    ],
)
def test_what_orjson_refuses_is_refused_before_a_piece(document: Any) -> None:
    with pytest.raises(orjson.JSONEncodeError):
        whole(document)
    with pytest.raises(orjson.JSONEncodeError):
        StreamedJSON(document)


@pytest.mark.parametrize(
    "data",
    [np.zeros(3, dtype=">f8"), np.zeros(0, dtype=np.float16), np.ones((2, 2), dtype=np.float16)],
    ids=["big-endian", "empty-float16", "float16"],
)
def test_an_array_is_refused_or_written_as_this_orjson_writes_it(data: Any) -> None:
    """Which dtypes and byte orders orjson writes depends on its version (3.9, the
    floor, writes big-endian floats and refuses float16): the stream follows it."""
    try:
        expected = whole({"data": data})
    except orjson.JSONEncodeError:
        with pytest.raises(orjson.JSONEncodeError):
            StreamedJSON({"data": data})
        return
    assert b"".join(StreamedJSON({"data": data})) == expected
