"""The trace-JSON catalogue: every way a saved trace can be wrong, and the one line it gives.

``attntrace render`` reads a trace saved by ``run --json`` (attntrace.forward.replay, then
attntrace.forward.trace_layout). Each row takes the saved trace of a sample, breaks one
thing in it, and holds ``load_trace`` to the exact message: the field path, what was
expected, what was found (spelled as attntrace.kernel.fields spells it). How the same
errors reach the terminal (exit 2, one line) is checked through the CLI in
tests/forward/test_views.py and tests/modelfile/test_hostile.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from attntrace import trace_attention
from attntrace.errors import InputError
from attntrace.forward.replay import load_trace
from attntrace.forward.trace_json import dump_bytes

Document = dict[str, Any]


def saved(sample: str) -> Document:
    """The saved trace of ``sample``, as ``run -s sample --json`` writes it."""
    document: Document = json.loads(dump_bytes(trace_attention(sample=sample)))
    return document


def stage(document: Document, name: str, head: int | None = 0) -> Document:
    found: Document = next(s for s in document["stages"] if s["name"] == name and s["head"] == head)
    return found


def refusal(document: Any) -> str:
    with pytest.raises(InputError) as caught:
        load_trace(json.dumps(document), "t.json")
    return str(caught.value).removeprefix("t.json: ")


def _only_heads_0_and_1(document: Document, *, keep_unread: bool) -> None:
    """Claim the gqa trace holds heads 0 and 1 (which read K/V head 0) and drop the
    other heads' stages and WQ slices; ``keep_unread`` keeps K/V head 1's WK and WV."""
    document["heads_traced"] = [0, 1]
    document["stages"] = [
        s for s in document["stages"] if s["head"] in (None, 0, 1) and s["name"] != "concat"
    ]
    document["weights"] = [
        w
        for w in document["weights"]
        if w["head"] in (0, 1) or (w["head"] is None and (keep_unread or w["kv_head"] == 0))
    ]


def _stray_stages(document: Document) -> None:
    """Heads 0 and 1 traced, but head 2's stages left in."""
    document["heads_traced"] = [0, 1]
    document["stages"] = [s for s in document["stages"] if s["name"] != "concat"]
    document["weights"] = [
        w for w in document["weights"] if w["head"] in (0, 1) or w["kv_head"] == 0
    ]


def _null_row(masked: Document) -> None:
    """Mask the whole first row: no key left to attend to."""
    masked["data"][0] = [None] * len(masked["data"][0])


Change = Callable[[Document], object]

REJECTED: list[tuple[str, str, Change, str]] = [
    # --- the model's sizes and settings
    (
        "model-a-list",
        "cat-eats-fish",
        lambda d: d.update(model=[1]),
        "model: expected an object with the model's sizes, got a list of 1 item",
    ),
    (
        "model-name-a-number",
        "cat-eats-fish",
        lambda d: d["model"].update(name=5),
        "model.name: expected a string, got 5",
    ),
    (
        "d_model-a-string",
        "cat-eats-fish",
        lambda d: d["model"].update(d_model="2"),
        "model.d_model: expected a whole number ≥ 1, got a string '2'",
    ),
    (
        "heads-a-boolean",
        "cat-eats-fish",
        lambda d: d["model"].update(heads=True),
        "model.heads: expected a whole number ≥ 1, got a boolean (true)",
    ),
    (
        "causal-a-string",
        "cat-eats-fish",
        lambda d: d["model"].update(causal="no"),
        "model.causal: expected true or false, got a string 'no'",
    ),
    (
        "positions-unknown",
        "cat-eats-fish",
        lambda d: d["model"].update(positions="rotary"),
        "model.positions: expected none, sinusoidal, learned, rope, alibi, got a string 'rotary'",
    ),
    (
        "rope_base-missing",
        "rope",
        lambda d: d["model"].pop("rope_base"),
        "model.rope_base: expected a number > 1, got nothing (null)",
    ),
    (
        "rope_base-one",
        "rope",
        lambda d: d["model"].update(rope_base=1),
        "model.rope_base: expected a number > 1, got 1",
    ),
    # --- tokens, and the lists of stages and weights
    (
        "tokens-empty",
        "cat-eats-fish",
        lambda d: d.update(tokens=[]),
        "tokens: expected a non-empty list, got a list of 0 items",
    ),
    (
        "tokens-a-number",
        "cat-eats-fish",
        lambda d: d["tokens"].__setitem__(1, 7),
        "tokens[1]: expected a string, got 7",
    ),
    (
        "context-tokens-a-string",
        "cross",
        lambda d: d.update(context_tokens="le chat"),
        "context_tokens: expected a non-empty list, got a string 'le chat'",
    ),
    (
        "stages-missing",
        "cat-eats-fish",
        lambda d: d.pop("stages"),
        "stages: expected a non-empty list, got nothing (null)",
    ),
    (
        "weights-an-object",
        "cat-eats-fish",
        lambda d: d.update(weights={}),
        "weights: expected a non-empty list, got a mapping with 0 keys",
    ),
    # --- a stage's fields
    (
        "stage-a-string",
        "cat-eats-fish",
        lambda d: d["stages"].__setitem__(3, "V"),
        "stages[3]: expected an object with name, shape, rows, cols, data, got a string 'V'",
    ),
    (
        "stage-name-missing",
        "cat-eats-fish",
        lambda d: d["stages"][0].pop("name"),
        "stages[0].name: expected a string, got nothing (null)",
    ),
    (
        "stage-rows-null",
        "cat-eats-fish",
        lambda d: d["stages"][0].update(rows=None),
        "stages[0].rows: expected a non-empty list, got nothing (null)",
    ),
    (
        "stage-formula-missing",
        "cat-eats-fish",
        lambda d: d["stages"][1].pop("formula"),
        "stages[1].formula: expected a string, got nothing (null)",
    ),
    (
        "stage-head-negative",
        "cat-eats-fish",
        lambda d: d["stages"][1].update(head=-1),
        "stages[1].head: expected null or a whole number ≥ 0, got -1",
    ),
    (
        "stage-kv_head-a-boolean",
        "cat-eats-fish",
        lambda d: d["stages"][1].update(kv_head=False),
        "stages[1].kv_head: expected null or a whole number ≥ 0, got a boolean (false)",
    ),
    (
        "stage-shape-a-string",
        "cat-eats-fish",
        lambda d: d["stages"][0].update(shape="3x2"),
        "stages[0].shape: expected [3, 2] (its rows and cols), got a string '3x2'",
    ),
    # --- a stage's numbers
    (
        "data-a-number",
        "cat-eats-fish",
        lambda d: d["stages"][0].update(data=1),
        "stages[0].data: expected a non-empty list, got 1",
    ),
    (
        "data-too-few-rows",
        "cat-eats-fish",
        lambda d: d["stages"][0]["data"].pop(),
        "stages[0].data: expected 3 rows (one per label), got 2",
    ),
    (
        "data-row-an-object",
        "cat-eats-fish",
        lambda d: d["stages"][0]["data"].__setitem__(0, {}),
        "stages[0].data[0]: expected a non-empty list, got a mapping with 0 keys",
    ),
    (
        "cell-a-boolean",
        "cat-eats-fish",
        lambda d: d["stages"][1]["data"][0].__setitem__(1, True),
        "stages[1].data[0][1]: expected a number or null, got a boolean (true)",
    ),
    (
        "weight-cell-a-string",
        "cat-eats-fish",
        lambda d: d["weights"][0]["data"][0].__setitem__(0, "1"),
        "weights[0].data[0][0]: expected a number or null, got a string '1'",
    ),
    # --- the heads a cut trace holds
    (
        "heads_traced-out-of-range",
        "gqa",
        lambda d: d.update(heads_traced=[0, 4]),
        "heads_traced: expected distinct head numbers from 0 to 3, got a list of 2 items",
    ),
    (
        "heads_traced-repeated",
        "gqa",
        lambda d: d.update(heads_traced=[1, 1]),
        "heads_traced: expected distinct head numbers from 0 to 3, got a list of 2 items",
    ),
    (
        "weights-of-a-kv-head-not-read",
        "gqa",
        lambda d: _only_heads_0_and_1(d, keep_unread=True),
        "weights: expected K/V heads the traced heads read ([0]), got K/V head 1",
    ),
    (
        "stages-of-a-head-not-traced",
        "gqa",
        _stray_stages,
        "stages: expected stages of the heads traced ([0, 1]), got stages of head 2",
    ),
    # --- stages that do not fit together (attntrace.forward.trace_layout)
    (
        "kv_head-null-on-a-head",
        "cat-eats-fish",
        lambda d: d["stages"][1].update(kv_head=None),
        "stages[1].kv_head: expected 0 (head 0 reads K/V head head // 1), got nothing (null)",
    ),
    (
        "rotary-stages-without-rope",
        "rope",
        lambda d: d["model"].update(positions="none"),
        "model.positions: expected rope (the trace has Q_rope and K_rope stages), got a "
        "string 'none'",
    ),
    (
        "masked-missing",
        "causal",
        lambda d: d.update(stages=[s for s in d["stages"] if s["name"] != "masked"]),
        "stages: expected the stages Q, K, V, scores, scaled, masked, softmax, output, got no "
        "masked",
    ),
    (
        "K-rows-not-the-context",
        "cross",
        lambda d: stage(d, "K").update(rows=d["tokens"]),
        "stages[3] (K).rows: expected the tokens ['le', 'chat', 'mange'], got ['the', 'cat', "
        "'eats']",
    ),
    (
        "scores-cols-not-the-keys",
        "cat-eats-fish",
        lambda d: stage(d, "scores").update(cols=["a", "b", "c"]),
        "stages[4] (scores).cols: expected the key tokens ['cat', 'eats', 'fish'], got ['a', "
        "'b', 'c']",
    ),
    (
        "Q-narrower-than-d_k",
        "cat-eats-fish",
        lambda d: d["model"].update(d_k=3),
        "stages[1] (Q).cols: expected 3 columns (from model), got 2",
    ),
    (
        "masked-row-all-null",
        "causal",
        lambda d: _null_row(stage(d, "masked")),
        "stages[6] (masked).data: expected at least one unmasked cell a row, got a row of nulls",
    ),
    (
        "softmax-negative-weight",
        "cat-eats-fish",
        lambda d: stage(d, "softmax")["data"].__setitem__(0, [1.5, -0.5, 0.0]),
        "stages[6] (softmax).data[0]: expected weights in [0, 1] that sum to 1, got a row "
        "summing to 1.0",
    ),
]


@pytest.mark.parametrize(
    ("sample", "change", "message"), [r[1:] for r in REJECTED], ids=[r[0] for r in REJECTED]
)
def test_a_bad_trace_is_one_input_error_naming_the_field(
    sample: str, change: Change, message: str
) -> None:
    document = saved(sample)
    change(document)
    assert refusal(document) == message


def test_a_trace_that_is_not_an_object_says_what_render_reads() -> None:
    assert refusal([saved("cat-eats-fish")]) == (
        "the trace: expected a JSON object from `attntrace run --json`, got a list of 1 item"
    )


@pytest.mark.parametrize("sample", ["cat-eats-fish", "causal", "rope", "gqa", "cross"])
def test_each_row_breaks_a_trace_that_reads(sample: str) -> None:
    """The samples the rows start from are themselves read without a complaint."""
    assert load_trace(json.dumps(saved(sample)), "t.json").model.name == sample
