"""The three catalogued models opened by path trace exactly as their catalogue names do
(issue 31 §3): MiniLM's folder in its package, SmolLM2's and Gemma 3's GGUF files, read
through the families (config.json or GGUF metadata, tensors by Hugging Face name, the
file's own tokenizer) rather than the catalogue's hand-written classes."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import needs_weights

from attntrace.real.catalog import find_model
from attntrace.real.layer import layer_trace

pytestmark = [pytest.mark.long, needs_weights]

CASES = [
    ("minilm", 2, "the animal didn't cross the street"),
    ("smollm2", 3, "The animal didn't cross the street"),
    ("gemma3", 5, "The animal didn't cross the street"),
]


def path_of(name: str) -> str:
    model = find_model(name)
    if name == "minilm":
        return str(model.weights_path().parent)  # the folder, as save_pretrained wrote it
    return str(model.verified_weights())


@pytest.mark.parametrize(("name", "layer", "sentence"), CASES)
def test_by_path_as_by_name(name: str, layer: int, sentence: str) -> None:
    by_name = layer_trace(name, sentence, layer, None)
    by_path = layer_trace(path_of(name), sentence, layer, None)
    assert by_path.tokens == by_name.tokens
    assert [s.name for s in by_path.stages] == [s.name for s in by_name.stages]
    for ours, theirs in zip(by_path.stages, by_name.stages, strict=True):
        np.testing.assert_allclose(
            ours.data, theirs.data, rtol=1e-12, atol=1e-14, err_msg=f"{name} {ours.name}"
        )
