"""A model file's keys for today's attention variants -> :class:`Variants` (docs/variants.md).

``window``, ``sinks``, ``alibi_slopes``, ``qk_norm``, ``qk_norm_eps``, ``q_norm``,
``k_norm``, ``softcap`` and ``sink_logit`` are read here, each checked for its own kind
at its key (a whole number, a flag, a number, a list per head, a vector of d_k), so a
bad value is one :class:`InputError` naming the key. How they fit the rest of the model
(a window needs ``causal: true``, slopes need ``positions: alibi`` and one per head,
q_norm needs d_k numbers) is :func:`attntrace.kernel.variants.check_variants`' job, run
by :class:`ModelSpec` for Python callers too; a setting that only means something beside
another (``sinks`` without ``window``, ``qk_norm_eps`` without ``qk_norm``) is refused
here rather than ignored, as ``rope_base`` is without rope.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attntrace.errors import InputError, describe
from attntrace.kernel import fields
from attntrace.kernel.variants import DEFAULT_QK_NORM_EPS, Variants
from attntrace.modelfile.model_matrices import vector

#: The model file's keys this module reads (docs/model-file.md#fields).
VARIANT_FIELDS = (
    "window",
    "sinks",
    "alibi_slopes",
    "qk_norm",
    "qk_norm_eps",
    "q_norm",
    "k_norm",
    "softcap",
    "sink_logit",
)


def variants_from(document: Mapping[str, Any]) -> Variants:
    """The variants the file's keys turn on (``Variants()`` where it gives none)."""
    window = _window(document.get("window"))
    sinks = _sinks(document, window)
    qk_norm = fields.flag(document["qk_norm"], "qk_norm") if "qk_norm" in document else False
    for key in ("qk_norm_eps", "q_norm", "k_norm"):
        if key in document and not qk_norm:
            raise InputError(
                f"{key} belongs to QK-norm",
                field=key,
                expected=f"qk_norm: true with {key}",
                found="qk_norm: false" if "qk_norm" in document else "no qk_norm",
            )
    eps = DEFAULT_QK_NORM_EPS
    if "qk_norm_eps" in document:
        eps = fields.number(document["qk_norm_eps"], "qk_norm_eps")
        if not eps > 0:
            raise InputError(
                field="qk_norm_eps",
                expected="a number > 0 (added to mean(row²))",
                found=describe(document["qk_norm_eps"]),
            )
    return Variants(
        window=window,
        sinks=sinks,
        alibi_slopes=_slopes(document),
        qk_norm=qk_norm,
        q_norm=_weight(document, "q_norm"),
        k_norm=_weight(document, "k_norm"),
        qk_norm_eps=eps,
        softcap=_softcap(document.get("softcap")),
        sink_logit=_sink_logit(document.get("sink_logit")),
    )


def _window(value: Any) -> int | None:
    """``window: N``: a query sees itself and the N − 1 keys before it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(
            field="window",
            expected="a whole number ≥ 1 (a query sees itself and window − 1 keys before it)",
            found=describe(value),
        )
    return value


def _sinks(document: Mapping[str, Any], window: int | None) -> int:
    """``sinks: S``: the first S tokens stay visible past the window (needs one)."""
    value = document.get("sinks")
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(
            field="sinks",
            expected="a whole number ≥ 0 (the first tokens kept past the window)",
            found=describe(value),
        )
    if value and window is None:
        raise InputError(
            "sinks keep the first tokens visible past a sliding window",
            field="sinks",
            expected="window: N with sinks",
            found="no window",
        )
    return value


def _slopes(document: Mapping[str, Any]) -> tuple[float, ...] | None:
    """``alibi_slopes``: one number > 0 per head, with ``positions: alibi``."""
    if "alibi_slopes" not in document:
        return None
    if document.get("positions") != "alibi":
        raise InputError(
            "alibi_slopes are ALiBi's, one per head",
            field="alibi_slopes",
            expected="positions: alibi with alibi_slopes",
            found=f"positions: {document.get('positions', 'none')}",
        )
    given = document["alibi_slopes"]
    slopes = _per_head(given, "alibi_slopes", "a list of slopes, one per head")
    for index, slope in enumerate(slopes):
        if not slope > 0:
            raise InputError(
                field=f"alibi_slopes[{index}]",
                expected="a number > 0",
                found=describe(given[index]),
            )
    return tuple(slopes)


def _per_head(value: Any, field: str, expected: str) -> list[float]:
    if not isinstance(value, list) or not value:
        raise InputError(field=field, expected=expected, found=describe(value))
    return [fields.number(entry, f"{field}[{i}]") for i, entry in enumerate(value)]


def _weight(document: Mapping[str, Any], key: str) -> Any:
    """``q_norm`` / ``k_norm``: a vector of d_k numbers (the length is ModelSpec's check)."""
    value = document.get(key)
    return None if value is None else vector(value, key)


def _softcap(value: Any) -> float | None:
    """``softcap: C``: a number > 0, logits capped to C · tanh(x / C)."""
    if value is None:
        return None
    cap = fields.number(value, "softcap", expected="a number > 0 (logits are capped to ±softcap)")
    if not cap > 0:
        raise InputError(
            field="softcap",
            expected="a number > 0 (logits are capped to ±softcap)",
            found=describe(value),
        )
    return cap


def _sink_logit(value: Any) -> float | tuple[float, ...] | None:
    """``sink_logit``: one number (every head's) or a list of one per head."""
    if value is None:
        return None
    if isinstance(value, list):
        return tuple(_per_head(value, "sink_logit", "a number, or a list of one per head"))
    return fields.number(value, "sink_logit", expected="a number, or a list of one per head")
