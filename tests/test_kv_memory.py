"""The KV-cache calculator at any size: every unit up to YiB, a limit past them, the
preset list at every width, and which variant is the model (with one query head, MHA
and MQA both).

The expected numbers are worked out here by hand (2 × layers × kv heads × head dim ×
bytes per value × tokens × batch) and rounded with exact fractions, not taken from
attntrace's own formatting.
"""

from __future__ import annotations

import json
from fractions import Fraction

import jsonschema
import pytest
from helpers import invoke, schema
from hypothesis import given
from hypothesis import strategies as st

from attntrace.kv_memory import PRESETS, human_bytes

UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")  # IEC 80000-13
LIMIT = 1024 * 2**80  # 1024 YiB: the first cache the calculator refuses
WIDTHS = (40, 60, 79, 80, 100, 200)


def by_hand(count: int, power: int) -> str:
    """``count`` bytes in units of 1024**power, to two decimals, rounded half to even."""
    hundredths = round(Fraction(count * 100, 1024**power))
    return f"{hundredths // 100}.{hundredths % 100:02d} {UNITS[power]}"


def lines(*args: str, columns: int = 80) -> list[str]:
    result = invoke("kv-cache", *args, columns=columns)
    assert result.exit_code == 0, result.output
    out: list[str] = result.stdout.splitlines()
    assert max(len(line) for line in out) <= columns, "\n".join(out)
    return out


# ------------------------------------------------------------------ units


@pytest.mark.parametrize("power", range(1, len(UNITS)))
def test_every_binary_prefix_up_to_yib_is_named(power: int) -> None:
    unit = UNITS[power]
    assert human_bytes(1024**power) == f"1.00 {unit}"
    assert human_bytes(1023 * 1024**power) == f"1023.00 {unit}"
    assert human_bytes(3 * 1024**power // 2) == f"1.50 {unit}"


@pytest.mark.parametrize("power", range(2, len(UNITS)))
def test_a_size_that_rounds_to_1024_is_named_in_the_next_unit(power: int) -> None:
    # 1024**power - 1 bytes is 1023.999... of the unit below: to two decimals, 1.00 of this one
    assert human_bytes(1024**power - 1) == f"1.00 {UNITS[power]}"


@given(st.integers(min_value=1024, max_value=LIMIT - 1))
def test_human_bytes_is_the_exact_count_rounded(count: int) -> None:
    fits = [p for p in range(1, len(UNITS)) if round(Fraction(count * 100, 1024**p)) < 102400]
    power = fits[0] if fits else len(UNITS) - 1
    assert human_bytes(count) == by_hand(count, power)


def test_bytes_below_a_kib_are_whole() -> None:
    assert [human_bytes(n) for n in (0, 1, 512, 1023)] == ["0 B", "1 B", "512 B", "1023 B"]


# ------------------------------------------------------------------ past every unit


@pytest.mark.parametrize(
    "args",
    [
        ("--preset", "gpt2", "--tokens", str((LIMIT - 1) // 36864 + 1)),
        ("--preset", "gpt2", "--tokens", str(10**400)),
        ("--preset", "gpt2", "--batch", str(10**30)),
        ("--layers", str(10**30), "--heads", "1", "--head-dim", "1", "--tokens", "1"),
        ("--preset", "gpt2", "--tokens", str(10**400), "--json"),
    ],
    ids=["one-past-1024-YiB", "tokens-1e400", "batch-1e30", "layers-1e30", "json"],
)
def test_a_cache_of_1024_yib_or_more_is_refused_in_one_line(args: tuple[str, ...]) -> None:
    result = invoke("kv-cache", *args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("attntrace: error: ")
    assert result.stderr.count("\n") == 1
    assert "1024 YiB (2^90 bytes)" in result.stderr


# ------------------------------------------------------------------ the preset list


@pytest.mark.parametrize("columns", [80, 100, 200])
def test_every_preset_is_one_line_at_80_columns_and_wider(columns: int) -> None:
    out = lines(columns=columns)
    for name, shape in PRESETS.items():
        assert shape.d_model is not None
        (row,) = [line for line in out if line.split()[:1] == [name]]
        words = [name, str(shape.layers), "layers", str(shape.heads), "heads",
                 str(shape.kv_heads), "K/V", f"({shape.attention})", "head", "dim",
                 str(shape.head_dim)]  # fmt: skip
        derived = shape.d_model // shape.heads
        if derived == shape.head_dim:
            words += ["=", str(shape.d_model), "/", str(shape.heads)]
        else:  # gemma-7b: its config's head dim is 256, d_model / heads = 3072 / 16 = 192
            words += ["≠", str(shape.d_model), "/", str(shape.heads), "=", str(derived)]
        assert row.split() == words


@pytest.mark.parametrize("columns", WIDTHS)
def test_every_preset_takes_the_same_number_of_lines(columns: int) -> None:
    out = lines(columns=columns)
    starts = [i for i, line in enumerate(out) if line.split()[:1] and line.split()[0] in PRESETS]
    assert len(starts) == len(PRESETS)
    heights = {b - a for a, b in zip(starts, [*starts[1:], len(out)], strict=True)}
    assert len(heights) == 1, out


# ------------------------------------------------------------------ which is the model


def test_one_query_head_in_json_marks_both_variants_as_the_model() -> None:
    args = ("--heads", "1", "--layers", "2", "--head-dim", "64", "--tokens", "1", "--json")
    document = json.loads(invoke("kv-cache", *args).stdout)
    jsonschema.validate(document, schema("kv-cache-v1.schema.json"))
    assert [(v["label"], v["kv_heads"], v["bytes"], v["this_model"])
            for v in document["variants"]] == [
        ("MHA (this model)", 1, 512, True), ("MQA (this model)", 1, 512, True)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("preset", "mine"), [("llama2-70b", "GQA"), ("gemma-2b", "MQA"), ("gpt2", "MHA")]
)
def test_json_says_which_variant_is_the_model(preset: str, mine: str) -> None:
    document = json.loads(invoke("kv-cache", "--preset", preset, "--json").stdout)
    jsonschema.validate(document, schema("kv-cache-v1.schema.json"))
    assert [v["label"] for v in document["variants"] if v["this_model"]] == [f"{mine} (this model)"]
