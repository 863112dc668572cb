"""--model as a catalogued name or a path: a .gguf file, a save_pretrained folder, a
folder holding one GGUF file; every bad path one InputError naming it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from disk_stores import config, safetensors, stores, tiny_gguf

from attntrace.errors import InputError
from attntrace.real.catalog import SMOLLM2
from attntrace.real.disk.locate import locate

__all__ = ["stores"]  # the fixture, used by name


def refusal(text: str) -> str:
    with pytest.raises(InputError) as caught:
        locate(text)
    line = str(caught.value)
    assert "\n" not in line
    return line


def test_a_catalogued_name_wins_in_any_case(stores: tuple[Path, Path]) -> None:
    Path("smollm2").write_bytes(b"a file of that name")
    located = locate("SmolLM2")
    assert (located.kind, located.name, located.catalogued) == ("catalogue", "smollm2", SMOLLM2)
    assert refusal("./smollm2").startswith("smollm2: not a GGUF file")  # ./ makes it a path


def test_a_gguf_file_by_absolute_relative_and_home_path(
    stores: tuple[Path, Path], tmp_path: Path
) -> None:
    path = tiny_gguf(tmp_path / "home" / "my model.gguf")
    for text in (str(path), "home/my model.gguf", "~/my model.gguf"):
        located = locate(text)
        assert located.kind == "gguf"
        assert located.origin == "path"
        assert located.name == "my model.gguf"
        assert located.weights == (Path(text).expanduser(),)


def test_a_file_that_is_not_gguf_is_named_with_its_magic(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGML" + b"\0" * 40)
    line = refusal(str(path))
    assert str(path) in line
    assert "not a GGUF file" in line
    assert "b'GGML'" in line


def test_a_save_pretrained_folder(tmp_path: Path) -> None:
    folder = tmp_path / "tiny-llama"
    folder.mkdir()
    (folder / "config.json").write_bytes(config())
    (folder / "model.safetensors").write_bytes(safetensors())
    located = locate(str(folder))
    assert (located.kind, located.name, located.folder) == ("hf-folder", "tiny-llama", folder)
    assert located.weights == (folder / "model.safetensors",)
    assert located.config == folder / "config.json"
    assert located.tokenizer is None
    (folder / "tokenizer.json").write_text("{}")
    assert locate(str(folder)).tokenizer == folder / "tokenizer.json"
    assert locate(str(folder / "config.json")).weights == located.weights


def test_shards_come_from_the_index_in_order(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(config())
    shards = [f"model-0000{i}-of-00002.safetensors" for i in (1, 2)]
    for shard in shards:
        (tmp_path / shard).write_bytes(safetensors())
    weight_map = {"b": shards[1], "a": shards[0], "c": shards[1]}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    assert locate(str(tmp_path)).weights == tuple(tmp_path / s for s in shards)


def test_a_missing_shard_names_it(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(config())
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    line = refusal(str(tmp_path))
    assert "model-00001-of-00002.safetensors: no such file" in line
    assert "a shard the index names" in line


def test_an_index_pointing_outside_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(config())
    index = {"weight_map": {"a": "../../etc/passwd"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    assert "a file name inside the folder" in refusal(str(tmp_path))


def test_a_folder_with_one_gguf_is_that_file(tmp_path: Path) -> None:
    path = tiny_gguf(tmp_path / "only.gguf")
    located = locate(str(tmp_path))
    assert located.kind == "gguf"
    assert located.weights == (path,)


def test_a_folder_with_two_ggufs_asks_which(tmp_path: Path) -> None:
    tiny_gguf(tmp_path / "a.gguf")
    tiny_gguf(tmp_path / "b.gguf")
    line = refusal(str(tmp_path))
    assert "2 GGUF files" in line
    assert "a.gguf" in line
    assert "Name the file" in line


def test_a_folder_with_neither_config_nor_gguf(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("hi")
    line = refusal(str(tmp_path))
    assert line.startswith(f"{tmp_path}: neither a Hugging Face model folder nor a GGUF file")
    assert "expected config.json and model.safetensors" in line
    assert "README.md" in line


def test_config_without_weights_and_pytorch_bins(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(config())
    assert "config.json without its weights" in refusal(str(tmp_path))
    (tmp_path / "pytorch_model.bin").write_bytes(b"pickle")
    assert "only PyTorch weights (pytorch_model.bin)" in refusal(str(tmp_path))


@pytest.mark.parametrize(
    ("content", "found"),
    [
        (b'{"model_type": "llama", "num_hid', "got Unterminated string starting at (line 1"),
        (b"", "got an empty file"),
        (b"[1, 2]", "not a JSON object"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_a_bad_config_is_one_line(tmp_path: Path, content: bytes, found: str) -> None:
    (tmp_path / "config.json").write_bytes(content)
    (tmp_path / "model.safetensors").write_bytes(safetensors())
    line = refusal(str(tmp_path))
    assert line.startswith(f"{tmp_path / 'config.json'}: ")
    assert found in line
    assert "expected the model's config" in line


def test_a_fifo_as_config_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "config.json")
    (tmp_path / "model.safetensors").write_bytes(safetensors())
    line = refusal(str(tmp_path))
    assert "config.json: a named pipe (FIFO), not a regular file" in line


def test_dev_zero_and_a_fifo_as_the_model(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.gguf")
    assert "a named pipe (FIFO), not a regular file" in refusal(str(tmp_path / "pipe.gguf"))
    (tmp_path / "zero.gguf").symlink_to("/dev/zero")
    assert "a character device, not a regular file" in refusal(str(tmp_path / "zero.gguf"))


def test_a_dangling_link_as_the_model(tmp_path: Path) -> None:
    (tmp_path / "gone.gguf").symlink_to(tmp_path / "nowhere.gguf")
    line = refusal(str(tmp_path / "gone.gguf"))
    assert "gone.gguf: dangling symlink to" in line
    assert "nowhere.gguf" in line


def test_a_lone_safetensors_file_asks_for_its_folder(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(safetensors())
    assert "give the folder" in refusal(str(tmp_path / "model.safetensors"))


@pytest.mark.parametrize("text", ["./no/such/folder", "/no/such.gguf", "missing.gguf"])
def test_a_path_that_is_not_there(stores: tuple[Path, Path], text: str) -> None:
    line = refusal(text)
    assert line.startswith(f"{text}: no such file or folder")
    assert "expected a .gguf file or a model folder" in line


@pytest.mark.parametrize("text", ["", "llama", "what is this"])
def test_anything_else_says_what_model_takes(stores: tuple[Path, Path], text: str) -> None:
    line = refusal(text)
    assert line.startswith("--model: expected minilm, smollm2, gemma3, a .gguf file")


def test_a_relative_folder_named_like_org_name_wins_over_the_cache(
    stores: tuple[Path, Path],
) -> None:
    folder = Path("Qwen") / "Qwen2.5-0.5B"
    folder.mkdir(parents=True)
    tiny_gguf(folder / "q.gguf")
    located = locate("Qwen/Qwen2.5-0.5B")
    assert located.origin == "path"
    assert located.kind == "gguf"
