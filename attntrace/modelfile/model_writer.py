"""ModelSpec -> a model file (YAML, or JSON for a ``.json`` name): ``train --save``.

The document has the fields of docs/model-file.md, so :func:`attntrace.modelfile.model_file.
load_model` reads it back to the same model: every number is written exactly (YAML
floats as Python's ``repr``, JSON by orjson, both the shortest text that reads back to
the same float64), and a trace of the file read back equals the model's bit for bit.

The file is written whole or not at all: into a temporary file beside it, then renamed
over the name (``os.replace``, atomic on one file system), so a reader never sees half a
model and a failed write leaves what was there before (and no temporary file). The name is
treated as ``cp`` treats it: a link is followed, a file replaced keeps its mode, and
anything there that is not a regular file (a device, a FIFO, a folder) is refused untouched.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import Any

from attntrace.errors import InputError
from attntrace.kernel.spec import ModelSpec
from attntrace.visible import quoted, visible, well_formed


def model_document(model: ModelSpec) -> dict[str, Any]:
    """The model file's fields for ``model``, as plain data, in the order the docs list
    them. A model with X given (a real model's layer) has no embeddings: refused."""
    if model.given is not None:
        raise InputError(
            "a real model's layer has no embeddings to write: only a model "
            "file or a sample can be saved"
        )
    if model.rope_frequencies is not None and model.position_kind == "rope":
        raise InputError(  # rather than written without them and read back turned otherwise
            "a model file turns by rope_base alone; these RoPE frequencies, given one by "
            "one, cannot be written"
        )
    # every text as U+FFFD where it held a lone surrogate: YAML wrote "\uDCFF", which
    # no reader takes back, and JSON could not be written at all (docs/model-file.md)
    document: dict[str, Any] = {"name": well_formed(model.name)}
    if model.description:
        document["description"] = well_formed(model.description)
    if model.sentence is not None:
        document["sentence"] = well_formed(model.sentence)
    if model.context is not None:
        document["context"] = well_formed(model.context)
    document["heads"] = model.heads
    if model.kv_heads is not None:
        document["kv_heads"] = model.kv_heads
    document["causal"] = model.causal
    positions = model.positions
    if isinstance(positions, str):
        document["positions"] = positions
        if positions == "rope":
            document["rope_base"] = float(model.rope_base)
            document["rope_pairing"] = model.rope_pairing
    elif positions is not None:
        document["positions"] = positions.tolist()
    document["embeddings"] = _embeddings(model)
    weights = {"WQ": model.WQ, "WK": model.WK, "WV": model.WV, "WO": model.WO}
    document["weights"] = {name: w.tolist() for name, w in weights.items() if w is not None}
    if model.biases:
        document["biases"] = {name: b.tolist() for name, b in model.biases.items()}
    if model.target is not None:
        document["target"] = model.target.tolist()
    document.update(variant_fields(model))
    return document


def _embeddings(model: ModelSpec) -> dict[str, Any]:
    """The vocabulary, each token as :func:`well_formed` writes it; two tokens that would
    then be spelled alike (``"\\udcff"`` beside ``"\\ufffd"``) cannot both be saved."""
    written: dict[str, Any] = {}
    for token, vector in model.embeddings.items():
        key = well_formed(token)
        if key in written:
            raise InputError(
                field=f"embeddings.{visible(token)}",
                expected="a token a file can hold apart from the others",
                found=f"a lone surrogate, written as U+FFFD, which {quoted(key)} already is",
            )
        written[key] = vector.tolist()
    return written


def variant_fields(model: ModelSpec) -> dict[str, Any]:
    """The variant keys of docs/variants.md the model has on, as the model file writes
    them (none for a model without them, so its file reads as before)."""
    v = model.variants
    out: dict[str, Any] = {}
    if v.window is not None:
        out["window"] = v.window
    if v.sinks:
        out["sinks"] = v.sinks
    if v.alibi_slopes is not None:
        out["alibi_slopes"] = [float(m) for m in v.alibi_slopes]
    if v.qk_norm:
        out["qk_norm"] = True
        out["qk_norm_eps"] = float(v.qk_norm_eps)
        for name in ("q_norm", "k_norm"):
            weight = getattr(v, name)
            if weight is not None:
                out[name] = weight.tolist()
    if v.softcap is not None:
        out["softcap"] = float(v.softcap)
    if v.sink_logit is not None:
        sink = v.sink_logit
        out["sink_logit"] = float(sink) if isinstance(sink, float) else [float(s) for s in sink]
    return out


def model_text(model: ModelSpec, *, as_json: bool) -> bytes:
    """The model file's bytes: JSON (indented, one row of a matrix per line) or YAML."""
    document = model_document(model)
    if as_json:
        import orjson

        return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
    from attntrace.modelfile.yaml_file import dump_yaml

    return dump_yaml(document).encode("utf-8")


def save_model(model: ModelSpec, path: str | Path) -> None:
    """Write ``model`` to ``path`` (JSON where the name ends in ``.json``, any case; else
    YAML), atomically, as ``cp`` would treat the name.

    A path that exists must be a regular file, or a symbolic link to one: the link is
    followed and the file it points to is replaced (its temporary file made in *that*
    file's folder), so the link stays a link. A folder, a device, a FIFO or a socket is
    refused and left untouched; so is a link to nothing (a dangling link: not written
    through, as GNU ``cp`` refuses, so a planted link cannot aim the write elsewhere). A
    file replaced keeps its permission bits; a new file gets ``0o666 & ~umask``, as
    ``open`` gives. A folder that does not exist or cannot be written, or any failure on
    the way (a full disk, a folder that vanishes), is one :class:`InputError` naming the
    file, with no temporary file left and the old file as it was."""
    name = str(path)
    data = model_text(model, as_json=Path(path).suffix.lower() == ".json")
    target, mode = _destination(Path(path), name)
    # Everything happens through one handle on the folder, so a folder renamed meanwhile
    # still gets its file and loses its temporary one, and one deleted fails cleanly.
    folder: int | None = None
    temporary: str | None = None
    try:
        folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
        temporary, handle = _temporary_file(folder, target.name)
        try:
            os.fchmod(handle, mode)
            _write_all(handle, data)
            os.fsync(handle)
        finally:
            os.close(handle)
        os.replace(temporary, target.name, src_dir_fd=folder, dst_dir_fd=folder)
        temporary = None
        with contextlib.suppress(OSError):  # the new name on disk; some systems cannot
            os.fsync(folder)
    except OSError as error:
        raise InputError(
            f"cannot write the model file: {error.strerror or error}", source=name, field="--save"
        ) from None
    finally:
        if folder is not None:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=folder)
            os.close(folder)


def _temporary_file(folder: int, name: str) -> tuple[str, int]:
    """A new file of a random hidden name, ``.NAME.XXXXXXXX.tmp``, in ``folder`` (an open
    handle), made only if no file has that name (``O_EXCL``: nothing is overwritten or
    followed) and readable by its owner alone until its mode is set; its name and an open
    handle on it. The name is cut so that a long NAME still leaves room for the rest."""
    import secrets

    for _ in range(100):
        candidate = f".{name[:32]}.{secrets.token_hex(4)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        try:
            return candidate, os.open(candidate, flags, 0o600, dir_fd=folder)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name beside it")


def check_destination(
    path: str | Path, *, field: str | None = "--save", what: str = "the model file"
) -> Path:
    """Refuse now what :func:`save_model` would refuse about the name (a device, a FIFO,
    a folder, a dangling link, no folder to write into), so ``train --save`` says so
    before it trains, not after; a failure writing is still only known when writing.
    ``--export`` checks its file the same way (``field`` and ``what`` name it in the
    messages). The file to write: ``path``, or where a link there points.

    The folder is tried too, by making the temporary file the write would make and
    removing it at once: a folder that refuses new files (``/sys``, a read-only mount, no
    permission, even for root) is said now, before minutes of work are lost to it."""
    if isinstance(path, str) and path.endswith(("/", os.sep)):  # Path() would drop the /
        raise InputError(
            f"names a folder (it ends in /): give a file name for {what}",
            source=path,
            field=field,
        )
    target = _destination(Path(path), str(path), field, what)[0]
    folder: int | None = None
    try:
        folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
        temporary, handle = _temporary_file(folder, target.name)
        os.close(handle)
        os.unlink(temporary, dir_fd=folder)
    except OSError as error:
        raise InputError(
            f"cannot write {what}: {error.strerror or error}", source=str(path), field=field
        ) from None
    finally:
        if folder is not None:
            os.close(folder)
    return target


def _destination(
    path: Path, name: str, field: str | None = "--save", what: str = "the model file"
) -> tuple[Path, int]:
    """Where the bytes go and with what mode: ``path`` itself, or the file a symbolic
    link at ``path`` points to (followed to its end, as ``open`` would), with the existing
    file's permission bits, or ``0o666 & ~umask`` for a new file. Anything there that is
    not a regular file is refused here, before a temporary file is made beside it."""

    def refuse(message: str) -> InputError:
        return InputError(message, source=name, field=field)

    try:
        status: os.stat_result | None = path.stat()  # follows links
    except FileNotFoundError:
        status = None
    except OSError as error:  # a loop of links, a file used as a folder, no permission
        raise refuse(f"cannot write {what}: {error.strerror or error}") from None
    except ValueError:  # a NUL in the name (only from Python: argv cannot hold one)
        raise refuse(f"cannot write {what}: the name holds a NUL byte") from None
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if status is None:
        if path.is_symlink():
            raise refuse(
                f"is a symbolic link to {str(target)!r}, which does not exist: "
                "not writing through a dangling link"
            )
        if not target.parent.is_dir():
            raise refuse(f"no folder {str(target.parent)!r} to write into")
        return target, 0o666 & ~_umask()
    if stat.S_ISDIR(status.st_mode):
        raise refuse("is a folder: give a file name")
    if not stat.S_ISREG(status.st_mode):
        raise refuse(f"is a {_kind(status.st_mode)}, not a regular file: refused, left as it is")
    return target, stat.S_IMODE(status.st_mode)


def _kind(mode: int) -> str:
    """What a non-regular, non-folder file is, in the words ``ls`` and ``stat`` use."""
    kinds = (
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISFIFO, "FIFO (named pipe)"),
        (stat.S_ISSOCK, "socket"),
    )
    return next((word for test, word in kinds if test(mode)), "special file")


def _write_all(handle: int, data: bytes) -> None:
    """Write every byte (``os.write`` may write fewer than asked; it raises on a full
    disk, which :func:`save_model` turns into one error line after removing the
    temporary file)."""
    view = memoryview(data)
    while view:
        view = view[os.write(handle, view) :]


def _umask() -> int:
    """The process's umask, so a new file has the permissions a plain ``open`` would give
    it. Read without changing it where Linux shows it (the ``Umask:`` line of
    /proc/self/status): setting it to read it, the only portable way, would race with the
    other threads (the live view's) making files meanwhile."""
    try:
        with Path("/proc/self/status").open(encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)  # the fallback: briefly the strict mask, never a looser one
    os.umask(mask)
    return mask
