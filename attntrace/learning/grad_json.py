"""GradTrace -> the ``attntrace/grad/v1`` document (docs/learning.md#attntracegradv1).

Plain dicts, as every document is written (forward/trace_json): the model as the trace
gives it, the loss with its cell's tokens, and every gradient stage in backward order
with the forward stage it mirrors (``of``) and, for a K/V head's sum, the query heads it
adds (``summed_heads``). The forward stages are not repeated: ``run --json`` writes them.
Schema: ``attntrace/schema/grad-v1.schema.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attntrace.forward.trace_json import stage_to_dict
from attntrace.kernel.documents import StreamedJSON, model_to_dict, optional_texts, texts
from attntrace.visible import well_formed

if TYPE_CHECKING:
    from attntrace.kernel.trace import Stage, Trace
    from attntrace.learning.grad_trace import GradTrace
    from attntrace.learning.objective import Resolved

GRAD_SCHEMA_ID = "attntrace/grad/v1"


def grad_to_dict(grad: GradTrace, *, raw: bool = False) -> dict[str, Any]:
    """The backward pass as plain data; ``raw`` leaves the matrices numpy arrays, for a
    writer that serializes them itself (orjson)."""
    from attntrace.learning.grad_trace import MIRRORS

    trace, resolved = grad.forward, grad.loss

    def stage(gradient: Stage) -> dict[str, Any]:
        data = stage_to_dict(gradient, raw=raw)
        summed = None
        if gradient.head is None and gradient.kv_head is not None:
            summed = list(grad.summed.get(gradient.kv_head, ()))
        labels = {key: data[key] for key in ("name", "head", "kv_head")}
        rest = {key: data[key] for key in ("formula", "shape", "rows", "cols", "data")}
        return {**labels, "of": MIRRORS[gradient.name], "summed_heads": summed, **rest}

    return {
        "schema": GRAD_SCHEMA_ID,
        "model": model_to_dict(trace.model),
        "tokens": texts(trace.tokens),
        "context_tokens": optional_texts(trace.context_tokens),
        "loss": loss_to_dict(resolved, trace, value=True),
        "stages": [stage(gradient) for gradient in grad.stages],
    }


def loss_to_dict(resolved: Resolved, trace: Trace, *, value: bool) -> dict[str, Any]:
    """A loss as grad/v1 and train/v1 write it: its kind, formula (and ``value``), the
    attend loss's cell as the from and to tokens (``to`` a context token under
    cross-attention; both None for mse) and the heads it reads."""
    keys = trace.tokens if trace.context_tokens is None else trace.context_tokens
    cell = resolved.cell

    def token(index: int, tokens: tuple[str, ...]) -> dict[str, Any]:
        return {"index": index, "token": well_formed(tokens[index])}

    written: dict[str, Any] = {"kind": resolved.loss.name, "formula": well_formed(resolved.formula)}
    if value:
        written["value"] = resolved.loss.value
    written["from"] = None if cell is None else token(cell[0], trace.tokens)
    written["to"] = None if cell is None else token(cell[1], keys)
    written["heads"] = list(resolved.heads)
    return written


def grad_dump_bytes(grad: GradTrace) -> bytes:
    """The document, compact, as UTF-8 bytes (orjson writes the matrices straight from
    numpy; every number reads back to the same float64)."""
    import orjson

    return orjson.dumps(grad_to_dict(grad, raw=True), option=orjson.OPT_SERIALIZE_NUMPY)


def grad_stream(grad: GradTrace) -> StreamedJSON:
    """:func:`grad_dump_bytes`'s bytes as pieces to write one after another (``grad
    --json``): the JSON text is never held whole beside the gradients."""
    return StreamedJSON(grad_to_dict(grad, raw=True))
