"""`kv-cache --model`: a model's cache shape from its own config, its weights unread.

``--model`` takes a preset's name (as ``--preset``), or anything ``run --model`` takes
(:func:`attntrace.real.disk.locate.locate`): a catalogued model is priced as its preset
(the same checkpoint), a model on disk from its ``config.json`` or its GGUF metadata
(:func:`attntrace.real.on_disk.located_facts`): layers, heads, K/V heads, head width,
context length, and the sliding window with the layers that slide. Here, in cli/,
because the shape is decode's (:class:`~attntrace.decode.kv_memory.Shape`) and the
facts are real's, and neither room imports the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attntrace.errors import InputError

if TYPE_CHECKING:
    from attntrace.decode.kv_memory import Shape
    from attntrace.real.families.facts import ModelFacts


def model_shape(text: str) -> tuple[str, Shape]:
    """What ``--model`` names, as the name the table calls it and its cache's shape;
    an encoder (it keeps no cache) is one line."""
    from attntrace.decode.kv_memory import CATALOGUED, PRESETS

    if text in PRESETS:
        return text, PRESETS[text]
    from attntrace.real.disk.locate import locate

    located = locate(text, "--model")
    model = located.catalogued
    if model is not None:
        if model.name not in CATALOGUED:
            raise _encoder(model.name, model.architecture)
        return model.name, PRESETS[CATALOGUED[model.name]]
    from attntrace.real.on_disk import located_facts

    facts = located_facts(located)
    if not facts.causal:
        raise _encoder(located.name, facts.family)
    return located.name, facts_shape(facts)


def facts_shape(facts: ModelFacts) -> Shape:
    """The cache's shape of a model: its window on the layers that slide, each of
    which keeps at most that many tokens (Gemma 2's every second layer, Gemma 3's five
    of six, every layer of Mistral's), the others every token."""
    from attntrace.decode.kv_memory import Shape

    sliding = sum(facts.layer_type(layer) == "sliding" for layer in range(facts.layers))
    window = facts.sliding_window if sliding else None
    return Shape(
        facts.layers,
        facts.heads,
        facts.kv_heads,
        facts.head_dim,
        facts.d_model,
        facts.max_positions,
        window=window,
        local_layers=sliding if window is not None else None,
    )


def _encoder(name: str, family: str) -> InputError:
    return InputError(
        f"{name} is an encoder ({family}): it keeps no KV cache",
        field="--model",
    )
