"""``ORG/NAME[@REVISION]`` in the local Hugging Face cache, found as huggingface_hub finds it.

The cache's root is huggingface_hub's (``constants.py``): ``HF_HUB_CACHE``, else the
legacy ``HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``, else
``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``, each with ``~``
and ``$VARS`` expanded. A model is ``models--ORG--NAME/``: ``refs/<branch or tag>``
holds a commit hash, ``snapshots/<commit>/`` the files as symlinks into ``blobs/``.

A revision is looked up as ``try_to_load_from_cache`` does: a file under ``refs/`` of
that name (``main``, a tag, ``refs/pr/1``) gives the commit; else the revision is the
commit itself, which must be a snapshot's full name (huggingface_hub takes no short
hash; a unique prefix is named in the message, not guessed). attntrace never downloads:
where the model or the revision is not there, the line gives ``hf download``'s command
(huggingface_hub's CLI since 1.0; ``huggingface-cli`` was its old name).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from attntrace.errors import InputError
from attntrace.kernel.reading import naming, read_small
from attntrace.real.disk.files import refusal, regular_file
from attntrace.real.disk.hf_folder import SHOWN, folder_names, open_folder
from attntrace.real.disk.located import Located

#: huggingface_hub's repo id (``validate_repo_id``): ``ORG/NAME``, ASCII letters,
#: digits, ``-``, ``_``, ``.``, each part starting and ending with a letter or digit
#: (or ``_``), at most 96 characters, no ``--`` or ``..``.
REPO_ID = re.compile(r"(?a:\w(?:[\w.-]{0,94}\w)?)/(?a:\w(?:[\w.-]{0,94}\w)?)")
COMMIT = re.compile(r"[0-9a-f]{40}")
#: A revision as typed: a branch, tag or ``refs/pr/N``, or a commit.
REVISION = re.compile(r"[\w.\-/]{1,256}", re.ASCII)
PREFIX = "models--"


def hub_cache() -> Path:
    """The folder huggingface_hub caches models in (its ``HF_HUB_CACHE``)."""
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if value := os.environ.get(variable):
            return _expanded(value)
    if home := os.environ.get("HF_HOME"):
        return _expanded(home) / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = _expanded(xdg) if xdg else Path.home() / ".cache"
    return root / "huggingface" / "hub"


def _expanded(value: str) -> Path:
    """``~`` and ``$VARS`` expanded, as huggingface_hub does (in that order), with
    ``os.path.expanduser``: a ``~user`` of no such user is left as it is, where
    ``Path.expanduser`` would raise (the variable is the user's, not ours to refuse)."""
    return Path(os.path.expandvars(os.path.expanduser(value)))  # noqa: PTH111


def is_repo_id(text: str) -> bool:
    """Whether ``text`` reads as ``ORG/NAME`` or ``ORG/NAME@REVISION``."""
    repo, _, revision = text.partition("@")
    return (
        REPO_ID.fullmatch(repo) is not None
        and "--" not in repo
        and ".." not in repo
        and not repo.endswith(".git")
        and (not revision or REVISION.fullmatch(revision) is not None)
    )


def fetch_command(repo_id: str, revision: str | None) -> str:
    """The command that puts ``repo_id`` (at ``revision``) into the cache."""
    return f"hf download {repo_id}" + (f" --revision {revision}" if revision else "")


def locate_cached(text: str, field: str = "--model") -> Located:
    """``ORG/NAME[@REVISION]`` (:func:`is_repo_id`) from the cache; one InputError line
    with the ``hf download`` command where it is not there."""
    repo_id, at, revision = text.partition("@")
    if at and not revision:
        raise InputError(
            field=field,
            expected=f"a revision after {repo_id}@ (a branch, a tag or a commit)",
            found=repr(text),
        )
    fetch = fetch_command(repo_id, revision or None)
    cache = hub_cache()
    entry = cache / (PREFIX + repo_id.replace("/", "--"))
    if not entry.is_dir():
        raise InputError(
            f"{repo_id} is not in the Hugging Face cache ({cache}{_near(cache, entry.name)}); "
            f"attntrace never downloads: fetch it with: {fetch}",
            field=field,
        )
    return open_entry(entry, repo_id, revision or None)


def open_entry(entry: Path, repo_id: str, revision: str | None) -> Located:
    """The snapshot of cache entry ``entry`` that ``revision`` (default ``main``) names."""
    fetch = fetch_command(repo_id, revision)
    commit = resolve(entry, revision or "main", fetch)
    snapshot = entry / "snapshots" / commit
    if not snapshot.is_dir():
        raise InputError(
            f"the snapshot of commit {commit} is missing; fetch it with: {fetch}",
            source=str(snapshot),
        )
    name = repo_id + (f"@{revision}" if revision else "")
    return open_folder(snapshot, name, "hf-cache", revision=commit, fetch=fetch)


def resolve(entry: Path, revision: str, fetch: str) -> str:
    """The commit ``revision`` names in ``entry``: a ref's content, or a full hash."""
    if ".." in revision.split("/") or revision.startswith("/"):
        raise InputError(
            source=str(entry),
            field="revision",
            expected="a branch, tag or commit hash",
            found=repr(revision),
        )
    ref = entry / "refs" / revision
    if os.path.lexists(ref):
        regular_file(ref, f"a ref holding the commit hash of {revision}", fetch)
        with naming(str(ref)):
            held = read_small(ref, 256).decode("ascii", "replace").strip()
        if COMMIT.fullmatch(held) is None:
            raise InputError(
                source=str(ref), expected="a 40-digit commit hash", found=repr(held[:50])
            )
        return held
    if COMMIT.fullmatch(revision):
        return revision
    raise _unknown_revision(entry, revision, fetch)


def _unknown_revision(entry: Path, revision: str, fetch: str) -> InputError:
    """The line for a revision neither a ref nor a snapshot of ``entry``."""
    snapshots = _listed(entry / "snapshots")
    matches = [s for s in snapshots if s.startswith(revision)]
    if re.fullmatch(r"[0-9a-f]{4,39}", revision) and len(matches) == 1:
        return InputError(
            f"a short commit hash: huggingface_hub takes a ref name or the full hash; "
            f"write @{matches[0]}",
            source=str(entry),
        )
    refs = [str(p.relative_to(entry / "refs")) for p in _refs(entry / "refs")]
    if revision == "main" and snapshots:
        return InputError(
            "no refs/main (fetched by commit?): name a snapshot, @" + snapshots[0],
            source=str(entry),
            found=f"snapshots {', '.join(snapshots[:SHOWN])}",
        )
    return refusal(
        f"no ref or snapshot {revision!r}",
        entry,
        found=f"refs {', '.join(refs[:SHOWN]) or 'none'}, {len(snapshots)} snapshot(s)",
        fetch=fetch,
    )


def _listed(folder: Path) -> list[str]:
    try:
        return folder_names(folder) if folder.is_dir() else []
    except InputError:
        return []


def _refs(folder: Path) -> list[Path]:
    """The ref files under ``folder`` (``main``, tags, ``refs/pr/1``), at most a hundred."""
    found: list[Path] = []
    if folder.is_dir():
        for path in folder.rglob("*"):
            if path.is_file():
                found.append(path)
            if len(found) >= 100:
                break
    return sorted(found)


def _near(cache: Path, wanted: str) -> str:
    """``: did you mean ORG/Name?`` where the cache holds the name in another case."""
    if not cache.is_dir():
        return ": no such folder; HF_HUB_CACHE or HF_HOME names the cache"
    for name in _listed(cache):
        if name.lower() == wanted.lower():
            return f"; did you mean {name[len(PREFIX) :].replace('--', '/')}?"
    return ""


def cache_entry(path: Path) -> tuple[Path, str, str | None] | None:
    """(entry, ORG/NAME, commit or None) where ``path`` is a cache entry's folder or one
    of its snapshots: a path into the cache is named as the cache names it."""
    resolved = path.absolute()
    if resolved.name.startswith(PREFIX) and (resolved / "snapshots").is_dir():
        return resolved, resolved.name[len(PREFIX) :].replace("--", "/"), None
    parent = resolved.parent
    if parent.name == "snapshots" and parent.parent.name.startswith(PREFIX):
        entry = parent.parent
        return entry, entry.name[len(PREFIX) :].replace("--", "/"), resolved.name
    return None
