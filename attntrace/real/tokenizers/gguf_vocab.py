"""A GGUF file's own tokenizer, from its ``tokenizer.ggml.*`` metadata, with attntrace's readers.

A GGUF file carries its vocabulary, so ``--model some.gguf`` needs no ``tokenizer.json``
and no ``tokenizers`` package. ``tokenizer.ggml.model`` says which kind it is, as
llama.cpp's ``llama_vocab::impl::load`` reads it (``src/llama-vocab.cpp``):

- ``"gpt2"``: byte-level BPE with merges (GPT-2, Llama 3, Qwen 2 and 3, SmolLM), its
  pre-tokenizer named by ``tokenizer.ggml.pre``
  (:data:`attntrace.real.tokenizers.bpe_pre.PRE_TOKENIZERS`), read by
  :class:`~attntrace.real.tokenizers.bpe.ByteLevelBPE`;
- ``"llama"``: SentencePiece-style BPE with byte fallback (Llama 2, TinyLlama, Mistral,
  Phi-3, Gemma), read by :class:`~attntrace.real.tokenizers.sentencepiece.SentencePieceTokenizer`:
  merges ranked by score with a ``▁`` prefix, except Gemma's (by id, no prefix, as
  transformers reads Gemma 3's file);
- ``"bert"``: WordPiece (BERT, MiniLM, BGE), read by
  :class:`~attntrace.real.tokenizers.wordpiece.WordPiece` once the converter's "phantom
  space" spelling (``▁word`` for a word's start, ``piece`` for a ``##piece``) is undone.

Special tokens are added as the file says: BOS first where ``tokenizer.ggml.add_bos_token``
is true (absent: llama.cpp's default for the kind: true for SentencePiece, BERT's
``[CLS]`` and Llama 3's pre-tokenizers, false for other BPE), EOS last where
``add_eos_token`` is, and BERT's ``[SEP]`` where ``add_sep_token`` is (true when absent).
The ids are tested against llama.cpp's test vocabularies (``models/ggml-vocab-*.gguf``,
whose expected ids came from Hugging Face's tokenizers) and against ``tokenizers`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from attntrace.errors import InputError
from attntrace.real.tokenizers.bpe import (
    GGUF_TOKEN_TYPE_CONTROL,
    GGUF_TOKEN_TYPE_USER_DEFINED,
    ByteLevelBPE,
)
from attntrace.real.tokenizers.bpe_pre import PRE_TOKENIZERS
from attntrace.real.tokenizers.sentencepiece import SPACE, SentencePieceTokenizer
from attntrace.real.tokenizers.wordpiece import WordPiece

__all__ = ["MODELS", "GGUFTokenizer", "tokenizer_from_gguf"]

#: The ``tokenizer.ggml.model`` values read here.
MODELS = ("gpt2", "llama", "bert")
# Pre-tokenizers after which llama.cpp adds BOS when the file does not say.
_BOS_BY_DEFAULT = frozenset(("llama3", "llama-v3", "llama-bpe", "falcon3"))
_MAX_TOKENS = 1 << 24  # far above any real vocabulary, bounding a hostile one


class GGUFTokenizer:
    """A GGUF file's tokenizer: the vocabulary's reader and the special tokens around it."""

    def __init__(
        self,
        model: str,
        reader: ByteLevelBPE | SentencePieceTokenizer | WordPiece,
        plain: Callable[[str], list[int]],
        *,
        prefix: tuple[int, ...] = (),
        suffix: tuple[int, ...] = (),
        pre: str | None = None,
    ) -> None:
        self.model = model
        self.reader = reader
        self.pre = pre
        self.prefix = prefix
        self.suffix = suffix
        self._plain = plain

    @property
    def vocab_size(self) -> int:
        """The number of tokens (ids run from 0 to ``vocab_size - 1``)."""
        return self.reader.vocab_size

    def encode(self, text: str, *, add_special: bool = True) -> list[int]:
        """The ids of ``text``, with BOS/EOS (BERT: [CLS]/[SEP]) as the file asks, or
        without any where ``add_special`` is false (llama.cpp's test vocabularies' ids)."""
        ids = self._plain(text)
        return [*self.prefix, *ids, *self.suffix] if add_special else ids

    def vocab_strings(self, ids: Iterable[int]) -> list[str]:
        """Each id's token as the vocabulary spells it (``Ġthe``, ``▁the``, ``##ing``)."""
        if isinstance(self.reader, WordPiece):
            return self.reader.tokens(ids)
        return self.reader.vocab_strings(ids)


def tokenizer_from_gguf(metadata: Mapping[str, object], source: str | None = None) -> GGUFTokenizer:
    """The tokenizer a GGUF file's metadata describes; an :class:`InputError` naming the
    model or pre-tokenizer where it is not one of those read here."""
    model = metadata.get("tokenizer.ggml.model")
    if model == "gpt2":
        return _byte_level(metadata, source)
    if model == "llama":
        return _sentencepiece(metadata, source)
    if model == "bert":
        return _wordpiece(metadata, source)
    raise InputError(
        "unsupported tokenizer",
        source=source,
        field="tokenizer.ggml.model",
        expected="one of " + ", ".join(MODELS),
        found=repr(model)[:80] if model is not None else "no tokenizer in the file",
    )


def _byte_level(metadata: Mapping[str, object], source: str | None) -> GGUFTokenizer:
    pre = metadata.get("tokenizer.ggml.pre", "default")
    if not isinstance(pre, str) or pre not in PRE_TOKENIZERS:
        raise InputError(
            "unsupported pre-tokenizer",
            source=source,
            field="tokenizer.ggml.pre",
            expected="one of " + ", ".join(sorted(PRE_TOKENIZERS)),
            found=repr(pre)[:80],
        )
    tokens = _strings(metadata, "tokenizer.ggml.tokens", source)
    merges = _strings(metadata, "tokenizer.ggml.merges", source)
    types = _integers(metadata, "tokenizer.ggml.token_type", source)
    reader = ByteLevelBPE.from_lists(
        tokens,
        merges,
        types,
        source=source,
        pre=pre,
        special_types=(GGUF_TOKEN_TYPE_CONTROL, GGUF_TOKEN_TYPE_USER_DEFINED),
    )
    prefix, suffix = _specials(metadata, len(tokens), source, bos_default=pre in _BOS_BY_DEFAULT)
    return GGUFTokenizer("gpt2", reader, reader.encode, prefix=prefix, suffix=suffix, pre=pre)


def _sentencepiece(metadata: Mapping[str, object], source: str | None) -> GGUFTokenizer:
    architecture = metadata.get("general.architecture")
    gemma = isinstance(architecture, str) and architecture.startswith("gemma")
    reader = SentencePieceTokenizer.from_metadata(metadata, source, use_scores=not gemma)
    prefix, suffix = _specials(metadata, reader.vocab_size, source, bos_default=True)
    return GGUFTokenizer(
        "llama",
        reader,
        lambda text: reader.encode(text, add_bos=False),
        prefix=prefix,
        suffix=suffix,
    )


def _wordpiece(metadata: Mapping[str, object], source: str | None) -> GGUFTokenizer:
    tokens = _strings(metadata, "tokenizer.ggml.tokens", source)
    types = _integers(metadata, "tokenizer.ggml.token_type", source)
    if types and len(types) != len(tokens):
        raise InputError(
            "token types do not match the tokens",
            source=source,
            field="tokenizer.ggml.token_type",
            expected=f"{len(tokens)} types, one per token",
            found=str(len(types)),
        )
    vocab = [
        _unphantom(token, bool(types) and types[i] == GGUF_TOKEN_TYPE_CONTROL)
        for i, token in enumerate(tokens)
    ]
    # llama.cpp's defaults: lowercase, and strip accents as lowercase says (BERT's rule,
    # the only one WordPiece here knows: another is refused rather than misread)
    lowercase = _flag(metadata, "tokenizer.ggml.normalizer.lowercase", True, source)
    strip = _flag(metadata, "tokenizer.ggml.normalizer.strip_accents", lowercase, source)
    if strip != lowercase:
        raise InputError(
            "unsupported normalizer",
            source=source,
            field="tokenizer.ggml.normalizer.strip_accents",
            expected=f"{str(lowercase).lower()}, as tokenizer.ggml.normalizer.lowercase",
            found=str(strip).lower(),
        )
    reader = WordPiece(vocab, lowercase=lowercase, source=source)
    size = len(tokens)
    cls = _token_id(metadata, "tokenizer.ggml.cls_token_id", size, source)
    sep = _token_id(metadata, "tokenizer.ggml.seperator_token_id", size, source)
    first = cls if cls is not None else reader.cls_id
    last = sep if sep is not None else reader.sep_id
    add_bos = _flag(metadata, "tokenizer.ggml.add_bos_token", True, source)
    add_sep = _flag(metadata, "tokenizer.ggml.add_sep_token", True, source)
    return GGUFTokenizer(
        "bert",
        reader,
        lambda text: reader.encode(text, add_special=False),
        prefix=(first,) if add_bos else (),
        suffix=(last,) if add_sep else (),
    )


def _unphantom(token: str, control: bool) -> str:
    """BERT's own spelling of a token llama.cpp's converter wrote: ``▁word`` -> ``word``,
    ``ing`` -> ``##ing``; control tokens, and ``[unused0]`` as older converters kept it,
    as they are."""
    if token.startswith(SPACE):
        return token[1:]
    if control or (token.startswith("[") and token.endswith("]")):
        return token
    return "##" + token


def _specials(
    metadata: Mapping[str, object], size: int, source: str | None, *, bos_default: bool
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ids put before and after every text, as the add_bos/add_eos keys say."""
    add_bos = _flag(metadata, "tokenizer.ggml.add_bos_token", bos_default, source)
    add_eos = _flag(metadata, "tokenizer.ggml.add_eos_token", False, source)
    out: list[tuple[int, ...]] = []
    for wanted, key in ((add_bos, "bos_token_id"), (add_eos, "eos_token_id")):
        field = f"tokenizer.ggml.{key}"
        token = _token_id(metadata, field, size, source)
        if wanted and token is None:
            raise InputError(
                "no token to add", source=source, field=field, expected="a token id", found="none"
            )
        out.append((token,) if wanted and token is not None else ())
    return out[0], out[1]


def _flag(metadata: Mapping[str, object], key: str, default: bool, source: str | None) -> bool:
    value = metadata.get(key, default)
    if not isinstance(value, bool):
        raise InputError(source=source, field=key, expected="true or false", found=repr(value)[:80])
    return value


def _token_id(
    metadata: Mapping[str, object], key: str, size: int, source: str | None
) -> int | None:
    value = metadata.get(key)
    if value is None:
        return None
    if type(value) is not int or not 0 <= value < size:
        raise InputError(
            "token id out of the vocabulary",
            source=source,
            field=key,
            expected=f"an id from 0 to {size - 1}",
            found=repr(value)[:80],
        )
    return value


def _strings(metadata: Mapping[str, object], key: str, source: str | None) -> list[str]:
    value = metadata.get(key)
    if (
        not isinstance(value, list)
        or len(value) > _MAX_TOKENS
        or not set(map(type, value)) <= {str}
    ):
        raise InputError(
            "bad vocabulary",
            source=source,
            field=key,
            expected=f"a list of at most {_MAX_TOKENS} strings",
            found="nothing" if value is None else type(value).__name__,
        )
    return value


def _integers(metadata: Mapping[str, object], key: str, source: str | None) -> list[int]:
    value = metadata.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not set(map(type, value)) <= {int}:
        raise InputError(
            "bad token types",
            source=source,
            field=key,
            expected="a list of integers",
            found=type(value).__name__,
        )
    return value
