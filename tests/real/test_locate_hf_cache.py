"""--model ORG/NAME[@REVISION] from a Hugging Face cache laid out as huggingface_hub
lays it out: where the cache is (the variables' precedence), refs and snapshots, and
every broken entry one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from disk_stores import (
    COMMIT_A,
    COMMIT_B,
    blob_of,
    config,
    hf_model,
    safetensors,
    stores,
    tiny_gguf,
)
from oracles import require

from attntrace.errors import InputError
from attntrace.real.disk.hf_cache import hub_cache
from attntrace.real.disk.locate import locate

__all__ = ["stores"]

QWEN = "Qwen/Qwen2.5-0.5B-Instruct"
INDEX = "model.safetensors.index.json"
FILES = {
    "config.json": config("qwen2"),
    "model.safetensors": safetensors(),
    "tokenizer.json": b"{}",
}


def refusal(text: str) -> str:
    with pytest.raises(InputError) as caught:
        locate(text)
    return str(caught.value)


def test_where_the_cache_is(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """huggingface_hub's constants.py: HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub,
    XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub, in that order."""
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert hub_cache() == tmp_path / ".cache" / "huggingface" / "hub"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub_cache() == tmp_path / "xdg" / "huggingface" / "hub"
    monkeypatch.setenv("HF_HOME", "~/hf")
    assert hub_cache() == tmp_path / "hf" / "hub"
    monkeypatch.setenv("HUGGINGFACE_HUB_CACHE", str(tmp_path / "legacy"))
    assert hub_cache() == tmp_path / "legacy"
    monkeypatch.setenv("WHERE", str(tmp_path / "v"))
    monkeypatch.setenv("HF_HUB_CACHE", "$WHERE/hub")
    assert hub_cache() == tmp_path / "v" / "hub"


def test_the_same_folder_as_huggingface_hub(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Held to huggingface_hub's own constants, computed afresh in a child process."""
    require("huggingface_hub")  # it comes with transformers, the oracle
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    theirs = subprocess.run(
        [
            sys.executable,
            "-c",
            "from huggingface_hub import constants; print(constants.HF_HUB_CACHE)",
        ],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
    ).stdout.strip()
    assert Path(theirs) == hub_cache()


def test_org_name_is_the_snapshot_refs_main_names(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    snapshot = hf_model(hub, QWEN, FILES)
    located = locate(QWEN)
    assert (located.kind, located.origin, located.name) == ("hf-folder", "hf-cache", QWEN)
    assert located.folder == snapshot
    assert located.revision == COMMIT_A
    assert located.weights == (snapshot / "model.safetensors",)
    assert located.config == snapshot / "config.json"
    assert located.tokenizer == snapshot / "tokenizer.json"
    assert located.weights[0].is_symlink()  # read through the link, into blobs/


def test_at_revision_a_branch_a_commit_and_not_a_short_hash(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    hf_model(hub, QWEN, FILES)
    second = hf_model(
        hub, QWEN, {**FILES, "config.json": config("qwen2", x=1)}, commit=COMMIT_B, ref="v2"
    )
    for text in (f"{QWEN}@v2", f"{QWEN}@{COMMIT_B}"):
        located = locate(text)
        assert located.folder == second
        assert located.revision == COMMIT_B
        assert located.name == text
    line = refusal(f"{QWEN}@bbbbbbb")
    assert "a short commit hash" in line
    assert f"@{COMMIT_B}" in line
    line = refusal(f"{QWEN}@v9")
    assert "no ref or snapshot 'v9'" in line
    assert line.endswith(f"; fetch it with: hf download {QWEN} --revision v9")
    assert "refs main, v2" in line


def test_a_pull_request_ref(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    hf_model(hub, QWEN, FILES, commit=COMMIT_B, ref="refs/pr/1")
    assert locate(f"{QWEN}@refs/pr/1").revision == COMMIT_B


def test_not_in_the_cache_gives_the_command(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    line = refusal(QWEN)
    assert line == (
        f"--model: {QWEN} is not in the Hugging Face cache ({hub}); attntrace never "
        f"downloads: fetch it with: hf download {QWEN}"
    )


def test_another_case_is_suggested(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    hf_model(hub, QWEN, FILES)
    assert f"did you mean {QWEN}?" in refusal(QWEN.lower())


def test_a_dangling_symlink_names_the_file_and_the_fix(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    snapshot = hf_model(hub, QWEN, FILES)
    blob_of(snapshot / "model.safetensors").unlink()
    line = refusal(QWEN)
    assert line.startswith(f"{snapshot / 'model.safetensors'}: dangling symlink to ../../blobs/")
    assert line.endswith(f"; fetch it with: hf download {QWEN}")  # the command ends it


def test_a_snapshot_with_only_its_config(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    hf_model(hub, QWEN, {"config.json": config()})
    line = refusal(QWEN)
    assert "config.json without its weights (expected model.safetensors or" in line
    assert line.endswith(f"got no weights); fetch it with: hf download {QWEN}")


def test_a_dangling_shard_of_an_index(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    shards = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    index = {"weight_map": {"a": shards[0], "b": shards[1]}}
    files = {
        "config.json": config(),
        "model.safetensors.index.json": json.dumps(index).encode(),
        shards[0]: safetensors(("a",)),
        shards[1]: safetensors(("b",)),
    }
    snapshot = hf_model(hub, QWEN, files)
    assert locate(QWEN).weights == tuple(snapshot / s for s in shards)
    blob_of(snapshot / shards[1]).unlink()
    assert refusal(QWEN).startswith(f"{snapshot / shards[1]}: dangling symlink")


def test_a_bad_ref_and_a_missing_snapshot(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    snapshot = hf_model(hub, QWEN, FILES)
    ref = snapshot.parent.parent / "refs" / "main"
    ref.write_text("not a hash")
    assert refusal(QWEN) == f"{ref}: expected a 40-digit commit hash, got 'not a hash'"
    ref.write_text(COMMIT_B)
    line = refusal(QWEN)
    assert f"snapshots/{COMMIT_B}: the snapshot of commit {COMMIT_B} is missing" in line
    ref.unlink()
    os.mkfifo(ref)
    assert "main: a named pipe (FIFO), not a regular file" in refusal(QWEN)


def test_no_refs_main_names_a_snapshot(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    hf_model(hub, QWEN, FILES, ref=None)
    assert f"no refs/main (fetched by commit?): name a snapshot, @{COMMIT_A}" in refusal(QWEN)
    assert locate(f"{QWEN}@{COMMIT_A}").revision == COMMIT_A


def test_a_path_into_the_cache_is_named_as_the_cache_names_it(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    snapshot = hf_model(hub, QWEN, FILES)
    for path in (snapshot, snapshot.parent.parent):
        located = locate(str(path))
        assert located.name == QWEN
        assert located.folder == snapshot
        assert located.revision == COMMIT_A


def test_a_gguf_repository_with_one_file(stores: tuple[Path, Path], tmp_path: Path) -> None:
    hub, _ = stores
    content = tiny_gguf(tmp_path / "t.gguf").read_bytes()
    snapshot = hf_model(hub, "bartowski/Tiny-GGUF", {"Tiny-Q8_0.gguf": content})
    located = locate("bartowski/Tiny-GGUF")
    assert located.kind == "gguf"
    assert located.weights == (snapshot / "Tiny-Q8_0.gguf",)


@pytest.mark.parametrize("revision", ["../../etc", "refs/../../x", "/abs"])
def test_a_revision_cannot_climb_out_of_refs(stores: tuple[Path, Path], revision: str) -> None:
    hub, _ = stores
    hf_model(hub, QWEN, FILES)
    line = refusal(f"{QWEN}@{revision}")
    assert line.endswith(f"revision: expected a branch, tag or commit hash, got {revision!r}")


@pytest.mark.parametrize(
    ("index", "found"),
    [
        (b"{", "not JSON (truncated?)"),
        (b'{"metadata": {}}', "weight_map: expected an object of tensor name -> shard file"),
        (b'{"weight_map": {}}', "weight_map: expected an object"),
        (b'{"weight_map": {"a": 3}}', "weight_map.a: expected a file name inside the folder"),
    ],
)
def test_a_bad_shard_index_is_one_line(stores: tuple[Path, Path], index: bytes, found: str) -> None:
    hub, _ = stores
    snapshot = hf_model(hub, QWEN, {"config.json": config(), INDEX: index})
    line = refusal(QWEN)
    assert line.startswith(f"{snapshot / INDEX}: ")
    assert found in line


def test_the_cache_folder_itself_says_how_to_name_a_model(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    hf_model(hub, QWEN, FILES)
    line = refusal(str(hub))
    assert line == (
        f"{hub}: a Hugging Face cache, not a model: name one of its models as ORG/NAME, "
        f"e.g. --model {QWEN} (attntrace models lists them)"
    )
