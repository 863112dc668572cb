"""The learned matrices of a trace as stages: each weight and bias sliced per head and
labelled by its columns in the model file, so a reader checks ``Q = X · WQ`` against the
slice shown. A trace carries them beside its stages (``Trace.weights``).
"""

from __future__ import annotations

from attntrace.kernel.labels import dims
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Stage, weight_title


def weight_stages(model: ModelSpec) -> tuple[Stage, ...]:
    """The learned matrices, sliced per head and labelled by their columns in the file.

    WQ's slice for head h is columns ``[h·d_k, (h+1)·d_k)``; WK's and WV's for K/V head
    g likewise; WO is whole. A reader checks ``Q = X · WQ`` against the slice shown.
    """
    d_model, d_k, d_v = dims(model.d_model), model.d_k, model.d_v
    stages = [
        Stage(
            "WQ",
            weight_title("WQ"),
            d_model,
            dims(d_k, h * d_k),
            model.head_weight("WQ", h),
            head=h,
        )
        for h in range(model.heads)
    ]
    for name, width in (("WK", d_k), ("WV", d_v)):
        stages += [
            Stage(
                name,
                weight_title(name),
                d_model,
                dims(width, g * width),
                model.head_weight(name, g),
                kv_head=g,
            )
            for g in range(model.n_kv_heads)
        ]
    if model.WO is not None:
        stages.append(Stage("WO", weight_title("WO"), dims(model.heads * d_v), d_model, model.WO))
    return tuple(stages) + _bias_stages(model)


def _bias_stages(model: ModelSpec) -> tuple[Stage, ...]:
    """The bias vectors as one-row matrices, sliced per head like their weights."""
    d_k, d_v, stages = model.d_k, model.d_v, []
    for name, width, count, per_kv in (
        ("bQ", d_k, model.heads, False),
        ("bK", d_k, model.n_kv_heads, True),
        ("bV", d_v, model.n_kv_heads, True),
    ):
        for index in range(count):
            bias = model.head_bias(name, index)
            if bias is None:
                break
            head, kv_head = (None, index) if per_kv else (index, None)
            stages.append(
                Stage(
                    name,
                    weight_title(name),
                    (name,),
                    dims(width, index * width),
                    bias[None],
                    head=head,
                    kv_head=kv_head,
                )
            )
    bO = model.bias("bO")
    if bO is not None:
        stages.append(Stage("bO", weight_title("bO"), ("bO",), dims(model.d_model), bO[None, :]))
    return tuple(stages)
