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
"import floor", 33–67 MiB there) are not counted.

Where a command holds more than one trace, the parts are added where the trace is about
to be computed: :func:`check_trace_size` (called for every trace) counts the model, the
trace and its arithmetic, and every part the callers around it declared with
:func:`also_counted` (``run``'s JSON, ``grad``'s gradients): one check, one figure.

``ATTNTRACE_MAX_TRACE_MB``, the variable's name in 0.1.0 when only the trace was
counted, is still read where ``ATTNTRACE_MAX_MEMORY_MB`` is not set.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from attntrace.environment import env_number
from attntrace.errors import InputError

if TYPE_CHECKING:  # numpy and the spec are not imported to count: --help stays light
    import numpy.typing as npt

    from attntrace.kernel.spec import ModelSpec

DEFAULT_MAX_MEMORY_MB = 2048
MEMORY_VARIABLE = "ATTNTRACE_MAX_MEMORY_MB"
OLD_MEMORY_VARIABLE = "ATTNTRACE_MAX_TRACE_MB"  # 0.1.0's name, read where the new one is unset
FLOAT = 8  # bytes of a float64, what every matrix is held as
# n × m float64 matrices one head's arithmetic holds for a moment beside the trace (a
# product before it is kept, a difference, a row max subtracted, a rounding's copy): the
# heads are computed one after another, so one head's temporaries at a time.
WORK_SQUARES = 2
# n × m float64 matrices comparing two stages holds at once (``check``, ``diff``): the
# differences, the larger magnitudes, the tolerance, and their temporaries.
COMPARE_SQUARES = 5
# What a head's stages hold besides their numbers (the Stage objects, their labels'
# lists, their views and documents' dicts): nothing for a few heads, 32 MiB for 2,048
# (a model of 2,048 heads over three tokens peaked 9 MiB past its estimate without it).
HEAD_STAGES_BYTES = 16 << 10
# Bytes of one number in a JSON document at most: ``-1.2345678901234567e-308,``.
JSON_NUMBER_BYTES = 26
# What a JSON document written as it is computed holds at once (its bounded buffer).
JSON_BUFFER_BYTES = 16 << 20
# Bytes an explorer page takes per number while it is built: the JSON, its text with
# ``</`` escaped, the page joined around it, and the page encoded to be written.
PAGE_NUMBER_BYTES = 4 * JSON_NUMBER_BYTES
# Bytes a saved trace takes per number while it is read: a Python float, its list's
# pointer and the list's spare room (a list grows by about an eighth), then its float64
# in the array (the text itself is counted apart).
PARSED_NUMBER_BYTES = 24 + 8 + 8 + FLOAT

# A part of a command's peak besides its trace, from the model and the trace's n and m.
Extra = Callable[["ModelSpec", int, int], Mapping[str, int]]
# What the commands around a trace will hold besides it (its JSON, a second trace, the
# gradients): counted wherever a trace is about to be computed, inside :func:`also_counted`.
_ALSO: ContextVar[tuple[Extra, ...]] = ContextVar("attntrace_budget_also", default=())


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
    # the three largest parts, leaving out those under 1 MiB where a larger one is named
    named = [part for part in largest[:3] if part[0] >= 2**20] or largest[:1]
    shown = ", ".join(f"{what} {mib(size)}" for size, what in named)
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
    (and an hour of drawing them). Counted with the model's matrices, one head's
    temporaries and whatever :func:`also_counted` adds (the JSON, a second trace)."""
    heads = f" × {model.heads} heads" if model.heads > 1 else ""
    refuse_past_budget(f"a trace of {n:,} tokens × {m:,} keys{heads}", peak_parts(model, n, m))


def peak_parts(model: ModelSpec, n: int, m: int) -> dict[str, int]:
    """The parts of the peak of a trace of ``n`` queries over ``m`` keys, by name: the
    model, the trace, its arithmetic's temporaries and every part :func:`also_counted`
    adds; a part named twice is counted once, at its largest."""
    parts = {
        "the model": model_bytes(model),
        "the trace": trace_bytes(model, n, m),
        "its arithmetic": work_bytes(model, n, m),
        "its stages": HEAD_STAGES_BYTES * model.heads,
    }
    for extra in _ALSO.get():
        for what, size in extra(model, n, m).items():
            parts[what] = max(size, parts.get(what, 0))
    return parts


def peak_bytes(model: ModelSpec, n: int, m: int) -> int:
    """The estimate :func:`check_trace_size` refuses past: the sum of :func:`peak_parts`."""
    return sum(peak_parts(model, n, m).values())


@contextmanager
def also_counted(extra: Extra) -> Iterator[None]:
    """Inside the block, every trace's check counts ``extra(model, n, m)`` too: what the
    caller holds besides that trace (``run --json``'s document, ``--dtype``'s float64
    twin, ``grad``'s gradients), known only once the model and sentence are. The parts
    of nested blocks add up."""
    token = _ALSO.set((*_ALSO.get(), extra))
    try:
        yield
    finally:
        _ALSO.reset(token)


def model_bytes(model: ModelSpec) -> int:
    """The model's own matrices as held (float64): embeddings, weights, biases,
    positions, a given X, the target and the variants' vectors."""
    arrays: list[npt.NDArray[Any] | str | None] = [
        *model.embeddings.values(),
        *model.biases.values(),
        model.WQ,
        model.WK,
        model.WV,
        model.WO,
        model.positions,  # "sinusoidal" or "rope" where computed, not held
        model.target,
        model.variants.q_norm,
        model.variants.k_norm,
        None if model.given is None else model.given.X,
    ]
    return sum(a.nbytes for a in arrays if a is not None and not isinstance(a, str))


def rows_bytes(model: ModelSpec, n: int, m: int) -> int:
    """One copy of a trace's rows: every token's d_model, d_k and d_v columns of every
    head. A model whose d_k is far wider than its sentence is long (a 2 × 800,000 WQ
    over three tokens) holds mostly these; each command counts the copies of them it
    was measured to hold (benchmarks/memory.py, docs/cli.md)."""
    return FLOAT * (n + m) * (model.d_model + model.heads * (model.d_k + model.d_v))


def square_bytes(model: ModelSpec, n: int, m: int) -> int:
    """One n × m float64 matrix for every head: what each per-head stage takes."""
    return FLOAT * model.heads * n * m


def work_bytes(model: ModelSpec, n: int, m: int) -> int:
    """The temporaries of one head's arithmetic (:data:`WORK_SQUARES` n × m matrices and
    its rows), held for a moment while the heads are computed one after another."""
    rows = (n + m) * (model.d_model + model.d_k + model.d_v)
    return FLOAT * (WORK_SQUARES * n * m + 2 * rows)


def trace_numbers(model: ModelSpec, n: int, m: int) -> int:
    """The numbers a trace holds, about (:func:`trace_bytes` in float64s)."""
    return trace_bytes(model, n, m) // FLOAT


def json_bytes(numbers: int) -> int:
    """What writing a JSON document of ``numbers`` numbers holds at once: the document
    is written as it is computed, through a buffer of :data:`JSON_BUFFER_BYTES`, so it
    is the document where it is smaller, else the buffer. The one place to change if
    the writer changes."""
    return min(numbers * JSON_NUMBER_BYTES, JSON_BUFFER_BYTES)


def document_bytes(numbers: int, *, plain: bool = False) -> int:
    """A JSON document of ``numbers`` numbers held whole before it is written (grad's,
    flash's, decode's): its bytes, and where it is built as ``plain`` Python data first
    (lists of floats), each number as a float in a list too."""
    return numbers * (JSON_NUMBER_BYTES + (PARSED_NUMBER_BYTES - FLOAT if plain else 0))


def written_parts(
    numbers: int, *, as_json: bool, page: bool, plain: bool = False
) -> dict[str, int]:
    """What writing a command's result of ``numbers`` numbers holds: its JSON document
    (``as_json``: written as it is serialized, :func:`json_bytes`), its explorer page
    (``page``, ``--export FILE.html``, built whole)."""
    parts = {"its JSON": json_bytes(numbers)} if as_json else {}
    if page:
        parts["the page"] = page_bytes(numbers) + (
            document_bytes(numbers, plain=True) if plain else 0
        )
    return parts


def page_bytes(numbers: int) -> int:
    """What building an explorer page of ``numbers`` numbers holds at once."""
    return numbers * PAGE_NUMBER_BYTES


def arrays_bytes(shapes: Iterable[tuple[int, ...]]) -> int:
    """Arrays of these shapes as float64: what ``check`` holds of a person's arrays once
    converted, known from their headers before any is read."""
    return sum(FLOAT * math.prod(shape) for shape in shapes)


def parsed_bytes(text_bytes: int, numbers: int) -> int:
    """What reading a JSON document of ``text_bytes`` holding at most ``numbers``
    numbers takes: the text, then each number as a Python float in a list, then in
    a float64 array."""
    return text_bytes + numbers * PARSED_NUMBER_BYTES


def saved_trace_parts(text: str) -> dict[str, int]:
    """What reading the saved trace ``text`` takes, from the text alone: every number
    in it is followed by a comma or a closing bracket, so it holds at most as many."""
    # the str as held (1, 2 or 4 bytes a character), and the bytes it was decoded from,
    # held with it while it was, read in pieces and joined (twice, for a moment): UTF-8,
    # about a byte a character in a trace's JSON
    held = sys.getsizeof(text) + 2 * len(text)
    numbers = text.count(",") + text.count("]")
    return {"its text": held, "the trace as read": numbers * PARSED_NUMBER_BYTES}


def comparison_bytes(model: ModelSpec, n: int, m: int) -> int:
    """Comparing two traces stage by stage (``diff``): one stage's temporaries at a time
    (:data:`COMPARE_SQUARES`), and for every stage the cells that changed, a byte each."""
    return COMPARE_SQUARES * FLOAT * n * m + trace_bytes(model, n, m) // FLOAT
