"""`attntrace check` names each mistake of its catalogue, from a student's own arrays.

Each case runs tests/students.py's attention with one mistake of docs/check.md's
catalogue, on a model it applies to, in float32 or float64, saves what the student
would (their names, their layout, some or all of the stages) as .npz, .safetensors or
.json, and runs ``attntrace check FILE --config MODEL --json``: exit 1, the diagnosis
names the mistake, and the first divergent stage is the first the mistake changed (the
student's arrays with and without it say which, and on which head). The correct
student passes in every dtype. A few mistakes run the full product of dtypes and
formats; the rest rotate through them, so the file stays a few seconds.
"""

from __future__ import annotations

import json
import math
import re
from itertools import product
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from helpers import invoke, schema
from paths import ROOT
from saved_arrays import FORMATS, save
from students import (
    MISTAKES,
    MODELS,
    NAMINGS,
    OVERFLOWING,
    PER_HEAD,
    SENTENCE,
    affects,
    applies,
    first_difference,
    given_stages,
    layouts_for,
    lowest_head,
    saved,
    sizes,
    student_attention,
)

ALL_MODELS = {**MODELS, **OVERFLOWING}
DTYPES = ("float32", "float64")
FILLS = ("-inf", "-1e9", "min")
# The full product of dtypes and formats, on one model each.
FULL = {
    "no-scaling": ("gqa-rope",),
    "kv-heads-tiled": ("gqa-causal",),
    "mask-hides-diagonal": ("mqa-rope",),
}
# How many of the models a mistake applies to it is tried on (outside FULL).
SAMPLED = 5
# Variants beyond each mistake's default (missing-bias forgets bQ, bV first).
VARIANTS: list[tuple[str, str, dict[str, str]]] = [
    ("missing-bias", "gqa-causal", {"forgot": "bO"}),
    ("missing-bias", "mqa-rope", {"forgot": "bK"}),  # bK moves the scores only under RoPE
    ("missing-bias", "gqa-causal", {"forgot": "bV"}),
    ("wrong-projection", "gqa-causal", {"swap": "V<-WK"}),
    ("wrong-projection", "mqa-rope", {"swap": "K<-WV"}),
]


class Case(NamedTuple):
    mistake: str
    model: str
    dtype: str
    fmt: str
    naming: str
    layout: str
    subset: str
    fill: str
    options: tuple[tuple[str, str], ...] = ()
    give_sentence: bool = False

    @property
    def id(self) -> str:
        extra = "".join(f"-{v}" for _, v in self.options)
        return (
            f"{self.mistake}{extra}-{self.model}-{self.dtype}-{self.fmt}-{self.layout}-"
            f"{self.naming}-{self.subset}"
        )


def _case(mistake: str, model: str, dtype: str, fmt: str, j: int, **options: str) -> Case:
    """A case whose names, layout, stages and mask fill rotate with ``j``."""
    layouts = layouts_for(ALL_MODELS[model])
    namings = list(NAMINGS)
    subset = ("all", "attention", "ends")[(j // 2 + MISTAKES.index(mistake)) % 3]
    if mistake == "mask-fill-too-small":  # hidden cells at −1e4 or below are −∞ by the
        subset = "ends"  # masked rule: the student's `masked` differs where check's does not
    return Case(
        mistake,
        model,
        dtype,
        fmt,
        namings[(j + 3 * MISTAKES.index(mistake)) % len(namings)],
        layouts[(j + MISTAKES.index(mistake)) % len(layouts)],
        subset,
        FILLS[j % 3],
        tuple(sorted(options.items())),
        give_sentence=j % 4 == 1,
    )


def catalogue_cases() -> list[Case]:
    cases: list[Case] = []
    for mistake in MISTAKES:
        if mistake == "unstable-softmax":
            # float32 overflows in "big", float64 only in "huge"; a .json holds float64,
            # so only "huge" overflows as the tool reads it.
            combos = [
                ("big", "float32", "npz"),
                ("big", "float32", "safetensors"),
                ("huge", "float32", "npz"),
            ]
            combos += [("huge", "float64", fmt) for fmt in FORMATS]
        elif mistake == "mask-fill-too-small":  # only scores past ±10⁵ get past the fill
            combos = [("deep", "float32", "npz"), ("deep", "float64", "safetensors")]
            combos += [("deep", "float32", "json")]
        elif mistake in FULL:
            combos = list(product(FULL[mistake], DTYPES, FORMATS))
        else:
            models = [name for name, doc in MODELS.items() if applies(mistake, doc)]
            if not models:  # the variants' mistakes: tests/checking/test_check_variants.py,
                continue  # until a model file carries the variant keys
            start = MISTAKES.index(mistake) % len(models)  # five of them, a different five
            models = (models[start:] + models[:start])[:SAMPLED]
            while len(models) < 3:  # every mistake: each format and each dtype at least once
                models += models
            combos = [(name, DTYPES[j % 2], FORMATS[j % 3]) for j, name in enumerate(models)]
        cases += [_case(mistake, *combo, j) for j, combo in enumerate(combos)]
    for j, (mistake, model, options) in enumerate(VARIANTS):
        cases.append(_case(mistake, model, DTYPES[j % 2], FORMATS[j % 3], j + 1, **options))
    return cases


CASES = catalogue_cases()


def fill_value(fill: str, dtype: str) -> float:
    return float(np.finfo(dtype).min) if fill == "min" else float(fill)


def tolerance_flags(dtype: str, fmt: str) -> list[str]:
    """A .json holds float64 numbers (docs/check.md): a float32 student saved that way
    states its own tolerance, as the docs' table gives float32."""
    return ["--rtol", "1e-4", "--atol", "1e-5"] if fmt == "json" and dtype == "float32" else []


def write_model(folder: Path, document: dict[str, Any]) -> Path:
    path = folder / f"{document['name']}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def run_check(*args: str) -> tuple[int, dict[str, Any], str]:
    result = invoke("check", *args, "--json")
    document = json.loads(result.stdout) if result.exit_code in (0, 1) else {}
    return result.exit_code, document, result.output


def status_of(report: dict[str, Any], stage: str) -> str:
    """A stage's status over its heads: differs if any head differs."""
    statuses = {s["status"] for s in report["stages"] if s["name"] == stage}
    assert statuses, f"no line for {stage}"
    return "differs" if "differs" in statuses else "match" if statuses == {"match"} else "missing"


def test_the_students_catalogue_is_the_docs() -> None:
    """Every id of docs/check.md's catalogue has a student mistake, in the same order."""
    text = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    table = text.split("### The catalogue of mistakes", 1)[1].split("\n## ", 1)[0]
    ids = re.findall(r"^\| `([^`]+)` \|", table, flags=re.MULTILINE)
    assert tuple(ids) == MISTAKES


def test_the_cases_cover_every_mistake_dtype_and_format() -> None:
    for mistake in MISTAKES:
        mine = [c for c in CASES if c.mistake == mistake]
        if not any(applies(mistake, doc) for doc in ALL_MODELS.values()):
            continue  # the variants' mistakes: tests/checking/test_check_variants.py
        assert {c.dtype for c in mine} == set(DTYPES), mistake
        assert {c.fmt for c in mine} == set(FORMATS), mistake
    assert {c.layout for c in CASES} == {"batched", "heads", "tokens", "flat", "single"}
    assert {c.naming for c in CASES} == set(NAMINGS)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_check_names_the_mistake(case: Case, tmp_path: Path) -> None:
    document = ALL_MODELS[case.model]
    fill = fill_value(case.fill, case.dtype)
    options: dict[str, Any] = dict(case.options)
    wrong = student_attention(
        document, dtype=case.dtype, mistake=case.mistake, fill=fill, **options
    )
    right = student_attention(document, dtype=case.dtype, fill=fill)
    # The oracle: the first stage handed over that the mistake changed, and its lowest head.
    stages = given_stages(wrong, case.subset)
    plain = {"layout": case.layout, "subset": case.subset}
    first = first_difference(saved(wrong, **plain), saved(right, **plain), stages)
    assert first is not None, "the mistake changes no stage handed over: a case to fix"
    assert affects(case.mistake, first)
    arrays = saved(wrong, naming=case.naming, **plain)
    path = save(tmp_path, arrays, case.fmt)
    args = [str(path), SENTENCE] if case.give_sentence else [str(path)]
    args += ["--config", str(write_model(tmp_path, document))]
    code, report, output = run_check(*args, *tolerance_flags(case.dtype, case.fmt))
    assert code == 1, output
    assert report["schema"] == "attntrace/check/v1"
    divergent = report["first_divergent"]
    assert divergent["stage"] == first, output
    if first in PER_HEAD:
        lowest = lowest_head(wrong, right, first)
        if divergent["kv_head"] is None:
            assert divergent["head"] == lowest, output
        else:  # K, V given per K/V head: the one the lowest differing query head reads
            group = report["model"]["heads"] // report["model"]["kv_heads"]
            assert (divergent["head"], divergent["kv_head"]) == (None, lowest // group), output
    assert (report["diagnosis"] or {}).get("cause") == case.mistake, output
    assert status_of(report, first) == "differs"
    for stage in stages[: stages.index(first)]:
        assert status_of(report, stage) == "match", (stage, output)


# ---------------------------------------------------------------- the correct student

CORRECT = [
    (model, dtype, fmt)
    for j, model in enumerate(MODELS)
    for dtype, fmt in [
        (DTYPES[j % 2], FORMATS[j % 3]),
        ("float16", ("npz", "safetensors")[j % 2]),
        ("bfloat16", "safetensors"),
    ]
] + [("gqa-causal", dtype, fmt) for dtype, fmt in product(DTYPES, FORMATS)]


@pytest.mark.parametrize(("model", "dtype", "fmt"), CORRECT)
def test_a_correct_student_passes(model: str, dtype: str, fmt: str, tmp_path: Path) -> None:
    document = MODELS[model]
    j = list(MODELS).index(model)
    computed = "float32" if dtype == "bfloat16" else dtype
    native = student_attention(document, dtype=computed, fill=fill_value(FILLS[j % 3], computed))
    layout = layouts_for(document)[j % len(layouts_for(document))]
    arrays = saved(native, naming=list(NAMINGS)[j % len(NAMINGS)], layout=layout)
    path = save(tmp_path, arrays, fmt, dtype="bfloat16" if dtype == "bfloat16" else None)
    code, report, output = run_check(
        str(path), "--config", str(write_model(tmp_path, document)), *tolerance_flags(computed, fmt)
    )
    assert code == 0, output
    assert report["first_divergent"] is None
    assert report["diagnosis"] is None
    assert {status_of(report, s) for s in given_stages(native)} == {"match"}


def test_the_json_report_follows_its_schema(tmp_path: Path) -> None:
    import jsonschema

    document = MODELS["gqa-causal"]
    shape = schema("check-v1.schema.json")
    jsonschema.Draft202012Validator.check_schema(shape)
    model = str(write_model(tmp_path, document))
    for mistake in (None, "kv-heads-tiled", "mask-hides-diagonal"):
        native = student_attention(document, dtype="float64", mistake=mistake)
        path = save(tmp_path, saved(native), "json")  # NaN rows in mask-hides-diagonal
        code, report, output = run_check(str(path), "--config", model)
        assert code == (0 if mistake is None else 1), output
        jsonschema.validate(report, shape, cls=jsonschema.Draft202012Validator)


def test_rtol_and_atol_replace_the_tolerance(tmp_path: Path) -> None:
    """A float16 student saved as float64 (.npz) is held to float64's tolerance and
    differs; --rtol/--atol at float16's let it through."""
    document = MODELS["multi"]
    native = student_attention(document, dtype="float16")
    path = save(tmp_path, {k: a.astype(np.float64) for k, a in saved(native).items()}, "npz")
    model = str(write_model(tmp_path, document))
    code, report, output = run_check(str(path), "--config", model)
    assert code == 1, output
    diagnosis = report["diagnosis"]
    assert diagnosis is None or diagnosis["cause"] is None, output
    code, _, output = run_check(str(path), "--config", model, "--rtol", "1e-2", "--atol", "1e-3")
    assert code == 0, output


# ------------------------------------------------------------- --head and --layout


def test_head_checks_one_head_and_its_kv_head(tmp_path: Path) -> None:
    """Tiled K/V heads (h mod kv_heads for h // group) leave head 0 right and head 1
    wrong: --head 0 passes, --head 1 names the mistake."""
    document = MODELS["gqa-causal"]  # 4 heads, 2 K/V heads
    model = str(write_model(tmp_path, document))
    native = student_attention(document, dtype="float32", mistake="kv-heads-tiled")
    for head, expected in ((0, 0), (1, 1), (2, 1), (3, 0)):
        arrays = {name: native[name][0, head] for name in ("Q", "scores", "softmax", "output")}
        arrays["K"], arrays["V"] = native["K_rep"][0, head], native["V_rep"][0, head]
        path = save(tmp_path, arrays, "npz", stem=f"head{head}")
        code, report, output = run_check(str(path), "--config", model, "--head", str(head))
        assert code == expected, (head, output)
        if expected:
            assert report["first_divergent"]["stage"] == "K", output
            assert report["first_divergent"]["head"] == head, output
            assert (report["diagnosis"] or {}).get("cause") == "kv-heads-tiled", output


FOUR_TOKENS = "the cat sat on"  # as many as gqa-causal's heads


def test_layout_reads_a_shape_that_fits_two_ways(tmp_path: Path) -> None:
    """Four tokens and four heads: a wrong [4, 4, d] matches the trace in neither
    reading; without --layout the reading a mistake explains is taken, with it the
    reading named. Numbers no reading and no mistake explain are bad input."""
    document = MODELS["gqa-causal"]
    model = str(write_model(tmp_path, document))
    native = student_attention(document, FOUR_TOKENS, dtype="float64", mistake="heads-split-wrong")
    for layout, flag in (("heads", "heads-first"), ("tokens", "tokens-first")):
        arrays = {k: a for k, a in saved(native, layout=layout).items() if k in ("Q", "output")}
        path = save(tmp_path, arrays, "npz", stem=layout)
        for flags in ((), ("--layout", flag)):
            code, report, output = run_check(str(path), FOUR_TOKENS, "--config", model, *flags)
            assert code == 1, output
            assert report["first_divergent"]["stage"] == "Q", output
            assert (report["diagnosis"] or {}).get("cause") == "heads-split-wrong", output
    noise = {"Q": np.random.default_rng(0).normal(size=native["Q"].shape[1:])}
    result = invoke(
        "check", str(save(tmp_path, noise, "npz", stem="noise")), FOUR_TOKENS, "--config", model
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("attntrace: error: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "reads two ways" in result.stderr


def test_tokens_first_leaves_the_score_stages_heads_first(tmp_path: Path) -> None:
    """scores, scaled, masked and softmax have no tokens-first form (docs/check.md), so
    --layout tokens-first, said for the output's sake, cannot turn them."""
    document = MODELS["gqa-causal"]
    model = str(write_model(tmp_path, document))
    native = student_attention(document, FOUR_TOKENS, dtype="float64", mistake="scores-transposed")
    path = save(tmp_path, saved(native, layout="tokens", subset="attention"), "npz")
    code, report, output = run_check(
        str(path), FOUR_TOKENS, "--config", model, "--layout", "tokens-first"
    )
    assert code == 1, output
    assert report["first_divergent"]["stage"] == "scores", output
    assert (report["diagnosis"] or {}).get("cause") == "scores-transposed", output


# ---------------------------------------------------------------------- PyTorch's own


def test_torch_sdpa_output_passes(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: SDPA not checked")
    sdpa = torch.nn.functional.scaled_dot_product_attention
    for name in ("single-causal", "gqa-causal", "mqa-rope", "multi"):
        document = MODELS[name]
        s = sizes(document)
        native = student_attention(document, dtype="float32")
        score_inputs = ("Q_rope", "K_rope") if s.rope else ("Q", "K")
        q, k = (torch.from_numpy(native[stage]) for stage in score_inputs)
        v = torch.from_numpy(native["V"])
        out = sdpa(q, k, v, is_causal=s.causal, enable_gqa=s.kv_heads < s.heads)
        arrays = {"out": out.numpy(), "q": native["Q"]}
        path = save(tmp_path, arrays, "safetensors", stem=name)
        code, _, output = run_check(str(path), "--config", str(write_model(tmp_path, document)))
        assert code == 0, (name, output)
        assert math.isfinite(float(out.abs().max()))
