"""Tiny random models of the ten families converted to GGUF by llama.cpp's converter,
each with its oracle: transformers' model of the same numbers in float64, eager, its
RoPE, norms and softmax made float64 (tests/family_models.py's ``float64_oracle``).
Shared by tests/families/test_gguf_end_to_end.py and tests/cli/test_model_on_disk.py.

The models are tests/gguf_convert.py's, with every weight drawn anew (as
tests/family_models.py and tests/gpt2_bert_oracle.py draw them: transformers' init
would leave attention nearly uniform and the biases zero) before they are saved in
float32, so ``--outtype f32`` stores the oracle's very numbers. Gemma's tokenizer.model
has no dummy prefix, as Gemma's own (the converter writes ``add_space_prefix`` false
for every Gemma).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from family_models import float64_oracle
from gguf_convert import PRE_TOKENIZER, SENTENCES, Converted, _write_tokenizer, build_model, convert
from oracles import llama_cpp, require


@dataclass
class Family:
    converted: Converted
    oracle: Any  # transformers' model, float64, eager


_FAMILIES: dict[str, Family] = {}


def _randomize(model: Any, family: str) -> None:
    if family in ("gpt2", "bert"):
        from gpt2_bert_oracle import _randomized as drawn

        drawn(model, seed=31)
    else:
        from family_models import _randomized

        _randomized(model, family, seed=31)


def _gemma_spm() -> bytes:
    """A SentencePiece model as Gemma's is: no dummy prefix (the converter writes
    ``add_space_prefix`` false for every Gemma whatever the model says)."""
    import io

    spm = require("sentencepiece")
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(SENTENCES),
        model_writer=out,
        vocab_size=100,
        model_type="bpe",
        hard_vocab_limit=False,
        add_dummy_prefix=False,
        minloglevel=2,
    )
    return out.getvalue()


def family(
    workshop: Path,
    name: str,
    *,
    tokenizer: dict[str, bytes] | None = None,
    vocab: int | None = None,
    pre: str = "default",
    key: str | None = None,
) -> Family:
    """``name``'s tiny model, randomized, saved, converted to F32 (once a session per
    ``key``, default ``name``). ``tokenizer``: the tokenizer's files, instead of
    tests/gguf_convert.py's (then ``vocab``, the embedding rows, and ``pre``, the
    pre-tokenizer named where the converter does not know the vocabulary's hash)."""
    require("sentencepiece")
    torch = require("torch")
    transformers = require("transformers")
    lcp = llama_cpp()
    key = key or name
    if key not in _FAMILIES:
        model, kind = build_model(name)
        if vocab is not None:
            model.resize_token_embeddings(vocab)
        _randomize(model, name)
        folder = workshop / key
        folder.mkdir(parents=True)
        model.save_pretrained(folder)
        if tokenizer is None:
            _write_tokenizer(kind, folder)
        for file, content in (tokenizer or {}).items():
            (folder / file).write_bytes(content)
        if name.startswith("gemma"):
            (folder / "tokenizer.model").write_bytes(_gemma_spm())
        item = Converted(name, folder, model.config)
        saved = dict(PRE_TOKENIZER)
        if tokenizer is not None:
            PRE_TOKENIZER[name] = pre
        try:
            convert(lcp, item, "f32")
        finally:
            PRE_TOKENIZER.clear()
            PRE_TOKENIZER.update(saved)
        auto = transformers.AutoModel if name == "bert" else transformers.AutoModelForCausalLM
        with float64_oracle():  # RoPE's inv_freq is made at init
            oracle = auto.from_pretrained(
                folder, dtype=torch.float64, attn_implementation="eager"
            ).eval()
        if name.startswith("gemma"):
            _as_the_file_holds_them(oracle)
        _FAMILIES[key] = Family(item, oracle)
    return _FAMILIES[key]


def _as_the_file_holds_them(oracle: Any) -> None:
    """Gemma's RMSNorm weights w, which the converter stores as float32(1 + w): what
    the file can say is that minus 1, not w (a change of up to 2⁻²⁴, which moves the
    probabilities by ~1e-7). The oracle gets the file's numbers."""
    torch = require("torch")
    with torch.no_grad():
        for name, parameter in oracle.named_parameters():
            if name.endswith("norm.weight"):
                stored = (1 + parameter.to(torch.float32)).to(torch.float64)
                parameter.copy_(stored - 1)


def attentions(oracle: Any, ids: list[int]) -> list[npt.NDArray[np.float64]]:
    torch = require("torch")
    with float64_oracle(), torch.no_grad():
        out = oracle(torch.tensor([ids]), output_attentions=True, use_cache=False)
    return [a[0].numpy() for a in out.attentions]
