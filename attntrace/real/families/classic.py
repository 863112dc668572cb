"""What GPT-2 and BERT share and the RoPE decoders do not: learned positions, LayerNorm,
a bias on every projection, and checkpoints whose tensor names carry a prefix or not.

A config.json is read field by field here (each bad value one :class:`InputError` naming
the file and the field), the checkpoint's prefix is found once (``bert.`` or none,
``transformer.`` or none: transformers' ``save_pretrained`` writes the prefix of the
class saved, ``BertForMaskedLM`` or ``BertModel``), and every tensor's shape is held to
the config before a number is read, so a config that disagrees with its tensors is one
line, not a broadcasting error three layers in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from attntrace.errors import InputError, describe
from attntrace.kernel.ops import Matrix
from attntrace.real.families.tensors import Tensor, TensorSource
from attntrace.real.forward import gelu, gelu_tanh, silu


class Vocabulary(Protocol):
    """A tokenizer that also spells its tokens (WordPiece, byte-level BPE, tokenizer.json)."""

    def encode(self, text: str) -> list[int]: ...

    def vocab_strings(self, ids: Iterable[int]) -> list[str]: ...


# transformers' ``activations.ACT2CLS`` names, by what they compute. ``gelu_fast`` and
# ``quick_gelu`` are left out: their constants are not these formulas' (0.7978845608,
# 1.702), so a trace would differ from the model in the twelfth digit and say nothing.
ACTIVATIONS: Mapping[str, str] = {
    "gelu": "gelu",  # GELUActivation: torch's exact gelu
    "gelu_python": "gelu",
    "gelu_new": "gelu_tanh",  # NewGELUActivation: GPT-2's tanh approximation
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_python_tanh": "gelu_tanh",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
}


def relu(x: Matrix) -> Matrix:
    """``max(x, 0)``."""
    result: Matrix = x * (x > 0)
    return result


FUNCTIONS: Mapping[str, Callable[[Matrix], Matrix]] = {
    "gelu": gelu,
    "gelu_tanh": gelu_tanh,
    "relu": relu,
    "silu": silu,
}


class ConfigFields:
    """A config.json's fields, each checked as it is read, with transformers' default
    where the field is absent (the config class's, so a field left out means what it
    means to transformers)."""

    def __init__(self, config: Mapping[str, object], source: str) -> None:
        self.config = config
        self.source = source

    def _error(self, key: str, expected: str, value: object, why: str | None = None) -> InputError:
        return InputError(
            why, source=self.source, field=key, expected=expected, found=describe(value)
        )

    def raw(self, key: str, default: object, aliases: Sequence[str] = ()) -> tuple[str, object]:
        """The value of ``key`` (or of an alias transformers' ``attribute_map`` reads as
        it: GPT-2's ``hidden_size`` is ``n_embd``), and the name it was found under."""
        for name in (key, *aliases):
            if name in self.config:
                return name, self.config[name]
        return key, default

    def whole(self, key: str, default: int | None, aliases: Sequence[str] = ()) -> int:
        """A whole number ≥ 1."""
        name, value = self.raw(key, default, aliases)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self._error(name, "a whole number ≥ 1", value)
        return value

    def optional_whole(self, key: str) -> int | None:
        """A whole number ≥ 1, or None where absent or null."""
        return None if self.config.get(key) is None else self.whole(key, None)

    def positive(self, key: str, default: float) -> float:
        """A finite number > 0 (an ε)."""
        name, value = self.raw(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e300:
            raise self._error(name, "a number > 0", value)
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        """true or false."""
        name, value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self._error(name, "true or false", value)
        return value

    def text(self, key: str, default: str) -> str:
        """A string."""
        name, value = self.raw(key, default)
        if not isinstance(value, str):
            raise self._error(name, "a string", value)
        return value

    def refuse(self, key: str, value: object, expected: str, why: str) -> InputError:
        """The one line for a setting attntrace does not trace: what, and why not."""
        return self._error(key, expected, value, why)

    def activation(self, key: str, default: str) -> str:
        """``key`` as ModelFacts names the function (``gelu``, ``gelu_tanh``, ``relu``,
        ``silu``)."""
        name = self.text(key, default)
        if name not in ACTIVATIONS:
            raise self._error(key, "one of " + ", ".join(ACTIVATIONS), name)
        return ACTIVATIONS[name]

    def heads_divide(self, d_model: int, d_key: str, heads: int, heads_key: str) -> int:
        """d_model / heads, where it is whole (transformers refuses it otherwise)."""
        if d_model % heads:
            raise InputError(
                source=self.source,
                field=heads_key,
                expected=f"a number of heads that divides {d_key} ({d_model})",
                found=str(heads),
            )
        return d_model // heads


def model_type(fields: ConfigFields, family: str) -> None:
    """``model_type`` is ``family``: the table that called this reader chose it by that."""
    found = fields.config.get("model_type")
    if found != family:
        raise fields.refuse("model_type", found, repr(family), "not this family's config")


class Prefixed:
    """A :class:`TensorSource` read by names without the checkpoint's prefix.

    ``BertForMaskedLM`` saves ``bert.embeddings.…``, ``BertModel`` ``embeddings.…``;
    ``GPT2LMHeadModel`` ``transformer.h.0.…``, ``GPT2Model`` (and OpenAI's own upload)
    ``h.0.…``. BERT checkpoints converted from TensorFlow name LayerNorm's weight and
    bias ``gamma`` and ``beta``, which transformers renames when it loads them; here
    too.
    """

    def __init__(self, source: TensorSource, prefix: str) -> None:
        self.source = source
        self.prefix = prefix

    @property
    def path(self) -> Path:
        return self.source.path

    def stored(self, name: str) -> str:
        """The name the checkpoint stores ``name`` under."""
        full = self.prefix + name
        if self.source.has(full) or ".LayerNorm." not in name:
            return full
        stem, _, last = full.rpartition(".")
        old = {"weight": "gamma", "bias": "beta"}.get(last)
        return f"{stem}.{old}" if old and self.source.has(f"{stem}.{old}") else full

    def has(self, name: str) -> bool:
        return self.source.has(self.stored(name))

    def shape(self, name: str) -> tuple[int, ...]:
        return self.source.shape(self.stored(name))

    def tensor(self, name: str) -> Tensor:
        return self.source.tensor(self.stored(name))

    def rows(self, name: str, ids: Sequence[int]) -> Tensor:
        return self.source.rows(self.stored(name), ids)


def prefixed(source: TensorSource, probe: str, prefixes: Sequence[str]) -> Prefixed:
    """``source`` read without the first of ``prefixes`` under which ``probe`` is there."""
    for prefix in prefixes:
        if source.has(prefix + probe):
            return Prefixed(source, prefix)
    raise InputError(
        "not this family's tensors",
        source=str(source.path),
        expected="a tensor named " + " or ".join(repr(p + probe) for p in prefixes),
        found="neither",
    )


def check_shapes(tensors: Prefixed, expected: Mapping[str, tuple[int, ...]], why: str) -> None:
    """Every tensor of ``expected`` there, and of its shape (``why``: where the shapes
    come from, e.g. ``config.json: n_embd 64, n_head 4``), read from headers only."""
    for name, shape in expected.items():
        stored = tensors.stored(name)
        if not tensors.has(name):
            raise InputError(
                "a tensor is missing",
                source=str(tensors.path),
                field=stored,
                expected=f"a tensor of shape {list(shape)}",
                found="none",
            )
        found = tensors.shape(name)
        if tuple(found) != tuple(shape):
            raise InputError(
                f"the tensor disagrees with {why}",
                source=str(tensors.path),
                field=stored,
                expected=f"shape {list(shape)}",
                found=f"{list(found)}",
            )
