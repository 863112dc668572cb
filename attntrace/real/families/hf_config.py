"""A Hugging Face ``config.json`` read into :class:`ModelFacts`, by its family's row.

The rows (:mod:`attntrace.real.families.hf_rows`, keyed by ``model_type``) say what each
family's config class (transformers 5.25, ``models/<family>/configuration_<family>.py``)
calls each fact and what it defaults to when ``config.json`` leaves it out, so a family
is a row plus what its forward pass truly adds (:mod:`attntrace.real.families.decoder`),
not a new reader. The defaults are the config classes' own: a file that omits
``rms_norm_eps`` means what transformers would make of it, not what attntrace guesses.

What the rows cannot say, the readers below do, each citing its source:

* RoPE: transformers 5 writes ``rope_parameters`` (``{"rope_type", "rope_theta", ...}``;
  Gemma 3 one such dict per layer type); older files have ``rope_theta`` and
  ``rope_scaling`` (``{"type" or "rope_type": "llama3", "factor", ...}``), and Gemma 3
  ``rope_local_base_freq`` (``Gemma3TextConfig.convert_rope_params_to_dict``). Types
  ``default``, ``llama3`` and ``linear`` are read (``modeling_rope_utils.py``'s
  ``_compute_llama3_parameters``, ``_compute_linear_scaling_rope_parameters``); any
  other (yarn, dynamic, longrope) is one line naming it.
* Which layers slide: Mistral and Phi-3 every layer where ``sliding_window`` is set;
  Qwen 2 and 3 only where ``use_sliding_window`` is true, on the layers ``layer_types``
  names (default: those from ``max_window_layers`` on); Gemma 2 alternates (``layer_types``
  default: layer i slides unless (i + 1) is even); Gemma 3 slides five layers of six
  (``sliding_window_pattern`` 6).

GPT-2 and BERT read their configs in their own modules: :data:`READERS` is where their
rows join (the registry maps a ``model_type`` to a reader).
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attntrace.errors import InputError
from attntrace.kernel.reading import naming, read_small
from attntrace.real.families.facts import FAMILIES, ModelFacts, RopeScaling, checked_layers
from attntrace.real.families.hf_rows import NESTED, ROWS, Row

CONFIG = "config.json"
CONFIG_LIMIT = 4_000_000  # bytes: a config is a few kB; a vision model's, tens

Config = Mapping[str, Any]


Reader = Callable[[Config, str], ModelFacts]


def _decoder(config: Config, source: str) -> ModelFacts:
    return decoder_facts(ROWS[config["model_type"]], config, source)


def _lazy(module: str, function: str) -> Reader:
    """A reader in another module, imported when a config of its family is read."""

    def read(config: Config, source: str) -> ModelFacts:
        reader: Reader = getattr(importlib.import_module(module), function)
        return reader(config, source)

    return read


#: model_type -> the reader of its config. The decoders' rows are here; GPT-2's and
#: BERT's readers live in their own modules, imported when such a config is read.
READERS: dict[str, Reader] = {
    **dict.fromkeys(ROWS, _decoder),
    "gpt2": _lazy("attntrace.real.families.gpt2", "gpt2_facts"),
    "bert": _lazy("attntrace.real.families.encoder", "bert_facts"),
}


def read_config(folder: Path) -> dict[str, Any]:
    """``folder/config.json`` as a JSON object: an InputError where it is missing,
    unreadable or not an object."""
    path = folder / CONFIG
    source = str(path)
    if not path.exists():
        raise InputError(
            "not a Hugging Face model folder",
            source=str(folder),
            field=CONFIG,
            expected="a config.json (as save_pretrained writes it)",
            found="none",
        )
    with naming(source):
        raw = read_small(path, CONFIG_LIMIT)
    try:
        config = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(source=source, expected="JSON", found=str(error)) from None
    if not isinstance(config, dict):
        raise InputError(source=source, expected="a JSON object", found=type(config).__name__)
    return config


def facts_from_config(config: Config, source: str) -> ModelFacts:
    """The facts of the model ``config`` (a config.json read from ``source``)."""
    model_type = config.get("model_type")
    nested = NESTED.get(model_type) if isinstance(model_type, str) else None
    if nested is not None:
        inner = config.get(nested)
        if not isinstance(inner, dict):
            raise InputError(source=source, field=nested, expected="an object", found=repr(inner))
        model_type = f"{model_type}_text"
        config = {**inner, "model_type": model_type}
    reader = READERS.get(model_type) if isinstance(model_type, str) else None
    if reader is None:
        raise InputError(
            "an architecture attntrace does not trace",
            source=source,
            field="model_type",
            expected="one of " + ", ".join(FAMILIES),
            found=repr(model_type),
        )
    return reader(config, source)


class _Fields:
    """config.json's fields, each checked, with the row's defaults where absent."""

    def __init__(self, config: Config, row: Row, source: str) -> None:
        self.config, self.row, self.source = config, row, source

    def raw(self, key: str) -> Any:
        return self.config[key] if key in self.config else self.row.defaults.get(key)

    def whole(self, key: str, value: Any = None) -> int:
        value = self.raw(key) if value is None else value
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(
                source=self.source, field=key, expected="a whole number ≥ 1", found=repr(value)
            )
        return value

    def positive(self, key: str, value: Any = None, where: str | None = None) -> float:
        value = self.raw(key) if value is None else value
        if isinstance(value, bool) or not isinstance(value, int | float):
            value = None
        if value is None or not (math.isfinite(value) and value > 0):
            raise InputError(
                source=self.source,
                field=where or key,
                expected="a positive finite number",
                found=repr(value),
            )
        return float(value)

    def flag(self, key: str) -> bool:
        value = self.raw(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise InputError(
                source=self.source, field=key, expected="true or false", found=repr(value)
            )
        return value

    def optional(self, key: str) -> float | None:
        return None if self.raw(key) is None else self.positive(key)


_ACTIVATIONS = {"silu": "silu", "swish": "silu", "gelu_pytorch_tanh": "gelu_tanh"}


def decoder_facts(row: Row, config: Config, source: str) -> ModelFacts:
    """A decoder's facts from its config, by its family's ``row``."""
    f = _Fields(config, row, source)
    d_model, heads, layers = (
        f.whole("hidden_size"),
        f.whole("num_attention_heads"),
        checked_layers(f.whole("num_hidden_layers"), source, "num_hidden_layers"),
    )
    kv_heads = f.whole("num_key_value_heads", f.raw("num_key_value_heads") or heads)
    head_dim = f.whole("head_dim", f.raw("head_dim") or d_model // heads)
    if heads % kv_heads:
        raise InputError(
            source=source,
            field="num_key_value_heads",
            expected=f"a divisor of num_attention_heads ({heads})",
            found=str(kv_heads),
        )
    if f.flag("use_bidirectional_attention"):
        raise InputError(
            "attntrace traces causal decoders; this one attends both ways",
            source=source,
            field="use_bidirectional_attention",
            expected="false",
            found="true",
        )
    activation = f.raw(row.activation_field)
    if row.family == "gemma" and activation == "gelu":  # GemmaConfig.__post_init__
        activation = "gelu_pytorch_tanh"
    if activation not in _ACTIVATIONS:
        raise InputError(
            source=source,
            field=row.activation_field,
            expected="one of " + ", ".join(_ACTIVATIONS),
            found=repr(activation),
        )
    bias = f.flag("attention_bias")
    window, layer_types = _windows(f, layers)
    rope = _rope(f, head_dim)
    return ModelFacts(
        family=row.family,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        d_model=d_model,
        head_dim=head_dim,
        d_ff=f.whole("intermediate_size"),
        vocabulary=f.whole("vocab_size"),
        norm_eps=f.positive("rms_norm_eps"),
        max_positions=f.whole("max_position_embeddings"),
        norm_offset=row.norm_offset,
        activation=_ACTIVATIONS[activation],
        rope_base=rope.base,
        rope_local_base=rope.local_base,
        rope_scaling=rope.scaling,
        rotary_dim=rope.rotary_dim,
        qkv_bias=bias if row.qkv_bias is None else row.qkv_bias,
        o_bias=bias and row.qkv_bias is None,
        mlp_bias=f.flag("mlp_bias"),
        qk_norm=row.qk_norm,
        sliding_window=window,
        layer_types=layer_types,
        attn_softcap=f.optional("attn_logit_softcapping") if row.softcaps else None,
        final_softcap=f.optional("final_logit_softcapping") if row.softcaps else None,
        query_pre_attn_scalar=f.positive("query_pre_attn_scalar") if row.query_scalar else None,
        embed_scale=math.sqrt(d_model) if row.embed_scale else 1.0,
        post_norms=row.post_norms,
        tied_embeddings=f.flag("tie_word_embeddings"),
    )


_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding"}


def _windows(f: _Fields, layers: int) -> tuple[int | None, tuple[str, ...]]:
    """The sliding window and which layers use it (see the module's docstring)."""
    slides = f.row.slides
    if slides == "never":
        return None, ()
    window = None if f.raw("sliding_window") is None else f.whole("sliding_window")
    if slides == "qwen" and not f.flag("use_sliding_window"):
        window = None  # Qwen2Config.__post_init__: sliding_window only with use_sliding_window
    if window is None:
        return None, ()
    if slides == "always":
        return window, ()
    given = f.config.get("layer_types")
    if given is not None:
        if not isinstance(given, list) or len(given) != layers:
            raise InputError(
                source=f.source,
                field="layer_types",
                expected=f"a list of {layers} layer types (num_hidden_layers)",
                found=repr(given)[:80],
            )
        for index, kind in enumerate(given):
            if kind not in _LAYER_TYPES:
                raise InputError(
                    source=f.source,
                    field=f"layer_types[{index}]",
                    expected=" or ".join(_LAYER_TYPES),
                    found=repr(kind),
                )
        return window, tuple(_LAYER_TYPES[kind] for kind in given)
    if slides == "qwen":
        first = f.whole("max_window_layers") if f.raw("max_window_layers") else 0
        return window, tuple("sliding" if i >= first else "full" for i in range(layers))
    pattern = 2 if slides == "alternate" else f.whole("sliding_window_pattern")
    return window, tuple("sliding" if (i + 1) % pattern else "full" for i in range(layers))


@dataclass(frozen=True)
class _Rope:
    base: float
    local_base: float | None
    scaling: RopeScaling | None
    rotary_dim: int | None


def _rope(f: _Fields, head_dim: int) -> _Rope:
    """RoPE's bases, scaling and rotary width, from either way config.json says them."""
    parameters = f.config.get("rope_parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise InputError(
            source=f.source, field="rope_parameters", expected="an object", found=repr(parameters)
        )
    local_base = None
    if f.row.family == "gemma3":
        if parameters and "full_attention" in parameters:  # one dict per layer type
            sliding = parameters.get("sliding_attention") or {}
            local = _one_rope(f, sliding, "rope_parameters.sliding_attention", None)
            if local[1] is not None:
                raise InputError(
                    source=f.source,
                    field="rope_parameters.sliding_attention.rope_type",
                    expected="default (attntrace scales only the global layers' RoPE)",
                    found=repr(sliding.get("rope_type")),
                )
            local_base = local[0] or f.positive("rope_local_base_freq")
            parameters = parameters.get("full_attention") or {}
            where = "rope_parameters.full_attention"
        else:
            local_base = f.positive("rope_local_base_freq")
            where = "rope_parameters"
    else:
        where = "rope_parameters"
    if not parameters:
        parameters, where = f.config.get("rope_scaling") or {}, "rope_scaling"
    base, scaling = _one_rope(
        f, parameters, where, f.config.get("original_max_position_embeddings")
    )
    rotary_dim = None
    factor = parameters.get("partial_rotary_factor", f.raw("partial_rotary_factor"))
    if factor is not None and f.row.rotary_factor:
        fraction = f.positive(
            "partial_rotary_factor", factor, where=f"{where}.partial_rotary_factor"
        )
        width = int(head_dim * fraction)  # as _compute_*_parameters: int(head_dim · factor)
        if width != head_dim:
            if width % 2 or not 0 < width < head_dim:
                raise InputError(
                    source=f.source,
                    field="partial_rotary_factor",
                    expected=f"a fraction of head_dim {head_dim} giving an even width",
                    found=f"{fraction:g}",
                )
            rotary_dim = width
    return _Rope(base or f.positive("rope_theta"), local_base, scaling, rotary_dim)


_SCALINGS = ("default", "llama3", "linear")


def _one_rope(
    f: _Fields, parameters: Mapping[str, Any], where: str, original: Any
) -> tuple[float | None, RopeScaling | None]:
    """One RoPE dict: its theta (None where it has none) and its scaling."""
    base = parameters.get("rope_theta")
    theta = None if base is None else f.positive("rope_theta", base, where=f"{where}.rope_theta")
    kind = parameters.get("rope_type", parameters.get("type", "default"))
    if kind not in _SCALINGS:
        raise InputError(
            "a RoPE scaling attntrace does not compute",
            source=f.source,
            field=f"{where}.rope_type",
            expected=" or ".join(_SCALINGS),
            found=repr(kind),
        )
    if kind == "default":
        return theta, None

    def number(key: str) -> float:
        return f.positive(key, parameters.get(key), where=f"{where}.{key}")

    if kind == "linear":
        return theta, RopeScaling(factor=number("factor"), kind="linear")
    # standardize_rope_params: original_max_position_embeddings from the config's own
    # field (Phi-3) or the dict, else max_position_embeddings
    span = original or parameters.get("original_max_position_embeddings")
    return theta, RopeScaling(
        factor=number("factor"),
        low_freq_factor=number("low_freq_factor"),
        high_freq_factor=number("high_freq_factor"),
        original_max_positions=f.whole(
            "original_max_position_embeddings", span or f.raw("max_position_embeddings")
        ),
    )
