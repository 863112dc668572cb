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
