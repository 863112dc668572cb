"""The syntax of ``--set PATH=VALUE``: where PATH ends, its keys and indices, and VALUE
read as YAML; each mistake one :class:`InputError` saying what is wrong where.

:mod:`attntrace.modelfile.edits` builds an edit from these and makes it; the rules are
docs/check.md's "``run --set PATH=VALUE``".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from attntrace.errors import InputError

Step = str | int

PATH_FORM = "a PATH of keys and [index] parts, as in weights.WQ[0][1] or embeddings.cat"
_KEY = r"[^.\[\]=]+"
_BARE = re.compile(_KEY)
_PART = re.compile(
    rf"""\.(?P<key>{_KEY})|\[(?P<index>[^\]"']*)\]|\[(?P<q>["'])(?P<quoted>.*?)(?P=q)\]"""
)
_HEAD = re.compile(rf"""(?P<key>{_KEY})|\[(?P<q>["'])(?P<quoted>.*?)(?P=q)\]""")
_MAX_INDEX_DIGITS = 18  # more than any list holds, and no int conversion of 10,000 digits


def spelled(steps: Sequence[Step]) -> str:
    """A path as messages write it: ``weights.WQ[0][1]``, ``embeddings['.']``."""
    written = ""
    for step in steps:
        if isinstance(step, int):
            written += f"[{step}]"
        elif _BARE.fullmatch(step) and step.strip() == step:
            written += f".{step}" if written else step
        else:
            written += f"[{step!r}]"
    return written or "the model"


def path_end(text: str) -> int:
    """Where PATH ends: the first ``=`` outside a quoted ``["key"]``; -1 if none."""
    at = 0
    while at < len(text):
        if text[at] == "=":
            return at
        if text.startswith(("['", '["'), at):
            close = text.find(text[at + 1] + "]", at + 2)
            if close < 0:  # unclosed: the path's parser says so
                return text.find("=", at)
            at = close + 2
            continue
        at += 1
    return -1


def path_steps(path: str, text: str, flag: str) -> tuple[Step, ...]:
    """The keys and indices of ``path``, or an InputError saying what is wrong where."""

    def bad(problem: str) -> InputError:
        return InputError(field=flag, expected=PATH_FORM, found=f"{path!r}: {problem}")

    if not path:
        raise InputError(
            field=flag, expected=PATH_FORM, found=f"nothing before the '=' of {text!r}"
        )
    head = _HEAD.match(path)
    if head is None:
        raise bad("a path starts with a key")
    steps: list[Step] = [head["key"] if head["key"] is not None else head["quoted"]]
    at = head.end()
    while at < len(path):
        part = _PART.match(path, at)
        if part is None:
            raise bad(_problem(path, at))
        if part["key"] is not None:
            steps.append(part["key"])
        elif part["quoted"] is not None:
            steps.append(part["quoted"])
        else:
            steps.append(_index(part["index"], bad))
        at = part.end()
    return tuple(steps)


def _problem(path: str, at: int) -> str:
    """What is wrong at ``path[at]``, a character no part starts with as written."""
    rest = path[at:]
    if rest.startswith("."):
        return f"a key is missing after the '.' at character {at + 1}"
    if rest.startswith("["):
        return f"a '[' at character {at + 1} without its ']'"
    return f"{rest[0]!r} at character {at + 1}: a key follows a '.', an index is in [ ]"


def _index(digits: str, bad: Callable[[str], InputError]) -> int:
    """``[3]``'s 3: a whole number from 0 (a quoted key is ``["3"]``)."""
    digits = digits.strip()
    if not digits.isdecimal() or not digits.isascii():
        shown = f"[{digits}]"
        if digits.startswith("-") and digits[1:].isdecimal():
            raise bad(f"{shown}: an index counts from 0 (no negative indices)")
        raise bad(f"{shown} is neither an index [0] nor a quoted key [{digits!r}]")
    if len(digits.lstrip("0")) > _MAX_INDEX_DIGITS:
        raise bad(f"an index of {len(digits)} digits")
    return int(digits)


def yaml_value(written: str, field: str) -> Any:
    """VALUE read as one YAML value on one line (the model file's YAML 1.2 rules)."""
    from attntrace.modelfile.yaml_file import parse_yaml  # PyYAML only when there is an edit

    if not written.strip():
        raise InputError(
            field=field, expected="a value after '=' (null for nothing)", found="nothing"
        )
    if "\n" in written or "\r" in written:
        raise InputError(
            field=field, expected="a value on one line ([1, 0], {a: 1})", found="a line break"
        )
    try:
        return parse_yaml(written, "VALUE")
    except InputError as error:  # the place in one line: its column, or the end
        at = re.match(r"line (\d+), column \d+: ", error.message or "")
        message = error.message or ""
        if at is not None and at[1] != "1":
            message = "at its end: " + message[at.end() :]
        raise InputError(
            f"the value {written.strip()!r}: {message.removeprefix('line 1, ')}", field=field
        ) from None
