"""ModelSpec's rules, as a model file meets them: shapes that fit, tokens it holds.

The bad-input catalogue's room for :class:`attntrace.kernel.spec.ModelSpec` (the contract
and the tools are in ``tests/catalogue.py``): each value of the model file is of the
right kind, but they do not fit together (WK's width is not kv_heads·d_k, a causal mask
with a context), or the sentence holds a token the vocabulary does not. The same checks
from Python are in tests/api/test_argument_errors.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from catalogue import EMB, GOOD, WK, WQ, WV, Case, W, case, check_rejected, with_file

from attntrace.errors import InputError
from attntrace.kernel.spec import ModelSpec

REJECTED = [
    # --- shapes that do not fit together: docs/model-file.md#shapes
    case(
        "WK-2x3",
        EMB + "weights:\n" + WQ + "  WK: [[1, 0, 0], [0, 1, 0]]\n" + WV,
        "model.yaml: weights.WK: expected 2 × 2 (d_model × kv_heads·d_k = 2 × 1·2, d_k from "
        "WQ), got 2 × 3",
    ),
    case(
        "WQ-3x2",
        EMB + "weights:\n  WQ: [[1, 0], [0, 1], [1, 1]]\n" + WK + WV,
        "model.yaml: weights.WQ: expected 2 rows (d_model, the embeddings' length), got 3 × 2",
    ),
    case(
        "WV-1x2",
        EMB + "weights:\n" + WQ + WK + "  WV: [[0, 1]]\n",
        "model.yaml: weights.WV: expected 2 rows (d_model, the embeddings' length), got 1 × 2",
    ),
    case(
        "heads-not-dividing-WQ",
        GOOD + "heads: 3\n",
        "model.yaml: weights.WQ: expected a number of columns divisible by heads (3), got 2 × 2",
    ),
    case(
        "kv_heads-not-dividing-heads",
        EMB + "weights:\n  WQ: [[1, 0, 0], [0, 1, 0]]\n  WK: [[1, 0], [0, 1]]\n"
        "  WV: [[1, 0], [0, 1]]\nheads: 3\nkv_heads: 2\n",
        "model.yaml: kv_heads: each K/V head serves the same number of query heads: "
        "expected a divisor of heads (3): 1, 3, got 2",
    ),
    case(
        "kv_heads-more-than-heads",
        GOOD + "kv_heads: 2\n",
        "model.yaml: kv_heads: each K/V head serves the same number of query heads: "
        "expected a divisor of heads (1): 1, got 2",
    ),
    case(
        "WK-width-not-kv_heads-times-d_k",
        EMB + "weights:\n  WQ: [[1, 0], [0, 1]]\n  WK: [[1], [0]]\n  WV: [[1], [0]]\n"
        "heads: 2\nkv_heads: 2\n",
        "model.yaml: weights.WK: expected 2 × 2 (d_model × kv_heads·d_k = 2 × 2·1, d_k from "
        "WQ), got 2 × 1",
    ),
    case(
        "WK-shaped-for-gqa-without-kv_heads",
        EMB + "weights:\n  WQ: [[1, 0], [0, 1]]\n  WK: [[1], [0]]\n  WV: [[1], [0]]\nheads: 2\n",
        "model.yaml: weights.WK: expected 2 × 2 (d_model × kv_heads·d_k = 2 × 2·1, d_k from "
        "WQ); for grouped-query attention with 1 K/V head, set kv_heads: 1, got 2 × 1",
    ),
    case(
        "WV-width-not-divisible-by-kv_heads",
        EMB + "weights:\n  WQ: [[1, 0], [0, 1]]\n  WK: [[1, 0], [0, 1]]\n"
        "  WV: [[1, 0, 0], [0, 1, 0]]\nheads: 2\n",
        "model.yaml: weights.WV: expected a number of columns divisible by kv_heads (2), got 2 × 3",
    ),
    case(
        "WO-wrong-shape",
        GOOD + "  WO: [[1, 0, 0], [0, 1, 0]]\n",
        "model.yaml: weights.WO: expected 2 × 2 (heads·d_v × d_model = 1·2 × 2), got 2 × 3",
    ),
    case(
        "positions-wrong-width",
        GOOD + "positions: [[0, 0, 0], [1, 1, 1], [2, 2, 2]]\n",
        "model.yaml: positions: expected vectors of 2 numbers (d_model), got 3 × 3",
    ),
    case(
        "positions-too-few",
        GOOD + "positions: [[0, 0], [1, 1]]\n",
        "model.yaml: positions: expected at least 3 position vectors (one per token of the "
        "sentence), got 2",
    ),
    case(
        "causal-with-context",
        EMB + "  le: [1, 0]\n" + W + "causal: true\ncontext: le\n",
        "model.yaml: causal: a causal mask hides later tokens of the same sequence; with a "
        "context (cross-attention) every query sees every context token: expected false with "
        "context, got true",
    ),
    # --- tokens the vocabulary does not hold
    case(
        "unknown-tokens",
        GOOD,
        "model.yaml: embeddings: unknown tokens 'dog', 'bird' (vocabulary: cat, eats, fish)",
        args=with_file(sentence="dog cat bird dog"),
    ),
    case(
        "unknown-punctuation-token-explained",
        GOOD,
        "model.yaml: embeddings: unknown token '.' (vocabulary: cat, eats, fish); '.': "
        "punctuation at a word's edge is a token of its own, so the embeddings need it too",
        args=with_file(sentence="cat eats fish."),
    ),
    case(
        "unknown-token-json-output",
        GOOD,
        "model.yaml: embeddings: unknown token 'dog' (vocabulary: cat, eats, fish)",
        args=with_file("--json", sentence="cat dog"),
    ),
    case(
        "unknown-token-large-vocabulary",
        "embeddings:\n" + "".join(f"  t{i}: [1, 2]\n" for i in range(25)) + W,
        "model.yaml: embeddings: unknown token 'dog' (vocabulary: "
        + ", ".join(f"t{i}" for i in range(20))
        + ", … and 5 more)",
        args=with_file(sentence="t0 dog"),
    ),
    case(
        "context-unknown-tokens",
        GOOD + "context: le chat\n",
        "model.yaml: context: unknown tokens 'le', 'chat' (vocabulary: cat, eats, fish)",
    ),
    # --- text a terminal would act on: the one line shows it as escapes (attntrace.visible)
    case(
        "unknown-token-clears-the-screen",
        GOOD,
        "model.yaml: embeddings: unknown token '\\x1b[2J' (vocabulary: cat, eats, fish)",
        args=with_file(sentence="cat \x1b[2J"),
    ),
    case(
        "unknown-token-turns-the-line-around",
        GOOD,
        "model.yaml: embeddings: unknown token '\\u202ehsif' (vocabulary: cat, eats, fish)",
        args=with_file(sentence="cat \u202ehsif"),
    ),
    case(
        "bell-in-the-vocabulary-listed",
        'embeddings:\n  "\\abell": [1, 2]\n  eats: [3, 1]\n' + W,
        "model.yaml: embeddings: unknown token 'dog' (vocabulary: \\x07bell, eats)",
        args=with_file(sentence="dog"),
    ),
    case(
        "wide-unknown-token",
        GOOD,
        "model.yaml: embeddings: unknown tokens '猫', '🐟' (vocabulary: cat, eats, fish)",
        args=with_file(sentence="猫 eats 🐟"),
    ),
    case(
        "token-spelled-with-other-code-points",
        'embeddings:\n  "\\u00e9": [1, 2]\n' + W,
        "model.yaml: embeddings: unknown token 'e\u0301' (vocabulary: \u00e9); 'e\u0301' "
        "(U+0065 U+0301) looks like the vocabulary's '\u00e9' (U+00E9) but is spelled with "
        "other code points",
        args=with_file(sentence="e\u0301"),
    ),
]


@pytest.mark.parametrize("case", REJECTED)
def test_a_model_that_does_not_fit_is_one_clear_line_and_exit_2(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fields of the right kind that do not fit together, or a token not held."""
    check_rejected(case, tmp_path, monkeypatch)


@pytest.mark.parametrize(("source", "prefix"), [("m.yaml", "m.yaml: "), (None, "")])
@pytest.mark.parametrize(
    ("changes", "rest"),
    [
        ({"heads": 0}, "heads: expected a whole number ≥ 1, got 0"),
        ({"WK": np.ones((2, 3))}, "weights.WK: expected 2 × 2"),
        ({"embeddings": {"a": np.array([1.0, np.nan])}}, "embeddings.a"),
        ({"positions": "rotary"}, "positions: expected none, sinusoidal, rope"),
        ({"causal": True, "context": "x"}, "causal: a causal mask hides"),
    ],
)
def test_a_spec_error_names_the_models_file_once_where_it_has_one(
    source: str | None, prefix: str, changes: dict[str, Any], rest: str
) -> None:
    """Every check of ModelSpec is located in its ``source`` by one wrapper, so each
    message starts with the file (or with the field, for a model made in Python)."""
    given: dict[str, Any] = {
        "embeddings": {"a": np.ones(2)},
        "WQ": np.eye(2),
        "WK": np.eye(2),
        "WV": np.eye(2),
    }
    given.update(changes)
    with pytest.raises(InputError) as caught:
        ModelSpec(**given, source=source)
    assert str(caught.value).startswith(prefix + rest), str(caught.value)
    assert str(caught.value).count("m.yaml") == (source is not None)
