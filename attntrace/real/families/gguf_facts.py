"""A GGUF file's metadata -> :class:`ModelFacts`, each value the file's own number.

llama.cpp's converter (``convert_hf_to_gguf.py`` and its ``conversion/`` package) writes a
model's shape as ``{arch}.*`` keys (``TextModel.set_gguf_parameters``): ``block_count``,
``embedding_length``, ``feed_forward_length``, ``attention.head_count(_kv)``,
``attention.key_length``, ``attention.layer_norm_rms_epsilon`` (or
``layer_norm_epsilon``), ``rope.freq_base``, ``attention.sliding_window``,
``attn_logit_softcapping``, ``final_logit_softcapping``, ``context_length``. Everything
else a forward pass needs is the family's (a row of :data:`ROWS`), and a few facts the
file cannot say come from the reference named beside each.

Numbers are the file's: GGUF stores ε, RoPE bases and softcaps as float32, so ε 1e-6 is
read as float32(1e-6) = 9.99999997e-07, widened to float64 exactly; a test comparing
against config.json must compare with the float32-rounded value (an oracle model meant
to agree to 1e-9 with a GGUF trace should be built with that ε).

What a GGUF file cannot say, and where it comes from instead:

* **Mistral.** ``MistralForCausalLM`` is converted by ``LlamaModel`` (registered for it
  in ``conversion/llama.py``) as architecture ``llama``, Q and K rows permuted like
  Llama's, and no key carries ``sliding_window``: the file is a Llama, and it is traced
  as one (as llama.cpp runs it). Over more tokens than the window the two differ.
* **Llama 3's rope_scaling** is written only as the ``rope_freqs.weight`` tensor
  (``LlamaModel.generate_extra_tensors``): one float32 divisor per rotated pair,
  surfaced as :attr:`ModelFacts.rope_factors`; ``factor``, ``low_freq_factor``,
  ``high_freq_factor`` and ``original_max_position_embeddings`` are not recoverable.
* **Gemma 2 and 3's query_pre_attn_scalar** is not written. llama.cpp scales by
  1/√head_dim, or 1/√(d_model/heads) for the 27B models (``src/models/gemma2.cpp`` and
  ``gemma3.cpp``, ``f_attention_scale``, after gemma_pytorch's config.py); that rule
  agrees with every published config (256 = head_dim for 2B, 9B, 270M, 1B, 4B, 12B;
  144 and 168 = d_model/heads for the two 27B), where transformers' default (256,
  ``Gemma2Config``, ``Gemma3TextConfig``) is wrong for the 27B ones. It is used here.
* **Which Gemma 2/3 layers slide.** Unless the file has
  ``attention.sliding_window_pattern``, every second layer (Gemma 2) or five of six
  (Gemma 3) slide: ``Gemma2Config.layer_types`` / ``Gemma3TextConfig.layer_types``
  (``sliding_window_pattern`` 6), as llama.cpp's ``load_swa_pattern(ml, 2 or 6)``.
* **Gemma 3's local RoPE base**: ``rope.freq_base_swa`` where the converter wrote it,
  else 10,000 (``Gemma3TextConfig``'s ``default_theta["local"]``; llama.cpp's
  ``rope_freq_base_train_swa`` default).
* **Gemma and Gemma 2's RoPE base** is not written (``GemmaModel`` and ``Gemma2Model``
  write no ``rope.freq_base``): 10,000, the configs' default and llama.cpp's.
* **The activation** is the family's (transformers' config default): SiLU for the Llama
  kind, tanh-GELU for Gemma and GPT-2, exact GELU for BERT.
* **GPT-2's feed-forward width** is written as 4·d_model whatever ``n_inner`` was
  (``GPT2Model.set_gguf_parameters``): it is read from ``ffn_up``'s shape instead.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from attntrace.errors import InputError
from attntrace.real.families.facts import ModelFacts, checked_layers
from attntrace.real.text import shown
from attntrace.real.weights.gguf import GGUFFile

#: GGUF architectures traced, as ``general.architecture`` names them.
SUPPORTED = ("llama", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3", "gpt2", "bert")

_RMS_EPS = "attention.layer_norm_rms_epsilon"
_LAYER_EPS = "attention.layer_norm_epsilon"


@dataclass(frozen=True)
class Row:
    """What a family is, beyond its numbers (llama.cpp's ``src/models/<arch>.cpp`` and
    transformers' ``modeling_<family>.py`` agree on each)."""

    norm: str = "rms"
    activation: str = "silu"
    positions: str = "rope"
    causal: bool = True
    eps_key: str = _RMS_EPS
    gemma: bool = False  # (1 + w) norms, √d_model embedding scale
    post_norms: bool = False
    scalar: bool = False  # query_pre_attn_scalar (Gemma 2 and 3)
    swa_pattern: int = 0  # every n-th layer full: llama.cpp's load_swa_pattern default
    big_layers: int = 0  # the 27B model's layer count (llama.cpp's LLM_TYPE_27B)


ROWS: dict[str, Row] = {
    "llama": Row(),
    "qwen2": Row(),
    "qwen3": Row(),
    "phi3": Row(),
    "gemma": Row(activation="gelu_tanh", gemma=True),
    "gemma2": Row(
        activation="gelu_tanh",
        gemma=True,
        post_norms=True,
        scalar=True,
        swa_pattern=2,
        big_layers=46,
    ),
    "gemma3": Row(
        activation="gelu_tanh",
        gemma=True,
        post_norms=True,
        scalar=True,
        swa_pattern=6,
        big_layers=62,
    ),
    "gpt2": Row(norm="layer", activation="gelu_tanh", positions="learned", eps_key=_LAYER_EPS),
    "bert": Row(
        norm="layer", activation="gelu", positions="learned", causal=False, eps_key=_LAYER_EPS
    ),
}

#: llama.cpp's defaults where a key is missing (``llama_hparams``; gemma2.cpp's n_swa).
DEFAULT_ROPE_BASE = 10_000.0
GEMMA2_WINDOW = 4096
GEMMA3_LOCAL_ROPE_BASE = 10_000.0


def architecture(meta: dict[str, object], source: str) -> str:
    """``general.architecture``, one of :data:`SUPPORTED`; else one InputError naming it."""
    arch = meta.get("general.architecture")
    if not isinstance(arch, str) or arch not in ROWS:
        found = shown(arch) if isinstance(arch, str) else repr(arch)
        raise InputError(
            f"architecture {found} is not one attntrace traces",
            source=source,
            field="general.architecture",
            expected="one of " + ", ".join(SUPPORTED),
            found=found,
        )
    return arch


class Keys:
    """The file's ``{arch}.*`` keys, each checked for its kind as it is read."""

    def __init__(self, gguf: GGUFFile, arch: str) -> None:
        self.meta = gguf.metadata
        self.arch = arch
        self.source = str(gguf.path)

    def _fail(self, key: str, expected: str, value: object) -> InputError:
        return InputError(
            source=self.source, field=f"{self.arch}.{key}", expected=expected, found=repr(value)
        )

    def whole(self, key: str, default: int | None = None, *, least: int = 1) -> int:
        """The whole number at ``{arch}.key`` (at least ``least``), or ``default``."""
        value = self.meta.get(f"{self.arch}.{key}")
        if value is None and default is not None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise self._fail(key, f"a whole number ≥ {least}", value)
        return value

    def number(self, key: str, default: float | None = None) -> float:
        """The positive finite number at ``{arch}.key`` (a float32 widened), or
        ``default``."""
        value = self.meta.get(f"{self.arch}.{key}")
        if value is None and default is not None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._fail(key, "a number", value)
        if not (math.isfinite(value) and value > 0):
            raise self._fail(key, "a positive finite number", value)
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        """The true/false at ``{arch}.key``, or ``default``."""
        value = self.meta.get(f"{self.arch}.{key}", default)
        if not isinstance(value, bool):
            raise self._fail(key, "true or false", value)
        return value

    def cap(self, key: str) -> float | None:
        """A softcap: absent or 0 (llama.cpp's "none") is None."""
        if not self.meta.get(f"{self.arch}.{key}"):
            return None
        return self.number(key)


def gguf_facts(gguf: GGUFFile) -> ModelFacts:
    """What ``gguf`` says its model is; one InputError naming the file and the key where
    a key is missing, of the wrong kind, or disagrees with the tensors."""
    source = str(gguf.path)
    arch = architecture(gguf.metadata, source)
    row = ROWS[arch]
    keys = Keys(gguf, arch)
    layers = checked_layers(keys.whole("block_count"), str(gguf.path), f"{arch}.block_count")
    heads = keys.whole("attention.head_count")
    kv_heads = keys.whole("attention.head_count_kv", heads)
    d_model = keys.whole("embedding_length")
    head_dim = _head_dim(keys, d_model, heads, kv_heads)
    shapes = _Shapes(gguf, d_model)
    shapes.check_blocks(layers)
    d_ff = shapes.feed_forward(keys, arch)
    window = _window(keys, arch)
    causal = keys.flag("attention.causal", row.causal)
    facts = ModelFacts(
        family=arch,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        d_model=d_model,
        head_dim=head_dim,
        d_ff=d_ff,
        vocabulary=shapes.vocabulary(),
        norm_eps=keys.number(row.eps_key),
        max_positions=keys.whole("context_length"),
        causal=causal,
        norm=row.norm,
        norm_offset=1.0 if row.gemma else 0.0,
        activation=row.activation,
        positions=row.positions,
        rope_base=None
        if row.positions != "rope"
        else keys.number("rope.freq_base", DEFAULT_ROPE_BASE),
        rope_local_base=(
            keys.number("rope.freq_base_swa", GEMMA3_LOCAL_ROPE_BASE)
            if arch == "gemma3" and window is not None
            else None
        ),
        rope_factors=_rope_factors(gguf, keys, row, head_dim),
        qkv_bias=shapes.has("blk.0.attn_q.bias") or shapes.has("blk.0.attn_qkv.bias"),
        o_bias=shapes.has("blk.0.attn_output.bias"),
        qk_norm=shapes.has("blk.0.attn_q_norm.weight"),
        sliding_window=window,
        layer_types=_layer_types(keys, row, layers) if window is not None else (),
        attn_softcap=keys.cap("attn_logit_softcapping"),
        final_softcap=keys.cap("final_logit_softcapping"),
        query_pre_attn_scalar=_scalar(row, layers, d_model, heads, head_dim),
        embed_scale=math.sqrt(d_model) if row.gemma else 1.0,
        post_norms=row.post_norms,
        tied_embeddings=not shapes.has("output.weight"),
        notes=_notes(arch),
        token_types=shapes.token_types(gguf.metadata),
    )
    shapes.check_attention(facts)
    return facts


def _head_dim(keys: Keys, d_model: int, heads: int, kv_heads: int) -> int:
    """``attention.key_length``, else d_model / heads (as llama.cpp's ``n_embd_head_k``);
    value_length must equal it (attntrace's heads have one width)."""
    if heads % kv_heads:
        raise keys._fail("attention.head_count_kv", f"a divisor of the {heads} heads", kv_heads)
    default = d_model // heads if d_model % heads == 0 else None
    head_dim = keys.whole("attention.key_length", default)
    value = keys.whole("attention.value_length", head_dim)
    if value != head_dim:
        raise keys._fail("attention.value_length", f"{head_dim} (the key length)", value)
    return head_dim


def _window(keys: Keys, arch: str) -> int | None:
    """``attention.sliding_window``; 0 or absent: none (Gemma 2: llama.cpp's 4096)."""
    default = GEMMA2_WINDOW if arch == "gemma2" else 0
    window = keys.whole("attention.sliding_window", default, least=0)
    return window or None


def _layer_types(keys: Keys, row: Row, layers: int) -> tuple[str, ...]:
    """Which layers slide: the file's ``attention.sliding_window_pattern`` (a period or
    one flag per layer), else the family's period; every layer where the family has none
    (Phi-3: the window is every layer's, the empty tuple says so)."""
    key = "attention.sliding_window_pattern"
    pattern = keys.meta.get(f"{keys.arch}.{key}")
    if isinstance(pattern, list):
        if len(pattern) != layers or not all(isinstance(flag, bool) for flag in pattern):
            raise keys._fail(key, f"{layers} true/false flags", pattern)
        return tuple("sliding" if flag else "full" for flag in pattern)
    period = keys.whole(key, row.swa_pattern, least=0) if pattern is not None else row.swa_pattern
    if not period:
        return ()
    # llama_hparams::set_swa_pattern: layer i slides unless i % period == period − 1
    return tuple("sliding" if i % period < period - 1 else "full" for i in range(layers))


def _scalar(row: Row, layers: int, d_model: int, heads: int, head_dim: int) -> float | None:
    """Gemma 2/3's query_pre_attn_scalar by llama.cpp's rule (the module's docstring)."""
    if not row.scalar:
        return None
    return float(d_model // heads if layers == row.big_layers else head_dim)


def _rope_factors(gguf: GGUFFile, keys: Keys, row: Row, head_dim: int) -> tuple[float, ...] | None:
    """``rope_freqs.weight`` (Llama 3's scaling) as float64; a rotary dimension, a scaling
    type or Phi-3's long-context factors attntrace cannot apply are refused."""
    if row.positions != "rope":
        return None
    rotated = keys.whole("rope.dimension_count", head_dim)
    if rotated != head_dim:
        raise InputError(
            "partial rotary embeddings are not supported",
            source=keys.source,
            field=f"{keys.arch}.rope.dimension_count",
            expected=f"{head_dim} (the head dimension)",
            found=str(rotated),
        )
    scaling = keys.meta.get(f"{keys.arch}.rope.scaling.type")
    if scaling not in (None, "none"):
        raise InputError(
            "RoPE scaling of this type is not supported",
            source=keys.source,
            field=f"{keys.arch}.rope.scaling.type",
            expected="none (Llama 3's scaling comes as rope_freqs.weight)",
            found=repr(scaling),
        )
    names = set(gguf.tensor_names)
    if "rope_factors_long.weight" in names:
        raise InputError(
            "long-context RoPE factors are not supported",
            source=keys.source,
            field="rope_factors_long.weight",
            expected="a file without it (Phi-3's 4k models)",
            found="the tensor",
        )
    if "rope_freqs.weight" not in names:
        return None
    factors = gguf.tensor("rope_freqs.weight").reshape(-1)
    if factors.shape != (head_dim // 2,):
        raise InputError(
            source=keys.source,
            field="rope_freqs.weight",
            expected=f"{head_dim // 2} factors (one per rotated pair)",
            found=f"shape {tuple(gguf.tensor_info('rope_freqs.weight').shape)}",
        )
    return tuple(float(f) for f in factors)


def _notes(arch: str) -> tuple[str, ...]:
    if arch == "llama":
        return ("a Mistral model converted by llama.cpp is written as llama, without its window",)
    if arch in ("gemma2", "gemma3"):
        return ("query_pre_attn_scalar and the sliding layers by llama.cpp's rule",)
    return ()


class _Shapes:
    """The tensors' shapes, which the metadata must agree with."""

    def __init__(self, gguf: GGUFFile, d_model: int) -> None:
        self.gguf = gguf
        self.names = set(gguf.tensor_names)
        self.d_model = d_model
        self.source = str(gguf.path)

    def has(self, name: str) -> bool:
        return name in self.names

    def shape(self, name: str) -> tuple[int, ...]:
        return self.gguf.tensor_info(name).shape

    def disagree(self, name: str, expected: str, found: tuple[int, ...]) -> InputError:
        return InputError(
            "the metadata disagrees with the tensors",
            source=self.source,
            field=name,
            expected=expected,
            found=" × ".join(map(str, found)),
        )

    def check_blocks(self, layers: int) -> None:
        """The tensors' blocks are ``blk.0`` to ``blk.{layers − 1}``, no more, no fewer
        (so a lying block_count neither drops layers nor sends a reader looking for
        2⁶³ of them)."""
        blocks = {int(n.split(".")[1]) for n in self.names if re.match(r"blk\.\d+\.", n)}
        if len(blocks) != layers or (blocks and (min(blocks), max(blocks)) != (0, layers - 1)):
            found = f"blocks {min(blocks)} to {max(blocks)} ({len(blocks)})" if blocks else "none"
            raise InputError(
                "the metadata disagrees with the tensors",
                source=self.source,
                field="block_count",
                expected=f"tensors of blocks 0 to {layers - 1}",
                found=found,
            )

    def vocabulary(self) -> int:
        """The embedding table's rows (Gemma 3's converter cuts rows past the tokenizer's
        vocabulary, so config.json's vocab_size may be larger)."""
        shape = self.shape("token_embd.weight")
        if len(shape) != 2 or shape[1] != self.d_model:
            raise self.disagree("token_embd.weight", f"vocabulary × {self.d_model}", shape)
        return shape[0]

    def token_types(self, meta: dict[str, object]) -> int:
        """BERT's token-type rows: ``token_types.weight``'s, which
        ``tokenizer.ggml.token_type_count`` (the converter's ``type_vocab_size``) must
        agree with; 0 where the file has no such table."""
        if not self.has("token_types.weight"):
            return 0
        shape = self.shape("token_types.weight")
        count = meta.get("tokenizer.ggml.token_type_count", shape[0])
        if len(shape) != 2 or shape != (count, self.d_model):
            raise self.disagree(
                "token_types.weight", f"{count} × {self.d_model} (token_type_count)", shape
            )
        return shape[0]

    def feed_forward(self, keys: Keys, arch: str) -> int:
        """``feed_forward_length``, checked against ``ffn_up`` (Phi-3's holds gate and up:
        twice as many rows); GPT-2's from ``ffn_up`` alone (the key is always 4·d)."""
        shape = self.shape("blk.0.ffn_up.weight")
        fused = 2 if arch == "phi3" else 1
        if arch == "gpt2":
            return shape[0]
        d_ff = keys.whole("feed_forward_length")
        if shape != (fused * d_ff, self.d_model):
            raise self.disagree("blk.0.ffn_up.weight", f"{fused * d_ff} × {self.d_model}", shape)
        return d_ff

    def check_attention(self, facts: ModelFacts) -> None:
        """Q (or fused QKV) and K rows are what the head counts say."""
        q_rows, kv_rows = facts.heads * facts.head_dim, facts.kv_heads * facts.head_dim
        if self.has("blk.0.attn_qkv.weight"):
            expected = (q_rows + 2 * kv_rows, facts.d_model)
            name = "blk.0.attn_qkv.weight"
        else:
            expected, name = (q_rows, facts.d_model), "blk.0.attn_q.weight"
            k_shape = self.shape("blk.0.attn_k.weight")
            if k_shape != (kv_rows, facts.d_model):
                raise self.disagree("blk.0.attn_k.weight", f"{kv_rows} × {facts.d_model}", k_shape)
        shape = self.shape(name)
        if shape != expected:
            raise self.disagree(name, " × ".join(map(str, expected)), shape)
