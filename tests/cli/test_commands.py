"""The run and samples commands through typer's CliRunner, and as a real process."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from helpers import invoke, load_valid_trace, trace_schema
from tolerances import FLOAT64_APPROX

from attntrace import __version__

STAGE_TITLES = [
    "X = embeddings   [3 × 2]",
    "Q = X · WQ   [3 × 2]",
    "K = X · WK   [3 × 2]",
    "V = X · WV   [3 × 2]",
    "scores = Q · Kᵀ   [3 × 3]",
    "scaled = scores / √d_k   [3 × 3]",
    "softmax = exp(scaled − row max) / row sum   [3 × 3]",
    "output = softmax · V   [3 × 2]",
]


def test_run_shows_every_stage_in_order_with_the_worked_numbers() -> None:
    result = invoke("run", "cat eats fish")
    assert result.exit_code == 0, result.output
    positions = [result.stdout.index(title) for title in STAGE_TITLES]
    assert positions == sorted(positions)
    assert "fish   10.0000   10.0000   20.0000" in result.stdout
    assert "fish   0.0008   0.0008   0.9983" in result.stdout
    assert "fish   3.9958   2.0000" in result.stdout
    assert result.stderr == ""


def test_sentence_defaults_to_the_model_files() -> None:
    result = invoke("run", "--sample", "the-cat-sat")
    assert result.exit_code == 0, result.output
    assert "The cat sat" in result.stdout
    assert "the-cat-sat · 3 tokens · d_model 4 · d_k 2 · d_v 2" in result.stdout


def test_precision_changes_tables_only() -> None:
    result = invoke("run", "--precision", "6")
    assert "fish   0.000848   0.000848   0.998304" in result.stdout
    assert "fish   3.995761   2.000000" in result.stdout
    assert invoke("run", "--json", "--precision", "1").stdout == invoke("run", "--json").stdout


def test_json_is_the_whole_trace_at_full_precision() -> None:
    result = invoke("run", "cat eats fish", "--json")
    assert result.exit_code == 0
    assert result.stderr == ""
    document = load_valid_trace(result.stdout)
    assert document["schema"] == "attntrace/trace/v1"
    assert document["model"] == {
        "name": "cat-eats-fish",
        "d_model": 2,
        "d_k": 2,
        "d_v": 2,
        "heads": 1,
        "kv_heads": 1,
        "causal": False,
        "positions": "none",
    }
    assert document["tokens"] == ["cat", "eats", "fish"]
    assert document["context_tokens"] is None
    stages = {s["name"]: s for s in document["stages"]}
    assert list(stages) == ["X", "Q", "K", "V", "scores", "scaled", "softmax", "output"]
    assert stages["X"]["head"] is None
    assert stages["X"]["data"] == [[1.0, 2.0], [3.0, 1.0], [2.0, 4.0]]
    assert stages["X"]["cols"] == ["d0", "d1"]
    assert stages["softmax"]["head"] == 0
    assert stages["softmax"]["cols"] == ["cat", "eats", "fish"]
    a = 10 / math.sqrt(2)
    assert stages["softmax"]["data"][2][2] == pytest.approx(
        math.exp(a) / (2 + math.exp(a)), **FLOAT64_APPROX
    )
    # Full float64: the value reads back bit for bit, not rounded to the table's digits.
    assert len(repr(stages["softmax"]["data"][2][2])) > 12


def test_json_of_every_sample_validates() -> None:
    for name in ("cat-eats-fish", "cat-eats-fish.json", "the-cat-sat", "it-animal"):
        result = invoke("run", "--sample", name, "--json")
        assert result.exit_code == 0, (name, result.output)
        document = load_valid_trace(result.stdout)
        assert all(s["shape"] == [len(s["rows"]), len(s["cols"])] for s in document["stages"])


def test_schema_rejects_a_document_that_breaks_the_contract() -> None:
    document = json.loads(invoke("run", "--json").stdout)
    del document["stages"][0]["formula"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, trace_schema())


def test_config_yaml_and_json(tmp_path: Path) -> None:
    model = {
        "sentence": "a b",
        "embeddings": {"a": [1, 0], "b": [0, 1]},
        "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[2], [3]]},
    }
    (tmp_path / "m.json").write_text(json.dumps(model))
    (tmp_path / "m.yaml").write_text(
        "sentence: a b\nembeddings: {a: [1, 0], b: [0, 1]}\n"
        "weights: {WQ: [[1, 0], [0, 1]], WK: [[1, 0], [0, 1]], WV: [[2], [3]]}\n"
    )
    outputs = []
    for name in ("m.json", "m.yaml"):
        result = invoke("run", "--config", str(tmp_path / name), "--json")
        assert result.exit_code == 0, result.output
        document = load_valid_trace(result.stdout)
        assert document["model"]["name"] == "m"
        assert document["model"]["d_v"] == 1
        outputs.append(document["stages"])
    assert outputs[0] == outputs[1]


def test_samples_lists_every_sample() -> None:
    result = invoke("samples", columns=120)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[::2]] == [
        "alibi",
        "cat-eats-fish",
        "causal",
        "cross",
        "gemma-like",
        "gqa",
        "it-animal",
        "positions",
        "rope",
        "sink-logit",
        "the-cat-sat",
        "two-heads",
        "window",
    ]
    assert lines[2].endswith('"cat eats fish"  (also cat-eats-fish.json)')
    assert lines[3] == "    The worked example: identity WQ/WK, WV swaps the two dimensions."
    assert "d_model 6" in lines[12]


@pytest.mark.parametrize("name", ["it-animal", "the-cat-sat", "cat-eats-fish.json"])
def test_samples_name_prints_the_model_file_to_start_from(name: str, tmp_path: Path) -> None:
    result = invoke("samples", name)
    assert result.exit_code == 0
    copy = tmp_path / (name if name.endswith(".json") else f"{name}.yaml")
    copy.write_text(result.stdout)
    # The copy is the same model (its `name` field included), so the same trace.
    assert invoke("run", "--config", str(copy), "--json").stdout == (
        invoke("run", "--sample", name, "--json").stdout
    )
    if not name.endswith(".json"):
        assert result.stdout.startswith(f"# attntrace sample {name}: ")


def test_unquoted_words_are_one_sentence() -> None:
    assert invoke("run", "cat", "eats", "fish", "--json").stdout == (
        invoke("run", "cat eats fish", "--json").stdout
    )


# Each command and how its line in --help starts, in the order listed (only the start:
# where Rich wraps a long line differs between its versions, the floor's and the newest).
COMMANDS = {
    "run": "Trace attention over SENTENCE: X, Q, K, V,",
    "render": "Show a saved trace (from `run --json`) as",
    "explore": "Explore a trace full-screen: the stages,",
    "check": "Check your own attention's arrays against",
    "diff": "Compare two traces stage by stage: what",
    "grade": "Grade a student's attention function on",
    "quiz": "Compute a hidden cell of the trace yourself",
    "grad": "The backward pass from a loss: every",
    "train": "Gradient descent on the block's weights",
    "scaling": "Why ÷√d_k: the softmax of q·k, as it is and",
    "softmax": "The softmax walkthrough of one row: exp,",
    "decode": "Decode SENTENCE one token at a time through",
    "flash": "FlashAttention tile by tile for one head, checked",
    "kv-cache": "How much memory a KV cache takes: the model",
    "models": "List the real trained models attntrace can",
    "heads": "Rank every layer × head by the weight one",
    "samples": "List the sample models that ship with",
}


def test_version_and_help() -> None:
    version = invoke("--version")
    assert (version.exit_code, version.stdout, version.stderr) == (
        0,
        f"attntrace {__version__}\n",
        "",
    )
    result = invoke("--help")
    assert result.exit_code == 0
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[1].strip() == "Usage: attntrace [OPTIONS] COMMAND [ARGS]..."
    options = [line.strip("│ ").split()[0] for line in boxed(lines, "Options")]
    assert [flag for flag in options if flag.startswith("--")] == [
        "--version",
        "--color",
        "--width",
        "--show-completion",
        "--install-completion",
        "--help",
    ]
    # a command's row starts at the box's edge; the wrapped rest of its help is indented
    rows = [
        line.strip("│ ").split(maxsplit=1)
        for line in boxed(lines, "Commands")
        if not line.startswith("│  ")
    ]
    assert [name for name, _ in rows] == list(COMMANDS)
    for name, said in rows:
        assert said.startswith(COMMANDS[name]), name


def boxed(lines: list[str], title: str) -> list[str]:
    """The lines inside the box of ``--help`` titled ``title``."""
    top = next(i for i, line in enumerate(lines) if line.startswith(f"╭─ {title} "))
    bottom = next(i for i in range(top, len(lines)) if lines[i].startswith("╰"))
    return lines[top + 1 : bottom]


def test_python_api_renders_with_rich_and_in_jupyter() -> None:
    from io import StringIO

    from rich.console import Console

    from attntrace import trace_attention

    trace = trace_attention("cat eats fish")
    buffer = StringIO()
    Console(file=buffer, width=80, color_system=None).print(trace)
    assert "softmax = exp(scaled − row max) / row sum   [3 × 3]" in buffer.getvalue()
    bundle = trace._repr_mimebundle_()
    assert "output = softmax · V" in bundle["text/plain"]
    frame = '<iframe title="attntrace explorer" sandbox="allow-scripts" srcdoc="'
    assert bundle["text/html"].startswith(frame + "&lt;!DOCTYPE html&gt;")


# -------------------------------------------------------------- as a real process


def run_process(
    *args: str, cwd: Path, close_stdout: bool = False
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    command = [sys.executable, "-m", "attntrace", *args]
    if not close_stdout:
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    # The reader goes away before the writer starts, as `attntrace ... | head -0` would.
    with subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None

        process.stdout.close()
        stderr = process.stderr.read()
        return subprocess.CompletedProcess(command, process.wait(timeout=60), "", stderr)


def test_python_dash_m_from_any_directory(tmp_path: Path) -> None:
    result = run_process("run", "cat eats fish", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "fish   0.0008   0.0008   0.9983" in result.stdout


@pytest.mark.parametrize(
    "args",
    [("run", "-s", "it-animal"), ("run", "-s", "it-animal", "--json"), ("samples",)],
    ids=["tables", "json", "samples"],
)
def test_a_closed_pipe_ends_quietly(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = run_process(*args, cwd=tmp_path, close_stdout=True)
    assert result.returncode == 0
    assert result.stderr == ""


@pytest.mark.parametrize(
    "args",
    [
        ("run", "-s", "gqa"),
        ("run", "-s", "gqa", "--json"),
        ("softmax", "1", "2", "3"),
        ("samples",),
        ("decode", "-s", "causal"),
        ("run", "--help"),
        ("--version",),
    ],
    ids=["tables", "json", "softmax", "samples", "decode", "help", "version"],
)
@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
def test_a_process_writes_all_its_output_before_it_leaves(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """main() leaves by os._exit, skipping teardown: stdout, block-buffered into a file
    or a pipe, must still arrive whole, byte for byte what the command prints."""
    into_pipe = run_process(*args, cwd=tmp_path)
    assert into_pipe.returncode == 0, into_pipe.stderr
    assert into_pipe.stdout == invoke(*args).stdout
    with (tmp_path / "out.txt").open("w") as out:
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
        done = subprocess.run(
            [sys.executable, "-m", "attntrace", *args],
            cwd=tmp_path,
            env=env,
            stdout=out,
            timeout=60,
        )
    assert done.returncode == 0
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == into_pipe.stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args",
    [("run",), ("run", "--json"), ("samples",), ("softmax", "1", "2"), ("--help",), ("--version",)],
)
def test_a_full_disk_is_one_line_and_exit_1(tmp_path: Path, args: tuple[str, ...]) -> None:
    with Path("/dev/full").open("w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "attntrace", *args],
            cwd=tmp_path,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert done.stderr == "attntrace: error: cannot write the output: No space left on device\n"


def test_python_dash_i_keeps_its_interpreter(tmp_path: Path) -> None:
    """Leaving by os._exit would take the REPL of ``python -i -m attntrace`` with it."""
    done = subprocess.run(
        [sys.executable, "-i", "-m", "attntrace", "samples"],
        cwd=tmp_path,
        input="print('still here')\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "still here" in done.stdout


def test_bad_input_as_a_process_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = run_process("run", "dog", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "attntrace: error: sample cat-eats-fish: embeddings: unknown token 'dog' "
        "(vocabulary: cat, eats, fish)\n"
    )


def test_the_samples_index_says_what_the_files_say() -> None:
    """`attntrace samples` reads samples/index.json; rebuild it when a sample changes:
    python -c "from attntrace.modelfile.samples import build_index as b; print(b(), end='')" >
    attntrace/samples/index.json"""
    from attntrace.modelfile.samples import INDEX_FILE, build_index, samples_dir

    assert (samples_dir() / INDEX_FILE).read_text(encoding="utf-8") == build_index()


def test_help_samples_and_models_load_neither_numpy_nor_yaml(tmp_path: Path) -> None:
    """Nor Textual, which only `explore` loads, once it has a terminal."""
    for args in (
        ["--help"],
        ["samples"],
        ["run", "--help"],
        ["explore", "--help"],
        ["samples", "gqa"],
        ["models"],
        ["models", "--json"],
        ["kv-cache", "--json"],
    ):
        probe = (
            f"import os, sys, runpy; sys.argv = ['attntrace', *{args!r}]\n"
            # main() leaves by os._exit (no teardown): made a SystemExit, to look after
            "def leave(code):\n    raise SystemExit(code)\nos._exit = leave\n"
            "try:\n    runpy.run_module('attntrace', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "print('LOADED', 'numpy' in sys.modules, 'yaml' in sys.modules,"
            " 'textual' in sys.modules, file=sys.stderr)"
        )
        result = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=60
        )
        assert "LOADED False False False" in result.stderr, (args, result.stderr)
