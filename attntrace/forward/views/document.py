"""The whole trace as the tables show it: a header, how the block is wired, every stage.

The header names the model and its sizes; the notes under it give the sentence (and
the context) and the K/V sharing; then each stage's block in order. Beyond
``view.max_heads`` heads the middle heads' stages give way to one note, as a long
table's middle rows do.
"""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import RenderableType
from rich.text import Text

from attntrace.forward.views.dtype import precision_line
from attntrace.forward.views.stage_block import stage_block
from attntrace.kernel.labels import marks_note
from attntrace.kernel.trace import ModelInfo, Trace
from attntrace.ui.numbers import visible_indices
from attntrace.ui.view import DEFAULT_VIEW, View
from attntrace.ui.wrap import Facts
from attntrace.visible import ELLIPSIS


def header(trace: Trace) -> Facts:
    """The trace's first line: model name, sentence length, sizes and what kind of block."""
    heads = None
    if trace.is_cut:
        shown = ", ".join(str(h) for h in trace.traced_heads)
        heads = f"head{'s' if len(trace.traced_heads) > 1 else ''} {shown} of {trace.model.heads}"
    return Facts(
        trace.model.name,
        model_facts(trace.model, len(trace.tokens), heads, cross=trace.context_tokens is not None),
    )


def model_facts(model: ModelInfo, count: int, heads: str | None, *, cross: bool) -> tuple[str, ...]:
    """``3 tokens · d_model 4 · 2 heads · d_k 2 · d_v 2 ...``: the sizes and the kind of
    block, as every header gives them (``heads``: which heads, where not all)."""
    facts = [f"{count} token{'' if count == 1 else 's'}", f"d_model {model.d_model}"]
    if heads is not None:
        facts.append(heads)
    elif model.heads > 1:
        facts.append(f"{model.heads} heads")
    facts += [f"d_k {model.d_k}", f"d_v {model.d_v}"]
    if model.kv_heads != model.heads:
        kind = "MQA" if model.kv_heads == 1 else "GQA"
        facts.append(f"{model.kv_heads} K/V head{'s' if model.kv_heads > 1 else ''} ({kind})")
    if model.causal:
        facts.append("causal")
    if model.positions == "alibi":
        facts.append("ALiBi")
    elif model.positions != "none":
        facts.append(f"{model.positions} positions")
    facts += variant_facts(model)
    if cross:
        facts.append("cross-attention")
    return tuple(facts)


def variant_facts(model: ModelInfo) -> list[str]:
    """What of docs/variants.md is on, as the header names it: ``window 3``, ``sinks 1``,
    ``QK-norm``, ``softcap 30``, ``sink logit`` (ALiBi is named as the positions)."""
    v = model.variants
    facts = []
    if v.window is not None:
        facts.append(f"window {v.window}")
    if v.sinks:
        facts.append(f"sinks {v.sinks}")
    if v.qk_norm:
        facts.append("QK-norm")
    if v.softcap is not None:
        facts.append(f"softcap {v.softcap:g}")
    if v.sink_logit is not None:
        facts.append("sink logit")
    return facts


def block_notes(trace: Trace, view: View = DEFAULT_VIEW) -> list[Text]:
    """Lines under the header that say how the block is wired: the sentence (and the
    context), what its tokenizer's marks mean, K/V sharing."""
    model, notes = trace.model, []
    if trace.context_tokens is not None:
        notes.append(Text.assemble(("queries from: ", "dim"), sentence_line(trace.tokens, view)))
        notes.append(
            Text.assemble(
                ("keys, values from the context: ", "dim"),
                sentence_line(trace.context_tokens, view),
            )
        )
    else:
        notes.append(Text(sentence_line(trace.tokens, view)))
    marks = marks_note(trace.tokens, trace.context_tokens or ())
    if marks:  # a trained model's tokens: what Ġ, ▁ or ## in them mean, once
        notes.append(Text(marks, style="dim"))
    if model.kv_heads != model.heads:
        groups = "; ".join(
            f"K/V head {g} serves query heads "
            + ", ".join(str(h) for h in range(g * model.group, (g + 1) * model.group))
            for g in range(model.kv_heads)
        )
        notes.append(
            Text(
                f"{groups}. K and V (and a KV cache of them) are {model.group}× smaller than "
                f"with {model.heads} full heads.",
                style="dim",
            )
        )
    return notes


SENTENCE_LIMIT = 64  # tokens: a longer sentence is summarized like a table's rows


def sentence_line(tokens: tuple[str, ...], view: View = DEFAULT_VIEW) -> str:
    """The tokens, space-separated: whole up to 64 (or with --max-rows 0), else the
    first and last 16 around ``… (512 tokens)``; the X table lists every row anyway."""
    if len(tokens) <= max(SENTENCE_LIMIT, view.max_rows):
        return " ".join(tokens)
    shown = visible_indices(len(tokens), SENTENCE_LIMIT // 2)
    return " ".join(f"{ELLIPSIS} ({len(tokens)} tokens)" if i is None else tokens[i] for i in shown)


def shown_heads(trace: Trace, view: View = DEFAULT_VIEW) -> list[int | None]:
    """The traced heads whose tables show, None where the hidden ones go: all of them up
    to ``view.max_heads``, else the first and last halves (as rows are summarized)."""
    heads = trace.traced_heads
    if view.max_heads is None:
        return list(heads)
    return [None if i is None else heads[i] for i in visible_indices(len(heads), view.max_heads)]


def hidden_heads_note(trace: Trace, shown: list[int | None]) -> Text:
    """``… heads 2 to 9 not shown (4 of 12 heads; --max-heads N, 0 for all)``.

    Of a trace cut to some heads (``--json --heads 0,3,5``) only traced heads count.
    """
    heads = trace.traced_heads
    hidden = [h for h in heads if h not in shown]
    kept = len(heads) - len(hidden)
    return Text(
        f"{ELLIPSIS} {_heads_named(hidden)} not shown ({kept} of {len(heads)} heads; "
        "--max-heads N, 0 for all)",
        style="dim",
    )


def _heads_named(heads: list[int]) -> str:
    """``head 3``, ``heads 3 and 4``, ``heads 2 to 9``, ``heads 3, 5 and 8``."""
    if len(heads) == 1:
        return f"head {heads[0]}"
    if len(heads) > 2 and heads[-1] - heads[0] == len(heads) - 1:  # a run, none missing
        return f"heads {heads[0]} to {heads[-1]}"
    return f"heads {', '.join(map(str, heads[:-1]))} and {heads[-1]}"


def rule_lines(trace: Trace) -> Iterator[RenderableType]:
    """Under a --dtype, the line that states the dtype and its casting rule."""
    rule = precision_line(trace)
    if rule is not None:
        yield rule


def render_trace(trace: Trace, view: View = DEFAULT_VIEW) -> Iterator[RenderableType]:
    """Every stage of ``trace``, in order, each a titled table, for ``console.print``;
    beyond ``view.max_heads`` heads, the middle heads' stages give way to one note.

    ``trace`` is drawn as it is: give it as shown
    (:func:`~attntrace.ui.shown.shown_trace`) where its text came from a file."""
    yield header(trace)
    yield from rule_lines(trace)
    yield from block_notes(trace, view)
    shown = shown_heads(trace, view)
    noted = False
    for stage in trace:
        if stage.head is not None and stage.head not in shown:
            if not noted:
                yield Text("")
                yield hidden_heads_note(trace, shown)
                noted = True
            continue
        yield Text("")
        yield stage_block(stage, trace, view)
