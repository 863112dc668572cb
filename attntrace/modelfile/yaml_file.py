"""YAML model files -> plain data, by YAML 1.2's core schema, safely.

A model file is data, never code. PyYAML's YAML 1.1 rules silently change what a user
wrote, so this loader follows YAML 1.2's core schema instead:

- mapping keys are the exact strings written (``no``, ``on``, ``1`` are tokens);
- only ``true``/``false`` are booleans, not ``yes``/``no``/``on``/``off``;
- ``1e-3`` is a number (1.1 needs a dot), ``017`` is seventeen (1.1: octal fifteen) and
  ``1:30`` is a string (1.1: ninety);
- merge keys (``<<``) do not exist in YAML 1.2 and are refused with a message;
- a tag that would build an object (``!!python/...``) is refused, on keys too.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from attntrace.errors import InputError, LongInteger, parsed_integer
from attntrace.modelfile.parse import ParsedMapping

_CORE = "tag:yaml.org,2002:"
_BOOL_TAG, _INT_TAG, _FLOAT_TAG, _MERGE_TAG = (
    _CORE + name for name in ("bool", "int", "float", "merge")
)
# Tags a mapping key may carry: the ones plain scalars resolve to.
_PLAIN_KEY_TAGS = frozenset(_CORE + name for name in ("str", "int", "float", "bool", "null"))

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _ModelLoader(_BaseLoader):  # type: ignore[misc]
    """PyYAML's safe loader with YAML 1.2 core-schema scalars and exact-string keys."""


_ModelLoader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag not in (_BOOL_TAG, _INT_TAG, _FLOAT_TAG) and not tag.endswith("timestamp")
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_ModelLoader.add_implicit_resolver(
    _BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_ModelLoader.add_implicit_resolver(
    _INT_TAG, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")
)
# A float needs a dot or an exponent, so 1 stays an int.
_ModelLoader.add_implicit_resolver(
    _FLOAT_TAG,
    re.compile(
        r"""^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?
            |[-+]?[0-9]+[eE][-+]?[0-9]+
            |[-+]?\.(?:inf|Inf|INF)
            |\.(?:nan|NaN|NAN))$""",
        re.VERBOSE,
    ),
    list("-+0123456789."),
)


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int | LongInteger:
    """YAML 1.2 integers: decimal (leading zeros too), 0o octal, 0x hexadecimal; one of
    thousands of digits is a LongInteger (Python refuses to convert it)."""
    text = str(node.value)
    if text.startswith(("0o", "0x")):
        if len(text) > LongInteger.MAX_DIGITS:
            return LongInteger(text[2:])
        return int(text[2:], 8 if text[1] == "o" else 16)
    return parsed_integer(text)


def _construct_mapping(loader: Any, node: yaml.MappingNode) -> ParsedMapping:
    """A mapping whose keys are the exact strings written; duplicates recorded."""
    mapping = ParsedMapping()
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        if key_node.tag == _MERGE_TAG:
            raise InputError(
                f"line {line}: YAML merge keys (<<) are not supported in model files "
                "(YAML 1.2 has none): write the keys out, or share a whole matrix "
                "with an alias (WK: *wq)"
            )
        if not isinstance(key_node, yaml.ScalarNode):
            kind = "a list" if isinstance(key_node, yaml.SequenceNode) else "a mapping"
            written_here = node.start_mark.index <= key_node.start_mark.index
            where = f"line {line}" if written_here else f"in the mapping at line {_line(node)}"
            found = kind if written_here else f"an alias of {kind}"
            raise InputError(f"{where}: a mapping key must be a plain string, got {found}")
        if key_node.tag not in _PLAIN_KEY_TAGS:
            raise yaml.constructor.ConstructorError(
                None, None, f"found a key with tag '{key_node.tag}'", key_node.start_mark
            )
        mapping.add(str(key_node.value), loader.construct_object(value_node, deep=True), line)
    return mapping


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


_ModelLoader.add_constructor(_INT_TAG, _construct_int)
_ModelLoader.add_constructor(_CORE + "map", _construct_mapping)


def parse_yaml(text: str, source: str) -> Any:
    """Parse YAML text into plain data, or raise an InputError located in ``source``."""
    try:
        return yaml.load(text, Loader=_ModelLoader)  # a safe loader: see _ModelLoader
    except InputError as error:
        raise error.with_source(source) from None
    except yaml.constructor.ConstructorError as error:
        where = _where(error.problem_mark)
        tag = _tag(error.problem or "")
        if tag:
            raise InputError(
                f"{where}YAML tag {tag} is not allowed: a model file holds plain data "
                "(mappings, lists, numbers, strings)",
                source=source,
            ) from None
        raise InputError(f"{where}malformed YAML: {error.problem}", source=source) from None
    except yaml.MarkedYAMLError as error:
        where = _where(error.problem_mark)
        problem = str(error.problem)
        if "another document" in problem:
            problem = "expected one document, found a second one (after ---)"
        elif _has_tab(text, error.problem_mark):
            problem += " (a tab: YAML indents with spaces only)"
        raise InputError(f"{where}malformed YAML: {problem}", source=source) from None
    except yaml.reader.ReaderError as error:  # a character YAML forbids, by its offset
        at = error.position
        if _BaseLoader is not yaml.SafeLoader:  # libyaml counts that offset in UTF-8 bytes
            at = len(text.encode("utf-8")[:at].decode("utf-8", "ignore"))
        line = text.count("\n", 0, at) + 1
        column = at - (text.rfind("\n", 0, at) + 1) + 1
        code = ord(error.character) if isinstance(error.character, str) else error.character
        problem = f"character #x{code:04x} is not printable, and YAML allows only printable ones"
        raise InputError(
            f"line {line}, column {column}: malformed YAML: {problem}", source=source
        ) from None
    except yaml.YAMLError as error:  # one line, as every error (PyYAML's may hold several)
        raise InputError(f"malformed YAML: {' '.join(str(error).split())}", source=source) from None
    except RecursionError:
        raise InputError("malformed YAML: nested too deeply", source=source) from None


def _has_tab(text: str, mark: Any) -> bool:
    """True where the line an error points at holds a tab, YAML's most common trap."""
    lines = text.splitlines()
    return mark is not None and mark.line < len(lines) and "\t" in lines[mark.line]


def _where(mark: Any) -> str:

    return "" if mark is None else f"line {mark.line + 1}, column {mark.column + 1}: "


def _tag(problem: str) -> str | None:
    match = re.search(r"tag '([^']+)'", problem)
    return match.group(1).replace(_CORE, "!!") if match else None


class _ModelDumper(yaml.SafeDumper):
    """PyYAML's safe dumper for model files: every string value double-quoted (so no
    token reads back as a number or a boolean under YAML 1.2 or 1.1), every list of
    numbers on one line, and floats as ``repr`` writes them (exact: they read back to
    the same float64)."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')


def _represent_list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.SequenceNode:
    flat = all(isinstance(item, int | float) and not isinstance(item, bool) for item in value)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=flat)


def _represent_dict(dumper: yaml.SafeDumper, value: dict[str, Any]) -> yaml.MappingNode:
    """Keys as PyYAML chooses (plain where it can: the loader takes a key as the exact
    string written, whatever it looks like), values through the representers above."""
    pairs = [
        (yaml.SafeDumper.represent_str(dumper, key), dumper.represent_data(item))
        for key, item in value.items()
    ]
    return yaml.MappingNode("tag:yaml.org,2002:map", pairs, flow_style=False)


_ModelDumper.add_representer(str, _represent_str)
_ModelDumper.add_representer(dict, _represent_dict)
_ModelDumper.add_representer(list, _represent_list)


def dump_yaml(document: dict[str, Any]) -> str:
    """Plain data (mappings, lists, numbers, strings) as YAML text that :func:`parse_yaml`
    reads back to the same data; keys keep their order. A float is written as Python's
    ``repr`` (``1.0e-05`` for ``1e-05``: YAML 1.2 needs the dot), so it reads back
    exactly."""
    text: str = yaml.dump(
        document,
        Dumper=_ModelDumper,
        sort_keys=False,
        allow_unicode=True,
        width=2**16,
        default_flow_style=False,
    )
    return text
