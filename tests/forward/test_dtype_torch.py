"""float16 and bfloat16 attention against PyTorch's, where torch is installed.

The casting rule's default (softmax in float32, products accumulated in float32, as
docs/kernels.md says PyTorch does) is held to torch.matmul, torch.softmax(dtype=float32)
and scaled_dot_product_attention on the CPU, within the spacings of D that
tests/tolerances.py states (TORCH_STAGE_SPACINGS, TORCH_SDPA_SPACINGS, with why: torch
sums in its own order, and its SDPA keeps the scores and weights in float32 and scales q
and k by √(1/√d_k) each). FlashAttention's float64 output is held to SDPA in float64
within FLASH. Skipped cleanly without torch, as test_backward_torch is.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from tolerances import FLASH, TORCH_SDPA_SPACINGS, TORCH_STAGE_SPACINGS

from attntrace.kernel import precision
from attntrace.kernel.casting import Cast
from attntrace.kernels.flash import flash

torch = pytest.importorskip("torch", reason="PyTorch is not installed: SDPA not compared")

Matrix = npt.NDArray[np.float64]
HALF = ("float16", "bfloat16")
SEEDS = range(60)


def torch_dtype(dtype: str) -> Any:
    return {"float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}[dtype]


def tensor(values: Matrix, dtype: str) -> Any:
    """A tensor of the dtype holding ``values`` (already its values: the cast is exact)."""
    return torch.tensor(values, dtype=torch.float64).to(torch_dtype(dtype))


def numbers(t: Any) -> Matrix:
    out: Matrix = t.to(torch.float64).numpy()
    return out


def visible(n: int, m: int) -> npt.NDArray[np.bool_]:
    """The contract's causal rule: query i sees key j when j ≤ i + m − n (the last query
    aligned with the last key; torch's is_causal aligns the first instead)."""
    return np.arange(m)[None, :] <= np.arange(n)[:, None] + (m - n)


def sdpa(q: Any, k: Any, v: Any, causal: bool) -> Any:
    """SDPA on the math backend (the composite of matmul and softmax), one head."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    n, m = q.shape[0], k.shape[0]
    mask = torch.tensor(visible(n, m)) if causal else None
    with warnings.catch_warnings(), sdpa_kernel(SDPBackend.MATH):
        warnings.simplefilter("ignore")
        out = torch.nn.functional.scaled_dot_product_attention(
            q[None, None], k[None, None], v[None, None], attn_mask=mask
        )
    return out[0, 0]


def head(seed: int, dtype: str) -> tuple[Matrix, Matrix, Matrix, bool]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 10))
    m = n if rng.integers(0, 2) else int(rng.integers(n, 12))
    d = int(rng.choice([1, 2, 3, 4, 8, 16, 64]))
    scale = float(rng.choice([0.3, 1.0, 2.0, 4.0]))
    Q, K, V = (precision.round_to(rng.normal(0, scale, (rows, d)), dtype) for rows in (n, m, m))
    return Q, K, V, bool(rng.integers(0, 2))


def assert_within(found: Matrix, expected: Matrix, room: Matrix, what: str) -> None:
    gap = np.abs(found - expected)
    worst = np.unravel_index(int(np.argmax(gap - room)), gap.shape)
    assert np.all(gap <= room), (
        f"{what}: {found[worst]!r} vs {expected[worst]!r} at {worst}, room {room[worst]!r}"
    )


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("seed", SEEDS)
def test_matmul_against_torch(dtype: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k, m = (int(x) for x in rng.integers(1, 40, size=3))
    a = precision.round_to(rng.normal(0, 3, (n, k)), dtype)
    b = precision.round_to(rng.normal(0, 3, (k, m)), dtype)
    found = numbers(torch.matmul(tensor(a, dtype), tensor(b, dtype)))
    room = TORCH_STAGE_SPACINGS * precision.spacing(np.abs(a) @ np.abs(b), dtype)
    assert_within(found, precision.matmul_in(a, b, dtype, "float32"), room, "matmul")


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("seed", SEEDS)
def test_softmax_against_torch(dtype: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = precision.round_to(rng.normal(0, float(rng.choice([1, 4, 30])), (4, 9)), dtype)
    scores[0, int(rng.integers(0, 9))] = -math.inf  # a masked cell
    t = torch.softmax(tensor(scores, dtype), dim=-1, dtype=torch.float32)
    found = numbers(t.to(torch_dtype(dtype)))
    expected = precision.softmax_in(scores, dtype, "float32")
    room = TORCH_STAGE_SPACINGS * precision.spacing(expected, dtype)
    assert_within(found, expected, room, "softmax")


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("seed", SEEDS)
def test_sdpa_against_the_rule(dtype: str, seed: int) -> None:
    Q, K, V, causal = head(seed, dtype)
    ours = Cast.of(dtype).attention(Q, K, V, causal=causal)
    found = numbers(sdpa(tensor(Q, dtype), tensor(K, dtype), tensor(V, dtype), causal))
    scaled = (Q @ K.T) / math.sqrt(Q.shape[1])
    if causal:
        scaled = np.where(visible(len(Q), len(K)), scaled, 0.0)
    reach = 1 + np.max(np.abs(scaled), axis=1, keepdims=True)
    magnitude = np.abs(ours.softmax) @ np.abs(V)
    room = TORCH_SDPA_SPACINGS * precision.spacing(magnitude, dtype) * reach
    assert_within(found, ours.output, room, f"SDPA output {dtype}")


@pytest.mark.parametrize("dtype", HALF)
def test_sdpa_sees_a_missing_scale(dtype: str) -> None:
    """The tolerance is not loose: without ÷ √d_k the rule's output is far outside it."""
    rng = np.random.default_rng(7)
    Q, K, V = (precision.round_to(rng.normal(0, 2, (6, 16)), dtype) for _ in range(3))
    wrong = Cast.of(dtype).attention(Q * 4, K, V).output  # scores 4× = not ÷ √16
    found = numbers(sdpa(tensor(Q, dtype), tensor(K, dtype), tensor(V, dtype), False))
    reach = 1 + np.max(np.abs(Q @ K.T) / 4, axis=1, keepdims=True)
    room = TORCH_SDPA_SPACINGS * precision.spacing(np.abs(V).max(), dtype) * reach
    assert np.any(np.abs(found - wrong) > room)


@pytest.mark.parametrize("seed", range(80))
def test_flash_matches_sdpa_in_float64(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 13))
    m = n if rng.integers(0, 2) else int(rng.integers(n, 15))
    d, d_v = (int(x) for x in rng.integers(1, 9, size=2))
    Q, K, V = rng.normal(0, 2, (n, d)), rng.normal(0, 2, (m, d)), rng.normal(0, 2, (m, d_v))
    causal = bool(rng.integers(0, 2))
    block_q, block_k = (int(x) for x in rng.integers(1, 16, size=2))
    expected = numbers(sdpa(torch.tensor(Q), torch.tensor(K), torch.tensor(V), causal))
    for variant in (1, 2):
        record = flash(Q, K, V, block_q=block_q, block_k=block_k, causal=causal, variant=variant)
        np.testing.assert_allclose(record.output, expected, **FLASH)
