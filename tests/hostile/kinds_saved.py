"""Saved traces damaged in many ways for ``render`` and ``diff``, and ``check``'s arrays
files: odd files, lying zip and safetensors headers, bombs, wrong names and shapes."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from hostile.kinds_files import ODD
from hostile.makers import (
    cut_trace,
    damaged,
    f64_tensor,
    nested,
    npy,
    npy_of,
    npz,
    safetensors,
    saved_trace,
    zip_bomb,
)
from hostile.runner import Kind, Make, kind

Change = Callable[[dict[str, Any]], object]


def setting(path: str, value: Any) -> Change:
    """Set the value at a dotted path (``stages.2.data``) of the document."""

    def change(document: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = document
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return change


def deleting(path: str) -> Change:
    def change(document: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = document
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[int(last) if isinstance(node, list) else last]

    return change


TOP_KEYS = ("schema", "model", "tokens", "context_tokens", "stages", "weights")
DAMAGE: dict[str, Change] = {
    **{f"no-{key}": deleting(key) for key in TOP_KEYS},
    **{f"{key}-is-a-string": setting(key, "x") for key in TOP_KEYS},
    **{f"{key}-is-a-number": setting(key, 7) for key in TOP_KEYS if key != "context_tokens"},
    "schema-v9": setting("schema", "attntrace/trace/v9"),
    "schema-grad": setting("schema", "attntrace/grad/v1"),
    "model-d-model-negative": setting("model.d_model", -4),
    "model-heads-zero": setting("model.heads", 0),
    "model-heads-huge": setting("model.heads", 10**12),
    "model-name-escape": setting("model.name", "\x1b[2J"),
    "tokens-short": setting("tokens", ["the"]),
    "tokens-numbers": setting("tokens", [1, 2, 3]),
    "tokens-surrogate": setting("tokens", ["the", "\udcff", "sat"]),
    "stages-empty": setting("stages", []),
    "stage-name-unknown": setting("stages.0.name", "Z"),
    "stage-shape-lies": setting("stages.1.shape", [300000, 300000]),
    "stage-shape-negative": setting("stages.1.shape", [-3, 2]),
    "stage-data-ragged": setting("stages.1.data", [[1.0], [1.0, 2.0], []]),
    "stage-data-strings": setting("stages.1.data", [["a", "b"], ["c", "d"], ["e", "f"]]),
    "stage-data-null": setting("stages.1.data", None),
    "stage-data-deep": setting("stages.1.data", json.loads(nested(500))),
    "stage-data-huge-number": setting("stages.1.data", [[1e308, 1e308]] * 3),
    "stage-head-past": setting("stages.1.head", 99),
    "stage-rows-wrong": setting("stages.1.rows", ["x"]),
    "stage-duplicated": lambda d: d["stages"].append(d["stages"][1]),
    "softmax-rows-not-one": setting("stages.5.data", [[5.0, 5.0, 5.0]] * 3),
    "weights-wrong-shape": setting("weights.0", [[1.0]]),
    "extra-key": setting("extra", {"a": 1}),
}
RENDER_DAMAGE = [
    kind(f"render-{name}", "render", "t.json", files={"t.json": damaged(change)}, expect="either")
    for name, change in DAMAGE.items()
]
# Damage the contract lets render draw (it recomputes nothing) is "either"; what cannot
# be a trace at all must be refused.
MUST_REFUSE = {f"render-{name}" for name in ("no-schema", "no-model", "no-tokens", "no-stages")} | {
    "render-schema-v9",
    "render-stages-is-a-string",
    "render-stage-data-strings",
    "render-stage-data-deep",
    "render-stage-shape-lies",
}
RENDER_DAMAGE = [replace(k, expect="error") if k.id in MUST_REFUSE else k for k in RENDER_DAMAGE]


def saved(path: Path) -> None:
    path.write_text(json.dumps(saved_trace()), encoding="utf-8")


RENDER_FILES = (
    [
        kind(
            f"render-file-{name}",
            "render",
            "t.json",
            files={} if make is None else {"t.json": make},
            timeout=30,
        )
        for name, make in ODD.items()
        if name not in ("utf16", "top-level-list", "top-level-null", "nul-in-text", "not-utf8")
    ]
    + [
        kind(
            f"render-cut-at-{int(fraction * 100)}",
            "render",
            "t.json",
            files={"t.json": cut_trace(fraction)},
        )
        for fraction in (0.0, 0.01, 0.1, 0.5, 0.9, 0.999)
    ]
    + [
        kind("render-stdin-garbage", "render", "-", stdin=b"\xff\xfe garbage"),
        kind("render-stdin-deep", "render", "-", stdin=nested(200_000).encode()),
        kind("render-stdin-nan-trace", "render", "-", stdin=b'{"schema": NaN}'),
        kind(
            "render-map-of-damaged",
            "render",
            "t.json",
            "--map",
            files={"t.json": damaged(setting("stages.5.data", [[1, 2]]))},
        ),
        kind(
            "render-focus-of-damaged",
            "render",
            "t.json",
            "--focus",
            "cat",
            files={"t.json": damaged(setting("stages.5.data", [[1, 2]]))},
        ),
        kind(
            "render-export-directory",
            "render",
            "t.json",
            "--export",
            "d.html",
            files={"t.json": saved, "d.html": lambda p: p.mkdir()},
        ),
        kind(
            "render-too-big-by-limit",
            "render",
            "t.json",
            env={"ATTNTRACE_MAX_FILE_MB": "0.001"},
            files={"t.json": saved},
            says=("ATTNTRACE_MAX_FILE_MB",),
        ),
    ]
)

# ---------------------------------------------------------------------------- diff

DIFF = [
    kind("diff-a-missing", "diff", "a.json", "b.json", files={"b.json": saved}),
    kind(
        "diff-b-directory",
        "diff",
        "a.json",
        "b.json",
        files={"a.json": saved, "b.json": lambda p: p.mkdir()},
    ),
    kind(
        "diff-b-fifo",
        "diff",
        "a.json",
        "b.json",
        files={"a.json": saved, "b.json": ODD["fifo-no-writer"]},
    ),
    kind(
        "diff-b-dev-zero",
        "diff",
        "a.json",
        "b.json",
        files={"a.json": saved, "b.json": ODD["dev-zero"]},
    ),
    kind(
        "diff-b-cut", "diff", "a.json", "b.json", files={"a.json": saved, "b.json": cut_trace(0.5)}
    ),
    kind(
        "diff-b-no-stages",
        "diff",
        "a.json",
        "b.json",
        files={"a.json": saved, "b.json": damaged(deleting("stages"))},
    ),
    kind(
        "diff-b-other-shape",
        "diff",
        "a.json",
        "b.json",
        expect="either",
        files={"a.json": saved, "b.json": damaged(setting("tokens", ["a", "b"]))},
    ),
    kind("diff-both-stdin", "diff", "-", "-", stdin=json.dumps({"a": 1}).encode()),
    kind(
        "diff-b-strings",
        "diff",
        "a.json",
        "b.json",
        files={"a.json": saved, "b.json": damaged(setting("stages.1.data", [["a"]]))},
    ),
]

# --------------------------------------------------------------------------- check


def bomb(path: Path) -> None:
    """512 MiB of zeros in a 0.5 MB .npz, made when a kind needs it (it takes seconds)."""
    path.write_bytes(zip_bomb(512))


GOOD_Q = npy_of([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]])
CHECK_FILES: dict[str, Make] = {
    "empty-zip": b"PK\x05\x06" + bytes(18),
    "not-a-zip": b"PK\x03\x04 garbage",
    "zip-bomb-512mib": bomb,
    "member-unknown-name": npz({"Z": GOOD_Q}),
    "member-wrong-shape": npz({"Q": npy_of([[1.0, 2.0, 3.0]])}),
    "member-complex": npz({"Q": npy_of([[1, 2], [3, 4], [5, 6]], "<c16")}),
    "member-object": npz({"Q": npy("(3, 2)", "|O")}),
    "member-strings": npz({"Q": npy_of([["a", "b"]] * 3, "<U1")}),
    "member-not-npy": npz({"Q": b"hello"}),
    "member-deflated-lie": npz({"Q": GOOD_Q[:-8]}, deflate=True),
}
SAFETENSORS: dict[str, bytes] = {
    "header-length-huge": safetensors({"Q": {}}, length=2**63),
    "header-not-json": safetensors(b"{not json"),
    "header-a-list": safetensors(b"[1, 2]"),
    "offsets-past-end": safetensors(
        {"Q": {"dtype": "F64", "shape": [3, 2], "data_offsets": [0, 10**12]}}
    ),
    "offsets-backwards": safetensors(
        {"Q": {"dtype": "F64", "shape": [3, 2], "data_offsets": [48, 0]}}, bytes(48)
    ),
    "dtype-unknown": safetensors(
        {"Q": {"dtype": "F128", "shape": [3, 2], "data_offsets": [0, 48]}}, bytes(48)
    ),
    "shape-negative": safetensors(
        {"Q": {"dtype": "F64", "shape": [-3, 2], "data_offsets": [0, 48]}}, bytes(48)
    ),
    "shape-huge": safetensors(
        {"Q": {"dtype": "F64", "shape": [2**62, 4], "data_offsets": [0, 48]}}, bytes(48)
    ),
    "shape-lies": f64_tensor("Q", [300, 200], count=6),
    "deep-header": safetensors(nested(100_000).encode()),
    "truncated": b"\x08\x00\x00",
}
JSON_ARRAYS: dict[str, str] = {
    "json-not-object": "[1, 2]",
    "json-strings": '{"Q": [["a", "b"]]}',
    "json-ragged": '{"Q": [[1], [1, 2]]}',
    "json-deep": '{"Q": ' + nested(100_000) + "}",
    "json-huge-number": '{"Q": [[1e999, 0], [0, 0], [0, 0]]}',
}


def check_kind(name: str, suffix: str, make: Make | None) -> Kind:
    files = {} if make is None else {f"a{suffix}": make}
    findings = name in FINDINGS  # what check reports as a student's mistake (exit 1)
    return kind(
        f"check-{name}",
        "check",
        f"a{suffix}",
        "-s",
        "the-cat-sat",
        files=files,
        expect="either" if findings else "error",
        verdicts=(0, 1),
    )


# A wrong shape, or a number that is infinite, is a mistake check names, not bad input.
FINDINGS = {"member-wrong-shape", "json-huge-number"}


CHECK = (
    [check_kind(name, ".npz", make) for name, make in CHECK_FILES.items()]
    + [
        check_kind(f"safetensors-{name}", ".safetensors", data)
        for name, data in SAFETENSORS.items()
    ]
    + [check_kind(name, ".json", text) for name, text in JSON_ARRAYS.items()]
    + [
        check_kind(f"file-{name}", ".npz", ODD[name])
        for name in (
            "missing",
            "directory",
            "empty",
            "binary",
            "fifo-no-writer",
            "dev-zero",
            "symlink-loop",
            "sparse-300mb",
        )
    ]
    + [
        kind("check-unknown-suffix", "check", "a.txt", "-s", "the-cat-sat", files={"a.txt": "1"}),
        kind("check-stdin-npz", "check", "-", "-s", "the-cat-sat", stdin=b"PK\x03\x04"),
    ]
)

KINDS: list[Kind] = [*RENDER_DAMAGE, *RENDER_FILES, *DIFF, *CHECK]
