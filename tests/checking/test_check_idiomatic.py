"""`check` names mistakes written the way people write attention in PyTorch, and the
catalogue's newer ids (docs/check.md, "Where these come from") written in numpy too.

tests/students.py's student is one numpy implementation with a switch per mistake; the
students here are PyTorch's idioms, each written out as a course or a bug report has it:
``q.view(B, T, H, d).transpose(1, 2)``, ``torch.tril`` + ``masked_fill``, ``einsum``,
``repeat_interleave``, and ``F.scaled_dot_product_attention`` with a boolean
``attn_mask`` (True = may attend) or ``is_causal``. Each buggy one must be named by its
id; each correct one must pass (exit 0). Importing torch takes seconds: these are
``long`` (``pytest -m long``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from students import MODELS, OVERFLOWING, largest_score, saved, student_attention

import attntrace

ALL_MODELS = {**MODELS, **OVERFLOWING}
UNTURNED = [name for name, doc in MODELS.items() if doc.get("positions") != "rope"]  # no RoPE here


def torch_attention(
    document: dict[str, Any], bug: str | None = None, *, sdpa: bool = False
) -> dict[str, Any]:
    """One block in PyTorch as a course writes it, from the model document's X (the
    numpy student's: positions are not what is tested here), with ``bug`` written in."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    native = student_attention(document, dtype="float32")
    x = torch.from_numpy(native["X"])[None]  # [1, T, d_model]
    xc = torch.from_numpy(native["X_context"])[None] if "X_context" in native else x
    W = {k: torch.tensor(v, dtype=torch.float32) for k, v in document["weights"].items()}
    b = {k: torch.tensor(v, dtype=torch.float32) for k, v in (document.get("biases") or {}).items()}
    H = int(document.get("heads", 1))
    KV = int(document.get("kv_heads", H))
    causal = bool(document.get("causal"))
    B, T = 1, x.shape[1]

    def proj(inp: Any, name: str) -> Any:
        y = inp @ W[f"W{name}"]
        return y + b[f"b{name}"] if f"b{name}" in b else y

    q_proj, k_proj, v_proj = proj(x, "Q"), proj(xc, "K"), proj(xc, "V")

    def split(t: Any, heads: int) -> Any:
        d = t.shape[-1] // heads
        if bug == "heads-split-wrong":  # head_dim and heads the other way round
            return t.view(B, t.shape[1], d, heads).permute(0, 3, 1, 2)
        return t.view(B, t.shape[1], heads, d).transpose(1, 2)

    q, k, v = split(q_proj, H), split(k_proj, KV), split(v_proj, KV)
    if KV < H:
        rep = H // KV
        if bug == "kv-heads-tiled":
            k, v = k.repeat(1, rep, 1, 1), v.repeat(1, rep, 1, 1)
        else:
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    saved_arrays = {"q": q_proj, "k": k, "v": v}
    if sdpa:
        out = _sdpa(F, torch, (q, k, v), bug, causal=causal)
    else:
        scores, weights, out = _eager(torch, (q, k, v), bug, causal=causal)
        saved_arrays |= {"scores": scores, "attn": weights}
    saved_arrays["out"] = out
    if H > 1:
        if bug == "concat-without-transpose":
            saved_arrays["concat"] = out.reshape(B, T, -1)
        else:
            saved_arrays["concat"] = out.transpose(1, 2).reshape(B, T, -1)
    return {name: t.detach() for name, t in saved_arrays.items()}


def _eager(torch: Any, qkv: tuple[Any, Any, Any], bug: str | None, *, causal: bool) -> Any:
    """scores, weights and output written out: ``einsum``, ``/ math.sqrt``, the mask,
    ``torch.softmax(dim=-1)``, ``weights @ v``."""
    q, k, v = qkv
    scores = torch.einsum("bhid,bhjd->bhij", q, k)
    if bug == "scores-transposed":
        scores = torch.einsum("bhjd,bhid->bhij", q, k)
    scaled = {
        "no-scaling": scores,
        "scaled-by-length": scores / math.sqrt(k.size(-2)),
    }.get(bug or "", scores / math.sqrt(q.size(-1)))
    logits = _masked(torch, scaled, bug, causal=causal)
    if bug == "unstable-softmax":
        weights = torch.exp(logits) / torch.exp(logits).sum(dim=-1, keepdim=True)
    else:
        dim = {"softmax-over-columns": -2, "softmax-over-heads": 1}.get(bug or "", -1)
        weights = torch.softmax(logits, dim=dim)
    if bug == "mask-after-softmax":
        T, S = weights.shape[-2:]
        weights = weights.masked_fill(torch.tril(torch.ones(T, S)) == 0, 0.0)
    if bug == "weights-transposed":
        return scores, weights, torch.einsum("bhji,bhjd->bhid", weights, v)  # i, j swapped
    return scores, weights, weights @ v


def _masked(torch: Any, scaled: Any, bug: str | None, *, causal: bool) -> Any:
    """The causal mask as ``torch.tril`` + ``masked_fill``, with ``bug`` written in."""
    T, S = scaled.shape[-2:]
    ones = torch.ones(T, S)
    if bug == "cross-attention-causal":  # the decoder's mask, pasted into cross-attention
        return scaled.masked_fill(torch.tril(ones) == 0, float("-inf"))
    if not causal or bug in ("no-mask", "mask-after-softmax"):
        return scaled
    tril = torch.tril(ones)
    if bug == "mask-fill-too-small":  # BERT's additive mask: (1 − mask) · −10000
        return scaled + (1.0 - tril) * -10000.0
    fill = {"mask-filled-with-zero": 0.0}.get(bug or "", float("-inf"))
    hide = {
        "mask-hides-diagonal": torch.tril(ones, diagonal=-1) == 0,
        "mask-wrong-triangle": torch.triu(ones) == 0,
        "mask-inverted": tril == 1,
    }.get(bug or "", tril == 0)
    return scaled.masked_fill(hide, fill)


def _sdpa(F: Any, torch: Any, qkv: tuple[Any, Any, Any], bug: str | None, *, causal: bool) -> Any:
    """``F.scaled_dot_product_attention``: its boolean attn_mask is True where a query
    may look, the inverse of ``masked_fill``'s."""
    q, k, v = qkv
    T, S = q.size(-2), k.size(-2)
    ones = torch.ones(T, S, dtype=torch.bool)
    if bug == "mask-inverted":  # the mask of what to hide, handed over as is
        return F.scaled_dot_product_attention(q, k, v, attn_mask=torch.triu(ones, diagonal=1))
    if bug == "mask-hides-diagonal":
        return F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tril(ones, diagonal=-1))
    if bug == "cross-attention-causal":  # transformers #48172: is_causal left on
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    if bug == "no-mask":  # is_causal forgotten
        return F.scaled_dot_product_attention(q, k, v)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def diagnosed(document: dict[str, Any], arrays: dict[str, Any]) -> tuple[int, str | None]:
    report = attntrace.check(arrays, model=document)
    return report.exit_code, report.diagnosis.cause if report.diagnosis else None


# (bug, model): each PyTorch idiom on a model it changes something in
TORCH_BUGS = [
    ("no-scaling", "multi"),
    ("scores-transposed", "gqa-causal"),
    ("softmax-over-columns", "single-causal"),  # ng-video-lecture's dim
    ("softmax-over-heads", "multi"),
    ("unstable-softmax", "big"),
    ("mask-hides-diagonal", "gqa-causal"),
    ("mask-wrong-triangle", "single-causal"),
    ("mask-filled-with-zero", "gqa-causal"),
    ("mask-after-softmax", "single-causal"),
    ("no-mask", "gqa-causal"),
    ("kv-heads-tiled", "gqa-causal"),
    ("heads-split-wrong", "multi"),
    ("heads-split-wrong", "gqa-causal"),
    ("concat-without-transpose", "multi"),
    ("weights-transposed", "single-causal"),
    ("weights-transposed", "multi"),
    ("scaled-by-length", "multi"),
    ("scaled-by-length", "cross"),
    ("cross-attention-causal", "cross"),
    ("mask-fill-too-small", "deep"),
    ("mask-inverted", "gqa-causal"),
]
SDPA_BUGS = [
    ("mask-inverted", "gqa-causal"),
    ("mask-inverted", "single-causal"),
    ("mask-hides-diagonal", "gqa-causal"),
    ("mask-hides-diagonal", "single-causal"),
    ("cross-attention-causal", "cross"),
    ("no-mask", "single-causal"),
    ("kv-heads-tiled", "gqa-causal"),
]


@pytest.mark.long
@pytest.mark.parametrize(("bug", "model"), TORCH_BUGS, ids=[f"{b}-{m}" for b, m in TORCH_BUGS])
def test_a_pytorch_students_mistake_is_named(bug: str, model: str) -> None:
    code, cause = diagnosed(ALL_MODELS[model], torch_attention(ALL_MODELS[model], bug))
    assert (code, cause) == (1, bug)


@pytest.mark.long
@pytest.mark.parametrize(("bug", "model"), SDPA_BUGS, ids=[f"{b}-{m}" for b, m in SDPA_BUGS])
def test_an_sdpa_students_mistake_is_named(bug: str, model: str) -> None:
    """Only Q (as ``q_proj(x)``), K, V and SDPA's output: a fully hidden row comes out
    of SDPA as zeros, which the mask mistakes' recipes know."""
    code, cause = diagnosed(ALL_MODELS[model], torch_attention(ALL_MODELS[model], bug, sdpa=True))
    assert (code, cause) == (1, bug)


@pytest.mark.long
@pytest.mark.parametrize("model", [*UNTURNED, "deep"])
@pytest.mark.parametrize("sdpa", [False, True])
def test_a_correct_pytorch_student_passes(model: str, sdpa: bool) -> None:
    document = ALL_MODELS[model]
    code, cause = diagnosed(document, torch_attention(document, sdpa=sdpa))
    assert (code, cause) == (0, None)


@pytest.mark.long
def test_torch_sdpa_weighs_a_fully_hidden_row_nothing() -> None:
    """What the recipes assume of torch (2.13 here): a boolean attn_mask that hides a
    whole row gives that row's output zeros (not NaN, not V's mean)."""
    torch = pytest.importorskip("torch")
    q, k, v = torch.randn(1, 1, 3, 2), torch.randn(1, 1, 3, 2), torch.randn(1, 1, 3, 2)
    hide_first = torch.tril(torch.ones(3, 3, dtype=torch.bool), diagonal=-1)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=hide_first)
    assert out[0, 0, 0].tolist() == [0.0, 0.0]
    assert torch.isfinite(out).all()


# ------------------------------------------- the newer ids, by the numpy student


NUMPY_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("weights-transposed", "single-causal", {}),
    ("weights-transposed", "gqa-causal", {"fill": -1e9}),
    ("scaled-by-length", "multi", {}),
    ("scaled-by-length", "cross", {}),
    ("cross-attention-causal", "cross", {}),
    ("mask-inverted", "gqa-causal", {}),
    ("mask-inverted", "single-causal", {"fill": -1e9}),
    ("mask-fill-too-small", "deep", {"added": False}),
    ("mask-fill-too-small", "deep", {}),
]


@pytest.mark.parametrize(
    ("mistake", "model", "options"),
    NUMPY_CASES,
    ids=[f"{m}-{n}-{'-'.join(map(str, o.values()))}" for m, n, o in NUMPY_CASES],
)
def test_a_numpy_students_new_mistake_is_named(
    mistake: str, model: str, options: dict[str, Any]
) -> None:
    document = ALL_MODELS[model]
    wrong = student_attention(document, dtype="float32", mistake=mistake, **options)
    assert diagnosed(document, saved(wrong, naming="torch")) == (1, mistake)
    right = student_attention(document, dtype="float32", fill=options.get("fill", -math.inf))
    assert diagnosed(document, saved(right, naming="torch")) == (0, None)


def test_a_finite_fill_that_hides_every_cell_is_no_mistake() -> None:
    """``masked_fill(mask, -1e4)`` on scores near 1 hides as −∞ does: the correct
    student with that fill passes, and a wrong scaling is not called a fill."""
    document = MODELS["gqa-causal"]
    assert largest_score(document) < 1e3
    right = student_attention(document, dtype="float64", fill=-1e4)
    assert diagnosed(document, saved(right)) == (0, None)
    wrong = student_attention(document, dtype="float64", mistake="no-scaling", fill=-1e4)
    assert diagnosed(document, saved(wrong)) == (1, "no-scaling")


def test_heads_split_wrong_is_named_when_q_is_saved_before_the_split() -> None:
    """``q = q_proj(x)`` saved ``[1, n, H·d]`` (right: the split comes after), then
    ``.view(B, T, head_dim, H)``: the side-by-side Q is judged as saved, joined back by
    the mistake's own split, so the correct Q does not rule the mistake out."""
    for name in ("multi", "gqa-causal", "cross"):
        document = MODELS[name]
        native = student_attention(document, dtype="float32", mistake="heads-split-wrong")
        arrays = saved(native, layout="flat", naming="torch")
        assert arrays["q"].ndim == 2  # [n, H·d], as q_proj(x) gives it
        report = attntrace.check(arrays, model=document)
        assert report.first_divergent is not None
        assert report.first_divergent.stage == "scores"
        assert report.diagnosis is not None
        assert report.diagnosis.cause == "heads-split-wrong"


def test_the_first_of_a_fully_hidden_row_is_nan_uniform_or_zero_as_written() -> None:
    """mask-hides-diagonal's first row: NaN with −∞ (0/0), uniform with −1e9, and SDPA's
    zeros: each of the three written out is named."""
    document = MODELS["single-causal"]
    for fill in (-math.inf, -1e9):
        wrong = student_attention(
            document, dtype="float64", mistake="mask-hides-diagonal", fill=fill
        )
        assert diagnosed(document, saved(wrong, subset="ends")) == (1, "mask-hides-diagonal")
    wrong = student_attention(document, dtype="float64", mistake="mask-hides-diagonal")
    weights = np.nan_to_num(wrong["softmax"], nan=0.0)  # SDPA's: the row weighs nothing
    arrays = {"softmax": weights, "output": weights @ student_attention(document)["V"]}
    assert diagnosed(document, arrays) == (1, "mask-hides-diagonal")
