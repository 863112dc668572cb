"""How big a trace may grow: refused before it is computed, above ATTNTRACE_MAX_TRACE_MB.

A trace keeps every intermediate of every head, so its size grows with n × m per head:
a long sentence is refused with a message saying why and what to do, rather than
filling the memory.
"""

from __future__ import annotations

from attntrace.environment import env_number
from attntrace.errors import InputError
from attntrace.kernel.spec import ModelSpec

DEFAULT_MAX_TRACE_MB = 2048
MAX_TRACE_VARIABLE = "ATTNTRACE_MAX_TRACE_MB"


def trace_bytes(model: ModelSpec, n: int, m: int) -> int:
    """What a trace of ``n`` queries over ``m`` keys holds, in bytes, about: every head's
    n × m stages (scores, scaled, masked under a causal mask, softmax; alibi and biased
    under ALiBi, capped under a softcap) and its rows of Q, K, V (and their turned
    copies under RoPE, their normed ones under QK-norm), the sink column and output,
    float64 (docs/variants.md's stages)."""
    variants = model.variants
    square = 4 if model.causal else 3
    square += 2 if model.position_kind == "alibi" else 0
    square += 1 if variants.softcap is not None else 0
    rows = n * model.d_k + m * (model.d_k + model.d_v) + n * model.d_v
    if model.position_kind == "rope":
        rows += (n + m) * model.d_k
    if variants.qk_norm:
        rows += (n + m) * model.d_k
    if variants.sink_logit is not None:
        rows += n
    return 8 * model.heads * (square * n * m + rows) + 8 * (n + m) * model.d_model * 3


def check_trace_size(model: ModelSpec, n: int, m: int) -> None:
    """Refuse a trace bigger than ATTNTRACE_MAX_TRACE_MB (2 GiB) before computing it:
    a trace keeps every n × n matrix of every head, so 20,000 tokens would take 9 GB of
    one head's scores alone (and an hour of drawing them)."""
    limit = env_number(
        MAX_TRACE_VARIABLE, DEFAULT_MAX_TRACE_MB, 1, 2**30, "a number of MiB from 1 to 2**30"
    )
    size = trace_bytes(model, n, m)
    if size > limit * 2**20:
        heads = f" × {model.heads} heads" if model.heads > 1 else ""
        raise InputError(
            f"a trace of {n:,} tokens × {m:,} keys{heads} would hold about "
            f"{size / 2**20:,.0f} MiB, over the limit of {limit:g} MiB: a trace keeps every "
            f"n × n matrix (shorten the sentence, or set {MAX_TRACE_VARIABLE})"
        )
