"""modelfile/model_writer's ``save_model`` treats its name as ``cp`` would: what is not a
regular file is refused and left as it was, a link is followed, a replaced file keeps its
mode, a new one gets the umask's, and a failure anywhere leaves the old file and no
temporary file. Never writes to /dev: the device case is checked with the writing
functions replaced by ones that fail the test."""

from __future__ import annotations

import errno
import os
import socket
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pytest
from helpers import invoke
from tiny_model import EMBEDDINGS, WK, WQ, WV, one_line, tiny_spec

from attntrace.errors import InputError
from attntrace.modelfile import model_writer
from attntrace.modelfile.model_file import load_model

OLD = b"name: old\n"


def _is_the_tiny_model(path: Path) -> None:
    """``path`` reads back as the tiny model, numbers compared with the literal lists."""
    back = load_model(path)
    assert {t: v.tolist() for t, v in back.embeddings.items()} == EMBEDDINGS
    for got, want in ((back.WQ, WQ), (back.WK, WK), (back.WV, WV)):
        assert got is not None
        assert np.array_equal(got, np.array(want))  # tolerance 0: written exactly


def _refused(path: Path, *words: str) -> None:
    with pytest.raises(InputError) as caught:
        model_writer.save_model(tiny_spec(), path)
    text = one_line(caught.value)
    assert text.startswith(f"{path}: --save: "), text
    for word in words:
        assert word in text, text


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def test_a_fifo_is_refused_and_left_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "model.yaml"
    os.mkfifo(fifo)
    _refused(fifo, "FIFO", "not a regular file")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert _listing(tmp_path) == ["model.yaml"]  # no temporary file made beside it


def test_a_socket_is_refused_and_left_a_socket(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        _refused(path, "socket")
        assert stat.S_ISSOCK(path.lstat().st_mode)
    assert _listing(tmp_path) == ["s"]


def test_a_character_device_is_refused_before_anything_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(*args: Any, **kwargs: Any) -> NoReturn:
        pytest.fail(f"save_model wrote toward /dev/null: {args}")

    # The test runs as any user, root too: nothing may even be tried in /dev.
    monkeypatch.setattr(os, "replace", never)
    monkeypatch.setattr(os, "open", never)
    monkeypatch.setattr(model_writer, "_temporary_file", never)
    _refused(Path("/dev/null"), "character device", "not a regular file")
    monkeypatch.undo()
    assert stat.S_ISCHR(Path("/dev/null").lstat().st_mode)


def test_a_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").mkdir()
    _refused(tmp_path / "m.yaml", "is a folder")
    assert (tmp_path / "m.yaml").is_dir()


def test_a_link_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    real, links = tmp_path / "real", tmp_path / "links"
    real.mkdir()
    links.mkdir()
    (real / "m.yaml").write_bytes(OLD)
    (real / "m.yaml").chmod(0o640)
    link = links / "m.yaml"
    link.symlink_to(Path("..") / "real" / "m.yaml")  # relative, to the link's folder
    chain = tmp_path / "chain.yaml"
    chain.symlink_to(link)  # a link to the link: followed to its end
    for name in (link, chain):
        model_writer.save_model(tiny_spec(), name)
        assert link.readlink() == Path("..") / "real" / "m.yaml"
        assert chain.readlink() == link
        _is_the_tiny_model(real / "m.yaml")
        assert stat.S_IMODE((real / "m.yaml").stat().st_mode) == 0o640
        (real / "m.yaml").write_bytes(OLD)
    # The temporary file was made, and renamed, in the real file's folder.
    assert _listing(real) == ["m.yaml"]
    assert _listing(links) == ["m.yaml"]


def test_a_dangling_link_is_refused_and_nothing_is_made(tmp_path: Path) -> None:
    link = tmp_path / "m.yaml"
    link.symlink_to(tmp_path / "gone.yaml")
    _refused(link, "symbolic link", "does not exist")
    assert link.is_symlink()
    assert _listing(tmp_path) == ["m.yaml"]


def test_a_loop_of_links_is_one_line(tmp_path: Path) -> None:
    loop = tmp_path / "m.yaml"
    loop.symlink_to(loop)
    _refused(loop, "cannot write")
    assert loop.is_symlink()


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o604, 0o755])
def test_a_replaced_file_keeps_its_mode(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(OLD)
    path.chmod(mode)
    before = path.stat().st_ino
    with _umask(0o022):
        model_writer.save_model(tiny_spec(), path)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert path.stat().st_ino != before  # replaced whole (renamed over), not rewritten
    _is_the_tiny_model(path)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002, 0o027, 0o000])
def test_a_new_file_gets_the_mode_open_gives(tmp_path: Path, mask: int) -> None:
    with _umask(mask):
        model_writer.save_model(tiny_spec(), tmp_path / "m.yaml")
        with (tmp_path / "plain").open("w"):  # what a plain open makes under this mask
            pass
    got = stat.S_IMODE((tmp_path / "m.yaml").stat().st_mode)
    assert got == stat.S_IMODE((tmp_path / "plain").stat().st_mode)
    assert _listing(tmp_path) == ["m.yaml", "plain"]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux's /proc only")
def test_the_umask_is_read_without_setting_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(mask: int) -> NoReturn:
        pytest.fail("os.umask was called: that sets the mask another thread may be using")

    with _umask(0o037):
        monkeypatch.setattr(os, "umask", never)
        assert model_writer._umask() == 0o037
        monkeypatch.undo()


def test_without_proc_the_umask_is_still_right_and_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = Path.open

    def no_proc(self: Path, *args: Any, **kwargs: Any) -> Any:
        if str(self).startswith("/proc/"):
            raise FileNotFoundError(errno.ENOENT, "no /proc here")
        return real_open(self, *args, **kwargs)

    with _umask(0o027):
        monkeypatch.setattr(Path, "open", no_proc)
        assert model_writer._umask() == 0o027
        monkeypatch.undo()
        assert os.umask(0o027) == 0o027  # set back as it was


def _old_file(tmp_path: Path) -> Path:
    path = tmp_path / "m.yaml"
    path.write_bytes(OLD)
    return path


def test_a_full_disk_leaves_the_old_file_and_no_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _old_file(tmp_path)
    real_write = os.write
    calls: list[int] = []

    def full(handle: int, data: Any) -> int:
        calls.append(handle)
        if len(calls) == 1:  # a first part goes, then the disk is full
            return real_write(handle, bytes(data)[:7])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    _refused(path, "cannot write the model file", os.strerror(errno.ENOSPC))
    monkeypatch.undo()
    assert len(calls) == 2
    assert path.read_bytes() == OLD
    assert _listing(tmp_path) == ["m.yaml"]


def test_a_failed_rename_leaves_the_old_file_and_no_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _old_file(tmp_path)

    def fails(*args: Any, **kwargs: Any) -> NoReturn:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    monkeypatch.setattr(os, "replace", fails)
    _refused(path, os.strerror(errno.EXDEV))
    monkeypatch.undo()
    assert path.read_bytes() == OLD
    assert _listing(tmp_path) == ["m.yaml"]


def test_a_folder_that_vanishes_before_the_write_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    real_open = os.open

    def vanish_first(path: Any, *args: Any, **kwargs: Any) -> int:
        if Path(path) == folder:
            folder.rmdir()
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", vanish_first)
    _refused(folder / "m.yaml", "cannot write the model file")
    monkeypatch.undo()
    assert _listing(tmp_path) == []


def test_a_folder_moved_while_writing_keeps_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, moved = tmp_path / "out", tmp_path / "moved"
    folder.mkdir()
    _old_file(folder)
    real_fsync = os.fsync
    moves: list[bool] = []

    def move_first(handle: int) -> None:
        if not moves:  # moved away after the bytes are written, before the rename
            folder.rename(moved)
            moves.append(True)
        real_fsync(handle)

    monkeypatch.setattr(os, "fsync", move_first)
    model_writer.save_model(tiny_spec(), folder / "m.yaml")
    monkeypatch.undo()
    # The folder was held open: the file it held is replaced where it went, whole.
    assert moves == [True]
    assert _listing(tmp_path) == ["moved"]
    assert _listing(moved) == ["m.yaml"]
    _is_the_tiny_model(moved / "m.yaml")


def test_a_folder_deleted_while_writing_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    _old_file(folder)
    real_fsync = os.fsync

    def delete_first(handle: int) -> None:
        for child in folder.iterdir():
            child.unlink()
        folder.rmdir()
        real_fsync(handle)

    monkeypatch.setattr(os, "fsync", delete_first)
    with pytest.raises(InputError) as caught:
        model_writer.save_model(tiny_spec(), folder / "m.yaml")
    monkeypatch.undo()
    assert "cannot write the model file" in one_line(caught.value)
    assert _listing(tmp_path) == []


def test_train_refuses_a_fifo_before_it_trains(tmp_path: Path) -> None:
    fifo = tmp_path / "m.yaml"
    os.mkfifo(fifo)
    result = invoke(
        "train",
        "-s",
        "it-animal",
        "--from",
        "it",
        "--to",
        "animal",
        "--steps",
        "100000",
        "--save",
        str(fifo),
    )
    assert result.exit_code == 2
    assert result.stdout == ""  # nothing trained, nothing shown
    assert result.stderr.count("\n") == 1
    assert "FIFO" in result.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
