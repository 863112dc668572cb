"""The KV-cache calculator at any size: every width, every unit, one query head, plurals.

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

from attntrace.decode.kv_memory import PRESETS, human_bytes

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


# ------------------------------------------------------------------ large caches


def rows(out: list[str]) -> list[list[str]]:
    """The words of each variant's row, from its label to the next label or blank line;
    at most two lines each at 80 columns."""
    table = out[out.index("") + 1 :]
    table = table[: table.index("")]
    starts = [i for i, line in enumerate(table) if line.startswith(("MHA", "GQA", "MQA"))]
    ends = [*starts[1:], len(table)]
    assert all(end - start <= 2 for start, end in zip(starts, ends, strict=True)), table
    return [" ".join(table[a:b]).split() for a, b in zip(starts, ends, strict=True)]


def test_a_trillion_tokens_fit_80_columns_in_pib() -> None:
    mha = 2 * 28 * 16 * 256 * 2 * 10**12  # gemma-7b is MHA: 16 K/V heads
    mqa = mha // 16
    out = lines("--preset", "gemma-7b", "--tokens", str(10**12))
    assert by_hand(mha, 5) == "407.45 PiB"
    assert rows(out) == [
        [
            "MHA",
            "(this",
            "model)",
            "16",
            "K/V",
            "heads",
            "407.45",
            "PiB",
            f"{mha:,}",
            "B",
            "baseline",
        ],
        [
            "MQA",
            "1",
            "K/V",
            "head",
            by_hand(mqa, 5).split()[0],
            "PiB",
            f"{mqa:,}",
            "B",
            "16×",
            "smaller",
        ],
    ]


def test_a_quadrillion_tokens_are_eib() -> None:
    mha = 2 * 32 * 32 * 128 * 2 * 10**15  # llama2-7b: 2^19 × 10^15 bytes = 10^15 / 2^41 EiB
    assert by_hand(mha, 6) == "454.75 EiB"
    assert rows(lines("--preset", "llama2-7b", "--tokens", str(10**15))) == [
        [
            "MHA",
            "(this",
            "model)",
            "32",
            "K/V",
            "heads",
            "454.75",
            "EiB",
            f"{mha:,}",
            "B",
            "baseline",
        ],
        [
            "MQA",
            "1",
            "K/V",
            "head",
            by_hand(mha // 32, 6).split()[0],
            "EiB",
            f"{mha // 32:,}",
            "B",
            "32×",
            "smaller",
        ],
    ]


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("tokens", [1, 4096, 10**12, 10**15, 10**18, 10**20])
def test_the_header_and_formula_break_between_terms(columns: int, tokens: int) -> None:
    """A line takes as many whole terms as fit; a line broken before a ' · ' ends with
    the '·', the next is indented by two. Only a term too wide for a line of its own is
    broken, between its words."""
    out = lines("--preset", "gpt3-175b", "--tokens", str(tokens), columns=columns)
    cached = f"{tokens:,} token{'' if tokens == 1 else 's'}"
    header = [
        "gpt3-175b",
        " · 96 layers",
        " · 96 query heads",
        " · 96 K/V heads (MHA)",
        " · head dim 128",
        f" · KV cache of {cached}",
        " × batch 1",
    ]
    formula = [
        "= 2 (K, V)",
        " × 96 layers",
        " × K/V heads",
        " × 128",
        " × 2 B (fp16)",
        f" × {cached}",
        " × 1",
    ]
    top = out[: out.index("")]
    first = next(i for i, line in enumerate(top) if line.startswith("= "))
    for part, terms in ((top[:first], header), (top[first:], formula)):
        # the lines read back as one: a continued line's indent stands for one space
        assert part[0][:1] != " "
        assert all(line[:2] == "  " and line[2:3] != " " for line in part[1:])
        text, breaks = part[0], []
        for line in part[1:]:
            breaks.append(len(text) + 1)
            text += " " + line[2:]
        assert text == "".join(terms)
        ends = [len("".join(terms[: i + 1])) for i in range(len(terms))]
        for at, before in zip(breaks, part, strict=False):
            index = next(i for i, end in enumerate(ends) if at <= end)  # the term broken at
            term = terms[index].removeprefix(" · ").removeprefix(" ")
            if at == ends[index] - len(term):  # before a whole term, which did not fit
                assert len(before.removesuffix(" ·") + terms[index]) > columns - 2
            else:  # inside a term too wide for a line of its own, between its words
                assert len(term) + 2 > columns
                assert text[at - 1] == " "
        for index, term in enumerate(terms[1:], start=1):  # which starts a line of its own
            if len(term.removeprefix(" · ").removeprefix(" ")) + 2 > columns:
                assert ends[index] - len(term.removeprefix(" · ").removeprefix(" ")) in breaks


def test_the_largest_cache_is_named_in_yib_at_every_width() -> None:
    per_token = 2 * 12 * 12 * 64 * 2  # gpt2 as it is (MHA)
    tokens = (LIMIT - 1) // per_token
    mha = per_token * tokens
    assert by_hand(mha, 8) == "1024.00 YiB"  # one byte short of the limit rounds up
    for columns in WIDTHS:
        out = "\n".join(lines("--preset", "gpt2", "--tokens", str(tokens), columns=columns))
        assert "1024.00 YiB" in out
        assert f"{mha:,} B" in out
        assert by_hand(mha // 12, 8) in out  # MQA


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


def test_the_saving_is_an_exact_whole_factor() -> None:
    out = "\n".join(lines("--layers", "1", "--heads", "1024", "--head-dim", "1", "--tokens", "1"))
    assert "1,024× smaller" in out  # 1024 K/V heads against 1, not 1.02e+03


# ------------------------------------------------------------------ the preset list


@pytest.mark.parametrize("columns", [80, 100, 200])
def test_every_preset_is_one_line_at_80_columns_and_wider(columns: int) -> None:
    out = lines(columns=columns)
    for name, shape in PRESETS.items():
        assert shape.d_model is not None
        (row,) = [line for line in out if line.split()[:1] == [name]]
        words = [
            name,
            str(shape.layers),
            "layers",
            str(shape.heads),
            "heads",
            str(shape.kv_heads),
            "K/V",
            f"({shape.attention})",
            "head",
            "dim",
            str(shape.head_dim),
        ]
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


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("tokens", ["4096", str(10**12), str(10**18)])
def test_every_variant_takes_the_same_number_of_lines(columns: int, tokens: str) -> None:
    out = lines("--preset", "llama2-70b", "--tokens", tokens, columns=columns)
    starts = [i for i, line in enumerate(out) if line.startswith(("MHA", "GQA", "MQA"))]
    assert len(starts) == 3
    assert starts[1] - starts[0] == starts[2] - starts[1]


# ------------------------------------------------------------------ one query head, plurals


def test_one_query_head_is_mha_and_mqa_at_once() -> None:
    out = lines("--heads", "1", "--layers", "2", "--head-dim", "64", "--tokens", "1")
    assert rows(out) == [
        [
            "MHA",
            "=",
            "MQA",
            "(this",
            "model)",
            "1",
            "K/V",
            "head",
            "512",
            "B",  # once
            "1",
            "query",
            "head:",
            "MHA",
            "and",
            "MQA",
            "are",
            "the",
            "same",
        ],
    ]
    # 2 × 2 layers × 1 × 64 × 2 B × 1 token = 512 B; under a KiB, no second "512 B"
    text = "\n".join(out)
    assert "baseline" not in text
    assert "1 K/V head (MHA = MQA)" in text
    assert "MHA and MQA are the same" in text


def test_one_query_head_in_json_marks_both_variants_as_the_model() -> None:
    args = ("--heads", "1", "--layers", "2", "--head-dim", "64", "--tokens", "1", "--json")
    document = json.loads(invoke("kv-cache", *args).stdout)
    jsonschema.validate(document, schema("kv-cache-v1.schema.json"))
    assert [
        (v["label"], v["kv_heads"], v["bytes"], v["this_model"]) for v in document["variants"]
    ] == [("MHA (this model)", 1, 512, True), ("MQA (this model)", 1, 512, True)]


@pytest.mark.parametrize(
    ("preset", "mine"), [("llama2-70b", "GQA"), ("gemma-2b", "MQA"), ("gpt2", "MHA")]
)
def test_json_says_which_variant_is_the_model(preset: str, mine: str) -> None:
    document = json.loads(invoke("kv-cache", "--preset", preset, "--json").stdout)
    jsonschema.validate(document, schema("kv-cache-v1.schema.json"))
    assert [v["label"] for v in document["variants"] if v["this_model"]] == [f"{mine} (this model)"]


def test_one_of_everything_is_singular() -> None:
    out = "\n".join(
        lines(
            "--layers", "1", "--heads", "1", "--head-dim", "1", "--tokens", "1", "--dtype", "int8"
        )
    )
    assert "your model · 1 layer · 1 query head · 1 K/V head (MHA = MQA) · head dim 1" in out
    assert "KV cache of 1 token × batch 1" in out
    assert "= 2 (K, V) × 1 layer × K/V heads × 1 × 1 B (int8) × 1 token × 1" in out
    assert "per token (batch 1): 2 bytes" in out
    for plural in ("layers", "query heads", "K/V heads (", "tokens"):
        assert f"1 {plural}" not in out


def test_two_of_everything_is_plural() -> None:
    out = "\n".join(lines("--layers", "2", "--heads", "2", "--head-dim", "1", "--tokens", "2"))
    assert "your model · 2 layers · 2 query heads · 2 K/V heads (MHA) · head dim 1" in out
    assert "KV cache of 2 tokens × batch 1" in out


@pytest.mark.parametrize("columns", range(20, 31))
def test_at_the_narrowest_no_header_line_runs_past_the_edge(columns: int) -> None:
    """A term that fits a line of its own with its indent, but not with the '·' that may
    end it, goes to words, so the '·' never runs past the edge or sits alone."""
    out = lines("--preset", "gemma-7b", columns=columns)
    top = out[: out.index("")]
    assert all(len(line) <= columns for line in top), top
    assert all(line.strip() not in ("·", "×") for line in top), top
