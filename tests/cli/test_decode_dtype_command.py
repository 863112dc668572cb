"""`decode --dtype D [--softmax-dtype S] [--accumulate A]` (docs/kernels.md): the screens,
the schema-validated JSON, the refusals, the bytes beside kv-cache's, float64 unchanged."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from helpers import invoke, schema
from rich.console import Console

from attntrace.decode.decoder import decode
from attntrace.decode.views.decode import screens
from attntrace.kernel.casting import Cast
from attntrace.modelfile.model_file import model_from_document
from attntrace.ui.view import View

# "a" and "b" at 300: a score of 300 · 300 = 90,000, past float16's 65,504.
BIG = {
    "name": "big",
    "sentence": "a b a",
    "embeddings": {"a": [300, 0], "b": [0, 300]},
    "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[0.01, 0], [0, 0.01]]},
}


def big_file(tmp_path: Path) -> str:
    path = tmp_path / "big.json"
    path.write_text(json.dumps(BIG))
    return str(path)


def document(*args: str) -> dict[str, Any]:
    result = invoke("decode", *args, "--json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(data, schema("decode-v1.schema.json"))
    return data


def half(value: float) -> float:
    return float(struct.unpack("<e", struct.pack("<e", value))[0])


@pytest.mark.parametrize("sample", ["gqa", "rope", "positions", "the-cat-sat"])
def test_float64_json_and_screens_are_unchanged(sample: str) -> None:
    plain = invoke("decode", "--sample", sample, "--json")
    named = invoke("decode", "--sample", sample, "--json", "--dtype", "float64")
    assert plain.exit_code == named.exit_code == 0
    assert plain.stdout == named.stdout
    assert "precision" not in json.loads(plain.stdout)
    text = invoke("decode", "--sample", sample).stdout
    assert text == invoke("decode", "--sample", sample, "--dtype", "fp64").stdout
    assert "float16" not in text
    assert "decode matches full causal attention" in text


@pytest.mark.parametrize("dtype", ["float16", "bf16", "float32"])
def test_json_carries_precision_and_each_steps_error(dtype: str) -> None:
    data = document("--sample", "gqa", "--dtype", dtype)
    name = {"bf16": "bfloat16"}.get(dtype, dtype)
    precision = data["precision"]
    assert precision["dtype"] == name
    assert precision["softmax_dtype"] == "float32"
    assert precision["accumulate"] == "float32"
    assert name in precision["rule"]
    assert precision["bytes_per_value"] == (4 if name == "float32" else 2)
    assert data["comparison"]["matches"] is True
    assert data["comparison"]["differing_cells"] == 0
    assert data["comparison"]["max_abs_delta"] == 0
    for step in data["steps"]:
        assert set(step["error"]) == {"max_abs", "max_rel", "inf", "nan"}
        assert step["projected_error"] is None  # gqa has no WO
    if name == "float16":  # cells are the float64 numbers float16's values equal
        for step in data["steps"]:
            for row in step["output"] + step["k"]:
                assert all(half(v) == v for v in row)


def test_softmax_and_accumulate_choices_are_written(tmp_path: Path) -> None:
    data = document(
        "--sample",
        "rope",
        "--dtype",
        "float16",
        "--softmax-dtype",
        "float16",
        "--accumulate",
        "dtype",
    )
    assert (data["precision"]["softmax_dtype"], data["precision"]["accumulate"]) == (
        "float16",
        "dtype",
    )
    assert data["comparison"]["matches"] is True


def test_overflow_is_marked_explained_and_written_as_strings(tmp_path: Path) -> None:
    path = big_file(tmp_path)
    result = invoke("decode", "-c", path, "--dtype", "float16", columns=200)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "is past 65,504, the largest float16: it rounds to inf" in out
    assert "scores of 'a': q·Kᵀ = 90,000 at head 0, key 'a#0'" in out
    assert "NaN" in out
    assert "· 2 NaN" in out
    assert "decode equals full causal attention in float16 exactly: max |Δ| = 0" in out
    data = document("-c", path, "--dtype", "float16")
    first = data["steps"][0]
    assert first["scores"] == [["inf"]]
    assert first["weights"] == [["nan"]]
    assert first["output"] == [["nan", "nan"]]
    assert first["error"]["nan"] == 2
    assert data["precision"]["error"]["nan"] > 0


def test_marks_survive_no_color(tmp_path: Path) -> None:
    model = model_from_document(BIG)
    run = decode(model, ["a", "b", "a"], Cast.of("float16"))
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, no_color=True, width=80)
    screens(run, View())[0](console)
    text = out.getvalue()
    assert "\x1b[1;7m" in text or "\x1b[7;1m" in text or "\x1b[7m" in text  # reverse video


@pytest.mark.parametrize(
    ("dtype", "kv"), [("float16", "fp16"), ("bfloat16", "bf16"), ("float32", "fp32")]
)
def test_cache_bytes_equal_kv_cache_with_the_same_shape(dtype: str, kv: str) -> None:
    data = document("--sample", "gqa", "--dtype", dtype)  # 4 heads, 2 K/V, d_k = d_v = 1
    model = data["model"]
    result = invoke(
        "kv-cache",
        "--layers",
        "1",
        "--heads",
        str(model["heads"]),
        "--kv-heads",
        str(model["kv_heads"]),
        "--head-dim",
        str(model["d_k"]),
        "--tokens",
        str(len(data["tokens"])),
        "--dtype",
        kv,
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    priced = json.loads(result.stdout)
    this = next(v for v in priced["variants"] if v["this_model"])
    assert data["steps"][-1]["cache_bytes"] == this["bytes"]
    text = invoke("decode", "--sample", "gqa", "--dtype", dtype).stdout
    assert f"--tokens 4\n  --dtype {kv}" in text or f"--tokens 4 --dtype {kv}" in text


def test_float64_bytes_are_twice_kv_caches_fp32() -> None:
    plain = document("--sample", "gqa")
    fp32 = document("--sample", "gqa", "--dtype", "fp32")
    assert plain["steps"][-1]["cache_bytes"] == 2 * fp32["steps"][-1]["cache_bytes"]
    # and the float64 view names no kv-cache dtype (kv-cache has none for float64)
    assert "kv-cache" not in invoke("decode", "--sample", "gqa").stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--softmax-dtype", "float32"], "--softmax-dtype says how a narrower dtype rounds"),
        (["--accumulate", "dtype"], "--accumulate says how a narrower dtype rounds"),
        (["--dtype", "float64", "--accumulate", "float32"], "add --dtype float32, float16"),
        (["--dtype", "float8"], "dtype"),
        (["--dtype", "float16", "--softmax-dtype", "bfloat16"], "float32 or float16"),
        (["--dtype", "float16", "--accumulate", "float64"], "accumulate"),
    ],
)
def test_refusals_are_one_line_exit_2(args: list[str], words: str) -> None:
    result = invoke("decode", "--sample", "gqa", *args)
    assert result.exit_code == 2, result.stdout
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "Traceback" not in result.stderr
    assert words in lines[0]


def test_step_pages_in_the_dtype() -> None:
    result = invoke("decode", "--sample", "gqa", "--dtype", "float16", "--step", input="\n" * 6)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("float16: values rounded to float16") >= 4


@pytest.mark.parametrize("columns", [80, 160])
def test_no_line_is_wider_than_the_terminal(columns: int, tmp_path: Path) -> None:
    for args in (["--sample", "gqa"], ["-c", big_file(tmp_path)]):
        out = invoke("decode", *args, "--dtype", "float16", columns=columns).stdout
        assert max(len(line.rstrip()) for line in out.splitlines()) <= columns


def test_a_real_decoders_layer_decodes_in_float16() -> None:
    """smollm2's layer input X (from its float64 forward pass below the layer) is
    rounded to float16 and the layer decoded by the rule; skipped where the weights'
    package is not installed (never downloaded)."""
    from attntrace.real.catalog import SMOLLM2

    if not SMOLLM2.installed:
        pytest.skip(f"{SMOLLM2.name}'s weights are not installed: {SMOLLM2.install}")
    data = document("-m", "smollm2", "The cat", "--layer", "2", "--dtype", "float16")
    assert data["comparison"]["matches"] is True
    assert data["comparison"]["max_abs_delta"] == 0
    model = data["model"]
    assert data["steps"][-1]["cache_bytes"] == (
        len(data["tokens"]) * model["kv_heads"] * (model["d_k"] + model["d_v"]) * 2
    )
    err = data["precision"]["error"]
    assert err["inf"] == 0
    assert err["nan"] == 0
    assert 0 < err["max_abs"] < 0.1


@pytest.mark.parametrize(
    ("long", "short"),
    [("float16", "fp16"), ("bfloat16", "bf16"), ("float32", "fp32"), ("half", "fp16")],
)
def test_kv_cache_takes_the_names_decode_takes(long: str, short: str) -> None:
    shape = [
        "kv-cache",
        "--layers",
        "1",
        "--heads",
        "4",
        "--kv-heads",
        "2",
        "--head-dim",
        "8",
        "--tokens",
        "5",
        "--json",
    ]
    given, named = invoke(*shape, "--dtype", long), invoke(*shape, "--dtype", short)
    assert given.exit_code == named.exit_code == 0, given.stderr
    assert json.loads(given.stdout) == json.loads(named.stdout)


def test_the_json_says_where_the_first_overflow_is() -> None:
    """As the screen's explained line: step 4 (fish), scores, head 0, key 'cat':
    240·260 + 80·100 = 70,400 in float64, inf in float16."""
    example = str(Path(__file__).resolve().parents[2] / "docs/examples/float16-overflow.yaml")
    first = document("-c", example, "--dtype", "float16")["precision"]["first_overflow"]
    assert first == {
        "t": 4,
        "stage": "scores",
        "row": 0,
        "col": 1,
        "value": "inf",
        "exact": 70400.0,
    }
    assert document("--sample", "gqa", "--dtype", "float16")["precision"]["first_overflow"] is None
