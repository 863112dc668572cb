"""--json writes its bytes document and then a newline, as two writes (no copy of the
document to append one byte), and the output is byte for byte what ``document + b"\\n"``
was before: through typer's runner and through a real process writing to a file, where
text written to stdout first must still come first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import invoke

from attntrace.api import trace_attention
from attntrace.forward.trace_json import dump_bytes


@pytest.mark.parametrize("sample", ["it-animal", "gqa", "causal"])
def test_run_json_is_the_document_and_one_newline(sample: str) -> None:
    result = invoke("run", "--sample", sample, "--json")
    assert result.exit_code == 0
    assert result.stdout_bytes == dump_bytes(trace_attention(sample=sample)) + b"\n"


GRAD = ("grad", "-s", "it-animal", "--from", "it", "--to", "animal")


@pytest.mark.parametrize("command", [GRAD, ("flash", "-s", "causal")])
def test_every_bytes_document_ends_in_exactly_one_newline(command: tuple[str, ...]) -> None:
    written = invoke(*command, "--json").stdout_bytes
    assert written.endswith(b"}\n")
    assert not written.endswith(b"\n\n")
    json.loads(written)  # one document, nothing after it but the newline


def test_a_process_writing_to_a_file_writes_the_same_bytes(tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with out.open("wb") as stdout:
        subprocess.run(
            [sys.executable, "-m", "attntrace", "run", "-s", "gqa", "--json"],
            stdout=stdout,
            env=env,
            check=True,
        )
    assert out.read_bytes() == dump_bytes(trace_attention(sample="gqa")) + b"\n"
