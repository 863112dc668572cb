"""Running a model's layers is counted against the memory budget before the first layer
(issue 31 §4): one weight tensor at a time in float64, with its copies, and the hidden
states. A model too large for the budget is one line naming the figure and the variable."""

from __future__ import annotations

import pytest
from helpers import needs_weights

from attntrace.errors import InputError
from attntrace.real.layer import open_model


@needs_weights
def test_a_budget_too_small_for_one_layer_is_refused_before_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = open_model("smollm2")
    # 576 × 2304 numbers (the MLP width the spec implies), 3 copies of 8 bytes: 30 MiB
    assert model.largest_weight() == 576 * 2304
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "16")
    with pytest.raises(InputError) as refused:
        model.layer_input([1, 2, 3], 2)
    line = str(refused.value)
    assert "a layer's largest weight as float64" in line
    assert "ATTNTRACE_MAX_MEMORY_MB" in line
    with pytest.raises(InputError):
        model.run([1, 2, 3], 2)
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "64")
    assert model.layer_input([1, 2, 3], 2).shape == (3, 576)
