"""GPT-2-style byte-level BPE in pure Python, id for id equal to SmolLM2's tokenizer.

A real decoder model (SmolLM2) only means something when it sees the ids its own tokenizer
gives, so this module reproduces Hugging Face's ``tokenizers`` pipeline for SmolLM2 (and
llama.cpp's "smollm" pre-tokenizer) without importing it or the ``regex`` package:

1. literal special tokens (the vocabulary's CONTROL tokens, e.g. ``<|im_start|>``) are cut
   out whole, leftmost and longest first;
2. every number character (``\\p{N}``) is split off on its own;
3. each piece is split by GPT-2's regex, implemented here as a hand-written scanner over
   Unicode categories, since :mod:`re` has no ``\\p{L}``::

       's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+

   (steps 2 and 3 are :mod:`attntrace.real.tokenizers.pretokenize`);
4. each piece's UTF-8 bytes become printable characters (GPT-2's ``bytes_to_unicode``,
   so a space reads ``Ġ``) and are merged by BPE, lowest merge rank first.

Byte-level BPE is lossless when the vocabulary has a symbol for each of the 256 bytes:
:meth:`ByteLevelBPE.decode` then gives back the text exactly. SmolLM2's lacks 21 (six rare
control characters, bytes UTF-8 never uses, and the lead bytes of the unassigned planes
4-12); those bytes are dropped, as the reference drops them. The ids are tested against
the reference's in ``tests/golden/real/tokens.json``.

Other byte-level vocabularies (GPT-2, Llama 3, Qwen 2...) differ only in step 2-3, the
pre-tokenizer, named by ``pre`` (:data:`attntrace.real.tokenizers.bpe_pre.PRE_TOKENIZERS`),
and in whether a piece that is a token is taken whole (Llama 3's ``ignore_merges``).
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Iterable, Mapping, Sequence

from attntrace import arguments
from attntrace.errors import InputError
from attntrace.real.text import checked_ids, integers, special_pattern, split_specials, strings
from attntrace.real.tokenizers.bpe_pre import PRE_TOKENIZERS
from attntrace.real.tokenizers.pretokenize import gpt2_split, pre_tokenize, split_digits

__all__ = [
    "GGUF_TOKEN_TYPE_CONTROL",
    "ByteLevelBPE",
    "bytes_to_unicode",
    "gpt2_split",
    "pre_tokenize",
    "split_digits",
]

# llama.cpp's token type for control tokens, matched whole in text like HF's special tokens.
GGUF_TOKEN_TYPE_CONTROL = 3
GGUF_TOKEN_TYPE_USER_DEFINED = 4


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from each byte to a printable character (space -> 'Ġ', newline -> 'Ċ').

    Printable Latin-1 bytes stand for themselves; the other 68 bytes are moved to U+0100
    onwards, so that every token is a string of visible characters.
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    keep += range(ord("®"), ord("ÿ") + 1)
    mapping: dict[int, str] = {}
    shifted = 0
    for byte in range(256):
        if byte in keep:
            mapping[byte] = chr(byte)
        else:
            mapping[byte] = chr(256 + shifted)
            shifted += 1
    return mapping


_BYTE_TO_CHAR = bytes_to_unicode()
_CHAR_TO_BYTE = {char: byte for byte, char in _BYTE_TO_CHAR.items()}
# Latin-1 decoding gives one character per byte; this table then moves it to GPT-2's.
_BYTES_TABLE = {byte: char for byte, char in _BYTE_TO_CHAR.items() if byte != ord(char)}


class ByteLevelBPE:
    """A byte-level BPE vocabulary with its merges: text to ids and back, as SmolLM2 does.

    Built from plain lists (the token strings in id order and the ``"a b"`` merges in rank
    order), which is how a GGUF file stores a GPT-2-style tokenizer. No BOS is added, as
    SmolLM2's ``add_bos_token`` is false.
    """

    def __init__(
        self,
        tokens: Sequence[str],
        merges: Iterable[str | tuple[str, str]],
        *,
        special_tokens: Iterable[str] = (),
        source: str | None = None,
        ranks: Sequence[int] | None = None,
        pre: str = "smollm",
    ) -> None:
        """``ranks``, given, are the merges' ranks from this class's own :meth:`tables`
        (a cache sealed by its checksum): the merges are then taken as they are, unchecked.
        ``pre`` names the pre-tokenizer (a GGUF's ``tokenizer.ggml.pre``)."""
        if pre not in PRE_TOKENIZERS:
            raise InputError(
                "unknown pre-tokenizer",
                source=source,
                field="tokenizer.ggml.pre",
                expected="one of " + ", ".join(sorted(PRE_TOKENIZERS)),
                found=repr(pre)[:80],
            )
        self._pre_name = pre
        self._pre = PRE_TOKENIZERS[pre]
        if not tokens:
            raise InputError(
                "empty vocabulary", source=source, field="tokens", expected="token strings"
            )
        self._vocab: tuple[str, ...] = tuple(tokens)
        # Later duplicates win, as in Hugging Face's BPE.
        self._ids: dict[str, int] = {token: i for i, token in enumerate(self._vocab)}
        if ranks is None:
            self._merges = self._read_merges(merges, source)
        else:
            self._merges = dict(zip(merges, ranks, strict=True))  # type: ignore[arg-type]
        self._specials: tuple[str, ...] = tuple(
            sorted({t for t in special_tokens if t}, key=len, reverse=True)
        )
        for token in self._specials:
            if token not in self._ids:
                raise InputError(
                    "special token not in the vocabulary",
                    source=source,
                    field="special_tokens",
                    found=repr(token),
                )
        self._special_pattern = special_pattern(self._specials)
        # a word met again (the, a, ...) is merged once: a bounded memo per tokenizer
        self._piece_ids = functools.lru_cache(maxsize=10_000)(self._merged_ids)

    @classmethod
    def from_lists(
        cls,
        tokens: Sequence[str],
        merges: Iterable[str | tuple[str, str]],
        token_types: Sequence[int] | None = None,
        *,
        source: str | None = None,
        pre: str = "smollm",
        special_types: Iterable[int] = (GGUF_TOKEN_TYPE_CONTROL,),
    ) -> ByteLevelBPE:
        """Build from a GGUF's ``tokenizer.ggml.tokens``, ``.merges`` and ``.token_type``.

        Tokens whose type is in ``special_types`` (CONTROL, 3, by default) are matched
        whole in text (``<|im_start|>``).
        """
        kinds = frozenset(special_types)
        specials: list[str] = []
        if token_types is not None:
            if len(token_types) != len(tokens):
                raise InputError(
                    "token types do not match the tokens",
                    source=source,
                    field="token_type",
                    expected=f"{len(tokens)} types, one per token",
                    found=str(len(token_types)),
                )
            specials = [
                token for token, kind in zip(tokens, token_types, strict=True) if kind in kinds
            ]
        return cls(tokens, merges, special_tokens=specials, source=source, pre=pre)

    def tables(self) -> dict[str, object]:
        """What :meth:`from_tables` rebuilds this tokenizer from, as JSON-able lists."""
        return {
            "tokens": list(self._vocab),
            "merges": list(self._merges),
            "ranks": list(self._merges.values()),
            "special_tokens": list(self._specials),
            "pre": self._pre_name,
        }

    @classmethod
    def from_tables(
        cls, tables: Mapping[str, object], source: str | None = None
    ) -> ByteLevelBPE | None:
        """The tokenizer :meth:`tables` described; None where they have the wrong shape
        (a damaged cache: build from the GGUF instead)."""
        tokens = strings(tables.get("tokens"))
        merges = strings(tables.get("merges"))
        ranks = integers(tables.get("ranks"))
        specials = strings(tables.get("special_tokens"))
        pre = tables.get("pre", "smollm")
        if not tokens or merges is None or ranks is None or specials is None:
            return None
        if len(merges) != len(ranks) or not set(specials) <= set(tokens):
            return None
        if not isinstance(pre, str) or pre not in PRE_TOKENIZERS:
            return None
        return cls(tokens, merges, special_tokens=specials, source=source, ranks=ranks, pre=pre)

    def _read_merges(
        self, merges: Iterable[str | tuple[str, str]], source: str | None
    ) -> dict[str, int]:
        """Map each merge, as its ``"left right"`` string, to its rank (0 merges first).

        Keyed by the merge strings themselves, as a GGUF stores them, because a dict of
        ~50 000 strings builds several times faster than one of id-pair tuples. Every merge
        is checked: two tokens of the vocabulary whose concatenation is one too.
        """
        lines = [m if isinstance(m, str) else " ".join(m) for m in merges]
        ids = self._ids
        for rank, line in enumerate(lines):
            left, space, right = line.partition(" ")
            if not (space and left and right) or " " in right:
                raise InputError(
                    "malformed merge",
                    source=source,
                    field=f"merges[{rank}]",
                    expected="two tokens separated by one space",
                    found=repr(merges[rank] if isinstance(merges, Sequence) else line),
                )
            if left not in ids or right not in ids or left + right not in ids:
                missing = next(t for t in (left, right, left + right) if t not in ids)
                raise InputError(
                    "merge uses a token that is not in the vocabulary",
                    source=source,
                    field=f"merges[{rank}]",
                    expected="tokens of the vocabulary",
                    found=repr(missing),
                )
        # Later duplicates win, as in Hugging Face's BPE.
        return {line: rank for rank, line in enumerate(lines)}

    @property
    def vocab_size(self) -> int:
        """The number of tokens (ids run from 0 to ``vocab_size - 1``)."""
        return len(self._vocab)

    @property
    def special_tokens(self) -> tuple[str, ...]:
        """The tokens matched whole in text, longest first."""
        return self._specials

    def token_to_id(self, token: str) -> int | None:
        """The id of a vocabulary string (byte-level form, e.g. ``'Ġthe'``), or None."""
        return self._ids.get(token)

    @property
    def pre(self) -> str:
        """The pre-tokenizer's name (a GGUF's ``tokenizer.ggml.pre``)."""
        return self._pre_name

    def encode(self, text: str) -> list[int]:
        """The ids the vocabulary's tokenizer gives ``text`` (no BOS: SmolLM2 adds none;
        :mod:`attntrace.real.tokenizers.gguf_vocab` adds what a GGUF file asks for)."""
        arguments.text(text, "text")
        ids: list[int] = []
        for segment, is_special in split_specials(self._special_pattern, text):
            if is_special:
                ids.append(self._ids[segment])
                continue
            for piece in self._pre.split(segment):
                ids.extend(self._piece_ids(piece))
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``: their bytes joined, read as UTF-8 (bad bytes become U+FFFD)."""
        data = b"".join(self._token_bytes(token) for token in self.vocab_strings(ids))
        return data.decode("utf-8", errors="replace")

    def vocab_strings(self, ids: Iterable[int]) -> list[str]:
        """The raw vocabulary string of each id, in byte-level form (``'Ġthe'``)."""
        return [self._vocab[i] for i in checked_ids(ids, len(self._vocab))]

    def tokens(self, ids: Iterable[int]) -> list[str]:
        """Each id as readable text (``'Ġthe'`` -> ``' the'``), for labelling rows.

        A token that holds only part of a UTF-8 character (emoji are often split) shows its
        bytes escaped, e.g. ``'\\\\xf0\\\\x9f'``.
        """
        return [
            self._token_bytes(token).decode("utf-8", errors="backslashreplace")
            for token in self.vocab_strings(ids)
        ]

    @staticmethod
    def _token_bytes(token: str) -> bytes:
        """The bytes a byte-level token stands for (characters outside the map: UTF-8)."""
        table = _CHAR_TO_BYTE
        if all(char in table for char in token):
            return bytes(table[char] for char in token)
        return b"".join(
            bytes((table[char],)) if char in table else char.encode("utf-8") for char in token
        )

    def _merged_ids(self, piece: str) -> tuple[int, ...]:
        try:
            data = piece.encode("utf-8", errors="surrogateescape")
        except UnicodeEncodeError as error:
            raise InputError(
                "text is not valid Unicode",
                field="text",
                expected="text without lone surrogate code points",
                found=f"U+{ord(error.object[error.start]):04X}",
            ) from None
        word = data.decode("latin-1").translate(_BYTES_TABLE)
        if self._pre.ignore_merges and (whole := self._ids.get(word)) is not None:
            return (whole,)
        return self._bpe(word)

    def _bpe(self, word: str) -> tuple[int, ...]:
        """Merge the word's symbols, always the lowest-ranked pair first (leftmost on ties).

        The same priority queue as Hugging Face's ``Word::merge_all``, so ties and
        overlapping pairs resolve identically. A symbol missing from the vocabulary is
        dropped, as Hugging Face does when no unknown token is set.
        """
        ids = self._ids
        symbols = [char for char in word if char in ids]
        n = len(symbols)
        if n < 2:
            return tuple(ids[symbol] for symbol in symbols)
        ranks = self._merges
        nxt = [*range(1, n), -1]
        prev = list(range(-1, n - 1))
        heap: list[tuple[int, int]] = []
        for pos in range(n - 1):
            rank = ranks.get(symbols[pos] + " " + symbols[pos + 1])
            if rank is not None:
                heap.append((rank, pos))
        heapq.heapify(heap)
        while heap:
            rank, pos = heapq.heappop(heap)
            left = symbols[pos]
            right = nxt[pos]
            # An expired entry: its left symbol merged into another, or its pair changed.
            # (A pair only changes by growing, so an unchanged rank means an unchanged pair.)
            if not left or right < 0 or ranks.get(left + " " + symbols[right]) != rank:
                continue
            merged = symbols[pos] = left + symbols[right]
            symbols[right] = ""
            after = nxt[pos] = nxt[right]
            if after >= 0:
                prev[after] = pos
                found = ranks.get(merged + " " + symbols[after])
                if found is not None:
                    heapq.heappush(heap, (found, pos))
            before = prev[pos]
            if before >= 0:
                found = ranks.get(symbols[before] + " " + merged)
                if found is not None:
                    heapq.heappush(heap, (found, before))
        try:
            return tuple(ids[symbol] for symbol in symbols if symbol)
        except KeyError:  # only from tables that name a merge no token spells
            raise InputError(
                "the tokenizer's tables are inconsistent (a merge makes no token); "
                "delete attntrace's tokenizer cache",
                field="text",
            ) from None
