"""A Hugging Face folder's ``tokenizer.json``, read by Hugging Face's own ``tokenizers``.

A ``tokenizer.json`` can hold any of dozens of normalizers, pre-tokenizers, models and
post-processors; reimplementing them all would be a second, untested ``tokenizers``. So
the folder's tokenizer is the reference implementation itself, an optional dependency
(``pip install 'attntrace[hf]'``), imported here only, and only when a folder is opened:
``import attntrace`` stays cheap, and GGUF files (which carry their vocabulary) and the
catalogued models need nothing more.

:meth:`HFTokenizer.encode` adds the special tokens a model's tokenizer adds to a plain
sentence (Llama's BOS, BERT's ``[CLS]``/``[SEP]``) as transformers' ``AutoTokenizer``
does: the ``tokenizer.json``'s own post-processor (transformers 5 keeps it whatever
``tokenizer_config.json``'s ``add_bos_token`` says, where the file has one; measured in
``tests/real/test_hf_json.py``), and no padding or truncation (a file's own padding
settings, as MiniLM's pad to 128, apply to batches, not to one text).

The file is read within :data:`MAX_BYTES` as a regular file (a FIFO is refused, never
waited on); a missing, unreadable, oversized or malformed one is one :class:`InputError`
naming it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from attntrace import arguments
from attntrace.errors import InputError
from attntrace.kernel.reading import naming, read_small
from attntrace.real.text import checked_ids

__all__ = ["INSTALL", "MAX_BYTES", "HFTokenizer"]

# Gemma 3's tokenizer.json is 33 MB, the largest of the families'; a config is tiny.
MAX_BYTES = 128 << 20
INSTALL = "pip install 'attntrace[hf]'"


def _tokenizers() -> Any:
    """The ``tokenizers`` module, or the one line that says how to install it."""
    try:
        import tokenizers  # here, not at the top: only a folder's tokenizer needs it
    except ImportError:
        raise InputError(
            f"reading a tokenizer.json needs Hugging Face's tokenizers: {INSTALL}"
        ) from None
    return tokenizers


def _read_json_text(path: Path, limit: int, what: str) -> str:
    with naming(str(path), what):
        data = read_small(path, limit)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(
                f"not {what}",
                expected="UTF-8 JSON",
                found=f"a byte {data[error.start]:#04x} that is not UTF-8 at offset {error.start}",
            ) from None


class HFTokenizer:
    """A ``tokenizer.json`` as ``tokenizers`` reads it, with the model's special tokens."""

    def __init__(self, tokenizer: Any, source: str | None = None) -> None:
        self._tokenizer = tokenizer
        self.source = source

    @classmethod
    def from_file(cls, path: str | Path) -> HFTokenizer:
        """Read ``path`` (a ``tokenizer.json``)."""
        path = Path(path)
        module = _tokenizers()  # before reading: without it the file is no use
        text = _read_json_text(path, MAX_BYTES, "a tokenizer.json")
        try:
            tokenizer = module.Tokenizer.from_str(text)
        except Exception as error:  # tokenizers raises plain Exception for bad JSON
            raise InputError(
                "not a tokenizer.json",
                source=str(path),
                expected="a Hugging Face tokenizer (JSON)",
                found=str(error).split("\n")[0][:200],
            ) from None
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return cls(tokenizer, str(path))

    @property
    def vocab_size(self) -> int:
        """The number of ids, added tokens included."""
        return int(self._tokenizer.get_vocab_size(with_added_tokens=True))

    @property
    def added_tokens(self) -> int:
        """How many tokens the file adds to its model's vocabulary (``added_tokens``)."""
        return len(self._tokenizer.get_added_tokens_decoder())

    def encode(self, text: str, *, add_special: bool = True) -> list[int]:
        """The ids of ``text``, with the special tokens the model's tokenizer adds to a
        plain sentence (none where ``add_special`` is false)."""
        arguments.text(text, "text")
        try:
            encoding = self._tokenizer.encode(text, add_special_tokens=add_special)
        except Exception as error:  # e.g. a lone surrogate
            raise InputError(
                "text the tokenizer cannot read",
                source=self.source,
                field="text",
                found=str(error).split("\n")[0][:200],
            ) from None
        return [int(i) for i in encoding.ids]

    def vocab_strings(self, ids: Iterable[int]) -> list[str]:
        """Each id's token as the vocabulary spells it (``Ġthe``, ``▁the``, ``##ing``)."""
        return [str(self._tokenizer.id_to_token(i)) for i in checked_ids(ids, self.vocab_size)]
