"""A Hugging Face folder opened as a model: its config's facts, its tensors, a forward
pass for its family.

:func:`open_hf_folder` reads ``config.json`` into :class:`ModelFacts`
(:mod:`attntrace.real.families.hf_config`), opens the safetensors
(:mod:`attntrace.real.families.folder_tensors`), checks every tensor's shape against the
facts before anything is computed, and builds the family's :class:`Transformer`:
:data:`BUILDERS` maps a family to it (the eight decoders here; GPT-2 and BERT join from
their own modules).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from attntrace.real.catalog import RealModel
from attntrace.real.families.decoder import DECODERS, Decoder, check_tensors
from attntrace.real.families.facts import ModelFacts
from attntrace.real.families.folder_tensors import FolderTensors
from attntrace.real.families.hf_config import CONFIG, facts_from_config, read_config
from attntrace.real.forward import Transformer

# The longest sentence a model opened by path takes: its own limit, within this one
# (a layer's n × n attention and the trace's stages grow with the square).
MAX_TOKENS = 2048

Builder = Callable[[ModelFacts, FolderTensors, Path, Any], Transformer]


def _decoder(facts: ModelFacts, source: FolderTensors, folder: Path, tokenizer: Any) -> Transformer:
    check_tensors(facts, source, CONFIG)
    return Decoder(facts, source, _spec(facts, folder, facts.family), tokenizer)


def _spec(facts: ModelFacts, folder: Path, title: str) -> RealModel:
    """What a trace's header says of the model in ``folder``."""
    return facts.as_real_model(
        folder.name or str(folder),
        f"{title} from {folder}",
        folder,
        max_tokens=min(facts.max_positions, MAX_TOKENS),
    )


def _gpt2(facts: ModelFacts, source: FolderTensors, folder: Path, tokenizer: Any) -> Transformer:
    from attntrace.real.families.gpt2 import GPT2

    return GPT2(facts, source, tokenizer, _spec(facts, folder, "GPT-2"))


def _bert(facts: ModelFacts, source: FolderTensors, folder: Path, tokenizer: Any) -> Transformer:
    from attntrace.real.families.encoder import open_bert

    return open_bert(facts, source, tokenizer, _spec(facts, folder, "BERT"))


#: family -> how its Transformer is built from facts and tensors.
BUILDERS: dict[str, Builder] = {
    **dict.fromkeys(DECODERS, _decoder),
    "gpt2": _gpt2,
    "bert": _bert,
}


def open_hf_folder(folder: Path, tokenizer: Any = None) -> Transformer:
    """The model in ``folder`` (config.json and safetensors, as ``save_pretrained``
    writes them), reading sentences with ``tokenizer`` (None: token ids only). Any
    problem with the folder is one InputError naming the file."""
    facts = facts_from_config(read_config(folder), str(folder / CONFIG))
    builder = BUILDERS.get(facts.family)
    if builder is None:  # a family whose reader exists but whose pass is not yet here
        from attntrace.errors import InputError

        raise InputError(
            "no forward pass for this family yet",
            source=str(folder / CONFIG),
            field="model_type",
            expected=" or ".join(BUILDERS),
            found=facts.family,
        )
    return builder(facts, FolderTensors(folder), folder, tokenizer)
