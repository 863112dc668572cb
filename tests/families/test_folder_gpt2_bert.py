"""GPT-2 and BERT opened as folders (issue 31): `save_pretrained` writes a tiny random
model, `open_hf_folder` reads it through the registry (config reader and builder by
model_type), and every layer's attention probabilities are transformers' own in float64."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpt2_bert_oracle import IDS, _randomized
from oracles import require

from attntrace.real.families.hf_folder import open_hf_folder

pytestmark = pytest.mark.long


def saved(kind: str, folder: Path) -> Any:
    """A tiny GPT2LMHeadModel or BertModel, randomized, saved in float32 to ``folder``;
    returned in float64 for the oracle run."""
    transformers = require("transformers")
    require("torch").manual_seed(7)
    if kind == "gpt2":
        config = transformers.GPT2Config(
            n_embd=64,
            n_layer=2,
            n_head=4,
            n_positions=24,
            vocab_size=100,
            attn_implementation="eager",
        )
        model = transformers.GPT2LMHeadModel(config)
    else:
        config = transformers.BertConfig(
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=96,
            max_position_embeddings=20,
            vocab_size=100,
            attn_implementation="eager",
        )
        model = transformers.BertModel(config, add_pooling_layer=False)
    _randomized(model, seed=7)
    model.save_pretrained(folder)
    return model.double().eval()


@pytest.mark.parametrize("kind", ["gpt2", "bert"])
def test_a_saved_folder_opens_and_agrees_with_transformers(kind: str, tmp_path: Path) -> None:
    torch = require("torch")
    model = saved(kind, tmp_path)
    with torch.no_grad():
        out = model(torch.tensor([IDS]), output_attentions=True)
    ours = open_hf_folder(tmp_path)
    assert ours.spec.architecture == kind
    mine = ours.run(list(IDS), ours.spec.layers)
    for layer, (theirs, got) in enumerate(zip(out.attentions, mine, strict=True)):
        # saved in float32 and read back exactly: the same weights as the oracle's
        np.testing.assert_allclose(
            got, theirs[0].numpy(), rtol=1e-9, atol=1e-12, err_msg=f"L{layer}"
        )
