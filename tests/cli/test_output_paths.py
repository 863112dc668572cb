"""Every file a command writes (--export, train --save) is checked before any work, and
said as what it is where it cannot be written (issue 29, §4): a dangling link, a folder,
a device; a write that fails all the same (a full disk) is one line and exit 2."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from helpers import invoke

import attntrace.forward.attention
import attntrace.forward.replay

IT = ["-s", "it-animal", "--from", "it", "--to", "animal"]
# each command that writes a file, with the flag and a name of the suffix it takes
WRITERS = {
    "run": (["run"], "--export", "x.svg"),
    "run's page": (["run"], "--export", "x.html"),
    "render": (["render", "SAVED"], "--export", "x.txt"),
    "decode": (["decode"], "--export", "x.html"),
    "flash": (["flash"], "--export", "x.html"),
    "grad": (["grad", *IT], "--export", "x.html"),
    "diff": (["diff", "--set", "name=b"], "--export", "x.html"),
    "check": (["check", "ARRAYS"], "--export", "x.html"),
    "train": (["train", *IT, "--steps", "2"], "--save", "x.yaml"),
}


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """Tracing or reading a saved trace fails the test: a refusal must come first. And
    the files render and check read."""
    saved = tmp_path / "saved.json"
    saved.write_text(invoke("run", "--json").stdout, encoding="utf-8")
    arrays = tmp_path / "arrays.json"
    arrays.write_text('{"scores": [[1, 2, 3], [4, 5, 6], [7, 8, 9]]}', encoding="utf-8")

    def work(*args: object, **kwargs: object) -> None:
        raise AssertionError("the work began before the output's name was checked")

    monkeypatch.setattr(attntrace.forward.attention, "computed_block", work)
    monkeypatch.setattr(attntrace.forward.replay, "_trace", work)
    return {"SAVED": str(saved), "ARRAYS": str(arrays)}


def command(name: str, files: dict[str, str], target: Path) -> list[str]:
    args, flag, _ = WRITERS[name]
    return [*(files.get(a, a) for a in args), flag, str(target)]


def one_line(result: object, line: str) -> None:
    assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
    assert result.stdout == ""  # type: ignore[attr-defined]
    assert result.stderr == f"attntrace: error: {line}\n"  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_dangling_link_is_said_to_be_one_before_any_work(
    name: str, no_work: dict[str, str], tmp_path: Path
) -> None:
    target = tmp_path / WRITERS[name][2]
    target.symlink_to(tmp_path / "gone" / "nowhere")
    result = invoke(*command(name, no_work, target))
    field = "--save: " if name == "train" else ""
    one_line(
        result,
        f"{target}: {field}is a symbolic link to '{tmp_path / 'gone' / 'nowhere'}', which "
        "does not exist: not writing through a dangling link",
    )
    assert target.is_symlink()
    assert not (tmp_path / "gone").exists()


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_folder_is_refused_before_any_work(
    name: str, no_work: dict[str, str], tmp_path: Path
) -> None:
    target = tmp_path / WRITERS[name][2]
    target.mkdir()
    field = "--save: " if name == "train" else ""
    one_line(
        invoke(*command(name, no_work, target)), f"{target}: {field}is a folder: give a file name"
    )
    assert list(target.iterdir()) == []


@pytest.mark.parametrize("name", ["run", "decode", "render"])
def test_a_device_is_refused_before_any_work(name: str, no_work: dict[str, str]) -> None:
    # /dev/null under an export's name: a link to a device, refused, left as it is
    folder = Path(no_work["SAVED"]).parent
    target = folder / WRITERS[name][2]
    target.symlink_to(os.devnull)
    one_line(
        invoke(*command(name, no_work, target)),
        f"{target}: is a character device, not a regular file: refused, left as it is",
    )


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_folder_that_takes_no_new_file_is_refused_before_any_work(
    name: str, no_work: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder that refuses new files (/sys, a read-only mount: even root cannot write
    there) is found by trying the temporary file the write makes: train --save wrote
    its whole trace to stdout before saying so (the hostile catalogue's kind)."""
    target = tmp_path / "locked" / WRITERS[name][2]
    target.parent.mkdir()
    made = os.open

    def refused(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if flags & os.O_CREAT and kwargs.get("dir_fd") is not None:
            raise OSError(errno.EROFS, "Read-only file system")
        return made(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refused)
    field = "--save: cannot write the model file" if name == "train" else "cannot write the file"
    one_line(invoke(*command(name, no_work, target)), f"{target}: {field}: Read-only file system")
    assert list(target.parent.iterdir()) == []


@pytest.mark.parametrize("name", [n for n in WRITERS if n != "train"])
def test_an_export_that_cannot_be_written_is_one_line_and_exit_2(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {
        "SAVED": str(tmp_path / "saved.json"),
        "ARRAYS": str(tmp_path / "arrays.json"),
    }
    Path(files["SAVED"]).write_text(invoke("run", "--json").stdout, encoding="utf-8")
    Path(files["ARRAYS"]).write_text('{"scores": [[1, 2, 3], [4, 5, 6], [7, 8, 9]]}')

    def full(self: Path, *args: object, **kwargs: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    target = tmp_path / WRITERS[name][2]
    result = invoke(*command(name, files, target))
    one_line(result, f"{target}: cannot write the file: No space left on device")
    assert not target.exists()


def test_an_export_through_a_link_writes_the_file_it_points_to(tmp_path: Path) -> None:
    real = tmp_path / "real.svg"
    real.write_text("old", encoding="utf-8")
    link = tmp_path / "link.svg"
    link.symlink_to(real)
    result = invoke("run", "--export", str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink()  # the link stays a link, as train --save keeps it
    assert real.read_text(encoding="utf-8").startswith("<svg")


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_name_too_long_is_one_line_before_any_work(
    name: str, no_work: dict[str, str], tmp_path: Path
) -> None:
    """300 characters: past the file system's 255, which stat() refuses (a traceback for
    --export before)."""
    target = tmp_path / ("a" * 300 + WRITERS[name][2].removeprefix("x"))
    result = invoke(*command(name, no_work, target))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("attntrace: error: ")
    assert result.stderr.endswith(": File name too long\n")
    assert result.stderr.count("\n") == 1


def test_save_to_a_folder_s_name_is_refused_not_written_beside_it(tmp_path: Path) -> None:
    """``--save keep.txt/`` wrote over keep.txt: Path() drops the trailing slash."""
    kept = tmp_path / "keep.txt"
    kept.write_text("precious", encoding="utf-8")
    result = invoke("train", *IT, "--steps", "2", "--save", f"{kept}/")
    one_line(
        result,
        f"{kept}/: --save: names a folder (it ends in /): give a file name for the model file",
    )
    assert kept.read_text(encoding="utf-8") == "precious"
