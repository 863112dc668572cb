"""The tokenizer cache: kept by the weight file's SHA-256, rebuilt when absent, stale or
damaged, never trusted, never a crash; and the GGUF opened with its tokenizer arrays
stepped over. The cache directory is the test session's own (tests/conftest.py sets
XDG_CACHE_HOME); each test here points it at its own folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from weight_files import ARRAY, STRING, U32, Tensor

from attntrace.errors import InputError
from attntrace.real.tokenizers import tokenizer_cache
from attntrace.real.tokenizers.bpe import ByteLevelBPE, bytes_to_unicode
from attntrace.real.tokenizers.sentencepiece import SentencePieceTokenizer
from attntrace.real.tokenizers.tokenizer_cache import cache_file, load_tables, save_tables
from attntrace.real.weights.gguf import GGUFFile

SHA = "ab" * 32
OTHER_SHA = "cd" * 32
BYTE_CHARS = list(bytes_to_unicode().values())
TABLES: dict[str, object] = {"tokens": ["a", "b"], "merges": ["a b"], "ranks": [0]}


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "attntrace" / "tokenizers"


def toy_bpe() -> ByteLevelBPE:
    merges = ["Ġ t", "h e", "t he", "Ġt he"]
    return ByteLevelBPE.from_lists(
        ["<|s|>", *BYTE_CHARS, "Ġt", "he", "the", "Ġthe"],
        merges,
        [3, *([1] * (len(BYTE_CHARS) + 4))],
    )


def test_tables_come_back_as_they_were_saved(own_cache: Path) -> None:
    save_tables("toy", SHA, TABLES)
    assert load_tables("toy", SHA) == TABLES
    assert cache_file("toy", SHA).parent == own_cache
    assert [p.name for p in own_cache.iterdir()] == [f"toy-{SHA}.json"]  # no partial left


def test_absent_or_stale_tables_are_none() -> None:
    assert load_tables("toy", SHA) is None
    save_tables("toy", SHA, TABLES)
    assert load_tables("toy", OTHER_SHA) is None  # another weight file
    assert load_tables("other", SHA) is None  # another tokenizer kind
    assert load_tables("toy", "../" + SHA[3:]) is None  # never a path out of the folder


def _rewrite(change: Callable[[bytes], bytes]) -> None:
    path = cache_file("toy", SHA)
    path.write_bytes(change(path.read_bytes()))


@pytest.mark.parametrize(
    "change",
    [
        lambda data: data[: len(data) // 2],  # cut short
        lambda data: data.replace(b'"a b"', b'"a c"'),  # the body no longer matches its seal
        lambda data: data.replace(b"tokenizer-cache/v1", b"tokenizer-cache/v0"),  # old format
        lambda data: b"\xff\xfe" + data,  # not UTF-8
        lambda data: b"[1, 2]\n" + data.partition(b"\n")[2],  # a header that is no object
        lambda data: data.partition(b"\n")[0],  # no body
        lambda data: b"",
        lambda data: b"{" * 100_000 + b"\n",  # deep nesting
    ],
)
def test_a_damaged_file_is_none(change: Callable[[bytes], bytes]) -> None:
    save_tables("toy", SHA, TABLES)
    _rewrite(change)
    assert load_tables("toy", SHA) is None


def test_a_sealed_body_that_is_no_object_is_none() -> None:
    import hashlib

    body = b"[1, 2, 3]"
    header = {
        "format": tokenizer_cache.FORMAT,
        "kind": "toy",
        "sha256": SHA,
        "code": tokenizer_cache.code_digest(),
        "tables_sha256": hashlib.sha256(body).hexdigest(),
    }
    path = cache_file("toy", SHA)
    path.parent.mkdir(parents=True)
    path.write_bytes(json.dumps(header).encode() + b"\n" + body)
    assert load_tables("toy", SHA) is None


def test_a_file_over_the_bound_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    save_tables("toy", SHA, TABLES)
    monkeypatch.setattr(tokenizer_cache, "MAX_BYTES", 50)
    assert load_tables("toy", SHA) is None
    save_tables("toy", OTHER_SHA, TABLES)  # too large to keep: not written
    assert not cache_file("toy", OTHER_SHA).exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_place_of_the_file_is_none_not_a_hang() -> None:
    path = cache_file("toy", SHA)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    assert load_tables("toy", SHA) is None


def test_a_link_to_itself_is_none_then_replaced_by_a_good_file() -> None:
    path = cache_file("toy", SHA)
    path.parent.mkdir(parents=True)
    path.symlink_to(path)
    assert load_tables("toy", SHA) is None
    save_tables("toy", SHA, TABLES)
    assert load_tables("toy", SHA) == TABLES


def test_a_directory_in_place_of_the_file_is_none_and_saving_does_not_fail() -> None:
    path = cache_file("toy", SHA)
    path.mkdir(parents=True)
    assert load_tables("toy", SHA) is None
    save_tables("toy", SHA, TABLES)  # cannot replace a directory: skipped silently
    assert load_tables("toy", SHA) is None
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left


def test_an_unwritable_cache_is_skipped_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    save_tables("toy", SHA, TABLES)  # no error
    assert load_tables("toy", SHA) is None


def test_bpe_from_its_tables_encodes_as_the_original() -> None:
    original = toy_bpe()
    save_tables("bpe", SHA, original.tables())
    tables = load_tables("bpe", SHA)
    assert tables is not None
    rebuilt = ByteLevelBPE.from_tables(tables)
    assert rebuilt is not None
    for text in ("the the", " the<|s|>thé", "", "🙂 t he"):
        assert rebuilt.encode(text) == original.encode(text)


def test_sentencepiece_from_its_tables_encodes_as_the_original() -> None:
    tokens = [
        "<bos>",
        "<unk>",
        "\n",
        "  ",
        *[f"<0x{b:02X}>" for b in range(256)],
        "a",
        "b",
        "ab",
        "▁",
    ]
    types = [3, 3, 4, 4, *([6] * 256), 1, 1, 1, 1]
    original = SentencePieceTokenizer(tokens, types, bos_id=0, unk_id=1)
    tables = json.loads(json.dumps(original.tables()))
    rebuilt = SentencePieceTokenizer.from_tables(tables)
    assert rebuilt is not None
    for text in ("ab  ab\n", "é<bos>", ""):
        assert rebuilt.encode(text) == original.encode(text)
    assert rebuilt.vocab_strings(range(4)) == original.vocab_strings(range(4))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 300) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
KEYS = [
    "tokens",
    "merges",
    "ranks",
    "special_tokens",
    "vocab",
    "added",
    "bos_id",
    "unk_id",
    "add_bos",
]


@given(st.dictionaries(st.sampled_from(KEYS), JSON | st.lists(st.text(max_size=3), max_size=6)))
def test_tables_of_any_shape_build_a_tokenizer_or_none_never_a_crash(
    tables: dict[str, Any],
) -> None:
    for build in (ByteLevelBPE.from_tables, SentencePieceTokenizer.from_tables):
        tokenizer = build(tables)
        if tokenizer is not None:
            with contextlib.suppress(InputError):
                tokenizer.encode("ab a\n")


# ---- the GGUF opened with arrays stepped over ----------------------------------------------


def _gguf(gguf_path: Callable[..., Path], words: list[str]) -> Path:
    f32: Tensor = ("w", (1,), 0, struct.pack("<f", 1.0))
    return gguf_path(
        {"tokens": (ARRAY, (STRING, words)), "n": (U32, 7), "ids": (ARRAY, (U32, [1, 2]))}, [f32]
    )


def test_stepped_over_arrays_are_left_out_and_the_rest_is_the_same(
    gguf_path: Callable[..., Path],
) -> None:
    path = _gguf(gguf_path, ["a", "bé", "", "🙂" * 50])
    full, stepped = GGUFFile(path), GGUFFile(path, skip=("tokens", "ids", "n"))
    assert set(full.metadata) - set(stepped.metadata) == {"tokens", "ids"}  # n is no array
    assert stepped.data_offset == full.data_offset
    assert stepped.tensor("w").tolist() == full.tensor("w").tolist() == [1.0]


def test_a_stepped_over_array_that_runs_past_the_end_is_one_input_error(
    gguf_path: Callable[..., Path],
) -> None:
    path = _gguf(gguf_path, ["a", "b"])
    data = bytearray(path.read_bytes())
    at = data.index(b"\x01\x00\x00\x00\x00\x00\x00\x00b")  # the second string's length
    data[at : at + 8] = struct.pack("<Q", 1 << 40)
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="file ends inside string 1 of the array"):
        GGUFFile(path, skip=("tokens",))


# ---- SmolLM2, end to end -----------------------------------------------------------------


def test_smollm2_caches_its_tokenizer_and_rebuilds_a_damaged_cache() -> None:
    from attntrace.real.catalog import SMOLLM2
    from attntrace.real.llama import TOKENIZER_KIND, Llama

    if not SMOLLM2.installed:
        pytest.skip(f"SmolLM2 is not installed: {SMOLLM2.install}")
    path, sha = SMOLLM2.weights_path(), SMOLLM2.sha256
    text = "The animal didn't cross the street<|im_end|> 🙂"
    first = Llama.load(path, verified_sha256=sha)
    assert "tokenizer.ggml.tokens" in first.gguf.metadata  # built from the GGUF, then kept
    assert cache_file(TOKENIZER_KIND, sha).is_file()
    second = Llama.load(path, verified_sha256=sha)
    assert "tokenizer.ggml.tokens" not in second.gguf.metadata  # from the cache
    assert second.tokenizer.encode(text) == first.tokenizer.encode(text)
    cache_file(TOKENIZER_KIND, sha).write_bytes(b"garbage")
    third = Llama.load(path, verified_sha256=sha)
    assert "tokenizer.ggml.tokens" in third.gguf.metadata  # rebuilt, not trusted
    assert third.tokenizer.encode(text) == first.tokenizer.encode(text)
    assert load_tables(TOKENIZER_KIND, sha) is not None  # and written again


def test_gemma3_caches_its_tokenizer() -> None:
    from gemma3_file import GEMMA3_SHA256, gemma3_gguf

    from attntrace.real.tokenizers.sentencepiece import TOKENIZER_KIND, open_gguf

    path = gemma3_gguf()
    if path is None:
        pytest.skip("the Gemma 3 GGUF is absent: set ATTNTRACE_GEMMA3_GGUF")
    sha = GEMMA3_SHA256
    text = "<start_of_turn>user\nHi  there 🙂\x00<end_of_turn>"
    gguf, built = open_gguf(path, sha)
    assert "tokenizer.ggml.tokens" in gguf.metadata
    assert load_tables(TOKENIZER_KIND, sha) is not None
    gguf, cached = open_gguf(path, sha)
    assert "tokenizer.ggml.tokens" not in gguf.metadata
    assert cached.encode(text) == built.encode(text)
    assert cached.vocab_strings(range(200)) == built.vocab_strings(range(200))


def test_tables_another_code_derived_are_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """A change to how the tables are derived (the tokenizers' source) rebuilds them."""
    save_tables("toy", SHA, {"a": 1})
    assert load_tables("toy", SHA) == {"a": 1}
    monkeypatch.setattr(tokenizer_cache, "code_digest", lambda: "0" * 64)
    assert load_tables("toy", SHA) is None
