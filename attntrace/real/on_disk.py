"""A model ``--model`` found on disk, opened: the file's family, its tensors, its
tokenizer, as a :class:`~attntrace.real.forward.Transformer` the tracer reads like a
catalogued one.

Locating (:mod:`attntrace.real.disk`) says *which files*; this says *how to read them*:
a Hugging Face folder through its config.json, safetensors and tokenizer.json
(:mod:`attntrace.real.families.hf_folder`), a GGUF file through its metadata, tensors
and embedded vocabulary (:mod:`attntrace.real.families.gguf_model`). What a heading
calls the model is what the user typed, resolved (``Qwen/Qwen2.5-0.5B-Instruct``,
``ollama:llama3.2``, ``model.gguf``), never a snapshot's commit hash.
"""

from __future__ import annotations

from dataclasses import replace

from attntrace.kernel import progress
from attntrace.real.disk.located import Located
from attntrace.real.families.facts import ModelFacts
from attntrace.real.forward import Transformer


def open_located(located: Located) -> Transformer:
    """The model at ``located`` (a GGUF file or a Hugging Face folder), opened; any
    problem with its files is one InputError naming the file."""
    with progress.task(f"opening {located.name}"):
        if located.kind == "gguf":
            from attntrace.real.families.gguf_model import open_gguf_model

            model = open_gguf_model(located.weights[0])
        else:
            model = _open_folder(located)
    model.spec = replace(model.spec, name=located.name, title=_title(model, located))
    return model


def _open_folder(located: Located) -> Transformer:
    from attntrace.real.families.hf_folder import open_hf_folder

    assert located.folder is not None  # a hf-folder always has its folder
    tokenizer = None
    if located.tokenizer is not None:
        from attntrace.real.tokenizers.hf_json import HFTokenizer

        tokenizer = HFTokenizer.from_file(located.tokenizer)
    return open_hf_folder(located.folder, tokenizer)


def _title(model: Transformer, located: Located) -> str:
    """``llama, 16 layers × 32 heads (8 K/V), GGUF, from the Hugging Face cache``."""
    spec = model.spec
    heads = f"{spec.heads} heads" + (
        f" ({spec.kv_heads} K/V)" if spec.kv_heads != spec.heads else ""
    )
    where = {
        "path": f"from {located.weights[0] if located.kind == 'gguf' else located.folder}",
        "hf-cache": "from the Hugging Face cache"
        + (f" @ {located.revision[:12]}" if located.revision else ""),
        "ollama": "from Ollama's store",
    }.get(located.origin, "")
    return f"{spec.architecture}, {spec.layers} layers × {heads}, {located.format} {where}"


#: A GGUF's tokenizer arrays (megabytes in a large vocabulary): a shape needs none of them.
TOKENIZER_ARRAYS = (
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.scores",
    "tokenizer.ggml.token_type",
    "tokenizer.ggml.merges",
)


def located_facts(located: Located) -> ModelFacts:
    """What the model at ``located`` is (layers, heads, window, context), from its
    config.json or its GGUF metadata alone: no weight is read, so `kv-cache` prices an
    8B model's cache as fast as a tiny one's. One InputError naming the file where the
    config or metadata is not a family's."""
    if located.kind == "gguf":
        from attntrace.real.families.gguf_facts import gguf_facts
        from attntrace.real.weights.gguf import GGUFFile

        return gguf_facts(GGUFFile(located.weights[0], skip=TOKENIZER_ARRAYS))
    from attntrace.real.families.hf_config import facts_from_config, read_config

    assert located.folder is not None  # a hf-folder always has its folder
    config = read_config(located.folder)
    return facts_from_config(config, str(located.folder / "config.json"))
