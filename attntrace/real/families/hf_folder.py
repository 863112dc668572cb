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
    spec = facts.as_real_model(
        folder.name or str(folder),
        f"{facts.family} from {folder}",
        folder,
        max_tokens=min(facts.max_positions, MAX_TOKENS),
    )
    return Decoder(facts, source, spec, tokenizer)


#: family -> how its Transformer is built from facts and tensors. GPT-2 and BERT join
#: from families/gpt2.py and families/encoder.py.
BUILDERS: dict[str, Builder] = dict.fromkeys(DECODERS, _decoder)


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
