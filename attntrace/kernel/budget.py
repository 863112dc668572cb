"""How much memory a command may take: its peak, estimated before any work, refused past
the budget (ATTNTRACE_MAX_MEMORY_MB, 2 GiB).

A command's peak is what it holds at once: the model's matrices as float64, every stage
of every head of the trace (n × m per head), the JSON text or the page being written,
the low-precision copies of ``--dtype``, ``diff``'s two traces, ``grad``'s backward
pass, ``check``'s arrays. Each of these is known from shapes alone (a file's header, a
sentence's length) before anything is converted or computed, so a command that would
need more than the budget is refused at once, in one line that names the figure, its
largest parts and the variable that raises it, rather than filling the memory or being
killed. The estimate is an upper bound of what the arrays take (benchmarks/memory.py
measures the real peak against it); Python's own objects and imported modules (the
"import floor", about 60 MiB) are not counted.

``ATTNTRACE_MAX_TRACE_MB``, the variable's name in 0.1.0 when only the trace was
counted, is still read where ``ATTNTRACE_MAX_MEMORY_MB`` is not set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from attntrace.environment import env_number
from attntrace.errors import InputError

if TYPE_CHECKING:  # so the CLI can check the budget's variable at start without numpy
    from attntrace.kernel.spec import ModelSpec

DEFAULT_MAX_MEMORY_MB = 2048
MEMORY_VARIABLE = "ATTNTRACE_MAX_MEMORY_MB"
OLD_MEMORY_VARIABLE = "ATTNTRACE_MAX_TRACE_MB"  # 0.1.0's name, read where the new one is unset
FLOAT = 8  # bytes of a float64, what every matrix is held as


def budget_variable() -> str:
    """The variable the budget is read from: the new name, unless only the old is set."""
    if os.environ.get(MEMORY_VARIABLE, "").strip():
        return MEMORY_VARIABLE
    if os.environ.get(OLD_MEMORY_VARIABLE, "").strip():
        return OLD_MEMORY_VARIABLE
    return MEMORY_VARIABLE


def memory_budget() -> int:
    """The budget in bytes: 2 GiB, or ATTNTRACE_MAX_MEMORY_MB (MiB, from 1 to 2**30)."""
    limit = env_number(
        budget_variable(), DEFAULT_MAX_MEMORY_MB, 1, 2**30, "a number of MiB from 1 to 2**30"
    )
    return int(limit * 2**20)


def mib(count: int) -> str:
    """``1,234 MiB``, or ``under 1 MiB``: the figures of a refusal."""
    return f"{count / 2**20:,.0f} MiB" if count >= 2**20 else "under 1 MiB"


def refuse_past_budget(doing: str, parts: Mapping[str, int]) -> None:
    """Refuse ``doing`` (``a trace of 9,300 tokens × 9,300 keys``) where the bytes of its
    ``parts`` (``{"the trace": ..., "its JSON": ...}``) add up past the budget. The
    message names the total, the parts that hold most of it and how to raise it."""
    total = sum(parts.values())
    limit = memory_budget()
    if total <= limit:
        return
    largest = sorted(((size, what) for what, size in parts.items() if size), reverse=True)
    shown = ", ".join(f"{what} {mib(size)}" for size, what in largest[:3])
    raise InputError(
        f"{doing} would take about {mib(total)} ({shown}), over the memory budget of "
        f"{mib(limit)} (shorten the input, or set {budget_variable()})"
    )


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
    return FLOAT * model.heads * (square * n * m + rows) + FLOAT * (n + m) * model.d_model * 3


def check_trace_size(model: ModelSpec, n: int, m: int) -> None:
    """Refuse a trace past the budget before computing it: a trace keeps every n × n
    matrix of every head, so 20,000 tokens would take 9 GB of one head's scores alone
    (and an hour of drawing them)."""
    heads = f" × {model.heads} heads" if model.heads > 1 else ""
    refuse_past_budget(
        f"a trace of {n:,} tokens × {m:,} keys{heads}", {"the trace": trace_bytes(model, n, m)}
    )
