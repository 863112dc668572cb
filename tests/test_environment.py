"""Numbers from environment variables (attntrace/environment.py): the default where unset,
the number where it is one in range, one InputError naming the variable otherwise."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attntrace.environment import env_number
from attntrace.errors import InputError

NAME = "ATTNTRACE_TEST_NUMBER"


def read(monkeypatch: pytest.MonkeyPatch, value: str | None) -> float:
    if value is None:
        monkeypatch.delenv(NAME, raising=False)
    else:
        monkeypatch.setenv(NAME, value)
    return env_number(NAME, 5.0, 1.0, 10.0, "a number from 1 to 10")


@pytest.mark.parametrize(
    ("value", "number"),
    [(None, 5.0), ("", 5.0), ("  ", 5.0), ("1", 1.0), (" 2.5 ", 2.5), ("1e1", 10.0)],
)
def test_unset_is_the_default_and_a_number_in_range_is_itself(
    monkeypatch: pytest.MonkeyPatch, value: str | None, number: float
) -> None:
    assert read(monkeypatch, value) == number


@pytest.mark.parametrize("value", ["soon", "nan", "NaN", "inf", "-inf", "0.999", "10.5", "1_0x"])
def test_anything_else_is_one_error_naming_the_variable_and_the_value(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    with pytest.raises(InputError) as caught:
        read(monkeypatch, value)
    assert str(caught.value) == f"{NAME}: expected a number from 1 to 10, got {value!r}"


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_float_is_taken_exactly_when_it_is_in_range(number: float) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        if 1.0 <= number <= 10.0:
            assert read(monkeypatch, repr(number)) == number
        else:
            with pytest.raises(InputError):
                read(monkeypatch, repr(number))
