"""A lone surrogate in every writer: each document holds U+FFFD (docs/json.md).

A JSON model can spell a token or its name ``"\\udcff"``, and a sentence byte that is not
UTF-8 reaches Python as one (``attntrace run "$(printf 'cat \\xff')"``). Tables show it as
``\\udcff``; no UTF-8 document can hold it, so every document attntrace writes (each
``--json``, each ``--export`` page, ``train --save`` in JSON and YAML, the notebook's
page) holds U+FFFD there instead. Each writer runs in its own process here, the sentence
given as the byte 0xff on the command line, as a shell passes it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from paths import ROOT, SAMPLES

LONE = "\udcff"  # what Python makes of the byte 0xff in argv, and JSON's "\udcff"
SENTENCE = f"cat {LONE}"  # passed to the process as b"cat \xff"
LOSS = ("--from", "cat", "--to", LONE)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """cat-eats-fish with a fourth token, the lone surrogate, and a name holding one."""
    document = json.loads((SAMPLES / "cat-eats-fish.json").read_text(encoding="utf-8"))
    document["name"] = f"fish{LONE}name"
    document["description"] = f"a model{LONE}"
    document["embeddings"][LONE] = [0.5, -1.0]
    path = tmp_path_factory.mktemp("surrogates") / "model.json"
    path.write_text(json.dumps(document), encoding="utf-8")  # ASCII: "\udcff" escaped
    return path


def attntrace(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """``attntrace ARGS`` in a process of its own, this checkout's package imported; a
    lone surrogate in ARGS reaches it as the byte it stands for (os.fsencode)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUTF8": "0", "LC_ALL": "C.UTF-8"}
    env.pop("COLUMNS", None)
    done = subprocess.run(
        [sys.executable, "-m", "attntrace", *args], cwd=cwd, env=env, capture_output=True
    )
    assert b"Traceback" not in done.stderr, done.stderr.decode("utf-8", "replace")
    assert done.returncode in (0, 1), done.stderr.decode("utf-8", "replace")
    return done


def well_formed_text(data: bytes) -> str:
    """The bytes as strict UTF-8 (a raw 0xff, or a surrogate, fails here), holding U+FFFD
    and no trace of the surrogate, escaped or not."""
    text = data.decode("utf-8")  # strict
    assert "\ufffd" in text
    assert "\\udcff" not in text.lower()
    return text


def parsed(data: bytes) -> Any:
    text = well_formed_text(data)
    document = json.loads(text)
    assert "\ufffd" in json.dumps(document, ensure_ascii=False)
    return document


JSON_COMMANDS = {
    "run": ("run", "--json"),
    "run --dtype": ("run", "--json", "--dtype", "float16"),
    "run --stages": ("run", "--json", "--stages", "softmax"),
    "grad": ("grad", "--json", *LOSS),
    "train": ("train", "--json", "--steps", "2", *LOSS),
    "flash": ("flash", "--json"),
    "decode": ("decode", "--json"),
    "diff --set": ("diff", "--json", "--set", "causal=true"),
}


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@pytest.mark.parametrize("args", JSON_COMMANDS.values(), ids=JSON_COMMANDS.keys())
def test_json_holds_the_replacement_character(args: tuple[str, ...], model: Path) -> None:
    document = parsed(attntrace(*args, "-c", str(model), SENTENCE, cwd=model.parent).stdout)
    name = document["model"]["name"] if "model" in document else document["a"]["model"]["name"]
    assert name == "fish\ufffdname"
    tokens = document.get("tokens") or document["a"]["tokens"]
    assert tokens[-1] == "\ufffd"


def test_check_names_its_file_and_tokens_with_the_replacement_character(model: Path) -> None:
    arrays = model.parent / os.fsdecode(b"mine\xff.npz")  # a file name that is not UTF-8
    np.savez(arrays, scores=np.zeros((2, 2)))
    document = parsed(
        attntrace(
            "check", "--json", str(arrays), "-c", str(model), SENTENCE, cwd=model.parent
        ).stdout
    )
    assert document["source"].endswith("mine\ufffd.npz")
    assert document["tokens"] == ["cat", "\ufffd"]


def test_diff_of_two_saved_traces(model: Path) -> None:
    folder = model.parent
    for name, causal in (("a.json", "false"), ("b.json", "true")):
        out = attntrace(
            "run", "--json", "-c", str(model), "--set", f"causal={causal}", SENTENCE, cwd=folder
        )
        (folder / name).write_bytes(out.stdout)
    document = parsed(attntrace("diff", "--json", "a.json", "b.json", cwd=folder).stdout)
    assert document["b"]["tokens"] == ["cat", "\ufffd"]


EXPORTS = {
    "run": ("run",),
    "grad": ("grad", *LOSS),
    "decode": ("decode",),
    "flash": ("flash",),
    "diff": ("diff", "--set", "causal=true"),
}


def page_documents(page: str) -> list[Any]:
    blocks = re.findall(r'<script type="application/json" id="\w+">(.*?)</script>', page, re.S)
    assert blocks
    return [json.loads(block) for block in blocks]


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@pytest.mark.parametrize("args", EXPORTS.values(), ids=EXPORTS.keys())
def test_export_page_holds_the_replacement_character(args: tuple[str, ...], model: Path) -> None:
    page = model.parent / f"{args[0]}.html"
    attntrace(*args, "-c", str(model), SENTENCE, "--export", str(page), cwd=model.parent)
    text = well_formed_text(page.read_bytes())
    assert "<title>attntrace " in text
    assert "fish\ufffdname</title>" in text
    documents = page_documents(text)
    assert any("\ufffd" in json.dumps(d, ensure_ascii=False) for d in documents)


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_train_save_writes_a_file_that_reads_back(suffix: str, model: Path) -> None:
    saved = model.parent / f"trained{suffix}"
    attntrace(
        "train",
        "--steps",
        "2",
        *LOSS,
        "-c",
        str(model),
        SENTENCE,
        "--save",
        str(saved),
        cwd=model.parent,
    )
    well_formed_text(saved.read_bytes())
    from attntrace.modelfile.model_file import load_model

    spec = load_model(saved)
    assert spec.name == "fish\ufffdname-trained"
    assert spec.description is not None
    assert "\ufffd" in spec.description
    assert "\ufffd" in spec.embeddings
    assert LONE not in spec.embeddings
    # and it traces: the token is U+FFFD now
    again = parsed(
        attntrace("run", "--json", "-c", str(saved), "cat \ufffd", cwd=model.parent).stdout
    )
    assert again["tokens"] == ["cat", "\ufffd"]


def test_a_surrogate_beside_the_replacement_character_is_refused_on_save(tmp_path: Path) -> None:
    from attntrace.errors import InputError
    from attntrace.modelfile.model_file import load_model
    from attntrace.modelfile.model_writer import model_document

    document = json.loads((SAMPLES / "cat-eats-fish.json").read_text(encoding="utf-8"))
    document["embeddings"][LONE] = [0.5, -1.0]
    document["embeddings"]["\ufffd"] = [1.0, 1.0]
    path = tmp_path / "both.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(InputError, match="U\\+FFFD"):
        model_document(load_model(path))


def test_softmax_refuses_a_surrogate_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "attntrace", "softmax", "--json", "1", LONE],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
    )
    assert done.returncode == 2
    assert done.stdout == b""
    assert done.stderr.decode("utf-8").count("\n") == 1
    assert b"\\udcff" in done.stderr


def test_the_notebook_page_and_the_api(model: Path) -> None:
    import attntrace as api

    trace = api.trace_attention(SENTENCE, config=str(model))
    page = trace._repr_html_()
    assert LONE not in page
    assert "\ufffd" in page
    page.encode("utf-8")  # strict
    assert "text/html" in trace._repr_mimebundle_()
    from attntrace.forward.trace_json import dump_bytes, trace_to_dict

    assert parsed(dump_bytes(trace))["tokens"] == ["cat", "\ufffd"]
    assert trace_to_dict(trace)["model"]["name"] == "fish\ufffdname"
