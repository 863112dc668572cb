"""Tiny random models of the ten families, saved as Hugging Face folders and converted
to GGUF by llama.cpp's own converter: the fixtures of tests/families/test_gguf_families.py.

Each model is built with transformers' config classes (hidden 64, 2–3 layers, GQA where
the family has it, seeded) in float32, so ``--outtype f32`` stores its numbers exactly.
The converter needs a tokenizer:

* the SentencePiece families (llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3, phi3)
  get a ``tokenizer.model`` trained here on a few sentences (``_set_vocab_sentencepiece``
  and ``Phi3MiniModel.set_vocab`` read it; Qwen2Model tries it first);
* GPT-2 (byte-level BPE) and BERT (WordPiece) get a ``tokenizer.json`` built with
  ``tokenizers``. Their vocabularies are read by ``TextModel.get_vocab_base``, which
  refuses a pre-tokenizer whose hash of ``chktxt``'s tokens it does not know
  (``get_vocab_base_pre``): a tiny vocabulary's never is. The converter is therefore run
  from a driver that wraps ``get_vocab_base_pre`` and, where it raises
  ``NotImplementedError``, names the family's real pre-tokenizer (``gpt-2``,
  ``bert-bge``). Nothing else of the converter is touched.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TEXT = (
    "the quick brown fox jumps over a lazy dog while attention heads look back at every "
    "token they see and some of them only ever look at the first"
)
WORDS = TEXT.split(" ")
SENTENCES = [" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))] * 10

# The pre-tokenizer named where the converter does not know the tiny vocabulary's hash.
PRE_TOKENIZER = {"gpt2": "gpt-2", "bert": "bert-bge"}

DRIVER = """
import runpy, sys
sys.path[:0] = [{lcp!r}, {gguf_py!r}]
import conversion.base as base
known = base.TextModel.get_vocab_base_pre
def pre(self, tokenizer):
    try:
        return known(self, tokenizer)
    except NotImplementedError:
        return {name!r}
base.TextModel.get_vocab_base_pre = pre
sys.argv = {argv!r}
runpy.run_path({script!r}, run_name="__main__")
"""


@dataclass
class Converted:
    """A family's tiny model: its folder, its config, its GGUF files by out-type."""

    family: str
    folder: Path
    config: Any
    gguf: dict[str, Path] = field(default_factory=dict)


def _common(hidden: int = 64, layers: int = 2) -> dict[str, Any]:
    return {
        "vocab_size": 128,
        "hidden_size": hidden,
        "intermediate_size": 128,
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "max_position_embeddings": 64,
        "rms_norm_eps": 1e-6,
        "pad_token_id": 0,
        "bos_token_id": 1,
        "eos_token_id": 2,
    }


def build_model(family: str) -> tuple[Any, str]:
    """(a seeded float32 transformers model of ``family``, its tokenizer kind)."""
    import importlib

    import torch

    tf: Any = importlib.import_module("transformers")
    model: Any
    config: Any
    torch.manual_seed(31)
    c = _common()
    if family == "llama":
        model = tf.LlamaForCausalLM(tf.LlamaConfig(**c, attention_bias=True))
    elif family == "llama3":
        rope = {
            "rope_type": "llama3",
            "rope_theta": 500_000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        }
        config = tf.LlamaConfig(**c, rope_parameters=rope, tie_word_embeddings=True)
        model = tf.LlamaForCausalLM(config)
    elif family == "mistral":
        model = tf.MistralForCausalLM(tf.MistralConfig(**c, sliding_window=8))
    elif family == "qwen2":
        model = tf.Qwen2ForCausalLM(tf.Qwen2Config(**c))
    elif family == "qwen3":
        model = tf.Qwen3ForCausalLM(tf.Qwen3Config(**c))
    elif family == "gemma":
        model = tf.GemmaForCausalLM(tf.GemmaConfig(**{**c, "num_key_value_heads": 1}))
    elif family == "gemma2":
        config = tf.Gemma2Config(
            **{**c, "num_hidden_layers": 3}, query_pre_attn_scalar=16, sliding_window=8
        )
        model = tf.Gemma2ForCausalLM(config)
    elif family == "gemma3":
        config = tf.Gemma3TextConfig(
            **{**c, "num_hidden_layers": 6}, query_pre_attn_scalar=16, sliding_window=8
        )
        model = tf.Gemma3ForCausalLM(config)
    elif family == "phi3":
        model = tf.Phi3ForCausalLM(tf.Phi3Config(**c, sliding_window=16))
    elif family == "gpt2":
        config = tf.GPT2Config(
            vocab_size=320,
            n_positions=64,
            n_embd=64,
            n_layer=2,
            n_head=4,
            bos_token_id=0,
            eos_token_id=0,
            # GPT2Model.set_gguf_parameters reads hparams["n_ctx"], which transformers 5
            # no longer writes (openai-community/gpt2's config.json has it): without it
            # the converter stops with KeyError: 'n_ctx'.
            n_ctx=64,
        )
        return tf.GPT2LMHeadModel(config).float().eval(), "bpe"
    elif family == "bert":
        config = tf.BertConfig(
            vocab_size=len(_wordpiece_vocab()),
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=128,
            max_position_embeddings=64,
        )
        return tf.BertModel(config).float().eval(), "wordpiece"
    else:
        raise ValueError(family)
    return model.float().eval(), "spm"


def _spm_model() -> bytes:
    import sentencepiece as spm

    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(SENTENCES),
        model_writer=out,
        vocab_size=100,
        model_type="bpe",
        hard_vocab_limit=False,
        minloglevel=2,
    )
    return out.getvalue()


def _wordpiece_vocab() -> list[str]:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    letters = sorted(set("".join(WORDS)))
    return specials + sorted(set(WORDS)) + letters + [f"##{ch}" for ch in letters]


def _write_tokenizer(kind: str, folder: Path) -> None:
    if kind == "spm":
        (folder / "tokenizer.model").write_bytes(_spm_model())
        return
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    if kind == "bpe":
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=300,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            special_tokens=["<|endoftext|>"],
        )
        tokenizer.train_from_iterator(SENTENCES, trainer)
        config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>"}
    else:
        vocab = {token: i for i, token in enumerate(_wordpiece_vocab())}
        tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
        tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        config = {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "unk_token": "[UNK]",
            "cls_token": "[CLS]",
            "sep_token": "[SEP]",
            "pad_token": "[PAD]",
            "mask_token": "[MASK]",
        }
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(config))


def save_family(family: str, folder: Path) -> Converted:
    """The tiny ``family`` model saved in ``folder`` with a tokenizer the converter takes."""
    model, kind = build_model(family)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    _write_tokenizer(kind, folder)
    return Converted(family, folder, model.config)


def convert(lcp: Path, converted: Converted, outtype: str, *extra: str) -> Path:
    """Run llama.cpp's converter on the folder; the GGUF file it wrote. A failure is an
    AssertionError carrying the converter's last words."""
    name = "-".join((outtype, *(flag.strip("-") for flag in extra)))
    out = converted.folder.parent / f"{converted.folder.name}-{name}.gguf"
    argv = [
        str(lcp / "convert_hf_to_gguf.py"),
        str(converted.folder),
        "--outfile",
        str(out),
        "--outtype",
        outtype,
        *extra,
    ]
    family = (
        converted.family.removesuffix("3") if converted.family == "llama3" else converted.family
    )
    driver = DRIVER.format(
        lcp=str(lcp),
        gguf_py=str(lcp / "gguf-py"),
        name=PRE_TOKENIZER.get(family, "default"),
        argv=argv,
        script=argv[0],
    )
    env = {**os.environ, "NO_LOCAL_GGUF": "1", "PYTHONPATH": str(lcp / "gguf-py")}
    result = subprocess.run(
        [sys.executable, "-c", driver],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    why = f"the converter failed on {converted.family} ({outtype}):\n{result.stderr[-4000:]}"
    assert result.returncode == 0, why
    assert out.is_file(), why
    converted.gguf[name] = out
    return out
