"""Files and streams from strangers, read within a bound whatever ``stat`` says.

A name on the command line can point at anything: a regular file, a pipe
(``--config <(...)``, a FIFO), a terminal, ``/dev/zero``, a /proc file whose size reads 0.
``stat`` is no bound for those, so text (model files, saved traces, stdin) is read in
chunks, never past the size limit (:func:`max_file_bytes`), and decoded as it comes: a NUL
byte (which no YAML or JSON text holds) or a byte that is not UTF-8 ends the reading at
once. Nothing is opened in a way that can block: a FIFO is opened without waiting for a
writer, and read once one has come (or refused when none comes within
:data:`FIFO_WAIT_SECONDS`). Files read to a size their header states (``.npy``
matrices, weight files) must be regular files (:func:`open_regular`); anything else is
refused before it is read. Those are read, not memory-mapped, where another process may
shorten them (:func:`read_at`): a mapped page past a file's new end kills the process
with SIGBUS, a read just comes back short, and a short read is one line.

Every failure is an :class:`InputError` without a source: the caller names the file.
"""

from __future__ import annotations

import codecs
import errno
import os
import select
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from attntrace.environment import env_number
from attntrace.errors import InputError

if TYPE_CHECKING:  # numpy is imported where an array is read: not for samples or models
    import numpy.typing as npt

DEFAULT_MAX_MB = 256
MAX_MB_VARIABLE = "ATTNTRACE_MAX_FILE_MB"
CHUNK_BYTES = 1 << 20  # read a stream 1 MiB at a time
#: How long a FIFO with no writer is waited for before it is refused as empty: a writer
#: started just before attntrace (``cat m.yaml > fifo & attntrace run -c fifo``) may
#: open its end a moment later.
FIFO_WAIT_SECONDS = 2.0

# Opening with O_NONBLOCK never waits for a FIFO's writer (nor a serial line's carrier);
# reads are made blocking again once the file is open.
NONBLOCK = getattr(os, "O_NONBLOCK", 0)

MODEL_TEXT = "a YAML or JSON model file"  # what a model file holds, in messages
MODEL_CONTENT = "a model (embeddings and weights)"


def max_file_bytes() -> int:
    """The largest model or trace file read: 256 MiB, or ATTNTRACE_MAX_FILE_MB (MiB)."""
    # at least a byte, and a limit a file can have (inf or 1e400 would be no limit at all)
    expected = "a positive number of MiB (from 1e-6, about a byte, to 2**30)"
    megabytes = env_number(MAX_MB_VARIABLE, DEFAULT_MAX_MB, 1 / 2**20, MAX_LIMIT_MB, expected)
    return int(megabytes * 1024 * 1024)


MAX_LIMIT_MB = 2**30  # 1 PiB: far past any file a model needs


def sized(count: int, *, limit: bool = False) -> str:
    """``2.9 MiB`` (a file), ``256 MiB`` (a limit), or ``512 bytes`` under 64 KiB, where
    a MiB figure would read as 0.0 or 9.91821e-05."""
    if count < 2**16:
        return f"{count:,} bytes"
    if count >= 2**1000:  # a header's lie (10**400 rows): past any float, and any file
        return f"over 10^{int((count.bit_length() - 1) * 0.30103)} bytes"
    return f"{count / 2**20:g} MiB" if limit else f"{count / 2**20:.1f} MiB"


def check_size(size: int, *, stream: bool = False) -> None:
    """Refuse ``size`` bytes over the limit; a stream is only read to just past it."""
    limit = max_file_bytes()
    if size > limit:
        shown = sized(limit, limit=True)
        found = f"more than {shown}" if stream else f"the file is {sized(size)}"
        raise InputError(
            f"{found}, over the limit of {shown} (set {MAX_MB_VARIABLE} to read larger files)"
        )


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, for messages: ``a named pipe (FIFO)``."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


# ------------------------------------------------------------------------------ text


def read_text(path: Path, holding: str | None = None) -> str:
    """The text of the file at ``path``, or an :class:`InputError` that says why not.

    The error names no file: the caller knows what to call it (``with_source``). A
    regular file over the size limit is refused before it is read; anything else is
    read to just past the limit. ``holding`` says what the file should hold, for the
    messages; by default a model file.
    """
    kind = holding or "a model file"  # what the file should be, in "is a directory, ..."
    content = holding or MODEL_CONTENT  # what it should hold, in "the file is empty"
    fd = _open_text(path, kind)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"is a directory, expected {kind}")
        if stat.S_ISREG(info.st_mode):
            check_size(info.st_size)
            _refuse_reading_past_budget(info.st_size)
        fifo = stat.S_ISFIFO(info.st_mode)
        text, size = decode_limited(_fifo_reader(fd) if fifo else _reader(fd), holding)
    except IsADirectoryError:  # a system where a directory opens, but does not read
        raise InputError(f"is a directory, expected {kind}") from None
    except OSError as error:
        raise InputError(f"cannot read the file: {error.strerror or error}") from None
    finally:
        os.close(fd)
    if size == 0 and fifo:
        raise InputError(
            f"nothing came through the pipe (no writer within "
            f"{FIFO_WAIT_SECONDS:g} s, or it wrote nothing)",
            expected=content,
        )
    if not text.strip():
        raise InputError("the file is empty", expected=content)
    return text


# What reading a text holds per byte of the file: the chunks read, the text decoded
# from them (a byte a character for ASCII, more for the rest) and their joining.
TEXT_READ_BYTES = 3


def _refuse_reading_past_budget(size: int) -> None:
    """A regular file's text is counted against the memory budget before it is read (a
    200 MB file of spaces took 414 MiB under a budget of 50 before it was found empty);
    what parsing it takes is counted once it is read, by its reader."""
    from attntrace.kernel.budget import refuse_past_budget

    refuse_past_budget(
        f"reading a file of {sized(size)}", {"its text as read": TEXT_READ_BYTES * size}
    )


def read_stdin(holding: str | None = None) -> str:
    """All of stdin as UTF-8 text, read as bytes to just past the size limit.

    A terminal is waited on, as ``cat`` does (Ctrl-D ends the input).
    """
    if sys.stdin is None:  # started with stdin closed (<&-)
        raise InputError("is closed, nothing to read")
    stream = sys.stdin.buffer
    try:  # < file: refused by its size (what is left of it) before it is read
        fd = stream.fileno()
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode):
            check_size(info.st_size - os.lseek(fd, 0, os.SEEK_CUR))
    except (OSError, ValueError):  # no descriptor (a test's stream)
        pass
    try:
        text, _ = decode_limited(stream.read, holding)
    except OSError as error:
        raise InputError(f"cannot read it: {error.strerror or error}") from None
    if not text.strip():
        raise InputError("the input is empty", expected=holding or MODEL_CONTENT)
    return text


def decode_limited(read: Callable[[int], bytes], holding: str | None) -> tuple[str, int]:
    """The UTF-8 text ``read(n)`` gives until it returns ``b""``, and its size in bytes.

    Reading stops just past the size limit, at a NUL byte, or at a byte that is not
    UTF-8, whichever comes first; each is an :class:`InputError` naming the byte. A
    leading byte order mark is dropped.
    """
    limit = max_file_bytes()
    expected = holding or MODEL_TEXT
    decoder = codecs.getincrementaldecoder("utf-8")()
    pieces: list[str] = []
    size = 0

    def decode(data: bytes, final: bool) -> None:
        held = len(decoder.getstate()[0])  # the start of a character cut by the last chunk
        try:
            pieces.append(decoder.decode(data, final))
        except UnicodeDecodeError as error:
            at = size - held + error.start
            raise InputError(f"not UTF-8 text (byte {at}): expected {expected}") from None

    while size <= limit:
        chunk = read(min(CHUNK_BYTES, limit + 1 - size))
        if chunk is None:  # a stream left non-blocking, with nothing in it yet: no EOF
            raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        if not chunk:
            break
        nul = chunk.find(b"\0")
        if nul >= 0:  # a byte that is not UTF-8 before it is named first
            decode(chunk[:nul], final=True)
            raise InputError(f"binary data (a NUL byte at byte {size + nul}): expected {expected}")
        decode(chunk, final=False)
        size += len(chunk)
    check_size(size, stream=True)
    decode(b"", final=True)
    return "".join(pieces).removeprefix("\ufeff"), size


def _open_text(path: Path, expected: str) -> int:
    """A descriptor to read ``path`` (which should be ``expected``) from, opened without
    waiting (a FIFO's writer)."""
    try:
        return os.open(path, os.O_RDONLY | NONBLOCK)
    except FileNotFoundError:
        raise InputError("no such file") from None
    except IsADirectoryError:
        raise InputError(f"is a directory, expected {expected}") from None
    except OSError as error:
        try:
            mode = path.stat().st_mode
        except OSError:
            mode = 0
        if stat.S_ISSOCK(mode):  # a socket does not open as a file (ENXIO)
            raise InputError(f"is a socket, expected {expected}") from None
        raise InputError(f"cannot read the file: {error.strerror or error}") from None


def _reader(fd: int) -> Callable[[int], bytes]:
    """``read(n)`` on a descriptor that waits for its data (a terminal, a device)."""
    _set_blocking(fd)
    return lambda n: os.read(fd, n)


def _set_blocking(fd: int) -> None:
    """Undo the O_NONBLOCK a descriptor was opened with (POSIX only has it)."""
    if NONBLOCK:
        os.set_blocking(fd, True)


def _fifo_reader(fd: int) -> Callable[[int], bytes]:
    """``read(n)`` on a FIFO opened without waiting: once a writer has come, its data.

    A writer that has written (or come and gone) makes the FIFO readable; one that has
    its end open but has not written yet makes a read fail with EAGAIN, and is then
    waited on as ``cat`` would. With no writer within :data:`FIFO_WAIT_SECONDS`, the
    FIFO reads as empty.
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poller.poll(int(FIFO_WAIT_SECONDS * 1000))
    try:
        first: bytes | None = os.read(fd, CHUNK_BYTES)
    except BlockingIOError:  # a writer, nothing written yet
        first = None
    _set_blocking(fd)

    def read(n: int) -> bytes:
        nonlocal first
        if first is None:
            return os.read(fd, n)
        head, first = first, None
        if len(head) > n:  # never read past the limit: keep the rest for the next read
            head, first = head[:n], head[n:]
        return head

    return read


# --------------------------------------------------------- files read to their stated size


def open_regular(path: str | os.PathLike[str], holding: str) -> BinaryIO:
    """``path`` opened to read, if it is a regular file; an :class:`InputError` if not.

    For files read to their stated size (``.npy`` matrices,
    weight files): a FIFO, a device or a directory is refused before any read, and the
    file is opened without waiting, so a FIFO with no writer cannot block. ``holding``
    names what the file should be, for the message. A file that cannot be opened is
    the :class:`OSError` of ``open`` (a directory too), for the caller to word.
    """
    fd = os.open(path, os.O_RDONLY | NONBLOCK)  # OSError (no such file, ...) to the caller
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):  # as open() says it, where a directory does not open
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        raise InputError(f"{file_kind(mode)}, not a regular file", expected=holding)
    _set_blocking(fd)
    return os.fdopen(fd, "rb")


def read_small(path: Path, limit: int) -> bytes:
    """The bytes of a small regular file (a cache of attntrace's own), at most ``limit``.

    Not a regular file, or a larger one, is an :class:`InputError`; a missing one is
    an :class:`OSError`.
    """
    with open_regular(path, "a file") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"over {limit} bytes")
    return data


@contextmanager
def naming(source: str, reading: str = "the file") -> Iterator[None]:
    """Errors inside, named for ``source``: an :class:`InputError` gets the source, and an
    :class:`OSError` (no such file, permission, ...) becomes "cannot read ``reading``: why".

    The readers of weight and vocabulary files open and check their file in this block,
    so every way it can fail is one line naming the file.
    """
    try:
        yield
    except InputError as error:
        raise error.with_source(source) from None
    except OSError as error:
        raise InputError(
            f"cannot read {reading}: {error.strerror or error}", source=source
        ) from None


READ_CHUNK_BYTES = 1 << 24  # a bounded read: 16 MiB at a time into the destination


def read_at(file: BinaryIO, offset: int, into: memoryview) -> None:
    """Fill ``into`` with the file's bytes from ``offset``, or say the file changed.

    A file another process shortens (``np.save`` truncates before it writes) would kill
    a process that maps it with SIGBUS; read, it comes back short, and that is an
    :class:`InputError` (without a source: the caller names the file). The bytes go
    straight into ``into`` (an array's memory), 16 MiB a read, never a second copy.
    """
    raw = open(file.fileno(), "rb", buffering=0, closefd=False)  # noqa: SIM115 (closefd)
    total = len(into)
    done = 0
    with raw:
        raw.seek(offset)
        while done < total:
            got = raw.readinto(into[done : min(total, done + READ_CHUNK_BYTES)])
            if not got:
                raise InputError(
                    f"the file changed while it was read ({total:,} bytes from byte "
                    f"{offset:,} were due, it ended after {done:,}: was it rewritten or "
                    "shortened?)"
                )
            done += got


def read_array(file: BinaryIO, offset: int, dtype: npt.DTypeLike, count: int) -> npt.NDArray[Any]:
    """``count`` items of ``dtype`` read from ``offset`` into a new array (:func:`read_at`)."""
    import numpy as np

    array = np.empty(count, dtype=dtype)
    read_at(file, offset, array.view(np.uint8).reshape(-1).data)
    return array
