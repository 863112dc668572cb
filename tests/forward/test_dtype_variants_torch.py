"""The variants' low-precision stages against PyTorch in float16 and bfloat16, where torch
is installed: RMSNorm as transformers' Gemma3RMSNorm runs it (float32 inside, rounded to
the dtype once) is within tolerances.RMS_NORM_FRAMEWORK_SPACINGS; the sink as gpt-oss's
column in a float32 softmax is the same; the cap as Gemma 2's eager attention (÷ C,
tanh, · C, each in the dtype) is within tolerances.SOFTCAP_FRAMEWORK_SPACINGS of
attntrace's one rounding."""

from __future__ import annotations

from typing import Any

import naive_lowp as naive
import numpy as np
import pytest
from tolerances import RMS_NORM_FRAMEWORK_SPACINGS, SOFTCAP_FRAMEWORK_SPACINGS

from attntrace.kernel import precision
from attntrace.kernel.casting import Cast

torch = pytest.importorskip("torch", reason="PyTorch is not installed: not compared")


def dtype_of(name: str) -> Any:
    return {"float16": torch.float16, "bfloat16": torch.bfloat16}[name]


def spacings(ours: Any, theirs: Any, name: str) -> float:
    room = np.vectorize(lambda v: naive.spacing(float(v), name))(theirs)
    return float(np.max(np.abs(ours - theirs) / room))


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_rms_norm_is_gemma3s(name: str) -> None:
    cast, rng = Cast.of(name), np.random.default_rng(1)
    x, w = cast.round(rng.normal(size=(32, 64)) * 3), cast.round(rng.normal(size=64))
    t = torch.tensor(x).to(dtype_of(name)).float()
    weight = torch.tensor(w).to(dtype_of(name)).float()
    theirs = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6) * weight
    assert (
        spacings(cast.rms_norm(x, w, 1e-6), theirs.to(dtype_of(name)).double().numpy(), name)
        <= RMS_NORM_FRAMEWORK_SPACINGS
    )


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_the_sink_column_is_gpt_oss_s(name: str) -> None:
    cast, rng = Cast.of(name), np.random.default_rng(2)
    row, sink = cast.round(rng.normal(size=(32, 31)) * 5), 0.7
    column = torch.full((32, 1), sink).to(dtype_of(name))
    combined = torch.cat([torch.tensor(row).to(dtype_of(name)), column], -1)
    theirs = torch.softmax(combined.float(), -1).to(dtype_of(name)).double().numpy()
    ours = precision.softmax_in(
        np.concatenate([row, np.full((32, 1), cast.round(sink))], 1),
        name,
        "float32",
        stable=True,
        in_dtype=True,
    )
    assert spacings(ours, theirs, name) == 0


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_the_cap_is_within_spacings_of_gemma2s_eager_one(name: str) -> None:
    cast, rng, cap = Cast.of(name), np.random.default_rng(3), 30.0
    logits = cast.round(rng.normal(size=(32, 64)) * 40)
    ours = cast.round(cap * np.tanh(logits / cap))
    theirs = (torch.tanh(torch.tensor(logits).to(dtype_of(name)) / cap) * cap).double().numpy()
    assert spacings(ours, theirs, name) <= SOFTCAP_FRAMEWORK_SPACINGS
