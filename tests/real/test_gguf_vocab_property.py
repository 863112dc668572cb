"""GGUF vocabularies read by attntrace equal Hugging Face's ``tokenizers`` on random text.

For each kind, ``tokenizers`` is built from the same GGUF vocabulary the way the model's
own ``tokenizer.json`` is (the Llama 3 and Qwen 2 tokenizer.json regexes, GPT-2's
ByteLevel, SmolLM's Digits + ByteLevel, Llama 2's Prepend/Replace normalizer with a BPE
whose merges are ordered by score and byte fallback, BERT's normalizer, pre-tokenizer
and WordPiece), and hypothesis throws text at both: unicode of every category,
whitespace runs (\\r, \\n, tabs, no-break spaces), digits, emoji with joiners, and
contractions in every case.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_vocabs import cases, metadata, tokenizer
from oracles import require

pytestmark = pytest.mark.long

LLAMA3_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2_REGEX = LLAMA3_REGEX.replace(r"\p{N}{1,3}", r"\p{N}")

PIECES = [
    " ", "  ", "   ", "\n", "\n\n", "\r\n", "\r", "\t", " \t", "\u00a0", "\u3000", "\x0b",
    "'s", "'S", "'re", "'RE", "'Ve", "'ll", "'LL", "'d", "'M", "'t", "'", "''", "'x",
    "0", "7", "123", "4567", "3.14", "١٢٣", "½", "Ⅻ",
    "🦙", "😁", "😶\u200d🌫️", "👩‍👩‍👧", "✅", "🚀",
    "hello", "Hello", "HELLO", "Äpfel", "Cửa", "нещо", "我想在", "កាន់តែ", "e\u0301", "ﬁ",
    "(", ")", "...", "!!", "?", "-", "=", "```", '"', "$", "<", ">", "|", "~", "^",
    "<|endoftext|>", "<s>", "[CLS]", "[SEP]",
]  # fmt: skip
TEXTS = st.lists(
    st.one_of(
        st.sampled_from(PIECES),
        st.text(st.characters(exclude_categories=["Cs"]), max_size=4),
    ),
    max_size=25,
).map("".join)


def _tokens(name: str) -> list[str]:
    tokens = metadata(name)["tokenizer.ggml.tokens"]
    assert isinstance(tokens, list)
    return tokens


def _specials(name: str, kinds: tuple[int, ...] = (3, 4)) -> list[str]:
    types = metadata(name)["tokenizer.ggml.token_type"]
    assert isinstance(types, list)
    return [t for t, k in zip(_tokens(name), types, strict=True) if k in kinds and t]


def _byte_level(name: str, split: Any, ignore_merges: bool) -> Any:
    tk = require("tokenizers")
    merges = metadata(name)["tokenizer.ggml.merges"]
    assert isinstance(merges, list)
    vocab = {t: i for i, t in enumerate(_tokens(name))}
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    model = tk.models.BPE(vocab, pairs, ignore_merges=ignore_merges)
    oracle = tk.Tokenizer(model)
    oracle.pre_tokenizer = split
    oracle.add_special_tokens([tk.AddedToken(t, normalized=False) for t in _specials(name)])
    return oracle


@functools.cache
def oracle(name: str) -> Any:
    """``tokenizers`` built from the GGUF vocabulary ``name`` as its model's tokenizer.json."""
    tk = require("tokenizers")
    pre = tk.pre_tokenizers
    byte_level = pre.ByteLevel(add_prefix_space=False, use_regex=False)
    if name in ("llama-bpe", "qwen2"):
        regex = LLAMA3_REGEX if name == "llama-bpe" else QWEN2_REGEX
        split = pre.Sequence([pre.Split(tk.Regex(regex), behavior="isolated"), byte_level])
        return _byte_level(name, split, ignore_merges=name == "llama-bpe")
    if name == "gpt-2":
        return _byte_level(name, pre.ByteLevel(add_prefix_space=False), ignore_merges=False)
    if name == "starcoder":
        split = pre.Sequence(
            [pre.Digits(individual_digits=True), pre.ByteLevel(add_prefix_space=False)]
        )
        return _byte_level(name, split, ignore_merges=False)
    if name == "llama-spm":
        return _sentencepiece(name)
    if name == "bert-bge":
        return _wordpiece(name)
    raise AssertionError(name)


def _sentencepiece(name: str) -> Any:
    """Llama 2's tokenizer.json, as transformers' converter writes it: merges of every
    two tokens that make a third, ordered by the third's score."""
    tk = require("tokenizers")
    tokens = _tokens(name)
    scores = metadata(name)["tokenizer.ggml.scores"]
    assert isinstance(scores, list)
    vocab = {t: i for i, t in enumerate(tokens)}
    merges: list[tuple[float, int, int, tuple[str, str]]] = []
    for token, i in vocab.items():
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in vocab and right in vocab:
                merges.append((-scores[i], vocab[left], vocab[right], (left, right)))
    merges.sort()
    model = tk.models.BPE(
        vocab, [m[3] for m in merges], unk_token="<unk>", byte_fallback=True, fuse_unk=True
    )
    oracle = tk.Tokenizer(model)
    norm = tk.normalizers
    oracle.normalizer = norm.Sequence([norm.Prepend("▁"), norm.Replace(" ", "▁")])
    oracle.add_special_tokens([tk.AddedToken(t, normalized=False) for t in _specials(name, (3,))])
    return oracle


def _wordpiece(name: str) -> Any:
    tk = require("tokenizers")
    tok = tokenizer(name)
    ids = {t: i for i, t in enumerate(tok.vocab_strings(range(tok.vocab_size)))}
    oracle = tk.Tokenizer(tk.models.WordPiece(ids, unk_token="[UNK]"))
    oracle.normalizer = tk.normalizers.BertNormalizer(lowercase=True)
    oracle.pre_tokenizer = tk.pre_tokenizers.BertPreTokenizer()
    oracle.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    return oracle


def same_ids(name: str, text: str) -> None:
    want = oracle(name).encode(text, add_special_tokens=False).ids
    assert tokenizer(name).encode(text, add_special=False) == want, repr(text)


COMMON = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(
    "name", ["llama-bpe", "qwen2", "gpt-2", "starcoder", "llama-spm", "bert-bge"]
)
def test_the_oracle_agrees_with_the_llama_cpp_cases(name: str) -> None:
    """The oracle is built right: it gives the .out ids too."""
    for text, want in cases(name):
        assert oracle(name).encode(text, add_special_tokens=False).ids == want, repr(text)


@COMMON
@given(TEXTS)
def test_llama3(text: str) -> None:
    same_ids("llama-bpe", text)


@COMMON
@given(TEXTS)
def test_qwen2(text: str) -> None:
    same_ids("qwen2", text)


@COMMON
@given(TEXTS)
def test_gpt2(text: str) -> None:
    same_ids("gpt-2", text)


@COMMON
@given(TEXTS)
def test_smollm_family(text: str) -> None:
    same_ids("starcoder", text)


@COMMON
@given(TEXTS)
def test_llama2_sentencepiece(text: str) -> None:
    same_ids("llama-spm", text)


@COMMON
@given(TEXTS)
def test_bert_wordpiece(text: str) -> None:
    same_ids("bert-bge", text)
