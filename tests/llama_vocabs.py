"""llama.cpp's test vocabularies (``models/ggml-vocab-*.gguf``) and their cases.

Each ``ggml-vocab-NAME.gguf`` is a real model's vocabulary with no weights; beside it,
``.inp`` holds texts separated by the line ``__ggml_vocab_test__`` and ``.out`` the ids
Hugging Face's tokenizer gave each (one line per text, no special tokens), read as
llama.cpp's ``tests/test-tokenizer-0.cpp`` reads them. The folder comes from
``ATTNTRACE_LLAMA_CPP`` (:func:`oracles.llama_cpp`).
"""

from __future__ import annotations

import functools
from pathlib import Path

from oracles import llama_cpp

from attntrace.real.tokenizers.gguf_vocab import GGUFTokenizer, tokenizer_from_gguf
from attntrace.real.weights.gguf import GGUFFile

SEPARATOR = "\n__ggml_vocab_test__\n"


def vocab_file(name: str) -> Path:
    return llama_cpp() / "models" / f"ggml-vocab-{name}.gguf"


def cases(name: str) -> list[tuple[str, list[int]]]:
    """The (text, expected ids) pairs of a vocabulary, as test-tokenizer-0.cpp reads them:
    texts split at the separator (a trailing one ends the last text, adding none), the
    ids one line each, stripped."""
    path = vocab_file(name)
    raw = path.with_name(path.name + ".inp").read_bytes().decode("utf-8")
    texts: list[str] = []
    pos = 0
    while pos < len(raw):
        nxt = raw.find(SEPARATOR, pos)
        if nxt < 0:
            texts.append(raw[pos:])
            break
        texts.append(raw[pos:nxt])
        pos = nxt + len(SEPARATOR)
    lines = path.with_name(path.name + ".out").read_text(encoding="utf-8").splitlines()
    assert len(texts) == len(lines), f"{path.name}: {len(texts)} texts, {len(lines)} id lines"
    return [(text, [int(i) for i in line.split()]) for text, line in zip(texts, lines, strict=True)]


@functools.cache
def metadata(name: str) -> dict[str, object]:
    return dict(GGUFFile(vocab_file(name)).metadata)


@functools.cache
def tokenizer(name: str) -> GGUFTokenizer:
    return tokenizer_from_gguf(metadata(name), str(vocab_file(name)))
