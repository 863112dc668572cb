"""`attntrace models` after the catalogue: every model of the Hugging Face cache and
Ollama's store, a row each (traceable, or why not), where they were looked for, and the
same as JSON (attntrace/models/v1's ``found``, ``looked_in``, ``cut_short``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from disk_stores import COMMIT_A, config, hf_model, ollama_model, safetensors, stores, tiny_gguf
from helpers import invoke, schema
from paths import ROOT
from typer.testing import CliRunner

from attntrace.cli import app
from attntrace.real.views.found import size_text

__all__ = ["stores"]

ANSI = re.compile(r"\x1b\[[0-9;]*m")
QWEN = {"config.json": config("qwen2"), "model.safetensors": safetensors()}
QWEN_BYTES = sum(len(content) for content in QWEN.values())


def four_models(hub: Path, store: Path, tmp_path: Path) -> None:
    """A traceable safetensors model, a GGUF in Ollama's store, a broken entry (a
    dangling link) and an unsupported architecture (mamba)."""
    hf_model(hub, "Qwen/Qwen2.5-0.5B-Instruct", QWEN)
    gguf = tiny_gguf(tmp_path / "llama.gguf", "llama", layers=28, heads=24)
    ollama_model(store, "llama3.2", blob=gguf.read_bytes())
    snapshot = hf_model(hub, "org/broken", {"config.json": config()})
    (snapshot / "model.safetensors").symlink_to("../../blobs/" + "0" * 64)
    mamba = {"config.json": config("mamba"), "model.safetensors": safetensors()}
    hf_model(hub, "state-spaces/mamba-130m-hf", mamba)


def found_part(output: str) -> str:
    """What `models` prints after the catalogue."""
    return output[output.index("On this machine") :]


def test_each_model_is_a_row_at_80_columns(stores: tuple[Path, Path], tmp_path: Path) -> None:
    hub, store = stores
    four_models(hub, store, tmp_path)
    result = invoke("models", columns=80)
    assert result.exit_code == 0, result.output
    assert "minilm" in result.output  # the catalogue first
    found = found_part(result.stdout)
    assert max(len(line) for line in found.splitlines()) <= 80
    lines = found.splitlines()
    assert lines[0] == (
        "On this machine, 4 models (3 in the Hugging Face cache, 1 in Ollama's store):"
    )
    at = lines.index("Qwen/Qwen2.5-0.5B-Instruct")
    qwen = f"  qwen2 · 2 layers × 4 heads (2 K/V) · {QWEN_BYTES} B · safetensors · ✓ traceable"
    assert lines[at + 1] == qwen
    at = lines.index("ollama:llama3.2")
    assert lines[at + 1].startswith("  llama · 28 layers × 24 heads (2 K/V) · ")
    assert lines[at + 1].endswith(" kB · GGUF · ✓ traceable")
    at = lines.index("org/broken")
    assert lines[at + 1].startswith("  ✗ model.safetensors: dangling symlink to ../../blobs/")
    assert "000000000000…" in lines[at + 1]  # the blob's hash cut to 12 digits
    assert "0" * 13 not in found
    at = lines.index("state-spaces/mamba-130m-hf")
    assert "✗ architecture mamba is not supported" in " ".join(lines[at + 1 : at + 3])
    words = " ".join(found.split())
    assert f"Looked in {hub} (the Hugging Face cache) and {store} (Ollama's store)." in words
    assert "Trace one: attntrace run --model NAME" in found
    assert "stopped after" not in found


def test_a_wide_terminal_gets_a_table(stores: tuple[Path, Path], tmp_path: Path) -> None:
    hub, store = stores
    four_models(hub, store, tmp_path)
    found = found_part(invoke("models", columns=160).stdout)
    assert max(len(line) for line in found.splitlines()) <= 160
    rows = {line.split()[0]: line for line in found.splitlines() if line.strip()}
    assert rows["name"].split() == ["name", "family", "layers", "×", "heads", "size", "format"]
    assert rows["Qwen/Qwen2.5-0.5B-Instruct"].split() == [
        *("Qwen/Qwen2.5-0.5B-Instruct", "qwen2", "2", "×", "4", "(2", "K/V)"),
        *(str(QWEN_BYTES), "B", "safetensors", "✓", "traceable"),
    ]
    assert rows["ollama:llama3.2"].split()[1:6] == ["llama", "28", "×", "24", "(2"]
    assert rows["state-spaces/mamba-130m-hf"].endswith("✗ architecture mamba is not supported")
    # the columns line up: each row's family starts where the header's does
    column = rows["name"].index("family")
    names = ("Qwen/Qwen2.5-0.5B-Instruct", "org/broken", "state-spaces/mamba-130m-hf")
    for name in (*names, "ollama:llama3.2"):
        assert rows[name][column - 2 : column] == "  ", name
        assert rows[name][column] != " ", name


def test_long_names_and_reasons_never_break_the_lines(
    stores: tuple[Path, Path], tmp_path: Path
) -> None:
    hub, store = stores
    four_models(hub, store, tmp_path)
    long_name = "an-organisation-with-a-long-name/" + "a-model-name-that-goes-on" * 3
    hf_model(hub, long_name, QWEN)
    for columns in (40, 80, 120, 200):
        found = found_part(invoke("models", columns=columns).stdout)
        assert max(len(line) for line in found.splitlines()) <= columns, columns
        folded = "".join(line for line in found.splitlines() if not line.startswith(" "))
        assert long_name in folded, columns  # folded, never cut: it is pasted after --model
    assert "architecture mamba is not supported" in " ".join(
        found_part(invoke("models", columns=40).stdout).split()
    )


def test_the_json_follows_the_schema(stores: tuple[Path, Path], tmp_path: Path) -> None:
    hub, store = stores
    four_models(hub, store, tmp_path)
    result = invoke("models", "--json")
    assert (result.exit_code, result.stderr) == (0, "")
    document = json.loads(result.stdout)
    shipped = schema("models-v1.schema.json")
    jsonschema.Draft202012Validator.check_schema(shipped)
    jsonschema.validate(document, shipped, cls=jsonschema.Draft202012Validator)
    assert document["schema"] == "attntrace/models/v1"
    assert [m["name"] for m in document["models"]] == ["minilm", "smollm2", "gemma3"]
    rows = {row["name"]: row for row in document["found"]}
    assert rows["Qwen/Qwen2.5-0.5B-Instruct"] == {
        "name": "Qwen/Qwen2.5-0.5B-Instruct",
        "store": "hf-cache",
        "format": "safetensors",
        "size_bytes": QWEN_BYTES,
        "family": "qwen2",
        "layers": 2,
        "heads": 4,
        "kv_heads": 2,
        "traceable": True,
        "why_not": "",
    }
    llama = rows["ollama:llama3.2"]
    assert (llama["store"], llama["format"], llama["family"]) == ("ollama", "GGUF", "llama")
    assert (llama["layers"], llama["heads"], llama["kv_heads"]) == (28, 24, 2)
    assert llama["size_bytes"] == (tmp_path / "llama.gguf").stat().st_size
    broken = rows["org/broken"]
    assert (broken["traceable"], broken["family"], broken["layers"]) == (False, None, None)
    assert "dangling symlink to ../../blobs/" + "0" * 64 in broken["why_not"]  # whole here
    mamba = rows["state-spaces/mamba-130m-hf"]
    assert (mamba["family"], mamba["traceable"]) == ("mamba", False)
    assert mamba["why_not"] == "architecture mamba is not supported"
    assert document["looked_in"] == [str(hub), str(store)]
    assert document["cut_short"] is False


@pytest.mark.parametrize(
    "change",
    [
        {"found": [{"name": "a"}]},
        {"cut_short": "no"},
        {"looked_in": ["only one"]},
        {"extra": True, "found": [{"size": 1}]},
    ],
)
def test_the_schema_refuses_a_broken_found_list(
    stores: tuple[Path, Path], change: dict[str, Any]
) -> None:
    document = json.loads(invoke("models", "--json").stdout)
    row = {
        "name": "a/b",
        "store": "hf-cache",
        "format": "safetensors",
        "size_bytes": 1,
        "family": "llama",
        "layers": 1,
        "heads": 1,
        "kv_heads": 1,
        "traceable": True,
        "why_not": "",
    }
    shipped = schema("models-v1.schema.json")
    jsonschema.validate({**document, "found": [row]}, shipped)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**document, "found": [{**row, "why_not": "x"}]}, shipped)
    broken = {**document, **change}
    if "extra" in change:
        broken["found"] = [{**row, "size": 1}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, shipped)


def test_a_hostile_folder_name_is_shown_escaped(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    hf_model(hub, "evil/\x1b[2J\x1b[31mred\nline\x07", QWEN)
    (hub / os.fsdecode(b"models--bad--\xff\xfe")).mkdir()  # not UTF-8, and no snapshot
    for columns in (80, 200):
        result = invoke("models", columns=columns)
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.stdout
        assert "\x07" not in result.stdout
        found = found_part(result.stdout)
        assert "evil/\\x1b[2J\\x1b[31mred\\nline\\x07" in found
        assert "bad/\\udcff\\udcfe" in found  # the bytes, not U+FFFD: which folder it is
    document = json.loads(invoke("models", "--json").stdout)
    names = [row["name"] for row in document["found"]]
    assert "evil/\x1b[2J\x1b[31mred\nline\x07" in names  # JSON escapes it; the text is whole
    assert "bad/\ufffd\ufffd" in names  # a byte that is not UTF-8: U+FFFD, as everywhere
    jsonschema.validate(document, schema("models-v1.schema.json"))


def test_empty_stores_say_where_they_looked(stores: tuple[Path, Path]) -> None:
    hub, store = stores
    result = invoke("models", columns=80)
    assert result.exit_code == 0
    found = found_part(result.stdout)
    assert found.startswith(
        "On this machine: no models in the Hugging Face cache or Ollama's store.\n"
    )
    words = " ".join(found.split())
    assert f"Looked in {hub} (the Hugging Face cache; HF_HUB_CACHE or HF_HOME moves it)" in words
    assert f"and {store} (Ollama's store; OLLAMA_MODELS moves it)." in words
    assert "--model PATH, a .gguf file or a folder with config.json" in words
    assert max(len(line) for line in found.splitlines()) <= 80
    document = json.loads(invoke("models", "--json").stdout)
    assert (document["found"], document["cut_short"]) == ([], False)


def test_missing_stores_are_no_error(stores: tuple[Path, Path], tmp_path: Path) -> None:
    hub, store = stores
    hub.rmdir()
    store.rmdir()
    result = invoke("models")
    assert result.exit_code == 0
    assert "no models in the Hugging Face cache" in result.stdout


def test_a_listing_cut_at_the_cap_says_so(
    stores: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import attntrace.real.disk.listing as listing

    hub, store = stores
    four_models(hub, store, tmp_path)
    monkeypatch.setattr(listing, "ENTRY_CAP", 2)
    found = found_part(invoke("models", columns=80).stdout)
    assert "stopped after 2 entries, so there may be more." in " ".join(found.split())
    assert "Qwen/Qwen2.5-0.5B-Instruct" in found
    assert "state-spaces" not in found
    document = json.loads(invoke("models", "--json").stdout)
    assert document["cut_short"] is True
    assert len(document["found"]) == 2


def test_no_color_takes_the_colour_away(stores: tuple[Path, Path], tmp_path: Path) -> None:
    hub, store = stores
    four_models(hub, store, tmp_path)
    base = {"NO_COLOR": None, "FORCE_COLOR": None, "COLUMNS": "80", "TERM": "xterm"}
    coloured = CliRunner().invoke(app, ["models"], env={**base, "FORCE_COLOR": "1"}).stdout
    assert "\x1b[32m✓ traceable" in coloured
    assert "\x1b[33m✗ architecture" in coloured.replace("\x1b[33m  ", "\x1b[33m")
    plain = CliRunner().invoke(app, ["models"], env={**base, "NO_COLOR": "1"}).stdout
    assert ANSI.search(plain) is None
    never = CliRunner().invoke(
        app, ["--color", "never", "models"], env={**base, "FORCE_COLOR": "1"}
    )
    assert never.stdout == plain
    assert ANSI.sub("", coloured) == plain


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1.0 kB"),
        (2144, "2.1 kB"),
        (987_654_321, "988 MB"),
        (9_960_000, "10 MB"),
        (999_600_000, "1.0 GB"),
        (1_234_567_890, "1.2 GB"),
        (15_000_000_000, "15 GB"),
        (10**21, "1000000 PB"),
    ],
)
def test_sizes_read_as_the_stores_show_them(count: int, shown: str) -> None:
    assert size_text(count) == shown


@pytest.mark.long
def test_models_with_a_gguf_in_the_store_loads_no_numpy(
    stores: tuple[Path, Path], tmp_path: Path
) -> None:
    """The start-up rule (tests/cli/test_commands.py) with models to list: a GGUF header
    is read without numpy."""
    hub, store = stores
    four_models(hub, store, tmp_path)
    probe = (
        "import sys\nfrom typer.testing import CliRunner\nfrom attntrace.cli import app\n"
        "result = CliRunner().invoke(app, ['models'])\n"
        "print(result.exit_code, 'numpy' in sys.modules, 'ollama:llama3.2' in result.stdout)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.stdout.split() == ["0", "False", "True"], done.stderr


def test_a_snapshot_no_ref_names_is_listed_by_commit(stores: tuple[Path, Path]) -> None:
    hub, _ = stores
    hf_model(hub, "org/pinned", QWEN, ref=None)
    document = json.loads(invoke("models", "--json").stdout)
    assert [row["name"] for row in document["found"]] == [f"org/pinned@{COMMIT_A}"]
    assert f"org/pinned@{COMMIT_A}" in invoke("models", columns=80).stdout
