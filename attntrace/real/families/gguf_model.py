"""A GGUF file opened as a model: its metadata read into facts, its tensors served by
Hugging Face name, its embedded vocabulary as the tokenizer, and the family's forward
pass built on them (the same passes a Hugging Face folder gets)."""

from __future__ import annotations

from pathlib import Path

from attntrace.real.families.decoder import DECODERS, Decoder, check_tensors
from attntrace.real.families.gguf_facts import gguf_facts
from attntrace.real.families.gguf_tensors import GGUFTensors
from attntrace.real.families.hf_folder import MAX_TOKENS
from attntrace.real.forward import Transformer
from attntrace.real.tokenizers.gguf_vocab import tokenizer_from_gguf
from attntrace.real.weights.gguf import GGUFFile


def open_gguf_model(path: Path) -> Transformer:
    """The model in the GGUF file at ``path``; one InputError naming the file and the
    key or tensor where its metadata, tensors or vocabulary are not what a family of
    :data:`~attntrace.real.families.facts.FAMILIES` needs."""
    gguf = GGUFFile(path)
    facts = gguf_facts(gguf)
    source = GGUFTensors(gguf, facts)
    tokenizer = tokenizer_from_gguf(gguf.metadata, str(path))
    spec = facts.as_real_model(
        path.name,
        f"{facts.family} from {path}",
        path,
        max_tokens=min(facts.max_positions, MAX_TOKENS),
    )
    if facts.family in DECODERS:
        check_tensors(facts, source, "the GGUF metadata")
        return Decoder(facts, source, spec, tokenizer)
    if facts.family == "gpt2":
        from attntrace.real.families.gpt2 import GPT2

        return GPT2(facts, source, tokenizer, spec)
    from attntrace.real.families.encoder import open_bert

    return open_bert(facts, source, tokenizer, spec, "the GGUF metadata")
