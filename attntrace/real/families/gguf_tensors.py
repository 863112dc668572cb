"""A GGUF file as a :class:`~attntrace.real.families.tensors.TensorSource`: tensors by
their Hugging Face names, in transformers' layout, what llama.cpp's converter did undone.

The names are those of the class config.json's ``architectures`` names, as
``save_pretrained`` writes them: ``model.layers.N.self_attn.q_proj.weight`` for the
decoders (``*ForCausalLM``), ``transformer.h.N.attn.c_attn.weight`` for GPT-2
(``GPT2LMHeadModel``; the bare ``h.N...`` of ``GPT2Model`` is accepted too) and
``encoder.layer.N.attention.self.query.weight`` for BERT (``BertModel``; ``bert.``
prefixed names are accepted too). The mapping is llama.cpp's
``gguf-py/gguf/tensor_mapping.py`` read backwards, for these families only.

What the converter did, and how it is undone (``convert_hf_to_gguf.py``'s
``conversion/`` package):

* **Q and K rows permuted** for architecture ``llama`` (``LlamaModel.modify_tensors``
  with ``undo_permute = True``, which converts ``LlamaForCausalLM`` and
  ``MistralForCausalLM``; biases too): each head's rows (0, d/2, 1, d/2+1, …) so that
  llama.cpp's adjacent-pair RoPE turns transformers' (i, i + d/2) pairs. K is permuted
  with the K/V head count (``LlamaModel.permute``). Qwen 2/3, Gemma 1/2/3, Phi-3, GPT-2
  and BERT are not permuted (their classes in conversion/ do not call ``permute``;
  llama.cpp runs them with NEOX RoPE, which pairs as transformers does).
* **Gemma's norms stored as 1 + w**: every tensor whose Hugging Face name ends in
  ``norm.weight`` (the input, post-attention, pre- and post-feed-forward, final, and
  Gemma 3's q/k norms) had 1 added (``GemmaModel``, ``Gemma2Model``,
  ``Gemma3Model.modify_tensors``; Gemma 1 too). 1 is subtracted here, in float64, so
  adding it back gives the file's float32 1 + w exactly; w itself was rounded when the
  converter added 1 in float32 (|w − served| ≤ 2⁻²⁴·|1 + w|).
* **GPT-2's Conv1D weights transposed** (``GPT2Model.modify_tensors``: ``c_attn``,
  ``c_proj``, ``c_fc``): served transposed back, ``[in, out]`` as ``Conv1D`` holds them.
* **Q, K, V fused** where the file was written with ``--fuse-qkv``
  (``ModelBase.modify_tensors``, after the permutation): sliced back by rows.
  Phi-3's ``qkv_proj`` and ``gate_up_proj`` are fused in transformers too
  (``Phi3Attention``, ``Phi3MLP``), so they are served fused, as stored.
* Not written at all: Gemma's ``lm_head.weight`` (``filter_tensors`` skips it; it is the
  embedding, tied), BERT's pooler, GPT-2's ``attn.bias`` masks.

Every other number is the file's, dequantized (F32 exactly as stored).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attntrace.errors import InputError
from attntrace.real.families.facts import ModelFacts
from attntrace.real.families.tensors import Tensor
from attntrace.real.text import shown
from attntrace.real.weights.gguf import GGUFFile

_DECODER = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}
_DECODER_LAYER = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.qkv_proj": "attn_qkv",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.gate_up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
# Gemma 2 and 3 norm after attention and after the MLP too (tensor_mapping.py)
_GEMMA2_LAYER = {
    **_DECODER_LAYER,
    "post_attention_layernorm": "post_attention_norm",
    "pre_feedforward_layernorm": "ffn_norm",
    "post_feedforward_layernorm": "post_ffw_norm",
}
_GPT2 = {
    "transformer.wte.weight": "token_embd.weight",
    "transformer.wpe.weight": "position_embd.weight",
    "transformer.ln_f.weight": "output_norm.weight",
    "transformer.ln_f.bias": "output_norm.bias",
    "lm_head.weight": "output.weight",
}
_GPT2_LAYER = {
    "ln_1": "attn_norm",
    "attn.c_attn": "attn_qkv",
    "attn.c_proj": "attn_output",
    "ln_2": "ffn_norm",
    "mlp.c_fc": "ffn_up",
    "mlp.c_proj": "ffn_down",
}
_BERT = {
    "embeddings.word_embeddings.weight": "token_embd.weight",
    "embeddings.position_embeddings.weight": "position_embd.weight",
    "embeddings.token_type_embeddings.weight": "token_types.weight",
    "embeddings.LayerNorm.weight": "token_embd_norm.weight",
    "embeddings.LayerNorm.bias": "token_embd_norm.bias",
}
_BERT_LAYER = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}

#: Per architecture: whole-model names, per-layer names, the layer prefix.
_TABLES: dict[str, tuple[dict[str, str], dict[str, str], str]] = {
    "llama": (_DECODER, _DECODER_LAYER, "model.layers"),
    "qwen2": (_DECODER, _DECODER_LAYER, "model.layers"),
    "qwen3": (_DECODER, _DECODER_LAYER, "model.layers"),
    "phi3": (_DECODER, _DECODER_LAYER, "model.layers"),
    "gemma": (_DECODER, _DECODER_LAYER, "model.layers"),
    "gemma2": (_DECODER, _GEMMA2_LAYER, "model.layers"),
    "gemma3": (_DECODER, _GEMMA2_LAYER, "model.layers"),
    "gpt2": (_GPT2, _GPT2_LAYER, "transformer.h"),
    "bert": (_BERT, _BERT_LAYER, "encoder.layer"),
}
_GEMMAS = ("gemma", "gemma2", "gemma3")
_GPT2_TRANSPOSED = ("attn_qkv.weight", "attn_output.weight", "ffn_up.weight", "ffn_down.weight")
_FUSED_PART = re.compile(r"blk\.(\d+)\.attn_([qkv])\.(weight|bias)$")

Transform = Callable[[Tensor], Tensor]


@dataclass(frozen=True)
class Entry:
    """Where a Hugging Face tensor is in the file and how it is brought back."""

    gguf_name: str
    rows: slice | None = None  # a part of a fused QKV tensor
    permuted_heads: int = 0  # llama: un-permute with this many heads
    minus_one: bool = False  # Gemma: the file holds 1 + w
    transpose: bool = False  # GPT-2's Conv1D


class GGUFTensors:
    """Tensors by Hugging Face name from a GGUF file, float64, in transformers' layout."""

    def __init__(self, gguf: GGUFFile, facts: ModelFacts) -> None:
        self.gguf = gguf
        self.facts = facts
        self._source = str(gguf.path)
        self._entries = _entries(gguf, facts)

    @property
    def path(self) -> Path:
        return self.gguf.path

    def names(self) -> tuple[str, ...]:
        """Every Hugging Face name the file serves."""
        return tuple(self._entries)

    def _canonical(self, name: str) -> str:
        """The name as :meth:`names` spells it (GPT2Model's and BertForMaskedLM's
        prefixes accepted)."""
        if name in self._entries:
            return name
        family = self.facts.family
        if family == "gpt2" and f"transformer.{name}" in self._entries:
            return f"transformer.{name}"
        if family == "bert" and name.startswith("bert."):
            return name.removeprefix("bert.")
        return name

    def has(self, name: str) -> bool:
        return self._canonical(name) in self._entries

    def _entry(self, name: str) -> Entry:
        entry = self._entries.get(self._canonical(name))
        if entry is None:
            some = ", ".join(list(self._entries)[:3])
            raise InputError(
                "no such tensor",
                source=self._source,
                field=shown(name),
                expected=f"a {self.facts.family} tensor name, e.g. {some}",
                found="a name this file does not hold",
            )
        return entry

    def stored_name(self, name: str) -> str:
        """The GGUF tensor ``name`` is read from (for a fused file, the fused tensor)."""
        return self._entry(name).gguf_name

    def shape(self, name: str) -> tuple[int, ...]:
        entry = self._entry(name)
        shape = self.gguf.tensor_info(entry.gguf_name).shape
        if entry.rows is not None:
            start, stop, _ = entry.rows.indices(shape[0])
            shape = (stop - start, *shape[1:])
        return tuple(reversed(shape)) if entry.transpose else shape

    def tensor(self, name: str) -> Tensor:
        entry = self._entry(name)
        out: Tensor = np.array(self.gguf.tensor(entry.gguf_name), dtype=np.float64)
        if entry.rows is not None:
            out = out[entry.rows]
        if entry.permuted_heads:
            out = unpermute(out, entry.permuted_heads)
        if entry.minus_one:
            out = out - 1.0
        if entry.transpose:
            out = np.ascontiguousarray(out.T)
        return out

    def rows(self, name: str, ids: Sequence[int]) -> Tensor:
        """Rows ``ids`` of an embedding table, read alone (embedding tables are stored
        as transformers holds them: no transform to undo)."""
        entry = self._entry(name)
        if entry != Entry(entry.gguf_name) or len(self.shape(name)) != 2:
            return self.tensor(name)[list(ids)]
        return np.asarray(self.gguf.rows(entry.gguf_name, ids), dtype=np.float64)


def unpermute(weight: Tensor, heads: int) -> Tensor:
    """Undo ``LlamaModel.permute`` on a Q or K weight ``[heads·d, …]`` or bias
    ``[heads·d]``: llama.cpp's rows (0, d/2, 1, d/2+1, …) of each head put back."""
    out = weight.shape[0]
    d = out // heads
    rest = weight.shape[1:]
    back: Tensor = weight.reshape(heads, d // 2, 2, *rest).swapaxes(1, 2).reshape(out, *rest)
    return back


def _entries(gguf: GGUFFile, facts: ModelFacts) -> dict[str, Entry]:
    """Every tensor of the file under its Hugging Face name (tensors llama.cpp adds,
    ``rope_freqs.weight``, are the facts', not a name here)."""
    family = facts.family
    whole, per_layer, prefix = _TABLES[family]
    present = set(gguf.tensor_names)
    entries: dict[str, Entry] = {}
    for hf, name in whole.items():
        if name in present:
            entries[hf] = _entry(family, hf, name, facts)
    for layer in range(facts.layers):
        for part, short in per_layer.items():
            for suffix in ("weight", "bias"):
                hf, name = f"{prefix}.{layer}.{part}.{suffix}", f"blk.{layer}.{short}.{suffix}"
                if family != "phi3" and part in ("self_attn.qkv_proj", "mlp.gate_up_proj"):
                    continue
                if family == "phi3" and part == "mlp.up_proj":
                    continue
                if name in present:
                    entries[hf] = _entry(family, hf, name, facts)
                elif (fused := _fused(name, present, facts)) is not None:
                    entries[hf] = _entry(family, hf, name, facts, fused)
    return entries


def _fused(name: str, present: set[str], facts: ModelFacts) -> tuple[str, slice] | None:
    """Q, K or V's rows within ``blk.N.attn_qkv`` (a ``--fuse-qkv`` file), if it is one."""
    match = _FUSED_PART.match(name)
    if facts.family in ("phi3", "gpt2") or match is None:
        return None
    layer, which, suffix = match.groups()
    fused = f"blk.{layer}.attn_qkv.{suffix}"
    if fused not in present:
        return None
    q, kv = facts.heads * facts.head_dim, facts.kv_heads * facts.head_dim
    start = {"q": 0, "k": q, "v": q + kv}[which]
    return fused, slice(start, start + (q if which == "q" else kv))


def _entry(
    family: str, hf: str, name: str, facts: ModelFacts, fused: tuple[str, slice] | None = None
) -> Entry:
    """How tensor ``hf`` comes back from ``name`` (or from its rows in a fused one)."""
    heads = 0
    if family == "llama" and re.search(r"\.attn_[qk]\.", name):
        heads = facts.heads if ".attn_q." in name else facts.kv_heads
    return Entry(
        gguf_name=fused[0] if fused else name,
        rows=fused[1] if fused else None,
        permuted_heads=heads,
        minus_one=family in _GEMMAS and hf.endswith("norm.weight"),
        transpose=family == "gpt2" and name.endswith(_GPT2_TRANSPOSED),
    )
