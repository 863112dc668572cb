"""`quiz --json`: the questions asked and how each went, as ``attntrace/quiz/v1``
(attntrace/schema/quiz-v1.schema.json; docs/json.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attntrace.kernel.documents import cell, model_to_dict, texts
from attntrace.kernel.trace import Trace
from attntrace.quiz.session import Outcome

SCHEMA = "attntrace/quiz/v1"


def outcome_to_dict(outcome: Outcome) -> dict[str, Any]:
    """One question: its cell, the expected value (−∞ as null: a masked cell), the
    answers given, the hints shown, right or not, and the points."""
    q = outcome.question
    return {
        "stage": q.stage,
        "head": q.head,
        "row": q.row,
        "col": q.col,
        "row_label": q.row_label,
        "col_label": q.col_label,
        "expected": cell(q.expected),
        "shown": outcome.shown,
        "answers": [
            {"text": a.text, "value": cell(a.value), "correct": a.correct} for a in outcome.answers
        ],
        "hints": list(outcome.hints),
        "correct": outcome.correct,
        "ended": outcome.ended,
        "points": q.points,
        "score": outcome.score,
    }


def quiz_to_dict(
    trace: Trace,
    outcomes: Sequence[Outcome],
    *,
    seed: int | None,
    exercise: str | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """The whole quiz: the model and tokens, each question, and the score."""
    return {
        "schema": SCHEMA,
        "exercise": exercise,
        "title": title,
        "seed": seed,
        "model": model_to_dict(trace.model),
        "tokens": texts(trace.tokens),
        "context_tokens": None if trace.context_tokens is None else texts(trace.context_tokens),
        "questions": [outcome_to_dict(o) for o in outcomes],
        "score": sum(o.score for o in outcomes),
        "total": sum(o.question.points for o in outcomes),
        "correct": all(o.correct for o in outcomes),
        "after_hints": sum(o.after_hints for o in outcomes),
    }
