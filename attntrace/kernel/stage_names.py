"""The names `check` reads arrays by: the stages in computation order, and their aliases.

docs/check.md ("Names") is the contract; the order is the one a mistake propagates in,
so the first stage that differs in this order is the earliest a mistake shows.
"""

from __future__ import annotations

#: Every stage a trace can hold, in computation order (docs/check.md, "What it reports").
ORDER = (
    "embeddings",
    "positions",
    "X",
    "embeddings_context",
    "positions_context",
    "X_context",
    "Q",
    "K",
    "V",
    "Q_norm",
    "K_norm",
    "Q_rope",
    "K_rope",
    "scores",
    "scaled",
    "alibi",
    "biased",
    "capped",
    "masked",
    "softmax",
    "sink",
    "output",
    "concat",
    "projected",
)

#: The other names people save a stage under.
ALIASES = {
    "x": "X",
    "q": "Q",
    "k": "K",
    "v": "V",
    "q_rope": "Q_rope",
    "k_rope": "K_rope",
    "S": "scores",
    "weights": "softmax",
    "attn": "softmax",
    "attn_weights": "softmax",
    "probs": "softmax",
    "P": "softmax",
    "A": "softmax",
    "O": "output",
    "out": "output",
    # the variants' stages (docs/variants.md), as transformers and people's code name them
    "q_norm": "Q_norm",
    "k_norm": "K_norm",
    "q_normed": "Q_norm",
    "k_normed": "K_norm",
    "Q_normed": "Q_norm",
    "K_normed": "K_norm",
    "alibi_bias": "alibi",
    "position_bias": "alibi",
    "scores_biased": "biased",
    "biased_scores": "biased",
    "softcapped": "capped",
    "soft_capped": "capped",
    "logits_capped": "capped",
    "capped_logits": "capped",
    "capped_scores": "capped",
    "sinks": "sink",
    "sink_weight": "sink",
    "sink_weights": "sink",
    "sink_prob": "sink",
    "sink_probs": "sink",
}

#: Stages computed once per query head (the rest are shared by every head): those from Q
#: to the head's output, in ORDER.
PER_HEAD = frozenset(ORDER[ORDER.index("Q") : ORDER.index("output") + 1])

#: Per-head stages computed once per K/V head, which a file may also give repeated per
#: query head (as after PyTorch's ``repeat_kv``).
PER_KV_HEAD = frozenset(("K", "V", "K_norm", "K_rope"))

#: Per-head stages whose columns are dimensions: they may come side by side, ``[r, H·c]``.
DIMENSION_COLUMNS = frozenset(("Q", "K", "V", "Q_norm", "K_norm", "Q_rope", "K_rope", "output"))


#: Stages whose rows are the keys' tokens (the context's under cross-attention); the
#: other stages' rows are the queries' (or, for the learned matrices, dimensions).
KEY_ROWS = frozenset(
    ("embeddings_context", "positions_context", "X_context", "K", "K_norm", "K_rope", "V")
)

#: Stages whose columns are the keys' tokens.
KEY_COLUMNS = frozenset(("scores", "scaled", "alibi", "biased", "capped", "masked", "softmax"))

#: Stages of one column per head (the sink's weight): a file may leave that column out,
#: ``[H, n]`` for ``[H, n, 1]``.
ONE_COLUMN = frozenset(("sink",))


def stage_name(name: str) -> str | None:
    """The stage ``name`` stands for (itself, or through an alias); None if neither."""
    if name in ORDER:
        return name
    return ALIASES.get(name)
