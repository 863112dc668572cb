"""The named pre-tokenizers cut text where the reference's regexes do.

Llama 3's and Qwen 2's scanners are held to ``tokenizers``' own ``Split`` with the
tokenizer.json regexes, piece for piece, on random text; llama.cpp's "default" (which no
Hugging Face tokenizer has) to hand-worked cases of its four regexes in turn.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracles import require

from attntrace.real.tokenizers.bpe_pre import (
    PRE_TOKENIZERS,
    default_split,
    llama3_split,
    qwen2_split,
)

LLAMA3_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
PIECES = [" ", "  ", "\n", "\r\n", "\t", "\u00a0", "'s", "'LL", "'Ve", "'", "12345", "١٢",
          "🦙", "😶\u200d🌫️", "Hello", "нещо", "我想", "(", "...", "!\n", " -", "\x1c"]  # fmt: skip
TEXTS = st.lists(
    st.one_of(
        st.sampled_from(PIECES), st.text(st.characters(exclude_categories=["Cs"]), max_size=3)
    ),
    max_size=20,
).map("".join)


def reference_split(regex: str, text: str) -> list[str]:
    tk = require("tokenizers")
    split = tk.pre_tokenizers.Split(tk.Regex(regex), behavior="isolated")
    return [piece for piece, _ in split.pre_tokenize_str(text)]


@given(TEXTS)
def test_llama3_split_is_the_regex(text: str) -> None:
    assert llama3_split(text) == reference_split(LLAMA3_REGEX, text)


@given(TEXTS)
def test_qwen2_split_is_the_regex(text: str) -> None:
    assert qwen2_split(text) == reference_split(LLAMA3_REGEX.replace("{1,3}", ""), text)


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        ("", []),
        ("Hello, world!!", ["Hello", ",", " world", "!!"]),
        ("abc 12345 x", ["abc", " ", "123", "45", " x"]),
        ("a$b+=c", ["a", "$", "b", "+=", "c"]),
        ("x  y\n", ["x", " ", " y", "\n"]),
        ("I've 7", ["I", "'", "ve", " ", "7"]),
    ],
)
def test_default_split_is_llama_cpps_four_regexes(text: str, pieces: list[str]) -> None:
    assert default_split(text) == pieces


def test_the_families_names() -> None:
    assert PRE_TOKENIZERS["llama-bpe"].ignore_merges
    assert not PRE_TOKENIZERS["qwen2"].ignore_merges
    assert not PRE_TOKENIZERS["dbrx"].ignore_merges
    assert {p.name for p in PRE_TOKENIZERS.values()} == {
        "llama3", "qwen2", "gpt-2", "smollm", "default"
    }  # fmt: skip
