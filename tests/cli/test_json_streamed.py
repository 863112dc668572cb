"""run, grad and flash --json write their document as it is serialized, in pieces of at
most attntrace.kernel.documents.JSON_PIECE_BYTES, and the bytes are exactly what
orjson writes of the whole document at once: for every sample, every variant, --dtype
cells that overflowed, cut traces, grad and flash. decode --json, a step at a time, is
what json (plain_dumps) writes of the whole document.

Pieces are made small here (a few hundred bytes) so that these small documents are cut
as a 9,300-token trace is; the writes to stdout are recorded to see that none is the
whole document.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from helpers import invoke
from variant_cases import variant_block

from attntrace import trace_attention
from attntrace.api import prepared
from attntrace.cli import emit as emit_module
from attntrace.decode.decode_json import decode_stream, decode_to_dict
from attntrace.decode.decoder import decode
from attntrace.forward.attention import trace_block
from attntrace.forward.trace_json import dump_bytes, dump_stream, trace_to_dict
from attntrace.kernel import documents
from attntrace.kernel.casting import Cast
from attntrace.kernel.documents import plain_dumps
from attntrace.kernels.flash_json import flash_stream, flash_to_dict
from attntrace.kernels.flash_report import flash_report
from attntrace.learning.grad_json import grad_stream, grad_to_dict
from attntrace.learning.grad_trace import grad_trace
from attntrace.learning.objective import Objective
from attntrace.modelfile.samples import list_samples

SAMPLES = [sample.name for sample in list_samples()]
PIECE = 300  # bytes, in these tests
# a model whose scores overflow float16 (300 · 300 · 2 > 65,504): its --dtype stages
# hold "inf" and "nan" cells
OVERFLOWING = {
    "embeddings": {"cat": [300.0, 300.0], "dog": [1.0, -2.0]},
    "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[1, 0], [0, 1]]},
}


def whole(document: dict[str, Any]) -> bytes:
    """The document written at once, as orjson writes it."""
    return orjson.dumps(document, option=orjson.OPT_SERIALIZE_NUMPY)


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(documents, "_HALF", PIECE)
    monkeypatch.setattr(documents, "_GATHER", PIECE // 4)


def test_the_documents_here_are_cut_into_many_pieces() -> None:
    """Else the comparisons below would not see the cutting at all."""
    assert len(list(dump_stream(trace_attention(sample="it-animal")))) > 20


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
@pytest.mark.parametrize("sample", SAMPLES)
def test_every_sample_streams_what_orjson_writes_whole(sample: str, dtype: str) -> None:
    trace = trace_attention(sample=sample, dtype=dtype)
    assert b"".join(dump_stream(trace)) == whole(trace_to_dict(trace, raw=True))


@pytest.mark.parametrize("seed", range(6))
def test_every_variant_streams_what_orjson_writes_whole(seed: int) -> None:
    model, tokens = variant_block(seed)
    trace = trace_block(model, tokens)
    assert b"".join(dump_stream(trace)) == whole(trace_to_dict(trace, raw=True))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cells_that_overflowed_stream_as_inf_and_nan(dtype: str) -> None:
    trace = trace_attention("cat dog cat", model=OVERFLOWING, dtype=dtype)
    expected = whole(trace_to_dict(trace, raw=True))
    assert b'"inf"' in expected or b'"nan"' in expected  # the case is what it says
    assert b"".join(dump_stream(trace)) == expected


@pytest.mark.parametrize(("stages", "heads"), [(["softmax", "output"], None), (None, [1, 3])])
def test_a_cut_trace_streams_what_orjson_writes_whole(
    stages: list[str] | None, heads: list[int] | None
) -> None:
    trace = trace_attention(sample="gqa")
    expected = whole(trace_to_dict(trace, stages=stages, heads=heads, raw=True))
    assert b"".join(dump_stream(trace, stages=stages, heads=heads)) == expected


@pytest.mark.parametrize("sample", SAMPLES)
def test_grad_streams_what_orjson_writes_whole(sample: str) -> None:
    chosen = prepared(None, sample=sample)
    objective = Objective("attend", "0", "0") if chosen.spec.target is None else Objective("mse")
    traced = grad_trace(chosen.spec, chosen.tokens, chosen.key_tokens, objective)
    assert b"".join(grad_stream(traced)) == whole(grad_to_dict(traced, raw=True))


@pytest.mark.parametrize(("block_q", "block_k"), [(1, 1), (2, 3), (64, 64)])
@pytest.mark.parametrize("sample", SAMPLES)
def test_flash_streams_what_orjson_writes_whole(sample: str, block_q: int, block_k: int) -> None:
    report = flash_report(trace_attention(sample=sample), 0, block_q, block_k, 2)
    assert b"".join(flash_stream(report)) == whole(flash_to_dict(report))


def decoded(sample: str, dtype: str) -> Any:
    chosen = prepared(None, sample=sample)
    return decode(chosen.spec, chosen.tokens, Cast.of(dtype))


DECODED = [s for s in SAMPLES if prepared(None, sample=s).key_tokens is None]  # not cross


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
@pytest.mark.parametrize("sample", DECODED)
def test_decode_streams_what_json_writes_whole(sample: str, dtype: str) -> None:
    run = decoded(sample, dtype)
    pieces = list(decode_stream(run))
    assert len(pieces) > 2
    assert b"".join(pieces) == plain_dumps(decode_to_dict(run)).encode()


def test_decode_of_cells_that_overflowed_streams_what_json_writes_whole() -> None:
    chosen = prepared("cat dog cat", model=OVERFLOWING)
    run = decode(chosen.spec, chosen.tokens, Cast.of("float16"))
    expected = plain_dumps(decode_to_dict(run)).encode()
    assert b'"inf"' in expected
    assert b"".join(decode_stream(run)) == expected


def test_a_number_json_refuses_is_refused_before_a_byte_of_decode() -> None:
    """A float64 step's infinite score (json writes no Infinity): refused whole, as the
    whole document is, before a piece."""
    run = decoded("causal", "float64")
    last = run.steps[-1]
    broken = replace(run, steps=(*run.steps[:-1], replace(last, scores=last.scores * np.inf)))
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        plain_dumps(decode_to_dict(broken))
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        decode_stream(broken)


class Recorded:
    """stdout, as emit writes to it: each write to its buffer kept."""

    encoding = "utf-8"

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.buffer = self

    def write(self, data: Any) -> int:
        self.writes.append(bytes(data.encode() if isinstance(data, str) else data))
        return len(data)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


GRAD = ("grad", "-s", "it-animal", "--from", "it", "--to", "animal")


@pytest.mark.parametrize(
    "command",
    [
        ("run", "-s", "it-animal"),
        ("run", "-s", "gqa", "--heads", "0,2"),
        GRAD,
        ("flash", "-s", "causal"),
    ],
)
def test_json_is_written_in_pieces_then_one_newline(
    command: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each write at most a piece (the document is never one write), and together the
    document orjson writes whole, then a newline."""
    expected = invoke(*command, "--json").stdout_bytes
    recorded = Recorded()
    monkeypatch.setattr(emit_module, "sys", type("Sys", (), {"stdout": recorded}))
    assert invoke(*command, "--json").exit_code == 0
    assert len(recorded.writes) > 2
    assert max(len(write) for write in recorded.writes) <= PIECE
    assert b"".join(recorded.writes) == expected
    assert expected.endswith(b"}\n")
    orjson.loads(expected)


def test_decode_json_is_written_a_step_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each write at most a step (and its comma) where pieces are small, and together
    the document json writes whole, then a newline."""
    expected = plain_dumps(decode_to_dict(decoded("window", "float64"))).encode() + b"\n"
    steps = orjson.loads(expected)["steps"]
    recorded = Recorded()
    monkeypatch.setattr(emit_module, "sys", type("Sys", (), {"stdout": recorded}))
    assert invoke("decode", "-s", "window", "--json").exit_code == 0
    assert len(recorded.writes) > len(steps)
    assert max(len(write) for write in recorded.writes) <= max(
        len(plain_dumps(step)) + 1 for step in steps
    )
    assert b"".join(recorded.writes) == expected


def test_run_json_is_the_whole_document_and_a_newline() -> None:
    assert invoke("run", "-s", "window", "--json").stdout_bytes == (
        dump_bytes(trace_attention(sample="window")) + b"\n"
    )


def test_a_reader_that_leaves_early_ends_it_quietly() -> None:
    """``run --json | head -c 100`` on a document of some megabytes, written in many
    pieces (16 MiB at most, but each gathered piece is 1 MiB): exit 0, nothing on stderr."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    sentence = " ".join(["cat"] * 500)
    with subprocess.Popen(
        [sys.executable, "-m", "attntrace", "run", sentence, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        assert process.stdout.read(100).startswith(b'{"schema":"attntrace/trace/v1"')
        process.stdout.close()
        error = process.stderr.read()
    assert (process.returncode, error) == (0, b"")
