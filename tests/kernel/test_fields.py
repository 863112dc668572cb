"""The field validators every reader shares (attntrace.kernel.fields), and their one spelling.

Each validator returns the value typed or raises one InputError whose ``found`` is
``describe(value)``; the properties below hold that for any value, and check the rules
the readers used to write out by hand (a token, a whole number, a finite number)
against their plain definitions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attntrace.errors import InputError, LongInteger, describe
from attntrace.kernel import fields

# Any value a parsed YAML or JSON document (or a Python caller) may put in a field.
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=50),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=10,
)


def message(call: Callable[[], object]) -> str:
    with pytest.raises(InputError) as caught:
        call()
    return str(caught.value)


def refusal(call: Callable[[], object]) -> InputError | None:
    """The InputError ``call`` raises, or None where it accepts."""
    try:
        call()
    except InputError as error:
        return error
    return None


REFUSED: list[tuple[str, Callable[[], object], str]] = [
    ("whole 0", lambda: fields.whole(0, "heads"), "heads: expected a whole number ≥ 1, got 0"),
    (
        "whole bool",
        lambda: fields.whole(True, "heads"),
        "heads: expected a whole number ≥ 1, got a boolean (true)",
    ),
    (
        "whole float",
        lambda: fields.whole(2.0, "heads"),
        "heads: expected a whole number ≥ 1, got 2.0",
    ),
    (
        "whole over the limit",
        lambda: fields.whole(10**8, "model.heads", most=4096),
        "model.heads: expected at most 4,096, got 100,000,000",
    ),
    (
        "optional whole -1",
        lambda: fields.optional_whole(-1, "stages[0].head"),
        "stages[0].head: expected null or a whole number ≥ 0, got -1",
    ),
    (
        "flag yes",
        lambda: fields.flag("yes", "causal"),
        "causal: expected true or false, got a string 'yes'",
    ),
    ("flag 1", lambda: fields.flag(1, "causal"), "causal: expected true or false, got 1"),
    ("text number", lambda: fields.text(123, "name"), "name: expected a string, got 123"),
    (
        "text null",
        lambda: fields.text(None, "model.name"),
        "model.name: expected a string, got nothing (null)",
    ),
    (
        "items empty",
        lambda: fields.items([], "stages"),
        "stages: expected a non-empty list, got a list of 0 items",
    ),
    (
        "items a mapping",
        lambda: fields.items({}, "stages", empty=True),
        "stages: expected a non-empty list, got a mapping with 0 keys",
    ),
    (
        "texts an item",
        lambda: fields.texts(["a", 1], "tokens"),
        "tokens[1]: expected a string, got 1",
    ),
    (
        "mapping a list",
        lambda: fields.mapping([1, 2], "weights", "a mapping with WQ, WK, WV"),
        "weights: expected a mapping with WQ, WK, WV, got a list of 2 items",
    ),
    (
        "mapping empty",
        lambda: fields.mapping({}, "weights", "a mapping", empty=False),
        "weights: expected a mapping, got a mapping with 0 keys",
    ),
    (
        "choice",
        lambda: fields.choice("rotary", "model.positions", ("none", "rope"), "none, rope"),
        "model.positions: expected none, rope, got a string 'rotary'",
    ),
    (
        "choice not a string",
        lambda: fields.choice(["rope"], "p", ("rope",), "rope"),
        "p: expected rope, got a list of 1 item",
    ),
    (
        "number a string",
        lambda: fields.number("1.5", "x[0]"),
        "x[0]: expected a number, got a string '1.5'",
    ),
    (
        "number null",
        lambda: fields.number(None, "x[0]", expected="a number or null"),
        "x[0]: expected a number or null, got nothing (null)",
    ),
    (
        "number inf",
        lambda: fields.number(math.inf, "x[0]"),
        "x[0]: expected a finite number, got a non-finite number (inf)",
    ),
    (
        "number 10**400",
        lambda: fields.number(10**400, "x[0]"),
        "x[0]: expected a finite number, got an integer of 1329 bits (too large for float64)",
    ),
    (
        "number of 5,000 digits",
        lambda: fields.number(LongInteger("9" * 5000), "x[0]"),
        "x[0]: expected a number, got an integer of 5,000 digits (too large for float64)",
    ),
    (
        "number numpy bool",
        lambda: fields.number(np.True_, "x[0]"),
        "x[0]: expected a number, got a boolean (true)",
    ),  # numpy's bool as Python's
    (
        "numbers empty",
        lambda: fields.numbers([], "embeddings.cat"),
        "embeddings.cat: expected a non-empty list of numbers, got a list of 0 items",
    ),
    (
        "numbers an entry",
        lambda: fields.numbers([1, "x"], "weights.WQ[0]"),
        "weights.WQ[0][1]: expected a number, got a string 'x'",
    ),
    (
        "unknown keys, every one",
        lambda: fields.known_keys(
            {"kv_head": 1, "causl": 0, "name": ""},
            ("name", "kv_heads", "causal"),
            None,
            noun="field",
            listing="known fields",
            every=True,
        ),
        "unknown fields 'kv_head' (did you mean 'kv_heads'?), 'causl' (did you mean "
        "'causal'?) (known fields: name, kv_heads, causal)",
    ),
    (
        "unknown keys, the first",
        lambda: fields.known_keys(
            {"WX": 1, "WY": 2}, ("WQ", "WK"), "weights", noun="weight matrix"
        ),
        "weights: unknown weight matrix 'WX' (known: WQ, WK)",
    ),
    (
        "required key",
        lambda: fields.required_keys({"WQ": 1}, ("WQ", "WK"), "weights", noun="matrix"),
        "weights: missing required matrix 'WK'",
    ),
]


@pytest.mark.parametrize(("what", "call", "expected"), REFUSED, ids=[r[0] for r in REFUSED])
def test_each_validator_refuses_with_one_line(
    what: str, call: Callable[[], object], expected: str
) -> None:
    assert message(call) == expected


def test_each_validator_returns_the_value_typed() -> None:
    assert fields.whole(3, "heads") == 3
    assert fields.whole(0, "index", least=0) == 0
    assert fields.optional_whole(None, "head") is None
    assert fields.flag(False, "causal") is False
    assert fields.texts(["a", "b"], "tokens") == ("a", "b")
    assert fields.texts([], "vocabulary", empty=True) == ()
    assert fields.mapping({}, "weights", "a mapping") == {}
    assert fields.choice("rope", "positions", ("none", "rope"), "") == "rope"
    numbers = fields.numbers([1, 2.5, np.float32(0.5), np.int64(-3)], "v")
    assert numbers == [1.0, 2.5, 0.5, -3.0]
    assert all(type(n) is float for n in numbers)
    fields.known_keys({"WQ": 1}, ("WQ",), "weights", noun="weight matrix")
    fields.required_keys({"WQ": 1}, ("WQ",), "weights", noun="matrix")


def test_a_longdouble_past_float64_is_not_finite_and_warns_nothing() -> None:
    """float(longdouble 1e400) overflows with a RuntimeWarning numpy's errstate silences
    (filterwarnings = error would turn it into a failure here)."""
    huge = np.longdouble("1e400")
    if not np.isfinite(huge):  # a platform whose longdouble is float64 holds no 1e400
        pytest.skip("longdouble is float64 here")
    # the dtype's name, not the type's: numpy 1.24 calls the type float128, 2.x longdouble
    assert message(lambda: fields.number(huge, "x")) == (
        "x: expected a finite number, got a float128 (1e+400)"
    )


@given(VALUES)
def test_what_was_found_is_always_describe_of_the_value(value: Any) -> None:
    """Whatever a field holds, a validator that refuses it says ``got describe(value)``."""
    checks: list[Callable[[], object]] = [
        lambda: fields.whole(value, "f"),
        lambda: fields.flag(value, "f"),
        lambda: fields.text(value, "f"),
        lambda: fields.items(value, "f"),
        lambda: fields.mapping(value, "f", "a mapping"),
        lambda: fields.choice(value, "f", ("a", "b"), "a, b"),
        lambda: fields.number(value, "f"),
    ]
    for check in checks:
        error = refusal(check)
        if error is not None:
            assert error.found == describe(value)
            assert "\n" not in str(error)


@given(st.text(max_size=20))
def test_a_token_is_text_without_whitespace(key: str) -> None:
    """is_token (ModelSpec's ``key.split() == [key]``) is the model file's old rule:
    not empty, and no character for which str.isspace is true."""
    assert fields.is_token(key) == (bool(key) and not any(ch.isspace() for ch in key))


@given(st.integers(), st.integers(min_value=-3, max_value=3), st.none() | st.integers(0, 50))
def test_a_whole_number_is_an_int_in_its_range(value: int, least: int, most: int | None) -> None:
    inside = value >= least and (most is None or value <= most)
    error = refusal(lambda: fields.whole(value, "f", least=least, most=most))
    assert (error is None) == inside
    if error is not None:
        assert error.found in (describe(value), f"{value:,}")
    else:
        assert fields.whole(value, "f", least=least, most=most) == value


@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers())
def test_a_number_is_kept_exactly_or_refused_as_not_finite(value: float) -> None:
    try:
        as_float = float(value)
    except OverflowError:
        as_float = math.inf
    if math.isfinite(as_float):
        assert fields.number(value, "f") == as_float
    else:
        assert message(lambda: fields.number(value, "f")).startswith(
            "f: expected a finite number, got "
        )


@given(st.lists(st.integers(0, 9), max_size=4))
def test_shapes_and_counts_read_as_messages_write_them(shape: list[int]) -> None:
    assert fields.shape_text(shape) == " × ".join(map(str, shape))
    count = len(shape)
    assert fields.counted(count, "number") == f"{count} number{'s' if count != 1 else ''}"
