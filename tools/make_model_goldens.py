"""Regenerate tests/golden/real/attention.json from Hugging Face transformers.

The reference for the real-model tests: token ids, the attention probabilities of two
query rows in every layer and head, and the first numbers of one layer's X and Q, as
transformers computes them (eager attention, float32). The tests compare attntrace's
numpy forward pass with these, without torch.

Run it in the reference venv that tools/make_goldens.py describes (torch==2.13.0 first,
then transformers, gguf and accelerate, which transformers needs to read a GGUF file);
make_goldens.py runs it with the others.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from attntrace.real.catalog import MINILM, SMOLLM2
from attntrace.real.layer import DEFAULT_SENTENCE

SENTENCE = DEFAULT_SENTENCE  # the sentence `run --model` traces by default
GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "golden" / "real" / "attention.json"
TRACED_LAYER, TRACED_HEAD = 3, 1


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
    return {
        "attentions": [a[0].double() for a in out.attentions],
        "x": captured["x"][0],
        "q": captured["q"][0],
    }


def model_entry(
    name: str,
    ids: list[int],
    tokens: list[str],
    ref: dict[str, Any],
    rows: list[int],
    head_dim: int,
) -> dict[str, Any]:
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


@functools.cache
def loaded(name: str) -> tuple[Any, Any]:
    """The tokenizer and the model (eager attention, eval mode) of catalogue model
    ``name``, loaded once for both kinds of golden: a GGUF is dequantized whole."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer

    # Any: transformers' own annotations leave eval() untyped
    model: Any
    if name == "minilm":
        path = MINILM.weights_path().parent
        model = AutoModel.from_pretrained(path, attn_implementation="eager")
        return AutoTokenizer.from_pretrained(path), model.eval()
    path, gguf = SMOLLM2.weights_path().parent, SMOLLM2.weights
    model = AutoModelForCausalLM.from_pretrained(path, gguf_file=gguf, attn_implementation="eager")
    return AutoTokenizer.from_pretrained(path, gguf_file=gguf), model.eval()


def minilm() -> dict[str, Any]:
    tokenizer, model = loaded("minilm")
    ids = tokenizer(SENTENCE)["input_ids"]
    tokens = tokenizer.convert_ids_to_tokens(ids)
    layer = model.encoder.layer[TRACED_LAYER].attention.self.query
    ref = reference(model, ids, layer)
    return model_entry("minilm", ids, tokens, ref, [tokens.index("it"), 0], 32)


def smollm2() -> dict[str, Any]:
    tokenizer, model = loaded("smollm2")
    ids = tokenizer(SENTENCE, add_special_tokens=False)["input_ids"]
    tokens = tokenizer.convert_ids_to_tokens(ids)
    layer = model.model.layers[TRACED_LAYER].self_attn.q_proj
    ref = reference(model, ids, layer)
    return model_entry("smollm2", ids, tokens, ref, [tokens.index("Ġit"), len(ids) - 1], 64)


# A paragraph of 100+ tokens: positions far from 0 (BERT's learned table, large RoPE
# angles) are checked against the reference too, on the last token's row.
LONG = (
    "The committee met on a grey Tuesday morning to review the proposal for the new "
    "library. After two hours of discussion about the budget, the architect explained "
    "why the reading room faces north: the light is even all day, and the books do not "
    "fade. Several members asked whether the building could open before the winter, "
    "but the builder said that it could not, because the steel would arrive late. In "
    "the end they voted to approve the plan, and everyone went home tired but pleased "
    "with what they had decided together."
)
LONG_LAYERS = {"minilm": list(range(6)), "smollm2": [0, 7, 15, 22, 29]}


def long_entry(name: str, ids: list[int], attentions: list[Any]) -> dict[str, Any]:
    row = len(ids) - 1
    layers = LONG_LAYERS[name]
    return {
        "sentence": LONG,
        "ids": ids,
        "layers": layers,
        "row": row,
        # [i][head] -> the last token's probabilities over every key, layer layers[i]
        "attention": [
            [rounded(attentions[layer][h, row].tolist()) for h in range(attentions[layer].shape[0])]
            for layer in layers
        ],
    }


def long_goldens() -> dict[str, Any]:
    import torch

    result = {}
    for name, special in (("minilm", True), ("smollm2", False)):  # BERT adds [CLS], [SEP]
        tokenizer, model = loaded(name)
        ids = tokenizer(LONG, add_special_tokens=special)["input_ids"]
        with torch.no_grad():
            out = model(torch.tensor([ids]), output_attentions=True)
        result[name] = long_entry(name, ids, [a[0].double() for a in out.attentions])
    return result


# ---- Gemma 3 (issue 17): tests/golden/real/gemma3.json ----------------------------------
GEMMA3_GOLDEN = GOLDEN.parent / "gemma3.json"
GEMMA3_LOCAL, GEMMA3_GLOBAL = 4, 5  # layer_types: 5, 11, 17 are full attention
GEMMA3_SHORT = (
    SENTENCE,
    "Sliding windows keep the cache small, while every sixth layer still sees it all.",
)
# Over 512 tokens (about 600 with <bos>), so the local layers' window cuts in: the
# paragraph about the library, then more of the same meeting.
GEMMA3_LONG = " ".join(
    [LONG] * 2
    + [
        "The next spring the library opened its doors to the town. Children came after "
        "school to read in the north room, and their parents borrowed novels, maps and "
        "cookery books by the armful. The librarian, who had worked in the old building for "
        "thirty years, said she had never seen so many people at once; on the first Saturday "
        "she ran out of cards for new readers before noon and had to write names on the "
        "backs of envelopes. A local paper printed a photograph of the queue, which went "
        "round the corner and past the baker's, where the owner handed out warm bread to "
        "those who had waited longest. By the summer the committee met again, this time to "
        "discuss a second floor, since the shelves were already full and the reading room "
        "was crowded every afternoon. The architect smiled and said that she had left room "
        "for it in the foundations, because she had expected exactly this.",
    ]
    * 2
)
GEMMA3_LONG_ROWS = (0, 511, 512, -1)  # the window first cuts in at query 512


def gemma3_loaded() -> tuple[Any, Any]:
    """Gemma 3's tokenizer and model from the verified GGUF (transformers' gguf_file=
    path: Gemma2TensorProcessor takes the 1 out of each norm weight), float32, eager
    attention so that the probabilities are returned."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from attntrace.real.catalog import GEMMA3

    path = GEMMA3.verified_weights()
    folder, name = path.parent, path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model: Any = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.float32, attn_implementation="eager"
    )
    return tokenizer, model.eval()


def gemma3_forward(model: Any, ids: list[int]) -> dict[str, Any]:
    """Attention probabilities of every layer, and the traced layer's X (what q_proj
    reads), Q (q_proj's output) and Q after q_norm (before RoPE)."""
    import torch

    attn = model.model.layers[GEMMA3_LOCAL].self_attn
    captured: dict[str, Any] = {}
    hooks = [
        attn.q_proj.register_forward_hook(lambda m, i, o: captured.update(x=i[0][0], q=o[0])),
        attn.q_norm.register_forward_hook(lambda m, i, o: captured.update(q_normed=o[0])),
    ]
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True)
    for hook in hooks:
        hook.remove()
    return {"attentions": [a[0].double() for a in out.attentions], **captured}


def gemma3() -> dict[str, Any]:
    tokenizer, model = gemma3_loaded()
    config = model.config
    short = []
    for text in GEMMA3_SHORT:
        ids = tokenizer(text)["input_ids"]  # <bos> first: tokenizer.ggml.add_bos_token
        ref = gemma3_forward(model, ids)
        attentions = ref["attentions"]
        entry = model_entry(
            "gemma3",
            ids,
            tokenizer.convert_ids_to_tokens(ids),
            ref,
            [len(ids) - 1, 1],
            config.head_dim,
        )
        entry.update(sentence=text, layer=GEMMA3_LOCAL, head=0)
        # the traced layer's X and Q (q_proj's output), and q_norm's (head 0, last row)
        row = len(ids) - 1
        entry["x_first"] = rounded(ref["x"][row, :8].tolist())
        entry["q_first"] = rounded(ref["q"][row, :8].tolist())
        entry["q_normed_first"] = rounded(ref["q_normed"][0, row, :8].tolist())
        # the local and the global layer whole: [head][query][key]
        entry["full"] = {
            str(layer): rounded(attentions[layer].tolist())
            for layer in (GEMMA3_LOCAL, GEMMA3_GLOBAL)
        }
        short.append(entry)
    ids = tokenizer(GEMMA3_LONG)["input_ids"]
    assert 520 < len(ids) <= 700, len(ids)
    attentions = gemma3_forward(model, ids)["attentions"]
    rows = [r % len(ids) for r in GEMMA3_LONG_ROWS]
    long = {
        "sentence": GEMMA3_LONG,
        "ids": ids,
        "rows": rows,
        # {layer: [head][i] -> query rows[i]'s probabilities over every key}
        "attention": {
            str(layer): [
                [rounded(attentions[layer][h, r].tolist()) for r in rows]
                for h in range(attentions[layer].shape[0])
            ]
            for layer in (GEMMA3_LOCAL, GEMMA3_GLOBAL)
        },
    }
    return {
        "reference": {  # what transformers made of the file, for the tests to state
            "layer_types": list(config.layer_types),
            "rope_parameters": config.rope_parameters,
            "query_pre_attn_scalar": config.query_pre_attn_scalar,
            "sliding_window": config.sliding_window,
            "embed_scale": float(model.model.embed_tokens.embed_scale),
        },
        "short": short,
        "long": long,
    }


def main() -> None:
    import sys

    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    if sys.argv[1:] != ["gemma3"]:  # `make_model_goldens.py gemma3`: only Gemma 3's
        GOLDEN.write_text(
            json.dumps({"minilm": minilm(), "smollm2": smollm2(), "long": long_goldens()}) + "\n"
        )
        print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size // 1024} KB)")
    GEMMA3_GOLDEN.write_text(json.dumps(gemma3()) + "\n")
    print(f"wrote {GEMMA3_GOLDEN} ({GEMMA3_GOLDEN.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    main()
