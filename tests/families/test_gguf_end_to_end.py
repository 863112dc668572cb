"""The ten families as GGUF files, run end to end: each tiny model, converted by
llama.cpp's own converter, opened with ``open_gguf_model``, must give every layer's
attention probabilities of transformers' float64 eager run of the same model (its
RoPE, norms and softmax made float64: ``float64_oracle``), to 1e-9.

The models are tests/gguf_convert.py's, with every weight drawn anew (as
tests/family_models.py and tests/gpt2_bert_oracle.py draw them: transformers' init
would leave attention nearly uniform and the biases zero) before they are saved in
float32, so ``--outtype f32`` stores the oracle's very numbers.

Where GGUF cannot say what the folder says, the test says so:

* Mistral is converted as ``llama`` without its ``sliding_window``: within the window
  the two agree; beyond it the file's model is transformers' model with no window
  (docs/real-models.md says so).
* Llama 3's scaled frequencies are stored only as ``rope_freqs.weight``, the factors in
  float32. The oracle gets the same float32 factors injected (its ``inv_freq`` becomes
  ``base^(-2i/d) / factor``, the factors read by the ``gguf`` package), and a separate
  check holds those factors to transformers' own within float32's rounding.
* Q8_0, F16, BF16: the oracle is transformers' model with every weight replaced by
  the file's, dequantized (``GGUFTensors``, held to the ``gguf`` package's dequantizer bit for bit
  in test_gguf_families.py), so the comparison is again 1e-9.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from gguf_convert import TEXT, convert
from gguf_oracle import attentions, family
from oracles import llama_cpp, require

from attntrace.real.families.gguf_facts import gguf_facts
from attntrace.real.families.gguf_model import open_gguf_model
from attntrace.real.families.gguf_tensors import GGUFTensors
from attntrace.real.forward import Transformer
from attntrace.real.weights.gguf import GGUFFile

pytestmark = pytest.mark.long

FAMILIES = (
    "llama", "llama3", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3",
    "gpt2", "bert",
)  # fmt: skip
# 12 ids: past Gemma 2/3's window of 8 (tests/gguf_convert.py), within Phi-3's 16
IDS = [1, 17, 42, 5, 17, 99, 3, 64, 8, 31, 99, 7]
WITHIN_MISTRAL_WINDOW = IDS[:8]


@pytest.fixture(scope="session")
def workshop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gguf-end-to-end")


def assert_agree(model: Transformer, oracle: Any, ids: list[int]) -> None:
    want = attentions(oracle, ids)
    got = model.run(ids, model.spec.layers)
    assert len(got) == len(want)
    for layer, (mine, theirs) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-12, err_msg=f"layer {layer}")


@pytest.mark.parametrize("name", [f for f in FAMILIES if f not in ("mistral", "llama3")])
def test_every_layers_attention_is_transformers(workshop: Path, name: str) -> None:
    item = family(workshop, name)
    model = open_gguf_model(item.converted.gguf["f32"])
    vocab = item.oracle.config.vocab_size
    assert_agree(model, item.oracle, [i % vocab for i in IDS])


def test_mistral_within_its_window(workshop: Path) -> None:
    item = family(workshop, "mistral")
    model = open_gguf_model(item.converted.gguf["f32"])
    assert_agree(model, item.oracle, WITHIN_MISTRAL_WINDOW)


def test_mistral_beyond_its_window_is_unwindowed(workshop: Path) -> None:
    """The converter drops ``sliding_window``: past it, the file's model is the folder's
    with no window, and no longer the folder's own."""
    item = family(workshop, "mistral")
    model = open_gguf_model(item.converted.gguf["f32"])
    got = model.run(IDS, model.spec.layers)
    windowed = attentions(item.oracle, IDS)
    assert not np.allclose(got[0], windowed[0], atol=1e-6)
    item.oracle.config.sliding_window = None
    try:
        unwindowed = attentions(item.oracle, IDS)
    finally:
        item.oracle.config.sliding_window = item.converted.config.sliding_window
    for mine, theirs in zip(got, unwindowed, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-12)
    docs = (Path(__file__).parents[2] / "docs" / "real-models.md").read_text()
    assert "A Mistral GGUF is traced as the\n  Llama it says it is" in docs
    assert "differ only past the window" in docs


def _file_rope_factors(path: Path) -> npt.NDArray[np.float64]:
    gguf = require("gguf")
    reader = gguf.GGUFReader(str(path))
    tensor = next(t for t in reader.tensors if t.name == "rope_freqs.weight")
    return np.asarray(tensor.data, dtype=np.float64).reshape(-1)


def test_llama3_with_the_files_float32_factors(workshop: Path) -> None:
    """The oracle's ``inv_freq`` made ``base^(-2i/d) / factor`` with the file's float32
    factors; those factors are transformers' own ratios to float32's rounding."""
    torch = require("torch")
    item = family(workshop, "llama3")
    path = item.converted.gguf["f32"]
    factors = _file_rope_factors(path)
    rotary = item.oracle.model.rotary_emb
    d = item.converted.config.head_dim
    base = 500_000.0
    plain = base ** -(np.arange(0, d, 2, dtype=np.float64) / d)
    theirs = rotary.inv_freq.double().numpy()
    np.testing.assert_allclose(plain / factors, theirs, rtol=2.0**-22, atol=0)
    saved = rotary.inv_freq.clone()
    try:
        rotary.inv_freq = torch.tensor(plain / factors, dtype=torch.float64)
        assert_agree(open_gguf_model(path), item.oracle, IDS)
    finally:
        rotary.inv_freq = saved


QUANTIZED = (
    ("llama", "q8_0"), ("phi3", "q8_0"), ("gpt2", "q8_0"), ("bert", "q8_0"),
    ("gemma2", "f16"), ("qwen3", "bf16"),
)  # fmt: skip


@pytest.mark.parametrize(("name", "outtype"), QUANTIZED)
def test_a_quantized_file_is_transformers_with_its_weights(
    workshop: Path, name: str, outtype: str
) -> None:
    """A Q8_0 (F16, BF16) file against transformers' model holding the file's
    dequantized weights (back in Hugging Face's layout by GGUFTensors, which
    test_gguf_families.py holds to the gguf package bit for bit), to 1e-9."""
    import copy

    torch = require("torch")
    item = family(workshop, name)
    path = convert(llama_cpp(), item.converted, outtype)
    model = open_gguf_model(path)
    gguf = GGUFFile(path)
    source = GGUFTensors(gguf, gguf_facts(gguf))
    oracle = copy.deepcopy(item.oracle)
    state = oracle.state_dict()
    changed = 0
    with torch.no_grad():
        for tensor in source.names():
            key = next(k for k in (tensor, f"transformer.{tensor}") if k in state)
            value = torch.tensor(source.tensor(tensor), dtype=torch.float64)
            changed += not torch.equal(value, state[key])
            state[key].copy_(value)
    assert changed >= 2 * 4, f"the {outtype} file should hold rounded attention weights"
    ids = [i % item.oracle.config.vocab_size for i in IDS]
    assert_agree(model, oracle, ids)
    # and it is not the F32 model's: the rounding shows
    f32 = open_gguf_model(item.converted.gguf["f32"]).run(ids, 1)[0]
    assert not np.allclose(model.run(ids, 1)[0], f32, atol=1e-9)


@pytest.mark.parametrize("name", FAMILIES)
def test_embedded_vocabulary_is_the_reference_tokenizer(workshop: Path, name: str) -> None:
    """The GGUF's own vocabulary encodes like the folder's tokenizer, read by its
    reference implementation (sentencepiece for tokenizer.model, tokenizers for
    tokenizer.json); special tokens aside."""
    item = family(workshop, name)
    model = open_gguf_model(item.converted.gguf["f32"])
    sentence = " ".join(TEXT.split()[3:11])
    folder = item.converted.folder
    if (folder / "tokenizer.model").is_file():
        spm = require("sentencepiece")
        processor = spm.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))
        want = list(processor.encode(sentence))
    else:
        tokenizers = require("tokenizers")
        reference = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
        want = reference.encode(sentence, add_special_tokens=False).ids
    got = model.tokenizer.encode(sentence, add_special=False)  # type: ignore[call-arg]
    assert got == want
