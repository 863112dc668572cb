"""A real model's layer as a :class:`ModelSpec`: what `run --model` and `decode --model`
trace, and the ranking of every head that `attntrace heads` prints.

The model runs its earlier layers (numpy, float64) to get the hidden state the chosen
layer reads; that becomes X, given row by row, and the layer's own weights (with their
biases, RoPE and causal mask) become the spec. attntrace's tracer then recomputes that
layer stage by stage, like any model file.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from attntrace import arguments
from attntrace.errors import InputError
from attntrace.forward.attention import trace_block
from attntrace.kernel import progress
from attntrace.kernel.casting import Cast
from attntrace.kernel.spec import GivenInputs, ModelSpec
from attntrace.kernel.trace import Trace
from attntrace.real.catalog import CATALOG, RealModel, find_model
from attntrace.real.disk.located import Located
from attntrace.real.forward import Transformer
from attntrace.visible import quoted

# The classic question of attention: what does "it" refer to?
DEFAULT_SENTENCE = "The animal didn't cross the street because it was tired."


@dataclass(frozen=True)
class Names:
    """How messages name the inputs: the CLI's flags, or the Python arguments."""

    model: str
    sentence: str
    layer: str
    head: str


CLI_NAMES = Names("--model", "SENTENCE", "--layer", "--head")
PYTHON_NAMES = Names("name", "sentence", "layer", "head")


def open_model(name: str) -> Transformer:
    """The model ``name`` (``minilm``, ``smollm2``: see ``attntrace models``), loaded once
    per process from its verified weight file. A name not in the catalogue, or weights
    not installed, is an :class:`InputError` saying what to do."""
    arguments.text(name, "name")
    return model_for(name, PYTHON_NAMES.model)


def model_for(name: str, field: str = "--model") -> Transformer:
    """The model ``--model`` names, opened once per process: every command that takes
    ``--model`` asks here, so what the flag accepts is decided in one place: a
    catalogued name, a GGUF file, a Hugging Face folder, ``ORG/NAME[@REV]`` from the
    Hugging Face cache or ``ollama:NAME[:TAG]`` (:func:`attntrace.real.disk.locate.locate`).
    ``field`` names the flag (or the Python argument) in the error."""
    from attntrace.real.disk.locate import locate

    located = locate(name, field)
    if located.catalogued is not None:
        return opened(located.catalogued.name)
    return opened_on_disk(located)


@cache
def opened_on_disk(located: Located) -> Transformer:
    """A model found on disk, opened once per process (:mod:`attntrace.real.on_disk`)."""
    from attntrace.real.on_disk import open_located

    return open_located(located)


@cache
def opened(name: str) -> Transformer:
    """:func:`open_model` for a catalogue name, unchecked (``__wrapped__``: uncached)."""
    spec = find_model(name)
    path = spec.verified_weights()
    with progress.task(f"opening {spec.name}"):
        if spec.architecture == "bert":
            from attntrace.real.bert import Bert

            return Bert.load(path)
        if spec.architecture == "gemma3":
            from attntrace.real.gemma import Gemma3

            return Gemma3.load(path, verified_sha256=spec.sha256)
        from attntrace.real.llama import Llama

        return Llama.load(path, verified_sha256=spec.sha256)


@dataclass(frozen=True)
class Tokenized:
    """A sentence as the model reads it: ids, and labels as its vocabulary spells them."""

    ids: list[int]
    labels: tuple[str, ...]


def tokenize(model: Transformer, sentence: str | None, field: str = "SENTENCE") -> Tokenized:
    """``sentence`` (None: the default one) as the model reads it, within its limit."""
    text = DEFAULT_SENTENCE if sentence is None else sentence
    ids = model.tokenizer.encode(text)
    name, limit = model.spec.name, model.spec.max_tokens
    if not text.strip() or len(ids) <= model.added_tokens:  # no token but [CLS], [SEP]
        # SmolLM2's vocabulary has no symbol for a few bytes (\x04, \xff, ...) and BERT
        # drops control characters: a sentence of only those has no token of its own
        why = "empty sentence" if not text.strip() else f"{name}'s vocabulary spells none of it"
        raise InputError(
            why, field=field, expected="at least one token", found=f"none from {quoted(text, 40)}"
        )
    if len(ids) > limit:
        raise InputError(
            field=field, expected=f"at most {limit} tokens for {name}", found=f"{len(ids)} tokens"
        )
    return Tokenized(ids, tuple(model.labels(ids)))


def check_index(spec: RealModel, what: str, index: int, count: int, field: str) -> None:
    """``--layer`` or ``--head`` (``what``, named ``field``) within the model's ``count``."""
    if not 0 <= index < count:
        raise InputError(
            field=field,
            expected=f"a {what} from 0 to {count - 1} ({spec.name} has {count})",
            found=str(index),
        )


def trace_layer(
    name: str, sentence: str | None = None, layer: int = 0, head: int | None = None
) -> Trace:
    """The trace of layer ``layer`` of model ``name`` over ``sentence`` (None: the
    default one, about "it" and "animal"); with ``head``, cut to that head (it keeps its
    number, its columns and its K/V head).

    A wrong type is a :class:`TypeError`; an unknown model, a layer or head out of range
    or a sentence the model cannot read is an :class:`InputError` naming the argument.
    """
    arguments.text(name, "name")
    arguments.optional_text(sentence, "sentence")
    layer = arguments.whole(layer, "layer")
    head = arguments.optional_whole(head, "head")
    return layer_trace(name, sentence, layer, head, PYTHON_NAMES)


def layer_trace(
    name: str,
    sentence: str | None,
    layer: int,
    head: int | None,
    names: Names = CLI_NAMES,
    cast: Cast | None = None,
) -> Trace:
    """:func:`trace_layer` without its type checks; messages name ``names``. ``cast``
    computes the layer's attention in a narrower dtype (its X, the layer's own float64
    forward pass up to attention, given and rounded to it)."""
    model, tokens = layer_spec(name, sentence, layer, head, names)
    with progress.task(f"tracing {model.name}"):
        if cast is not None:
            from attntrace.forward.dtype import trace_low

            trace = trace_low(model, tokens, cast)
        else:
            trace = trace_block(model, tokens)
    return trace if head is None else trace.only_heads([head])


def decoder_layer(
    name: str, sentence: str | None, layer: int, head: int | None = None
) -> tuple[ModelSpec, tuple[str, ...]]:
    """Layer ``layer`` of a decoder, for `decode`: an encoder has no cache to grow."""
    spec = model_for(name).spec
    if not spec.causal:
        raise InputError(
            f"{spec.name} is an encoder: every token attends to every other, later ones "
            "too, so there is no token-by-token decoding to cache",
            field="--model",
            expected="a decoder (" + ", ".join(m.name for m in CATALOG if m.causal) + ")",
            found=spec.name,
        )
    return layer_spec(name, sentence, layer, head)


def layer_spec(
    name: str,
    sentence: str | None,
    layer: int,
    head: int | None = None,
    names: Names = CLI_NAMES,
) -> tuple[ModelSpec, tuple[str, ...]]:
    """Layer ``layer`` of model ``name`` over ``sentence``, every head (``head`` is
    only checked here: the callers show it alone)."""
    model = model_for(name, names.model)
    spec = model.spec
    check_index(spec, "layer", layer, spec.layers, names.layer)
    if head is not None:
        check_index(spec, "head", head, spec.heads, names.head)
    tokens = tokenize(model, sentence, names.sentence)
    return transformer_spec(model, tokens, layer), tokens.labels


def transformer_spec(model: Transformer, tokens: Tokenized, layer: int) -> ModelSpec:
    """Layer ``layer`` of ``model`` (any :class:`Transformer`, catalogued or opened from
    disk) over ``tokens`` as a :class:`ModelSpec`, X given: what the tracer recomputes.

    A layer whose RoPE frequencies are not one base's over the whole head (Llama 3.1's
    scaled RoPE, Phi-3's partial rotary width: ``layer_rope_frequencies``) hands them to
    the spec, which turns every pair by its own (:attr:`ModelSpec.turn_frequencies`)."""
    spec = model.spec
    weights = model.attention(layer)
    kind = model.layer_kind(layer)
    return ModelSpec(
        embeddings={},
        WQ=weights.WQ,
        WK=weights.WK,
        WV=weights.WV,
        WO=weights.WO,
        heads=spec.heads,
        kv_heads=spec.kv_heads,
        causal=spec.causal,
        # learned positions are inside X already (added before layer 0): none here
        positions="rope" if spec.positions == "rope" else None,
        rope_base=model.layer_rope_base(layer) or 10000.0,
        biases=weights.biases,
        given=GivenInputs(model.layer_input(tokens.ids, layer), model.x_formula(layer)),
        # the kind of layer heads every screen: gemma3 L4 (local), gemma3 L5 (global)
        name=f"{spec.name} L{layer}" + (f" ({kind.split()[0]})" if kind else ""),
        description=spec.title + ("" if kind is None else f" · layer {layer}: {kind}"),
        sentence=" ".join(tokens.labels),
        source=spec.name,
        rope_pairing="half",  # as Hugging Face's LLaMA turns them (llama.unpermute's layout)
        variants=model.layer_variants(layer),
        rope_frequencies=model.layer_rope_frequencies(layer),
    )


@dataclass(frozen=True)
class HeadWeight:
    """How much one head's query row puts on one key: a row of `attntrace heads`."""

    layer: int
    head: int
    weight: float
    top_key: int  # the key this query row weighs most, for comparison


@dataclass(frozen=True)
class HeadRanking:
    """Every layer × head of a model, heaviest first, by one query row's weight on a key."""

    model: RealModel
    sentence: str | None  # as given (None: the default sentence)
    tokens: tuple[str, ...]
    query: int
    key: int
    rows: list[HeadWeight]
    # which of a repeated token --from or --to took, as --focus says it ('' where none)
    notes: tuple[str, ...] = ()


# The default sentence's classic question: what does "it" refer to?
DEFAULT_QUERY, DEFAULT_KEY = "it", "animal"


def rank_heads(name: str, sentence: str | None, query: str | None, key: str | None) -> HeadRanking:
    """Rank every layer × head by the weight token ``query`` puts on token ``key``.

    ``query`` and ``key`` are tokens of the sentence (or 0-based positions), resolved as
    ``--focus`` resolves them (a repeated token means its first, and a note says so;
    ``the#4`` names another); they default to "it" and "animal" for the default sentence
    only. Under a causal mask a query sees no later key, so a key after the query is
    refused rather than ranked at 0 everywhere.
    """
    from attntrace.forward.focus import resolve_position

    model = model_for(name)
    spec = model.spec
    tokens = tokenize(model, sentence)
    if sentence is None or sentence.strip() == DEFAULT_SENTENCE:
        query, key = query or DEFAULT_QUERY, key or DEFAULT_KEY
    if query is None or key is None:
        raise InputError(
            "which token of your sentence? (it and animal are the default sentence's)",
            field="--from" if query is None else "--to",
            expected="a token or its position",
            found="none",
        )
    q, from_note = resolve_position(tokens.labels, query, "--from")
    k, to_note = resolve_position(tokens.labels, key, "--to")
    if spec.causal and k > q:
        raise InputError(
            f"{spec.name} is causal: a token attends only to itself and earlier tokens",
            field="--to",
            expected=f"a token at or before {quoted(tokens.labels[q])} (position {q})",
            found=f"{quoted(tokens.labels[k])} at position {k}",
        )
    task = f"ranking {spec.layers * spec.heads} heads"
    _refuse_ranking_past_budget(spec, len(tokens.ids), task)
    probabilities = model.run(tokens.ids, spec.layers, rows=(q,), task=task)
    rows = [
        HeadWeight(layer, head, float(p[head, 0, k]), int(np.argmax(p[head, 0])))
        for layer, p in enumerate(probabilities)
        for head in range(spec.heads)
    ]
    rows.sort(key=lambda row: (-row.weight, row.layer, row.head))
    notes = tuple(note for note in (from_note, to_note) if note)
    return HeadRanking(spec, sentence, tokens.labels, q, k, rows, notes)


# What running the layers holds beside the weights, in n × n float64 matrices a head (a
# layer's scores, probabilities and their temporaries) and in rows of d_model (the
# hidden state, its norms and the MLP's wider rows): measured on Gemma 3 at 1,000 tokens.
RANK_SQUARES = 8
RANK_ROWS = 32


def _refuse_ranking_past_budget(spec: RealModel, n: int, task: str) -> None:
    """``heads`` runs every layer over the sentence: refused before the first past the
    memory budget (the weights, opened already, are the import floor's)."""
    from attntrace.kernel.budget import FLOAT, refuse_past_budget

    refuse_past_budget(
        f"{task} over {n:,} tokens",
        {
            "a layer's attention": RANK_SQUARES * FLOAT * spec.heads * n * n,
            "the hidden states": RANK_ROWS * FLOAT * n * spec.d_model,
        },
    )
