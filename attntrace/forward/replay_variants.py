"""A saved trace's variant keys (``model.window``, ``model.qk_norm``, ...) -> :class:`Variants`.

:func:`attntrace.kernel.documents.variants_to_dict` writes them (docs/variants.md, "JSON");
this reads them back, each checked at its field path as :mod:`attntrace.forward.replay`
checks the model's sizes, so ``run --json | render -`` shows what ``run`` showed (the
header names the options, the masked formula its window). A key absent is the option
off: a trace saved before the variants existed reads as it did.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from attntrace.errors import InputError, describe
from attntrace.kernel import fields
from attntrace.kernel.frozen import freeze
from attntrace.kernel.variants import DEFAULT_QK_NORM_EPS, MOST_POSITIONS, Variants


def saved_variants(model: Mapping[str, Any], *, heads: int, d_k: int, causal: bool) -> Variants:
    """The variants of the saved ``model`` object (``Variants()`` without any key)."""
    window = _optional_count(model, "window", least=1)
    if window is not None and not causal:
        raise InputError(
            field="model.window", expected="causal: true with a window", found="causal: false"
        )
    sinks = _optional_count(model, "sinks", least=0) or 0
    if sinks and window is None:
        raise InputError(field="model.sinks", expected="a window with sinks", found="no window")
    slopes = None
    if "alibi_slopes" in model:
        if model.get("positions") != "alibi":
            raise InputError(
                field="model.alibi_slopes",
                expected='positions "alibi" with them',
                found=describe(model.get("positions", "none")),
            )
        slopes = _per_head(model["alibi_slopes"], "model.alibi_slopes", heads, positive=True)
    elif model.get("positions") == "alibi":
        raise InputError(
            field="model.alibi_slopes", expected=f'{heads} slopes (positions "alibi")', found="none"
        )
    qk = _qk_norm(model.get("qk_norm"), d_k)
    softcap = None
    if "softcap" in model:
        softcap = fields.number(model["softcap"], "model.softcap")
        if not softcap > 0:
            raise InputError(
                field="model.softcap", expected="a number > 0", found=describe(model["softcap"])
            )
    sinks_logits = None
    if "sink_logits" in model:
        sinks_logits = _per_head(model["sink_logits"], "model.sink_logits", heads)
    return Variants(
        window=window,
        sinks=sinks,
        alibi_slopes=slopes,
        softcap=softcap,
        sink_logit=sinks_logits,
        **qk,
    )


def _optional_count(model: Mapping[str, Any], key: str, *, least: int) -> int | None:
    if key not in model:
        return None
    return fields.whole(model[key], f"model.{key}", least=least, most=MOST_POSITIONS)


def _per_head(value: Any, field: str, heads: int, *, positive: bool = False) -> tuple[float, ...]:
    listed = fields.items(value, field, expected=f"a list of {heads} numbers (one per head)")
    if len(listed) != heads:
        raise InputError(
            field=field, expected=f"{heads} numbers (one per head)", found=describe(len(listed))
        )
    numbers = tuple(fields.number(v, f"{field}[{i}]") for i, v in enumerate(listed))
    for index, number in enumerate(numbers):
        if positive and not number > 0:
            raise InputError(
                field=f"{field}[{index}]", expected="a number > 0", found=describe(number)
            )
    return numbers


def _qk_norm(value: Any, d_k: int) -> dict[str, Any]:
    """``qk_norm: {eps, q_norm, k_norm}`` -> the Variants fields (none when absent)."""
    if value is None:
        return {}
    qk = fields.mapping(value, "model.qk_norm", "an object with eps, q_norm, k_norm")
    fields.known_keys(qk, ("eps", "q_norm", "k_norm"), "model.qk_norm", noun="key")
    eps = fields.number(qk.get("eps", DEFAULT_QK_NORM_EPS), "model.qk_norm.eps")
    if not eps > 0:
        raise InputError(
            field="model.qk_norm.eps", expected="a number > 0", found=describe(qk.get("eps"))
        )
    out: dict[str, Any] = {"qk_norm": True, "qk_norm_eps": eps}
    for name in ("q_norm", "k_norm"):
        weight = qk.get(name)
        if weight is None:
            continue
        where = f"model.qk_norm.{name}"
        numbers = fields.numbers(weight, where)
        if len(numbers) != d_k:
            raise InputError(
                field=where, expected=f"{d_k} numbers (d_k)", found=describe(len(numbers))
            )
        out[name] = freeze(np.array(numbers, dtype=np.float64), finite=True)
    return out
