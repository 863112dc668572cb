"""Gemma 3's SentencePiece-style BPE tokenizer, from GGUF metadata alone, id for id as
Hugging Face builds it.

A GGUF with ``tokenizer.ggml.model = "llama"`` stores a SentencePiece vocabulary: token
strings in id order, scores and token types, and no merges. Gemma's own tokenizer is a BPE
over those strings with byte fallback; this module reproduces what transformers 5.24 makes
of the file (``transformers/integrations/gguf/gguf_tokenizer_mapping.py``: ``gemma_tokenizer``,
``add_gguf_special_tokens``; ``models/gemma/tokenization_gemma.py``: ``GemmaTokenizer``):

1. the vocabulary's CONTROL tokens (type 3: ``<bos>``, ``<start_of_turn>``, ``<unused0>``...)
   and USER_DEFINED ones (type 4: ``\\n``, ``\\n\\n``, ``\\t``, ``[multimodal]``...) are cut out
   of the raw text whole, leftmost first and longest there (the ``tokenizers`` added
   vocabulary's leftmost-longest match);
2. each piece between them is normalized, every space becoming ``▁`` (U+2581), with no
   prefix space (``add_space_prefix`` is false), and is then one word: the pre-tokenizer
   splits at spaces, and none are left;
3. the word's characters are its first symbols; a character the vocabulary lacks becomes
   its UTF-8 bytes as ``<0xXX>`` tokens (byte fallback), or ``<unk>`` where those are missing;
4. symbols are merged, best merge first. The file has no merges, so transformers derives them
   (``tokenization_utils_base.generate_merges``): a merge of ``a`` and ``b`` exists when
   ``a``, ``b`` and ``a + b`` are all tokens, and ranks by the id of ``a + b`` (the file's
   order, not its scores: Gemma's scores do not follow its merge order), then the longer
   ``a`` first. That rule is computed here when a pair is met, never as a table of
   merges, so building the tokenizer is one dictionary of the vocabulary;
5. BOS is put first when ``tokenizer.ggml.add_bos_token`` says so (true when absent, as
   transformers and llama.cpp assume for a SentencePiece vocabulary).

Llama 2, TinyLlama, Mistral and Phi-3 store the same kind of vocabulary, read the same way
but for two things (``from_metadata(..., use_scores=True)``): each text piece starts with a
``▁`` (``tokenizer.ggml.add_space_prefix``, true when absent, as llama.cpp reads it: after
every added token too, as llama.cpp and Hugging Face's legacy Llama normalizer do), and
merges rank by the merged token's score (higher first, then the lower id), as their
``tokenizer.json`` merges were ordered from the SentencePiece model.

One fix of transformers' is kept: a token of two or more plain spaces is stored as spaces
(``"  "``), and is spelled ``▁▁`` here, as the normalized text reaches it.

The merging uses a priority queue of candidate pairs over a linked list of symbols (as
Hugging Face's ``Word::merge_all`` and llama.cpp's ``llm_tokenizer_spm`` do), so a long text
(one word, since it has no spaces left) costs O(n log n), not a rescan per merge. The ids are
tested against transformers' in ``tests/golden/real/tokens.json``.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from attntrace import arguments
from attntrace.errors import InputError
from attntrace.real.text import checked_ids, integers, strings
from attntrace.real.tokenizers import tokenizer_cache
from attntrace.real.weights.gguf import GGUFFile

__all__ = ["SPACE", "TOKENIZER_ARRAYS", "TOKENIZER_KIND", "SentencePieceTokenizer", "open_gguf"]

SPACE = "\u2581"  # ▁, SentencePiece's visible space
CONTROL = 3  # llama.cpp's token types (llama-vocab.h, LLAMA_TOKEN_TYPE_*)
USER_DEFINED = 4
_MAX_LEFT = 1 << 16  # rank = id of the merged token, then the longer left part first
_MAX_TOKENS = 1 << 24  # far above any real vocabulary (Gemma's 262 144), bounding a hostile one
TOKENIZER_KIND = "sentencepiece"  # its tables' name in the tokenizer cache
# The metadata a cached tokenizer replaces (scores too: transformers ranks merges without them).
TOKENIZER_ARRAYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type")


class SentencePieceTokenizer:
    """A SentencePiece-style BPE vocabulary: text to ids and back, as Gemma 3 does."""

    def __init__(
        self,
        tokens: Sequence[str],
        token_types: Sequence[int] | None = None,
        *,
        bos_id: int | None = None,
        add_bos: bool = True,
        unk_id: int | None = None,
        source: str | None = None,
        scores: Sequence[float] | None = None,
        add_space_prefix: bool = False,
    ) -> None:
        if not tokens:
            raise InputError(
                "empty vocabulary", source=source, field="tokens", expected="token strings"
            )
        raw = tuple(tokens)
        # transformers' gemma_tokenizer: "  " is looked up as "▁▁"
        vocab = list(raw)
        for i, token in enumerate(raw):
            if " " in token and not token.strip():
                vocab[i] = SPACE * len(token)
        self._vocab: tuple[str, ...] = tuple(vocab)
        # later duplicates win, as in a dict built from the list (Hugging Face's vocab);
        # dict(zip) builds it in C, twice as fast as a comprehension
        self._ids: dict[str, int] = dict(zip(self._vocab, range(len(raw)), strict=True))
        types = tuple(token_types) if token_types is not None else ()
        if types and len(types) != len(raw):
            raise InputError(
                "token types do not match the tokens",
                source=source,
                field="tokenizer.ggml.token_type",
                expected=f"{len(raw)} types, one per token",
                found=str(len(types)),
            )
        added = {
            raw[i]
            for i, kind in enumerate(types)
            if (kind == CONTROL or (kind == USER_DEFINED and raw[i] in self._ids)) and raw[i]
        }
        order: list[int] | None = None
        if scores is not None:
            if len(scores) != len(raw):
                raise InputError(
                    "scores do not match the tokens",
                    source=source,
                    field="tokenizer.ggml.scores",
                    expected=f"{len(raw)} scores, one per token",
                    found=str(len(scores)),
                )
            order = [0] * len(raw)
            for rank, i in enumerate(sorted(range(len(raw)), key=lambda i: (-scores[i], i))):
                order[i] = rank
        self._setup(added, bos_id, unk_id, add_bos, source, order, add_space_prefix)

    def _setup(
        self,
        added: set[str],
        bos_id: int | None,
        unk_id: int | None,
        add_bos: bool,
        source: str | None,
        order: list[int] | None = None,
        add_space_prefix: bool = False,
    ) -> None:
        """Everything derived from the vocabulary and its added tokens."""
        self._order = order  # each id's merge rank where scores rank merges; else the id
        self.add_space_prefix = add_space_prefix
        self._added: frozenset[str] = frozenset(added)
        self._added_ids = {t: self._ids[t] for t in added}
        # leftmost-longest matching without a 6000-way regex (which takes 0.5 s to compile):
        # each first character's candidate lengths, longest first
        lengths: dict[str, set[int]] = {}
        for token in added:
            lengths.setdefault(token[0], set()).add(len(token))
        self._lengths = {ch: sorted(ls, reverse=True) for ch, ls in lengths.items()}
        self._starts = (
            re.compile("[" + "".join(map(re.escape, sorted(lengths))) + "]") if lengths else None
        )
        self._bytes = [self._ids.get(f"<0x{byte:02X}>") for byte in range(256)]
        size = len(self._vocab)
        self.bos_id = _checked_id(bos_id, size, "tokenizer.ggml.bos_token_id", source)
        self.unk_id = _checked_id(unk_id, size, "tokenizer.ggml.unknown_token_id", source)
        self.add_bos = bool(add_bos) and self.bos_id is not None

    def tables(self) -> dict[str, object]:
        """What :meth:`from_tables` rebuilds this tokenizer from, as JSON-able values."""
        return {
            "vocab": list(self._vocab),
            "added": sorted(self._added),
            "bos_id": self.bos_id,
            "unk_id": self.unk_id,
            "add_bos": self.add_bos,
            "order": self._order,
            "add_space_prefix": self.add_space_prefix,
        }

    @classmethod
    def from_tables(
        cls, tables: Mapping[str, object], source: str | None = None
    ) -> SentencePieceTokenizer | None:
        """The tokenizer :meth:`tables` described; None where they have the wrong shape
        (a damaged cache: build from the GGUF instead)."""
        vocab = strings(tables.get("vocab"))
        added = strings(tables.get("added"))
        bos, unk, add_bos = (tables.get(key) for key in ("bos_id", "unk_id", "add_bos"))
        order, prefix = tables.get("order"), tables.get("add_space_prefix", False)
        ids_ok = all(
            v is None or (type(v) is int and 0 <= v < len(vocab or ())) for v in (bos, unk)
        )
        if not vocab or added is None or not ids_ok or type(add_bos) is not bool:
            return None
        if type(prefix) is not bool or (
            order is not None and sorted(integers(order) or ()) != list(range(len(vocab)))
        ):
            return None
        tokenizer = cls.__new__(cls)
        tokenizer._vocab = tuple(vocab)
        tokenizer._ids = dict(zip(tokenizer._vocab, range(len(vocab)), strict=True))
        if "" in added or not tokenizer._ids.keys() >= set(added):
            return None
        tokenizer._setup(set(added), bos, unk, add_bos, source, order, prefix)  # type: ignore[arg-type]
        return tokenizer

    @classmethod
    def from_metadata(
        cls,
        metadata: Mapping[str, object],
        source: str | None = None,
        *,
        use_scores: bool = False,
    ) -> SentencePieceTokenizer:
        """Build from a GGUF's ``tokenizer.ggml.*`` keys (tokens, token_type, bos/unk ids,
        add_bos_token); every key is checked, a wrong one is an :class:`InputError`.

        ``use_scores``: merges rank by ``tokenizer.ggml.scores`` and the space prefix is
        read from ``tokenizer.ggml.add_space_prefix`` (Llama 2 and the like); else, as
        Gemma 3, by the merged token's id, with no prefix."""
        model = metadata.get("tokenizer.ggml.model")
        if model != "llama":
            raise InputError(
                "not a SentencePiece vocabulary",
                source=source,
                field="tokenizer.ggml.model",
                expected="'llama'",
                found=repr(model)[:80],
            )
        tokens = metadata.get("tokenizer.ggml.tokens")
        if (
            not isinstance(tokens, list)
            or len(tokens) > _MAX_TOKENS
            or not set(map(type, tokens)) <= {str}
        ):
            raise InputError(
                "bad vocabulary",
                source=source,
                field="tokenizer.ggml.tokens",
                expected=f"a list of at most {_MAX_TOKENS} strings",
                found=type(tokens).__name__,
            )
        types = metadata.get("tokenizer.ggml.token_type")
        if types is not None and (
            not isinstance(types, list) or not set(map(type, types)) <= {int}
        ):
            raise InputError(
                "bad token types",
                source=source,
                field="tokenizer.ggml.token_type",
                expected="a list of integers",
                found=type(types).__name__,
            )
        add_bos = _flag(metadata, "tokenizer.ggml.add_bos_token", True, source)
        scores = metadata.get("tokenizer.ggml.scores") if use_scores else None
        if scores is not None and (
            not isinstance(scores, list) or not set(map(type, scores)) <= {float, int}
        ):
            raise InputError(
                "bad scores",
                source=source,
                field="tokenizer.ggml.scores",
                expected="a list of numbers",
                found=type(scores).__name__,
            )
        prefix = use_scores and _flag(metadata, "tokenizer.ggml.add_space_prefix", True, source)
        return cls(
            tokens,
            types,
            bos_id=_int_or_none(metadata, "tokenizer.ggml.bos_token_id", source),
            add_bos=add_bos,
            unk_id=_int_or_none(metadata, "tokenizer.ggml.unknown_token_id", source),
            source=source,
            scores=scores,
            add_space_prefix=prefix,
        )

    @property
    def vocab_size(self) -> int:
        """The number of tokens (ids run from 0 to ``vocab_size - 1``)."""
        return len(self._vocab)

    @property
    def special_tokens(self) -> frozenset[str]:
        """The tokens matched whole in raw text (CONTROL and USER_DEFINED)."""
        return self._added

    def token_to_id(self, token: str) -> int | None:
        """The id of a vocabulary string (``'▁the'``, ``'▁▁'``), or None."""
        return self._ids.get(token)

    def encode(self, text: str, *, add_bos: bool | None = None) -> list[int]:
        """The ids Gemma's tokenizer gives ``text``: BOS first when the file says so (or
        ``add_bos``), then the pieces."""
        arguments.text(text, "text")
        bos = self.add_bos if add_bos is None else add_bos
        ids: list[int] = [self.bos_id] if bos and self.bos_id is not None else []
        prefix = SPACE if self.add_space_prefix else ""
        for segment, is_added in self._split_added(text):
            if is_added:
                ids.append(self._added_ids[segment])
            else:
                ids.extend(self._bpe(prefix + segment.replace(" ", SPACE)))
        return ids

    def vocab_strings(self, ids: Iterable[int]) -> list[str]:
        """Each id's token as the vocabulary spells it (``'▁the'`` and ``'the'`` differ;
        ``'\\n'`` is a real newline: show it through :func:`attntrace.visible.visible`)."""
        return [self._vocab[i] for i in checked_ids(ids, len(self._vocab))]

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``, as Gemma's decoder gives it: ``▁`` back to a space,
        ``<0xXX>`` tokens joined into their bytes and read as UTF-8 (bad bytes become
        U+FFFD). BOS and the other control tokens are written as they are spelled."""
        out = bytearray()
        for token in self.vocab_strings(ids):
            byte = _byte_of(token)
            out += bytes((byte,)) if byte is not None else token.replace(SPACE, " ").encode()
        return out.decode("utf-8", errors="replace")

    def _split_added(self, text: str) -> list[tuple[str, bool]]:
        """Cut ``text`` at added tokens: leftmost first, the longest at that place."""
        starts, lengths, added = self._starts, self._lengths, self._added
        pieces: list[tuple[str, bool]] = []
        done = 0
        at = 0
        while starts is not None and (found := starts.search(text, at)) is not None:
            at = found.start()
            token = next(
                (text[at : at + n] for n in lengths[text[at]] if text[at : at + n] in added),
                None,
            )
            if token is None:
                at += 1
                continue
            if done < at:
                pieces.append((text[done:at], False))
            pieces.append((token, True))
            at = done = at + len(token)
        if done < len(text):
            pieces.append((text[done:], False))
        return pieces

    def _symbols(self, word: str) -> list[str]:
        """The word's first symbols: its characters, or their ``<0xXX>`` bytes where the
        vocabulary lacks one (``<unk>``, runs of it fused, where it lacks the bytes too)."""
        ids, vocab = self._ids, self._vocab
        symbols: list[str] = []
        unknown = False
        for char in word:
            if char in ids:
                symbols.append(char)
                unknown = False
                continue
            try:
                data = char.encode("utf-8")
            except UnicodeEncodeError:
                raise InputError(
                    "text is not valid Unicode",
                    field="text",
                    expected="text without lone surrogate code points",
                    found=f"U+{ord(char):04X}",
                ) from None
            fallback = [self._bytes[byte] for byte in data]
            if all(f is not None for f in fallback):
                symbols.extend(vocab[f] for f in fallback if f is not None)
                unknown = False
            elif self.unk_id is not None and not unknown:
                symbols.append(vocab[self.unk_id])
                unknown = True
        return symbols

    def _bpe(self, word: str) -> list[int]:
        """Merge the word's symbols, the best-ranked pair first (leftmost on ties).

        The same queue as Hugging Face's ``Word::merge_all``: an entry is (rank, position);
        one whose pair has since changed is stale and skipped.
        """
        ids = self._ids
        symbols = self._symbols(word)
        n = len(symbols)
        if n < 2:
            return [ids[s] for s in symbols]
        nxt = [*range(1, n), -1]
        prev = list(range(-1, n - 1))
        heap = [
            (rank, pos)
            for pos in range(n - 1)
            if (rank := self._rank(symbols[pos], symbols[pos + 1])) is not None
        ]
        heapq.heapify(heap)
        while heap:
            rank, pos = heapq.heappop(heap)
            left = symbols[pos]
            right = nxt[pos]
            if not left or right < 0 or self._rank(left, symbols[right]) != rank:
                continue
            merged = symbols[pos] = left + symbols[right]
            symbols[right] = ""
            after = nxt[pos] = nxt[right]
            if after >= 0:
                prev[after] = pos
                if (found := self._rank(merged, symbols[after])) is not None:
                    heapq.heappush(heap, (found, pos))
            before = prev[pos]
            if before >= 0 and (found := self._rank(symbols[before], merged)) is not None:
                heapq.heappush(heap, (found, before))
        return [ids[s] for s in symbols if s]

    def _rank(self, left: str, right: str) -> int | None:
        """generate_merges' order of the merge ``left + right``: the merged token's id,
        then the longer left part first; None where ``left + right`` is no token."""
        merged = self._ids.get(left + right)
        if merged is None:
            return None
        if self._order is not None:
            merged = self._order[merged]
        return merged * _MAX_LEFT + _MAX_LEFT - 1 - min(len(left), _MAX_LEFT - 1)


def open_gguf(
    weights: Path, verified_sha256: str | None = None
) -> tuple[GGUFFile, SentencePieceTokenizer]:
    """A SentencePiece model's GGUF and its tokenizer. Given the SHA-256 the file was
    verified to have, the tokenizer comes from the tokenizer cache (written on the first
    run) and the GGUF's tokenizer arrays are stepped over."""
    if verified_sha256 is None:
        gguf = GGUFFile(weights)
        return gguf, SentencePieceTokenizer.from_metadata(gguf.metadata, str(weights))
    return tokenizer_cache.open_gguf(
        weights,
        verified_sha256,
        TOKENIZER_KIND,
        TOKENIZER_ARRAYS,
        SentencePieceTokenizer.from_tables,
        lambda gguf: SentencePieceTokenizer.from_metadata(gguf.metadata, str(gguf.path)),
    )


def _byte_of(token: str) -> int | None:
    """The byte a ``<0xXX>`` token stands for, or None."""
    if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        try:
            return int(token[3:5], 16)
        except ValueError:
            return None
    return None


def _flag(metadata: Mapping[str, object], key: str, default: bool, source: str | None) -> bool:
    value = metadata.get(key, default)
    if not isinstance(value, bool):
        raise InputError(source=source, field=key, expected="true or false", found=repr(value)[:80])
    return value


def _int_or_none(metadata: Mapping[str, object], key: str, source: str | None) -> int | None:
    value = metadata.get(key)
    if value is None:
        return None
    if type(value) is not int:
        raise InputError(source=source, field=key, expected="a token id", found=repr(value)[:80])
    return value


def _checked_id(value: int | None, size: int, field: str, source: str | None) -> int | None:
    if value is not None and not 0 <= value < size:
        raise InputError(
            "token id out of the vocabulary",
            source=source,
            field=field,
            expected=f"an id from 0 to {size - 1}",
            found=str(value),
        )
    return value
