"""`train`: plain gradient descent on the block's own weights, W ← W − lr·dL/dW.

Each step traces the block, resolves the loss the user named
(:func:`attntrace.learning.objective.resolve`), takes its gradients from
:func:`attntrace.learning.backward.grad_block` and moves the named matrices against them;
nothing else changes. The record (:class:`Training`) keeps the settings, the model
before and after, one :class:`StepRecord` per step (step 0 is the model before any
update) and each trained matrix's change, so a view, the JSON writer and ``--save``
read the same numbers (docs/learning.md, ``attntrace train``).

Deterministic: the same model, tokens and settings give the same numbers, bit for bit
on one machine. ``--init random`` draws from ``numpy.random.default_rng(seed)`` in the
fixed order WQ, WK, WV, WO (every one the model has, trained or not, so the draw of WK
does not depend on whether WQ is trained), each of normal numbers with standard
deviation 1/√d_model; a trained bias starts at 0.

Bounded before it starts (:func:`check_work`): a run's work, steps × a step's work
(:func:`step_work`), is at most :data:`MAX_WORK`, so the largest run takes some
half a minute on a 2-core machine (``benchmarks/train.py``); and the rows of weights
it keeps, steps × heads × keys, at most :data:`MAX_HISTORY` floats (64 MiB). The
history is kept as numpy arrays (:class:`Training`), not Python floats, and the rows
only where asked (``keep_rows``: ``--json`` and the Python API; the table does not
show them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.errors import InputError
from attntrace.forward.attention import trace_block
from attntrace.kernel import progress
from attntrace.kernel.budget import FLOAT, Extra, also_counted, trace_bytes
from attntrace.kernel.frozen import computed
from attntrace.kernel.ops import Matrix
from attntrace.kernel.spec import BIAS_OF_WEIGHT, ModelSpec
from attntrace.kernel.trace import Trace
from attntrace.learning.backward import Gradients, grad_block
from attntrace.learning.objective import Objective, Resolved, resolve

Vector = npt.NDArray[np.float64]
Rows = npt.NDArray[np.float64]  # steps + 1 × heads × keys

MATRICES = ("WQ", "WK", "WV", "WO")
TRAINABLE = (*MATRICES, "bQ", "bK", "bV", "bO")
DEFAULT_NAMES = ("WQ", "WK")
DEFAULT_STEPS = 100
DEFAULT_LR = 0.5
MAX_STEPS = 100_000
# A step's work (step_work) times the steps: 2**32 is some 10-30 s of a 2-core machine,
# measured by benchmarks/train.py (a unit is about 3 ns of numpy and Python).
MAX_WORK = 2**32
# What a head's step costs besides its arithmetic (Python: the trace's stages, the
# gradients' checks), in the units of step_work: about 0.7 ms.
HEAD_OVERHEAD = 2**18
# The rows of weights kept (steps + 1) × heads × keys, in floats: 64 MiB of float64.
MAX_HISTORY = 2**23
INITS = ("model", "random")
# What the attend loss cannot reach: it reads the softmax, which WV, WO and their
# biases come after.
AFTER_SOFTMAX = ("WV", "WO", "bV", "bO")


@dataclass(frozen=True, eq=False)
class StepRecord:
    """The model after ``step`` updates (step 0: before any): its ``loss`` and, under the
    attend loss, per head the loss reads, the to-token's weight (``to_weights``, one per
    head) and the from-token's whole row of weights (``rows``, heads × keys); both
    empty (no heads) under mse, and ``rows`` too in a history kept without rows."""

    step: int
    loss: float
    to_weights: Vector
    rows: Matrix


@dataclass(frozen=True, eq=False)
class Change:
    """A trained matrix (a bias as one row) before and after: ``delta`` = after − before,
    ``largest`` its largest |Δ|, at ``where`` (row, column)."""

    name: str
    before: Matrix
    after: Matrix

    @property
    def delta(self) -> Matrix:
        return computed(self.after - self.before)

    @property
    def where(self) -> tuple[int, int]:
        index = np.unravel_index(int(np.argmax(np.abs(self.delta))), self.delta.shape)
        return int(index[0]), int(index[1])

    @property
    def largest(self) -> float:
        return float(abs(self.delta[self.where]))


@dataclass(frozen=True, eq=False)
class Training:
    """A whole run: the settings, the models ``initial`` (after ``init``) and ``final``,
    the loss as resolved on the initial model (``loss``: its formula, cell, heads), the
    history as arrays of ``steps`` + 1 entries (``losses``; ``weights``, steps + 1 ×
    heads; ``rows``, steps + 1 × heads × keys, or None where not kept), the ``changes``
    of each trained matrix, in the order of ``names``, and the traces ``before`` (step
    0) and ``after`` (the last step), for the views' labels and the model's sizes."""

    objective: Objective
    names: tuple[str, ...]
    steps: int
    lr: float
    init: str
    seed: int
    tokens: tuple[str, ...]
    context: tuple[str, ...] | None
    initial: ModelSpec
    final: ModelSpec
    loss: Resolved
    losses: Vector
    weights: Matrix
    rows: Rows | None
    changes: tuple[Change, ...]
    before: Trace
    after: Trace

    def record(self, step: int) -> StepRecord:
        """Step ``step``'s numbers (views of the arrays, nothing copied)."""
        heads = self.weights.shape[1]
        rows = self.rows[step] if self.rows is not None else np.zeros((heads, 0))
        return StepRecord(step, float(self.losses[step]), self.weights[step], rows)

    @property
    def history(self) -> tuple[StepRecord, ...]:
        return tuple(self.record(step) for step in range(self.steps + 1))

    @property
    def first(self) -> StepRecord:
        return self.record(0)

    @property
    def last(self) -> StepRecord:
        return self.record(self.steps)


# Called after each step: its record, its model's trace, its loss as resolved.
OnStep = Callable[[StepRecord, Trace, Resolved], None]


def check_settings(
    model: ModelSpec,
    objective: Objective,
    names: Sequence[str],
    steps: int,
    lr: float,
    init: str,
    seed: int = 0,
) -> tuple[str, ...]:
    """The names to train, checked (duplicates dropped, in the order given), and the
    other settings; an :class:`InputError` for the first that does not fit."""
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise InputError(
            field="--steps", expected=f"a whole number from 1 to {MAX_STEPS:,}", found=repr(steps)
        )
    if isinstance(lr, bool) or not isinstance(lr, int | float) or not math.isfinite(lr) or lr <= 0:
        raise InputError(
            field="--lr", expected="a finite number > 0 (the learning rate)", found=repr(lr)
        )
    if init not in INITS:
        raise InputError(field="--init", expected=" or ".join(INITS), found=repr(init))
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(field="--seed", expected="a whole number ≥ 0", found=repr(seed))
    chosen = tuple(dict.fromkeys(names))
    if not chosen:
        raise InputError(
            field="--train", expected=f"names from {', '.join(TRAINABLE)}", found="none"
        )
    for name in chosen:
        if name not in TRAINABLE:
            raise InputError(
                field="--train", expected=f"names from {', '.join(TRAINABLE)}", found=repr(name)
            )
        if _current(model, name) is None:
            raise InputError(
                _lacks(model, name),
                field="--train",
                expected=f"names of what this model has: {', '.join(has(model))}",
                found=name,
            )
        rope = model.position_kind == "rope"
        before = "WQ, WK, bQ, bK" if rope else "WQ, WK, bQ"
        if objective.kind == "attend" and name in AFTER_SOFTMAX:
            raise InputError(
                f"the attend loss reads the softmax, and {name} acts after it: its gradient "
                f"is 0, so it would never change (train {before}, or use --loss mse)",
                field="--train",
                expected=f"{before.replace(', bQ', ' or bQ')} under the attend loss",
                found=name,
            )
        if name == "bK" and not rope:
            raise InputError(
                "bK adds q·bK to every score of a query's row, and a softmax does not move "
                "when its whole row shifts: its gradient is 0, so it would never change "
                "(it matters only with rope positions, which turn it by position)",
                field="--train",
                expected="a name that moves the weights",
                found="bK",
            )
    return chosen


def step_work(model: ModelSpec, n: int, m: int) -> int:
    """What one step of ``n`` queries over ``m`` keys costs, in units of about 3 ns:
    per head, the n × m scores and weights forward and back (d_k + d_v + 8 numbers a
    cell), its projections ((d_k + d_v) × d_model a token) and :data:`HEAD_OVERHEAD`."""
    width = model.d_k + model.d_v
    per_head = (width + 8) * n * m + width * model.d_model * (n + m) + HEAD_OVERHEAD
    return model.heads * per_head


def largest_steps(model: ModelSpec, n: int, m: int, heads_read: int, *, keep_rows: bool) -> int:
    """The most steps :func:`check_work` allows this model and sentence."""
    largest = min(MAX_STEPS, MAX_WORK // step_work(model, n, m))
    if keep_rows and heads_read:
        largest = min(largest, MAX_HISTORY // (heads_read * m) - 1)
    return max(largest, 0)


def check_work(
    model: ModelSpec, n: int, m: int, heads_read: int, steps: int, *, keep_rows: bool
) -> None:
    """Refuse a run whose work is over :data:`MAX_WORK`, or whose kept rows of weights
    are over :data:`MAX_HISTORY` floats, before it starts: it says the most steps this
    model allows."""
    largest = largest_steps(model, n, m, heads_read, keep_rows=keep_rows)
    if steps <= largest:
        return
    work = step_work(model, n, m)
    if largest == min(MAX_STEPS, MAX_WORK // work):
        why = (
            f"a step's work on {n:,} tokens × {m:,} keys × {model.heads} "
            f"head{'s' if model.heads > 1 else ''} is {work:,}, and a run's may be at "
            f"most 2**32 = {MAX_WORK:,}, about half a minute at most"
        )
    else:
        why = (
            f"the history keeps each step's {heads_read} × {m:,} weights, at most "
            f"{MAX_HISTORY:,} floats in all"
        )
    raise InputError(
        field="--steps", expected=f"at most {largest:,} for this model ({why})", found=f"{steps:,}"
    )


def has(model: ModelSpec) -> tuple[str, ...]:
    """The trainable matrices ``model`` has, in TRAINABLE's order."""
    return tuple(name for name in TRAINABLE if _current(model, name) is not None)


def initial_model(model: ModelSpec, names: Sequence[str], init: str, seed: int) -> ModelSpec:
    """``model`` as training starts: itself (``model``), or with the trained matrices
    drawn afresh (``random``: see the module's docstring for the order and the scale)."""
    if init == "model":
        return model
    rng = np.random.default_rng(seed)
    scale = 1.0 / math.sqrt(model.d_model)
    drawn = {}
    for name in MATRICES:
        current = _current(model, name)
        if current is not None:
            drawn[name] = rng.normal(0.0, scale, size=current.shape)
    fresh: dict[str, Matrix] = {}
    for name in names:
        current = _current(model, name)
        assert current is not None  # check_settings refused what the model lacks
        fresh[name] = drawn[name] if name in MATRICES else np.zeros_like(current)
    return _with(model, fresh)


def train(
    model: ModelSpec,
    tokens: Sequence[str],
    context: Sequence[str] | None,
    objective: Objective,
    *,
    names: Sequence[str] = DEFAULT_NAMES,
    steps: int = DEFAULT_STEPS,
    lr: float = DEFAULT_LR,
    init: str = "model",
    seed: int = 0,
    on_step: OnStep | None = None,
    keep_rows: bool = True,
) -> Training:
    """Gradient descent on ``names`` of ``model`` for ``steps`` steps of rate ``lr``.

    ``on_step(record, trace, resolved)`` is called after each step's numbers are known
    (step 0 first), with that model's trace and loss: a live view draws from it, and a
    KeyboardInterrupt it lets through (or one between steps) ends the run there.
    ``keep_rows=False`` keeps no rows of weights in the history (a view that shows only
    the to-weights). Raises :class:`InputError` for settings that do not fit (see
    :func:`check_settings`), a run over the work bound (:func:`check_work`), a loss that
    does not fit the sentence, and a step whose numbers overflow float64.
    """
    chosen = check_settings(model, objective, names, steps, lr, init, seed)
    keys = None if context is None else tuple(context)
    n = len(tokens)
    m = n if keys is None else len(keys)
    heads_read = (
        0 if objective.kind != "attend" else 1 if objective.head is not None else model.heads
    )
    check_work(model, n, m, heads_read, steps, keep_rows=keep_rows)
    # each step's loss and to-weights, and with keep_rows its rows of weights
    history = FLOAT * (steps + 1) * (1 + heads_read * (1 + (m if keep_rows else 0)))
    start = initial_model(model, chosen, init, seed)
    current = start
    losses = np.zeros(steps + 1)
    weights: Matrix | None = None
    rows: Rows | None = None
    first: Resolved | None = None
    before: Trace | None = None
    with progress.task(f"training {model.name}", steps + 1, "steps") as training:
        for step in range(steps + 1):
            trace, resolved, gradients = _measure(
                current, tokens, keys, objective, step, lr, last=step == steps, history=history
            )
            record = _record(step, trace, resolved)
            if step == 0:
                first, before = resolved, trace
                weights = np.zeros((steps + 1, *record.to_weights.shape))
                rows = np.zeros((steps + 1, *record.rows.shape)) if keep_rows else None
            assert weights is not None
            losses[step] = record.loss
            weights[step] = record.to_weights
            if rows is not None:
                rows[step] = record.rows
            if on_step is not None:
                on_step(record, trace, resolved)
            if gradients is not None:
                current = _step(current, chosen, gradients, lr, step + 1)
            training.advance()
    assert first is not None
    assert before is not None
    assert weights is not None
    changes = tuple(
        Change(name, _as_matrix(_current(start, name)), _as_matrix(_current(current, name)))
        for name in chosen
    )
    return Training(
        objective,
        chosen,
        steps,
        float(lr),
        init,
        seed,
        tuple(tokens),
        keys,
        start,
        current,
        first,
        losses,
        weights,
        rows,
        changes,
        before,
        trace,
    )


def _measure(
    model: ModelSpec,
    tokens: Sequence[str],
    context: Sequence[str] | None,
    objective: Objective,
    step: int,
    lr: float,
    *,
    last: bool,
    history: int = 0,
) -> tuple[Trace, Resolved, Gradients | None]:
    """The model's trace, loss and (but at the last step) gradients. At step 0 an
    error is the input's, said as it is; later it is the learning's: too large a rate.
    The trace is counted against the budget with ``history``, the bytes the run keeps of
    every step."""
    try:
        with np.errstate(over="ignore", invalid="ignore"), also_counted(_training_parts(history)):
            trace = trace_block(model, tokens, context)
        resolved = resolve(objective, model, trace)
        if not math.isfinite(resolved.loss.value):
            raise InputError("the loss is not finite")
        gradients = (
            None
            if last
            else grad_block(
                model,
                tokens,
                context,
                d_output=resolved.loss.d_output,
                d_softmax=resolved.loss.d_softmax,
                forward=trace,
            )
        )
    except InputError as error:
        if step == 0:
            raise
        raise _diverged(step, lr, str(error)) from None
    return trace, resolved, gradients


def _training_parts(history: int) -> Extra:
    """What a step holds besides its trace: its gradients and the previous step's
    (with their losses), the first step's trace (what changed is told against it) and
    the previous step's, still held as this one is computed, and the ``history`` kept
    of every step (in bytes)."""
    from attntrace.learning.grad_trace import gradient_parts

    def parts(model: ModelSpec, n: int, m: int) -> dict[str, int]:
        gradients = sum(gradient_parts(model, n, m).values())
        return {
            "the gradients of two steps": 2 * gradients,
            "the first and the last traces": 2 * trace_bytes(model, n, m),
            "the history": history,
        }

    return parts


def _step(
    model: ModelSpec, names: Sequence[str], gradients: Gradients, lr: float, step: int
) -> ModelSpec:
    """The model one step on: each named matrix moved by −lr times its gradient."""
    moved: dict[str, Matrix] = {}
    with np.errstate(over="ignore", invalid="ignore"):
        for name in names:
            current = _current(model, name)
            gradient = getattr(gradients, f"d_{name}")
            assert current is not None
            assert gradient is not None
            updated = current - lr * gradient
            if not np.isfinite(updated).all():
                raise _diverged(step, lr, f"{name} overflowed float64")
            moved[name] = updated
    return _with(model, moved)


def _diverged(step: int, lr: float, why: str) -> InputError:
    return InputError(
        f"the training diverged at step {step} with a rate of {lr!r} ({why}): lower --lr",
        field="--lr",
    )


def _record(step: int, trace: Trace, resolved: Resolved) -> StepRecord:
    if resolved.cell is None:
        return StepRecord(step, resolved.loss.value, np.zeros(0), np.zeros((0, 0)))
    row, col = resolved.cell
    rows = np.array([trace.stage("softmax", head=h).data[row] for h in resolved.heads])
    return StepRecord(step, resolved.loss.value, rows[:, col].copy(), rows)


def _current(model: ModelSpec, name: str) -> Matrix | None:
    """The model's matrix or bias vector ``name``; None where it has none."""
    if name in MATRICES:
        value: Matrix | None = getattr(model, name)
        return value
    return model.bias(name)


def _as_matrix(value: Matrix | None) -> Matrix:
    assert value is not None  # a trained name: the model has it
    return value if value.ndim == 2 else value[None, :]


def _with(model: ModelSpec, replaced: dict[str, Matrix]) -> ModelSpec:
    """``model`` with these matrices and biases in place of its own (re-validated)."""
    weights: dict[str, Any] = {n: v for n, v in replaced.items() if n in MATRICES}
    biases = {n: v for n, v in replaced.items() if n in BIAS_OF_WEIGHT}
    if biases:
        weights["biases"] = {**model.biases, **biases}
    return replace(model, **weights)


def _lacks(model: ModelSpec, name: str) -> str:
    if name == "WO":
        return "this model has no WO (no output projection): there is nothing to train"
    if name == "bO" and model.WO is None:
        return "this model has no bO: an output bias needs WO, and the model has neither"
    return (
        f"this model has no {name}: add one to the model file (biases.{name}), or train what it has"
    )
