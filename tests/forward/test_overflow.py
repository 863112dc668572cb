"""Arithmetic that overflows float64: one line naming the stage, never NaN, never a traceback.

The bad-input catalogue's room for the computation (:mod:`attntrace.forward.attention`);
the contract and the tools are in ``tests/catalogue.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from catalogue import J_W, WK, WV, Case, W, case, check_rejected, with_file

OVERFLOW = (
    "float64 overflowed to inf at row 'cat', column {col}; scale the embeddings or weights down"
)

REJECTED = [
    # --- arithmetic that overflows float64: exit 2, never NaN, never a traceback
    case(
        "overflow-names-the-file",
        "embeddings:\n  cat: [1.0e+200, 1.0e+200]\n" + W,
        "model.yaml: stage scores: " + OVERFLOW.format(col="'cat'"),
        args=with_file(sentence="cat"),
    ),
    case(
        "json-overflow-scores",
        '{"embeddings": {"cat": [1e200, 1e200]}, ' + J_W + "}",
        "model.json: stage scores: " + OVERFLOW.format(col="'cat'"),
        suffix=".json",
        args=with_file("--json", suffix=".json", sentence="cat"),
    ),
    case(
        "overflow-Q",
        "embeddings:\n  cat: [1.0e+300, 1.0e+300]\n"
        "weights:\n  WQ: [[1.0e+10, 0], [0, 1]]\n" + WK + WV,
        "model.yaml: stage Q: " + OVERFLOW.format(col="'d0'"),
        args=with_file(sentence="cat"),
    ),
    case(
        "yaml-overflow-1e200",
        "embeddings:\n  cat: [1e200, 1e200]\n" + W,
        "model.yaml: stage scores: " + OVERFLOW.format(col="'cat'"),
        args=with_file(sentence="cat"),
    ),
]


@pytest.mark.parametrize("case", REJECTED)
def test_an_overflow_is_one_clear_line_and_exit_2(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Numbers that are finite, but whose products are not in float64."""
    check_rejected(case, tmp_path, monkeypatch)
