"""A real model's layer in the explorer: h changes the head, l computes the next layer
in a worker while the screen stays up."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from explorer import driven, settled

from attntrace.explore.app import ExploreApp
from attntrace.explore.sources import Layers
from attntrace.real.catalog import find_model
from attntrace.real.layer import layer_trace

SMOLLM2 = find_model("smollm2")
pytestmark = [
    pytest.mark.skipif(not SMOLLM2.installed, reason="SmolLM2 is not installed"),
    pytest.mark.long,  # some 6 s: the layers run twice
]


def test_smollm2_layer_3_changes_heads_and_layers() -> None:
    trace = layer_trace("smollm2", None, 3, None)
    layers = Layers(
        "smollm2", SMOLLM2.layers, 3, lambda layer: layer_trace("smollm2", None, layer, None)
    )
    seen_heads: list[tuple[str, int | None, str]] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        seen_heads.append((app.walk.stage.name, app.walk.head, app.message))
        await pilot.press("h")
        seen_heads.append((app.walk.stage.name, app.walk.head, app.message))
        await pilot.press("l")
        await settled(app, pilot)

    seen = driven(trace, drive, layers=layers)
    assert seen_heads[0][:2] == ("softmax", 0)
    assert seen_heads[1] == ("softmax", 1, "")
    app = seen.app
    assert app.layers is not None
    assert app.layers.current == 4
    assert app.trace.model.name == "smollm2 L4"
    assert (app.walk.stage.name, app.walk.head) == ("softmax", 1)  # kept across the layer
    shown = app.walk.stage.data
    expected = layer_trace("smollm2", None, 4, None).stage("softmax", 1).data
    assert np.array_equal(shown, expected)
    assert "smollm2 L4" in seen.where
    assert "head 1" in seen.where
    assert seen.status == f"layer 4 of {SMOLLM2.layers}"
