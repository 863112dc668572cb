"""What a model's cheap metadata says: family, layers, heads, K/V heads.

For `attntrace models`, which lists every model it finds without reading weights: a
folder's ``config.json`` (``model_type`` and the head counts, from ``text_config``
where a multimodal config nests them), or a GGUF file's key-value pairs, read from the
file's start until the four facts are found. llama.cpp writes ``general.*``, then the
architecture's keys, then ``tokenizer.*``; the tokenizer's arrays (a vocabulary is
megabytes) are stepped over, never decoded, so a listing reads a few kilobytes of most
files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attntrace.errors import InputError
from attntrace.kernel.reading import naming, open_regular, read_at
from attntrace.real.disk.files import read_json_object
from attntrace.real.families.facts import FAMILIES, MAX_LAYERS
from attntrace.real.weights.gguf_header import (
    GGUF_MAGIC,
    SUPPORTED_VERSIONS,
    BeyondBuffer,
    Parser,
)

#: config.json's ``model_type`` or GGUF's ``general.architecture`` where it differs
#: from the family's name (Gemma 3's text-only checkpoints, 270M and 1B).
ALIASES = {"gemma3_text": "gemma3"}
FIRST_READ = 1 << 16
#: The most of a GGUF file's header read to list it.
HEADER_LIMIT = 64 << 20
_ARRAY = 9  # GGUF's value type of an array


@dataclass(frozen=True)
class Summary:
    """A model's family and attention shape, as far as its metadata says."""

    family: str | None
    layers: int | None
    heads: int | None
    kv_heads: int | None

    @property
    def supported(self) -> bool:
        return self.family in FAMILIES and (self.layers or 0) <= MAX_LAYERS

    @property
    def why_not(self) -> str:
        """A few words on why it cannot be traced; empty where it can."""
        if self.family is None:
            return "no model_type or general.architecture"
        if self.family not in FAMILIES:
            return f"architecture {self.family} is not supported"
        if (self.layers or 0) > MAX_LAYERS:
            return f"claims {self.layers:,} layers (at most {MAX_LAYERS:,})"
        return ""


def _count(value: object) -> int | None:
    """A head or layer count: an int, or a per-layer list's largest."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return max(int(v) for v in value)
    return None


def _first(config: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        if (found := _count(config.get(key))) is not None:
            return found
    return None


def config_summary(path: Path) -> Summary:
    """What ``config.json`` at ``path`` says (an InputError where it is not JSON)."""
    config = read_json_object(path, "the model's config (a JSON object)")
    kind = config.get("model_type")
    text = config.get("text_config")
    if isinstance(text, dict) and "num_hidden_layers" not in config:
        config = {**config, **text}
    family = ALIASES.get(kind, kind) if isinstance(kind, str) else None
    heads = _first(config, "num_attention_heads", "n_head")
    kv_heads = _first(config, "num_key_value_heads")
    return Summary(
        family,
        _first(config, "num_hidden_layers", "n_layer"),
        heads,
        kv_heads if kv_heads is not None else heads,
    )


def gguf_summary(path: Path) -> Summary:
    """What the GGUF file at ``path`` says (an InputError where its header is bad)."""
    source = str(path)
    with naming(source), open_regular(path, "a GGUF file") as file:
        size = os.fstat(file.fileno()).st_size
        length = min(size, FIRST_READ)
        while True:
            held = bytearray(length)  # read, not through numpy: `models` loads none
            read_at(file, 0, memoryview(held))
            buf = bytes(held)
            try:
                found = _metadata(Parser(buf, size, source))
                break
            except BeyondBuffer as short:
                if short.needed > HEADER_LIMIT:
                    raise InputError(
                        f"a header over {HEADER_LIMIT:,} bytes before its head counts",
                        source=source,
                    ) from None
                length = min(size, max(2 * length, short.needed))
    arch = found.get("general.architecture")
    if not isinstance(arch, str):
        return Summary(None, None, None, None)
    heads = _count(found.get(f"{arch}.attention.head_count"))
    kv_heads = _count(found.get(f"{arch}.attention.head_count_kv"))
    return Summary(
        ALIASES.get(arch, arch),
        _count(found.get(f"{arch}.block_count")),
        heads,
        kv_heads if kv_heads is not None else heads,
    )


def _metadata(parser: Parser) -> dict[str, object]:
    """The key-value pairs up to the last of the four wanted (arrays of ``tokenizer.*``
    stepped over)."""
    if parser.end < 24:
        raise parser.fail("file too short for a GGUF header")
    if parser.buf[:4] != GGUF_MAGIC:
        raise parser.fail("not a GGUF file", "magic", expected=repr(GGUF_MAGIC))
    parser.pos = 4
    version = parser.u32("the version", "version")
    if version not in SUPPORTED_VERSIONS:
        raise parser.fail("unsupported GGUF version", "version", found=str(version))
    parser.u64("the tensor count", "tensor_count")
    kv_count = parser.u64("the key-value count", "kv_count")
    parser.check_count(kv_count, 13, "key-value count", "kv_count")
    found: dict[str, object] = {}
    for index in range(kv_count):
        key = parser.string(f"key {index}", f"key {index}")
        value_type = parser.u32("a value type", key)
        if value_type == _ARRAY and key.startswith("tokenizer."):
            parser.step_over_array(key)
            continue
        found[key] = parser.value(value_type, key, 0)
        arch = found.get("general.architecture")
        wanted = ("block_count", "attention.head_count", "attention.head_count_kv")
        if isinstance(arch, str) and all(f"{arch}.{k}" in found for k in wanted):
            break
    return found
