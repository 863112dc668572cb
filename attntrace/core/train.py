"""`train`: plain gradient descent on the block's own weights, W ← W − lr·dL/dW.

Each step traces the block, resolves the loss the user named
(:func:`attntrace.core.objective.resolve`), takes its gradients from
:func:`attntrace.core.backward.grad_block` and moves the named matrices against them;
nothing else changes. The record (:class:`Training`) keeps the settings, the model
before and after, one :class:`StepRecord` per step (step 0 is the model before any
update) and each trained matrix's change, so a view, the JSON writer and ``--save``
read the same numbers (docs/learning.md, ``attntrace train``).

Deterministic: the same model, tokens and settings give the same numbers, bit for bit
on one machine. ``--init random`` draws from ``numpy.random.default_rng(seed)`` in the
fixed order WQ, WK, WV, WO (every one the model has, trained or not, so the draw of WK
does not depend on whether WQ is trained), each of normal numbers with standard
deviation 1/√d_model; a trained bias starts at 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from attntrace.core.attention import trace_block
from attntrace.core.backward import Gradients, grad_block
from attntrace.core.frozen import computed
from attntrace.core.objective import Objective, Resolved, resolve
from attntrace.core.ops import Matrix
from attntrace.core.spec import BIAS_OF_WEIGHT, ModelSpec
from attntrace.core.trace import Trace
from attntrace.errors import InputError

MATRICES = ("WQ", "WK", "WV", "WO")
TRAINABLE = (*MATRICES, "bQ", "bK", "bV", "bO")
DEFAULT_NAMES = ("WQ", "WK")
DEFAULT_STEPS = 100
DEFAULT_LR = 0.5
MAX_STEPS = 100_000
INITS = ("model", "random")
# What the attend loss cannot reach: it reads the softmax, which WV, WO and their
# biases come after.
AFTER_SOFTMAX = ("WV", "WO", "bV", "bO")


@dataclass(frozen=True, eq=False)
class StepRecord:
    """The model after ``step`` updates (step 0: before any): its ``loss`` and, under the
    attend loss, per head the loss reads, the to-token's weight (``to_weights``) and the
    from-token's whole row of weights (``rows``); both empty under mse."""

    step: int
    loss: float
    to_weights: tuple[float, ...]
    rows: tuple[tuple[float, ...], ...]


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
    ``history`` (``steps`` + 1 records), the ``changes`` of each trained matrix, in
    the order of ``names``, and the traces ``before`` (step 0) and ``after`` (the last
    step), for the views' labels and the model's sizes."""

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
    history: tuple[StepRecord, ...]
    changes: tuple[Change, ...]
    before: Trace
    after: Trace

    @property
    def first(self) -> StepRecord:
        return self.history[0]

    @property
    def last(self) -> StepRecord:
        return self.history[-1]


# Called after each step: its record, its model's trace, its loss as resolved.
OnStep = Callable[[StepRecord, Trace, Resolved], None]


def check_settings(
    model: ModelSpec, objective: Objective, names: Sequence[str], steps: int, lr: float,
    init: str, seed: int = 0,
) -> tuple[str, ...]:  # fmt: skip
    """The names to train, checked (duplicates dropped, in the order given), and the
    other settings; an :class:`InputError` for the first that does not fit."""
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise InputError(field="--steps", expected=f"a whole number from 1 to {MAX_STEPS:,}",
                         found=repr(steps))  # fmt: skip
    if isinstance(lr, bool) or not isinstance(lr, int | float) or not math.isfinite(lr) \
            or lr <= 0:  # fmt: skip
        raise InputError(field="--lr", expected="a finite number > 0 (the learning rate)",
                         found=repr(lr))  # fmt: skip
    if init not in INITS:
        raise InputError(field="--init", expected=" or ".join(INITS), found=repr(init))
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(field="--seed", expected="a whole number ≥ 0", found=repr(seed))
    chosen = tuple(dict.fromkeys(names))
    if not chosen:
        raise InputError(field="--train", expected=f"names from {', '.join(TRAINABLE)}",
                         found="none")  # fmt: skip
    for name in chosen:
        if name not in TRAINABLE:
            raise InputError(field="--train", expected=f"names from {', '.join(TRAINABLE)}",
                             found=repr(name))  # fmt: skip
        if _current(model, name) is None:
            raise InputError(_lacks(model, name), field="--train",
                             expected=f"names of what this model has: {', '.join(has(model))}",
                             found=name)  # fmt: skip
        if objective.kind == "attend" and name in AFTER_SOFTMAX:
            raise InputError(
                f"the attend loss reads the softmax, and {name} acts after it: its gradient "
                "is 0, so it would never change (train WQ, WK, bQ, bK, or use --loss mse)",
                field="--train", expected="WQ, WK, bQ or bK under the attend loss", found=name,
            )  # fmt: skip
    return chosen


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
) -> Training:
    """Gradient descent on ``names`` of ``model`` for ``steps`` steps of rate ``lr``.

    ``on_step(record, trace, resolved)`` is called after each step's numbers are known
    (step 0 first), with that model's trace and loss: a live view draws from it, and a
    KeyboardInterrupt it lets through (or one between steps) ends the run there. Raises
    :class:`InputError` for settings that do not fit (see :func:`check_settings`), a
    loss that does not fit the sentence, and a step whose numbers overflow float64.
    """
    chosen = check_settings(model, objective, names, steps, lr, init, seed)
    keys = None if context is None else tuple(context)
    start = initial_model(model, chosen, init, seed)
    current = start
    history: list[StepRecord] = []
    first: Resolved | None = None
    before: Trace | None = None
    for step in range(steps + 1):
        trace, resolved, gradients = _measure(current, tokens, keys, objective, step, lr,
                                              last=step == steps)  # fmt: skip
        if step == 0:
            first, before = resolved, trace
        record = _record(step, trace, resolved)
        history.append(record)
        if on_step is not None:
            on_step(record, trace, resolved)
        if gradients is not None:
            current = _step(current, chosen, gradients, lr, step + 1)
    assert first is not None
    assert before is not None
    changes = tuple(Change(name, _as_matrix(_current(start, name)),
                           _as_matrix(_current(current, name))) for name in chosen)  # fmt: skip
    return Training(objective, chosen, steps, float(lr), init, seed, tuple(tokens), keys,
                    start, current, first, tuple(history), changes, before, trace)  # fmt: skip


def _measure(
    model: ModelSpec, tokens: Sequence[str], context: Sequence[str] | None,
    objective: Objective, step: int, lr: float, *, last: bool,
) -> tuple[Trace, Resolved, Gradients | None]:  # fmt: skip
    """The model's trace, loss and (but at the last step) gradients. At step 0 an
    error is the input's, said as it is; later it is the learning's: too large a rate."""
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            trace = trace_block(model, tokens, context)
        resolved = resolve(objective, model, trace)
        if not math.isfinite(resolved.loss.value):
            raise InputError("the loss is not finite")
        gradients = None if last else grad_block(
            model, tokens, context, d_output=resolved.loss.d_output,
            d_softmax=resolved.loss.d_softmax, forward=trace)  # fmt: skip
    except InputError as error:
        if step == 0:
            raise
        raise _diverged(step, lr, str(error)) from None
    return trace, resolved, gradients


def _step(model: ModelSpec, names: Sequence[str], gradients: Gradients, lr: float,
          step: int) -> ModelSpec:  # fmt: skip
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
    return InputError(f"the training diverged at step {step} with a rate of {lr!r} "
                      f"({why}): lower --lr", field="--lr")  # fmt: skip


def _record(step: int, trace: Trace, resolved: Resolved) -> StepRecord:
    if resolved.cell is None:
        return StepRecord(step, resolved.loss.value, (), ())
    row, col = resolved.cell
    rows = tuple(trace.stage("softmax", head=h).data[row] for h in resolved.heads)
    return StepRecord(step, resolved.loss.value, tuple(float(r[col]) for r in rows),
                      tuple(tuple(float(w) for w in r) for r in rows))  # fmt: skip


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
    return (f"this model has no {name}: add one to the model file (biases.{name}), "
            "or train what it has")  # fmt: skip
