"""What the hostile kinds put in their folder: odd files, lying headers, bombs, damaged
traces. Each maker is a value of :data:`runner.Make` (bytes, text, or a function of the
path), so a kind names its files as ``{"model.yaml": maker}``."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import zipfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from paths import ROOT

MODEL = (
    "embeddings:\n  cat: [1, 2]\n  eats: [3, 1]\n  fish: [2, 4]\n"
    "weights:\n  WQ: [[1, 0], [0, 1]]\n  WK: [[1, 0], [0, 1]]\n  WV: [[0, 1], [1, 0]]\n"
)
LONG_SENTENCE = " ".join(["cat eats fish"] * 3100)  # 9,300 tokens of the built-in model


def directory(path: Path) -> None:
    path.mkdir()


def symlink_loop(path: Path) -> None:
    path.symlink_to(path.name)


def dangling(path: Path) -> None:
    path.symlink_to("nowhere/at/all")


def fifo(path: Path) -> None:
    os.mkfifo(path)


def unix_socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()  # the socket file stays


def link_to(target: str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.symlink_to(target)

    return make


def sparse(size: int, head: bytes = b"") -> Callable[[Path], None]:
    """A file of ``size`` bytes that takes no disk: ``head``, then a hole."""

    def make(path: Path) -> None:
        with path.open("wb") as out:
            out.write(head)
            out.truncate(size)

    return make


def npy_raw(header: str, body: bytes = b"") -> bytes:
    """A .npy file (version 1.0) with exactly this header text, padded as numpy pads."""
    text = header.encode("latin-1")
    pad = -(10 + len(text) + 1) % 64
    text += b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text + body


def npy_header(shape: str, descr: str = "<f8") -> str:
    return f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"


def npy(shape: str, descr: str = "<f8", body: bytes = b"\0" * 64) -> bytes:
    return npy_raw(npy_header(shape, descr), body)


def npy_of(values: list[Any], descr: str = "<f8") -> bytes:
    """A true .npy of a 1-D or 2-D list of numbers."""
    import numpy as np

    array = np.array(values, dtype=np.dtype(descr))
    header = npy_header(repr(tuple(array.shape)), descr)
    return npy_raw(header, array.tobytes())


def sparse_npy(rows: int, cols: int, descr: str = "|i1") -> Callable[[Path], None]:
    """A whole, valid .npy of zeros, rows × cols, written as a hole (no disk)."""
    head = npy_raw(npy_header(f"({rows}, {cols})", descr))
    size = len(head) + rows * cols * int(descr[-1])
    return sparse(size, head)


def npz(members: dict[str, bytes], *, deflate: bool = False) -> bytes:
    """A zip of .npy members (each name gets .npy), stored or deflated."""
    from io import BytesIO

    buffer = BytesIO()
    method = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(f"{name}.npy", data)
    return buffer.getvalue()


@cache
def zip_bomb(mib: int, name: str = "Q") -> bytes:
    """An .npz whose one member, ``mib`` MiB of float64 zeros, deflates to about 1/1000
    (written a MiB at a time, so the bomb is never whole in this process either)."""
    from io import BytesIO

    rows = mib * 1024 * 1024 // 8 // 2
    buffer = BytesIO()
    with (
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open(f"{name}.npy", "w", force_zip64=True) as member,
    ):
        member.write(npy_raw(npy_header(f"({rows}, 2)")))
        zero_chunk = b"\0" * (1 << 20)
        for _ in range(mib):
            member.write(zero_chunk)
    return buffer.getvalue()


def safetensors(
    header: bytes | dict[str, Any], data: bytes = b"", length: int | None = None
) -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


def f64_tensor(name: str, shape: list[int], count: int | None = None) -> bytes:
    """A safetensors file with one float64 tensor of zeros (``count`` values stored)."""
    n = 1
    for size in shape:
        n *= size
    stored = n if count is None else count
    header = {name: {"dtype": "F64", "shape": shape, "data_offsets": [0, 8 * n]}}
    return safetensors(header, b"\0" * 8 * stored)


def yaml_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, levels):
        refs = ",".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\nembeddings: *a" + str(levels - 1) + "\n"


def nested(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


@cache
def saved_trace() -> dict[str, Any]:
    """``run --json`` of the-cat-sat, made by the CLI as a user would."""
    done = subprocess.run(
        [sys.executable, "-m", "attntrace", "run", "the cat sat", "-s", "the-cat-sat", "--json"],
        capture_output=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    trace: dict[str, Any] = json.loads(done.stdout)
    return trace


def damaged(change: Callable[[dict[str, Any]], object]) -> Callable[[Path], None]:
    """The saved trace with ``change`` made to a deep copy of it."""

    def make(path: Path) -> None:
        document = json.loads(json.dumps(saved_trace()))
        change(document)
        path.write_text(json.dumps(document), encoding="utf-8")

    return make


def cut_trace(fraction: float) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        text = json.dumps(saved_trace())
        path.write_text(text[: int(len(text) * fraction)], encoding="utf-8")

    return make


def model_json(**fields: Any) -> str:
    """The worked example as JSON, with ``fields`` replacing or adding top-level ones."""
    document: dict[str, Any] = {
        "embeddings": {"cat": [1, 2], "eats": [3, 1], "fish": [2, 4]},
        "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[0, 1], [1, 0]]},
    }
    document.update(fields)
    return json.dumps(document)


def tall_json(d_model: int) -> Callable[[Path], None]:
    """A JSON model of tall one-column matrices: d_model rows of ``[0]`` each."""

    def make(path: Path) -> None:
        column = "[" + ",".join(["[1]"] * d_model) + "]"
        row = "[" + ",".join(["1"] * d_model) + "]"
        with path.open("w", encoding="utf-8") as out:
            out.write('{"embeddings": {"cat": ' + row + ', "eats": ' + row + "}, ")
            out.write('"weights": {"WQ": ' + column + ', "WK": ' + column)
            out.write(', "WV": ' + column + "}}")

    return make
