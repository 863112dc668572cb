"""GGUF vocabularies read by attntrace give llama.cpp's expected ids, case for case.

llama.cpp's ``models/ggml-vocab-*.gguf`` are real models' vocabularies; their ``.out``
ids were written by Hugging Face's tokenizers for the ``.inp`` texts (whitespace runs,
emoji, Khmer, Cyrillic, CJK, digits, contractions). Every case must match: none is
skipped. Also: the dispatcher's special tokens and its one-line errors.
"""

from __future__ import annotations

import time

import pytest
from llama_vocabs import cases, metadata, tokenizer, vocab_file

from attntrace.errors import InputError
from attntrace.real.tokenizers.gguf_vocab import tokenizer_from_gguf

# llama.cpp's vocabularies come from ATTNTRACE_LLAMA_CPP, which .ci/run provides (and
# requires) for the long runs: every test here is one
pytestmark = pytest.mark.long

# Reading and building one (docs/real-models.md, "Tokenizers"): under 0.1 s for gpt-2,
# llama-spm, phi-3 and bert-bge; 0.3-0.8 s for qwen2, llama-bpe and command-r, whose cases
# are the long runs.
QUICK = ["gpt-2", "llama-spm", "phi-3", "bert-bge", "starcoder", "refact", "mpt"]
SLOW = ["llama-bpe", "qwen2", "command-r"]


def check_all_cases(name: str) -> None:
    tok = tokenizer(name)
    wrong = [
        (text, want, got)
        for text, want in cases(name)
        if (got := tok.encode(text, add_special=False)) != want
    ]
    assert not wrong, f"{name}: {len(wrong)} cases differ, first {wrong[0]!r}"


@pytest.mark.parametrize("name", QUICK)
def test_every_case_matches(name: str) -> None:
    check_all_cases(name)


@pytest.mark.parametrize("name", SLOW)
def test_every_case_matches_large_vocabularies(name: str) -> None:
    start = time.perf_counter()
    check_all_cases(name)
    assert time.perf_counter() - start < 20  # a 10 MB vocabulary loads in seconds


def test_the_cases_are_read_as_llama_cpp_reads_them() -> None:
    pairs = cases("gpt-2")
    assert len(pairs) == 46
    assert pairs[2] == ("", [])
    assert pairs[0][0] == "ied 4 ½ months"
    assert pairs[-1][0].startswith("\n \n\n \n\n\n \t \t\t \t\n")


def test_llama_spm_adds_bos_as_the_file_says() -> None:
    tok = tokenizer("llama-spm")
    assert metadata("llama-spm")["tokenizer.ggml.add_bos_token"] is True
    assert tok.encode("Hello world") == [1, 15043, 3186]
    assert tok.vocab_strings([1, 15043, 3186]) == ["<s>", "▁Hello", "▁world"]


def test_bert_adds_cls_and_sep_and_spells_pieces_with_hashes() -> None:
    tok = tokenizer("bert-bge")
    ids = tok.encode("Hello worlds unaffable")
    assert tok.vocab_strings(ids) == [
        "[CLS]", "hello", "worlds", "una", "##ffa", "##ble", "[SEP]"
    ]  # fmt: skip
    assert tok.encode("Hello worlds unaffable", add_special=False) == ids[1:-1]


def test_gpt2_adds_nothing_and_keeps_byte_level_spelling() -> None:
    tok = tokenizer("gpt-2")
    ids = tok.encode(" Hello world")
    assert ids == tok.encode(" Hello world", add_special=False)
    assert tok.vocab_strings(ids) == ["ĠHello", "Ġworld"]


def test_add_bos_token_false_is_obeyed() -> None:
    meta = {**metadata("gpt-2"), "tokenizer.ggml.add_bos_token": True}
    assert tokenizer_from_gguf(meta).encode("Hi") == [50256, *tokenizer("gpt-2").encode("Hi")]
    meta = {**metadata("llama-spm"), "tokenizer.ggml.add_bos_token": False}
    assert tokenizer_from_gguf(meta).encode("Hi")[0] != 1


def test_control_tokens_are_matched_whole_in_text() -> None:
    tok = tokenizer("gpt-2")
    assert tok.encode("a<|endoftext|>b") == [64, 50256, 65]


def test_unknown_model_names_it_and_the_supported_list() -> None:
    meta = {**metadata("gpt-2"), "tokenizer.ggml.model": "t5"}
    with pytest.raises(InputError) as error:
        tokenizer_from_gguf(meta, "x.gguf")
    assert str(error.value) == (
        "x.gguf: tokenizer.ggml.model: unsupported tokenizer: expected one of gpt2, llama, "
        "bert, got 't5'"
    )


def test_unknown_pre_tokenizer_names_it_and_the_supported_list() -> None:
    meta = {**metadata("gpt-2"), "tokenizer.ggml.pre": "deepseek-llm"}
    with pytest.raises(InputError) as error:
        tokenizer_from_gguf(meta, "x.gguf")
    line = str(error.value)
    assert "deepseek-llm" in line
    assert "llama-bpe" in line
    assert "qwen2" in line
    assert "x.gguf" in line
    assert "\n" not in line


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("tokenizer.ggml.tokens", "not a list"),
        ("tokenizer.ggml.merges", [1, 2]),
        ("tokenizer.ggml.token_type", ["x"]),
        ("tokenizer.ggml.add_bos_token", 1),
        ("tokenizer.ggml.bos_token_id", 10**9),
    ],
)
def test_bad_metadata_is_one_line_naming_the_key(key: str, value: object) -> None:
    meta = {**metadata("gpt-2"), key: value, "tokenizer.ggml.add_bos_token": True}
    if key == "tokenizer.ggml.add_bos_token":
        meta[key] = value
    with pytest.raises(InputError) as error:
        tokenizer_from_gguf(meta, "x.gguf")
    assert key in str(error.value)
    assert "x.gguf" in str(error.value)


def test_no_tokenizer_at_all() -> None:
    with pytest.raises(InputError, match="no tokenizer in the file"):
        tokenizer_from_gguf({}, "x.gguf")


def test_the_vocabulary_file_exists() -> None:
    assert vocab_file("qwen2").is_file()


def test_bert_cased_and_an_unsupported_normalizer() -> None:
    cased = {**metadata("bert-bge"), "tokenizer.ggml.normalizer.lowercase": False}
    strings = tokenizer_from_gguf(cased).vocab_strings(tokenizer_from_gguf(cased).encode("Hello"))
    assert strings[1] != "hello"  # not lowercased: "Hello" is no token of an uncased vocabulary
    odd = {**metadata("bert-bge"), "tokenizer.ggml.normalizer.strip_accents": False}
    with pytest.raises(InputError, match="strip_accents"):
        tokenizer_from_gguf(odd, "x.gguf")
