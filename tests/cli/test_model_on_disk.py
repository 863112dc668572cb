"""Issue 31's "Done when", through the CLI as a user runs it: ``python -m attntrace`` in
a child process whose HOME, Hugging Face cache and Ollama store are fake ones laid out
as the real ones are (tests/disk_stores.py), holding tiny models whose attention
transformers computes in float64 (tests/family_models.py, tests/gguf_oracle.py).

* ``--model Qwen/Qwen2.5-0.5B-Instruct``: a tiny qwen2 saved by ``save_pretrained``
  with a byte-level BPE tokenizer.json (Qwen 2's pre-tokenizer regex, trained here)
  in ``~/.cache/huggingface/hub``; ``@COMMIT`` for a second snapshot; a model not in
  the cache is one line with ``hf download``;
* ``--model ollama:llama3.2``: a tiny llama converted by llama.cpp's converter (its
  SentencePiece vocabulary), the blob of an Ollama manifest; the same file by path;
* ``--model ~/.cache/huggingface/hub/models--ORG--NAME/snapshots/COMMIT``;
* decode, heads, grad, check and flash with ``--model PATH``: exit 0, their JSON valid;
* issue 31's §5, bad input: one line, exit 2, naming the file and the problem.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import numpy.typing as npt
import pytest
from disk_stores import COMMIT_A, COMMIT_B, blob_of, hf_model, ollama_model, tiny_gguf
from family_models import oracle_run, tiny_model
from gguf_convert import SENTENCES
from gguf_oracle import attentions, family
from helpers import load_valid_trace, schema
from oracles import require
from paths import ROOT

pytestmark = pytest.mark.long

QWEN = "Qwen/Qwen2.5-0.5B-Instruct"
SENTENCE = "the quick brown fox jumps over a lazy dog"
# Qwen 2's pre-tokenizer (its tokenizer.json's Split pattern)
QWEN2_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# Llama 3's pre-tokenizer (its tokenizer.json's Split pattern: numbers in threes)
LLAMA3_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
BOS = "<|begin_of_text|>"
# digits, punctuation and a word the vocabulary never saw, for the byte-level vocabulary
ODD_SENTENCE = "the fox jumps 1234567 times, over a lazy dog's zebra!"


@dataclass
class Stores:
    root: Path
    home: Path
    hub: Path
    ollama: Path
    qwen: Path  # the snapshot refs/main names
    qwen_oracle: Any
    qwen_b_oracle: Any
    llama_gguf: Path
    llama_oracle: Any
    llama_folder: Path
    llama3_gguf: Path
    llama3_oracle: Any
    llama3_folder: Path
    qwen_gguf: Any  # gguf_oracle.Family: Qwen 2's byte-level vocabulary, pre qwen2

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")
        }
        return {
            **env,
            "HOME": str(self.home),
            "OLLAMA_MODELS": str(self.ollama),
            "PYTHONPATH": str(ROOT),
            "COLUMNS": "100",
            "NO_COLOR": "1",
            "TERM": "dumb",
        }


def qwen_tokenizer_json(vocab: int) -> bytes:
    """A byte-level BPE tokenizer.json as Qwen 2's is made (NFC, the regex split, byte
    level without its own regex), trained on a few sentences to at most ``vocab``
    tokens (fewer: the embedding table has rows past the tokenizer's, as Qwen's has)."""
    tk = require("tokenizers")
    tokenizer = tk.Tokenizer(tk.models.BPE())
    tokenizer.normalizer = tk.normalizers.NFC()
    tokenizer.pre_tokenizer = tk.pre_tokenizers.Sequence(
        [
            tk.pre_tokenizers.Split(tk.Regex(QWEN2_REGEX), behavior="isolated"),
            tk.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(
        vocab_size=vocab,
        initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>"],
    )
    tokenizer.train_from_iterator(SENTENCES, trainer)
    assert tokenizer.get_vocab_size() <= vocab
    return str(tokenizer.to_str()).encode()


def llama3_tokenizer_files(vocab: int) -> dict[str, bytes]:
    """A byte-level BPE tokenizer.json as Llama 3's is made (its regex split, byte
    level without its own regex, merges ignored for whole words, BOS added by the
    post-processor), with the tokenizer_config.json that says BOS is added."""
    tk = require("tokenizers")
    tokenizer = tk.Tokenizer(tk.models.BPE(ignore_merges=True))
    tokenizer.pre_tokenizer = tk.pre_tokenizers.Sequence(
        [
            tk.pre_tokenizers.Split(tk.Regex(LLAMA3_REGEX), behavior="isolated"),
            tk.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(
        vocab_size=vocab,
        initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[BOS, "<|end_of_text|>"],
    )
    tokenizer.train_from_iterator(SENTENCES, trainer)
    tokenizer.post_processor = tk.processors.TemplateProcessing(
        single=f"{BOS} $A", special_tokens=[(BOS, tokenizer.token_to_id(BOS))]
    )
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS,
        "eos_token": "<|end_of_text|>",
        "add_bos_token": True,
    }
    return {
        "tokenizer.json": str(tokenizer.to_str()).encode(),
        "tokenizer_config.json": json.dumps(config).encode(),
    }


def folder_files(folder: Path, tokenizer: bytes) -> dict[str, bytes]:
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>"}
    return {
        **files,
        "tokenizer.json": tokenizer,
        "tokenizer_config.json": json.dumps(config).encode(),
    }


@pytest.fixture(scope="session")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    root = tmp_path_factory.mktemp("on-disk")
    home = root / "home"
    hub = home / ".cache" / "huggingface" / "hub"
    ollama = root / "ollama"
    for folder in (hub, ollama):
        folder.mkdir(parents=True)
    vocab = 384
    tokenizer = qwen_tokenizer_json(vocab)
    qwen, qwen_folder = tiny_model("qwen2", root / "made", vocab_size=vocab)
    qwen_b, qwen_b_folder = tiny_model(
        "qwen2", root / "made", vocab_size=vocab, num_hidden_layers=2
    )
    snapshot = hf_model(hub, QWEN, folder_files(qwen_folder, tokenizer), commit=COMMIT_A)
    hf_model(hub, QWEN, folder_files(qwen_b_folder, tokenizer), commit=COMMIT_B, ref=None)
    llama = family(root / "made", "llama")
    gguf = llama.converted.gguf["f32"]
    llama3 = family(
        root / "made",
        "llama",
        tokenizer=llama3_tokenizer_files(vocab),
        vocab=vocab,
        pre="llama-bpe",
        key="llama-bpe",
    )
    llama3_gguf = llama3.converted.gguf["f32"]
    ollama_model(ollama, "llama3.2", blob=llama3_gguf.read_bytes())
    qwen_files = folder_files(qwen_folder, tokenizer)
    tokenizer_files = {k: v for k, v in qwen_files.items() if k.startswith("tokenizer")}
    qwen_gguf = family(
        root / "made", "qwen2", tokenizer=tokenizer_files, vocab=vocab, pre="qwen2", key="qwen2-bpe"
    )
    ollama_model(ollama, "qwen2.5", "0.5b", blob=qwen_gguf.converted.gguf["f32"].read_bytes())
    return Stores(
        root,
        home,
        hub,
        ollama,
        snapshot,
        qwen,
        qwen_b,
        gguf,
        llama.oracle,
        llama.converted.folder,
        llama3_gguf,
        llama3.oracle,
        llama3.converted.folder,
        qwen_gguf,
    )


def cli(stores: Stores, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "attntrace", *args],
        env=stores.env(),
        cwd=stores.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def ok_json(stores: Stores, *args: str) -> dict[str, Any]:
    result = cli(stores, *args, "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def one_line(result: subprocess.CompletedProcess[str], *words: str) -> str:
    """Exit 2, nothing on stdout, one ``attntrace: error:`` line holding ``words``."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("attntrace: error: "), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def softmax_by_head(trace: dict[str, Any]) -> dict[int, npt.NDArray[np.float64]]:
    return {
        int(stage["head"]): np.array(stage["data"], dtype=np.float64)
        for stage in trace["stages"]
        if stage["name"] == "softmax"
    }


def hf_ids(folder: Path, sentence: str) -> tuple[list[int], list[str]]:
    """The ids and tokens transformers' AutoTokenizer gives ``sentence``."""
    transformers = require("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    ids = list(tokenizer(sentence)["input_ids"])
    return ids, list(tokenizer.convert_ids_to_tokens(ids))


def assert_trace_is(trace: dict[str, Any], reference: npt.NDArray[np.float64]) -> None:
    """Every head's softmax stage is transformers' ``[heads, n, n]`` to 1e-9."""
    got = softmax_by_head(trace)
    assert sorted(got) == list(range(reference.shape[0]))
    for head, probabilities in got.items():
        np.testing.assert_allclose(probabilities, reference[head], rtol=1e-9, atol=1e-12)


def test_a_name_in_the_hf_cache_traces_as_transformers(stores: Stores) -> None:
    trace = ok_json(stores, "run", "--model", QWEN, SENTENCE, "--layer", "1")
    load_valid_trace(json.dumps(trace))
    ids, tokens = hf_ids(stores.qwen, SENTENCE)
    assert trace["tokens"] == tokens
    assert_trace_is(trace, oracle_run(stores.qwen_oracle, ids)[0][1])


def test_a_revision_in_the_hf_cache_is_that_snapshot(stores: Stores) -> None:
    trace = ok_json(stores, "run", "--model", f"{QWEN}@{COMMIT_B}", SENTENCE, "--layer", "1")
    ids, _ = hf_ids(stores.qwen, SENTENCE)
    assert_trace_is(trace, oracle_run(stores.qwen_b_oracle, ids)[0][1])
    one_line(cli(stores, "run", "--model", f"{QWEN}@{COMMIT_B}", SENTENCE, "--layer", "2"))


def test_a_model_not_in_the_cache_names_the_download(stores: Stores) -> None:
    one_line(
        cli(stores, "run", "--model", "Qwen/Qwen2.5-7B", SENTENCE), "hf download Qwen/Qwen2.5-7B"
    )
    one_line(
        cli(stores, "run", "--model", f"{QWEN}@{'c' * 40}", SENTENCE),
        f"hf download {QWEN} --revision {'c' * 40}",
    )


def test_a_path_into_the_hf_cache_traces(stores: Stores) -> None:
    path = f"~/.cache/huggingface/hub/models--Qwen--Qwen2.5-0.5B-Instruct/snapshots/{COMMIT_A}"
    trace = ok_json(stores, "run", "--model", path, SENTENCE, "--layer", "2")
    ids, _ = hf_ids(stores.qwen, SENTENCE)
    assert_trace_is(trace, oracle_run(stores.qwen_oracle, ids)[0][2])


def llama_ids(stores: Stores, sentence: str) -> tuple[list[int], list[str]]:
    """What the converted llama's own tokenizer.model makes of ``sentence``, after BOS
    (``add_bos_token``, true for llama)."""
    spm = require("sentencepiece")
    processor = spm.SentencePieceProcessor(model_file=str(stores.llama_folder / "tokenizer.model"))
    ids = [processor.bos_id(), *processor.encode(sentence)]
    return ids, [processor.id_to_piece(i) for i in ids]


def test_a_gguf_by_path_traces_as_transformers(stores: Stores) -> None:
    trace = ok_json(stores, "run", "--model", str(stores.llama_gguf), SENTENCE, "--layer", "1")
    ids, tokens = llama_ids(stores, SENTENCE)
    assert trace["tokens"] == tokens
    assert_trace_is(trace, attentions(stores.llama_oracle, ids)[1])


@pytest.mark.parametrize("sentence", [SENTENCE, ODD_SENTENCE])
def test_ollama_llama32_traces_as_transformers(stores: Stores, sentence: str) -> None:
    """The blob's vocabulary is Llama 3's kind (gpt2 BPE, pre llama-bpe): its tokens
    are AutoTokenizer's, BOS first, and its attention transformers'."""
    gguf = require("gguf")
    reader = gguf.GGUFReader(str(stores.llama3_gguf))
    assert reader.fields["tokenizer.ggml.pre"].contents() == "llama-bpe"
    assert reader.fields["tokenizer.ggml.model"].contents() == "gpt2"
    trace = ok_json(stores, "run", "--model", "ollama:llama3.2", sentence, "--layer", "1")
    ids, tokens = hf_ids(stores.llama3_folder, sentence)
    assert tokens[0] == BOS
    assert trace["tokens"] == tokens
    assert_trace_is(trace, attentions(stores.llama3_oracle, ids)[1])


@pytest.mark.parametrize("sentence", [SENTENCE, ODD_SENTENCE])
def test_ollama_qwen25_traces_as_transformers(stores: Stores, sentence: str) -> None:
    """A Qwen 2 GGUF (gpt2 BPE, pre qwen2) by name and tag: tokens AutoTokenizer's,
    attention transformers'."""
    gguf = require("gguf")
    reader = gguf.GGUFReader(str(stores.qwen_gguf.converted.gguf["f32"]))
    assert reader.fields["tokenizer.ggml.pre"].contents() == "qwen2"
    trace = ok_json(stores, "run", "--model", "ollama:qwen2.5:0.5b", sentence, "--layer", "1")
    ids, tokens = hf_ids(stores.qwen_gguf.converted.folder, sentence)
    assert trace["tokens"] == tokens
    assert_trace_is(trace, attentions(stores.qwen_gguf.oracle, ids)[1])


def valid(document: dict[str, Any], name: str) -> None:
    jsonschema.validate(document, schema(name), cls=jsonschema.Draft202012Validator)


def test_every_command_taking_model_takes_a_path(stores: Stores) -> None:
    for model in (str(stores.qwen), str(stores.llama_gguf)):
        valid(
            ok_json(stores, "decode", "--model", model, SENTENCE, "--layer", "1"),
            "decode-v1.schema.json",
        )
        heads = ok_json(stores, "heads", "--model", model, SENTENCE, "--from", "3", "--to", "1")
        valid(heads, "heads-v1.schema.json")
        grad = ok_json(stores, "grad", "--model", model, SENTENCE, "--from", "3", "--to", "1")
        valid(grad, "grad-v1.schema.json")
        valid(ok_json(stores, "flash", "--model", model, SENTENCE), "flash-v1.schema.json")


def test_check_with_a_model_takes_transformers_arrays(stores: Stores) -> None:
    """The student's arrays are transformers' softmax of layer 1: ✓ every stage."""
    ids, _ = hf_ids(stores.qwen, SENTENCE)
    saved = stores.root / "student.npz"
    np.savez(saved, softmax=oracle_run(stores.qwen_oracle, ids)[0][1])
    document = ok_json(stores, "check", str(saved), SENTENCE, "--model", QWEN, "--layer", "1")
    valid(document, "check-v1.schema.json")


# §5: bad input


def bad_folder(stores: Stores, name: str, **change: Any) -> Path:
    """A copy of the qwen snapshot (real files), with config.json's fields changed."""
    folder = stores.root / "bad" / name
    shutil.copytree(stores.qwen, folder)
    document = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**document, **change}))
    return folder


def test_an_unknown_architecture_is_one_line(stores: Stores) -> None:
    folder = bad_folder(stores, "mamba", model_type="mamba")
    one_line(cli(stores, "run", "--model", str(folder), SENTENCE), "mamba", "config.json")
    path = tiny_gguf(stores.root / "mamba.gguf", arch="mamba")
    one_line(cli(stores, "run", "--model", str(path), SENTENCE), "mamba", "mamba.gguf")


def rewritten(source: Path, out: Path, fields: dict[str, int], tensors: dict[str, Any]) -> Path:
    """``source``'s GGUF written anew by the gguf package with ``fields`` changed and
    ``tensors`` replaced (an array, or (bytes as uint8, GGML type) for a raw type)."""
    gguf = require("gguf")
    reader = gguf.GGUFReader(str(source))
    writer = gguf.GGUFWriter(str(out), str(reader.fields["general.architecture"].contents()))
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        sub = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, fields.get(key, field.contents()), field.types[0], sub)
    for tensor in reader.tensors:
        new = tensors.get(tensor.name, np.array(tensor.data))
        if isinstance(new, tuple):
            writer.add_tensor(tensor.name, new[0], raw_dtype=new[1])
        else:
            writer.add_tensor(tensor.name, new)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def test_an_unsupported_tensor_type_is_one_line(stores: Stores) -> None:
    """The llama with a feed-forward of 256 (a row of IQ2_XXS's block), its first
    ffn_down in IQ2_XXS, which layer 0's MLP reads for layer 1's input."""
    gguf = require("gguf")
    ff = 256
    wide = np.zeros((ff, 64), dtype=np.float32)
    tensors: dict[str, Any] = {}
    for block in (0, 1):
        tensors[f"blk.{block}.ffn_gate.weight"] = wide
        tensors[f"blk.{block}.ffn_up.weight"] = wide
        tensors[f"blk.{block}.ffn_down.weight"] = wide.T.copy()
    iq2 = gguf.GGMLQuantizationType.IQ2_XXS
    tensors["blk.0.ffn_down.weight"] = (np.zeros((64, 66), dtype=np.uint8), iq2)
    path = rewritten(
        stores.llama_gguf, stores.root / "iq2.gguf", {"llama.feed_forward_length": ff}, tensors
    )
    result = cli(stores, "run", "--model", str(path), SENTENCE, "--layer", "1")
    one_line(result, "IQ2_XXS", "iq2.gguf")


def test_a_config_disagreeing_with_its_tensors_is_one_line(stores: Stores) -> None:
    folder = bad_folder(stores, "heads", num_attention_heads=8, num_key_value_heads=4)
    one_line(cli(stores, "run", "--model", str(folder), SENTENCE), "heads")


def test_a_missing_tokenizer_is_one_line(stores: Stores) -> None:
    folder = bad_folder(stores, "no-tokenizer")
    (folder / "tokenizer.json").unlink()
    one_line(cli(stores, "run", "--model", str(folder), SENTENCE), "tokenizer")


def test_a_truncated_shard_is_one_line(stores: Stores) -> None:
    folder = bad_folder(stores, "truncated")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    one_line(cli(stores, "run", "--model", str(folder), SENTENCE), "model.safetensors")


def test_a_dangling_symlink_in_the_cache_is_one_line(stores: Stores) -> None:
    """The qwen snapshot again, its weights' blob gone (an interrupted download, a
    cleaned cache): the link is there, what it names is not."""
    files = {p.name: p.resolve().read_bytes() for p in stores.qwen.iterdir()}
    snapshot = hf_model(stores.hub, "Org/Dangling", files)
    blob_of(snapshot / "model.safetensors").unlink()
    one_line(cli(stores, "run", "--model", "Org/Dangling", SENTENCE), "model.safetensors")


def test_a_manifest_without_a_model_layer_is_one_line(stores: Stores) -> None:
    license_layer = {"mediaType": "application/vnd.ollama.image.license", "digest": "sha256:00"}
    ollama_model(stores.ollama, "nolayer", layers=[license_layer])
    one_line(
        cli(stores, "run", "--model", "ollama:nolayer", SENTENCE),
        "nolayer",
        "application/vnd.ollama.image.model",
    )


def test_a_sharded_snapshot_in_the_cache_traces(stores: Stores) -> None:
    """Shards as symlinks into blobs/, found by the index's names beside it (not beside
    the index's blob)."""
    model, folder = tiny_model("qwen2", stores.root / "made", vocab_size=384, max_shard_size="40KB")
    assert (folder / "model.safetensors.index.json").is_file()
    tokenizer = (stores.qwen / "tokenizer.json").read_bytes()
    hf_model(stores.hub, "Org/Sharded", folder_files(folder, tokenizer))
    trace = ok_json(stores, "run", "--model", "Org/Sharded", SENTENCE, "--layer", "2")
    ids, _ = hf_ids(stores.qwen, SENTENCE)
    assert_trace_is(trace, oracle_run(model, ids)[0][2])


@pytest.mark.parametrize("variable", ["HF_HUB_CACHE", "HF_HOME"])
def test_the_cache_where_the_variables_say(stores: Stores, variable: str) -> None:
    """HF_HUB_CACHE is the hub itself; HF_HOME holds it as hub/."""
    elsewhere = stores.root / f"elsewhere-{variable}"
    hub = elsewhere / "hub" if variable == "HF_HOME" else elsewhere
    entry = "models--Qwen--Qwen2.5-0.5B-Instruct"
    shutil.copytree(stores.hub / entry, hub / "models--Org--Moved", symlinks=True)
    env = {**stores.env(), variable: str(elsewhere)}
    result = subprocess.run(
        [sys.executable, "-m", "attntrace", "run", "--model", "Org/Moved", SENTENCE, "--json"],
        env=env,
        cwd=stores.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    ids, _ = hf_ids(stores.qwen, SENTENCE)
    assert_trace_is(json.loads(result.stdout), oracle_run(stores.qwen_oracle, ids)[0][0])
