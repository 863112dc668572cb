"""`attntrace grade FILE.py:FUNCTION`: exit codes, the one-line refusals, the child
process that keeps a student's hang, crash and prints away from attntrace, the JSON
document against its schema, and the view at 80 columns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from grade_students import student_file
from helpers import invoke, one_line_error, schema
from paths import ROOT


def grade(folder: Path, name: str, *flags: str) -> Any:
    return invoke("grade", f"{student_file(folder, name)}:attention", *flags)


def document(folder: Path, name: str, *flags: str) -> dict[str, Any]:
    result = grade(folder, name, "--json", *flags)
    assert result.exit_code in (0, 1), result.output
    found: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(found, schema("grade-v1.schema.json"))
    return found


def test_a_correct_student_exits_0(tmp_path: Path) -> None:
    result = grade(tmp_path, "correct_numpy")
    assert result.exit_code == 0, result.output
    assert result.stdout.rstrip().endswith("✓ all 24 cases pass")


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf", "1e9"])
def test_a_timeout_that_is_no_time_is_one_line(timeout: str, tmp_path: Path) -> None:
    one_line_error(grade(tmp_path, "correct_numpy", "--timeout", timeout), "--timeout: expected")


def test_the_view_fits_a_narrow_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A case's reason goes under its name where the two do not fit on a line."""
    student_file(tmp_path, "raises")
    monkeypatch.chdir(tmp_path)
    result = invoke("grade", "raises.py:attention", columns=60)
    assert result.exit_code == 1, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 60
    assert "\n    raised ValueError\n" in result.stdout


def test_a_buggy_student_exits_1_naming_the_mistake(tmp_path: Path) -> None:
    result = grade(tmp_path, "no_scaling")
    assert result.exit_code == 1
    out = result.stdout
    assert "✗ cat-eats-fish, causal=False" in out
    assert "first failure: cat-eats-fish, causal=False" in out
    assert "diagnosis: no-scaling — the scores were not divided by √d_k" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "\x1b" not in out


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("missing.py:attention", "missing.py: expected a Python file, got no such file"),
        ("notes.txt:attention", "notes.txt: expected a .py file"),
        ("hw.py", "FILE.py:FUNCTION: expected a file and a function"),
        ("hw.py:not a name", "FUNCTION: expected a Python name"),
    ],
)
def test_a_target_that_is_no_python_function_is_one_line(
    target: str, words: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hw.py").write_text("def attention(X, WQ, WK, WV, causal=False):\n    return X\n")
    (tmp_path / "notes.txt").write_text("")
    one_line_error(invoke("grade", target), words)


@pytest.mark.long
@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("syntax_error", "syntax_error.py: line 4: expected ':'"),
        ("import_raises", "import_raises.py: importing it raised ModuleNotFoundError"),
        ("not_callable", "not_callable.py: attention: expected a function"),
    ],
)
def test_a_file_that_cannot_be_imported_is_one_line(name: str, words: str, tmp_path: Path) -> None:
    one_line_error(grade(tmp_path, name), words)


@pytest.mark.long
def test_no_such_function_is_one_line(tmp_path: Path) -> None:
    path = student_file(tmp_path, "correct_numpy")
    one_line_error(invoke("grade", f"{path}:attend"), "attend: expected a function", "got nothing")


@pytest.mark.long
def test_an_endless_loop_is_the_students_failure_under_the_timeout(tmp_path: Path) -> None:
    found = document(tmp_path, "endless", "--timeout", "0.5")
    assert found["passed"] is False
    first = found["first_failure"]
    assert first["name"] == "cat-eats-fish, causal=False"
    assert first["error"]["kind"] == "timeout"
    assert "did not return within 0.5 s" in first["message"]
    messages = [c["message"] for c in found["cases"]]
    assert messages[:3] == ["did not return within 0.5 s (--timeout)"] * 3
    assert set(messages[3:-3]) == {"not run: 3 calls before it did not return"}


@pytest.mark.long
def test_a_hang_in_one_call_leaves_the_others_judged(tmp_path: Path) -> None:
    """The calls after a hang run in a new child: only the one-token cases fail."""
    found = document(tmp_path, "hangs_on_one_token", "--timeout", "0.5")
    failed = [c["name"] for c in found["cases"] if not c["passed"]]
    assert [name.split(":")[0] for name in failed] == ["random 1", "random 2"]
    assert found["score"] == {"passed": 22, "total": 24}


@pytest.mark.long
def test_a_process_that_dies_is_the_students_failure(tmp_path: Path) -> None:
    found = document(tmp_path, "dies")
    assert found["first_failure"]["error"]["kind"] == "crashed"
    assert "exit code 3" in found["first_failure"]["message"]


@pytest.mark.long
def test_an_exception_names_the_students_line(tmp_path: Path) -> None:
    result = grade(tmp_path, "raises")
    assert result.exit_code == 1
    assert "raised ValueError: matmul" in result.stdout
    assert "  raises.py:6: scores = Q @ K / np.sqrt(K.shape[-1])" in result.stdout
    assert "Traceback" not in result.output


@pytest.mark.long
def test_the_students_prints_never_reach_stdout(tmp_path: Path) -> None:
    """prints writes ESC and a line of JSON on every call: the document is whole."""
    found = document(tmp_path, "prints")
    assert found["passed"] is True
    assert found["score"] == {"passed": 24, "total": 24}
    result = grade(tmp_path, "prints")
    assert "\x1b" not in result.output
    assert "schema" not in result.output


@pytest.mark.long
def test_the_document_carries_the_first_failure_and_checks_report(tmp_path: Path) -> None:
    found = document(tmp_path, "returns_nan")
    assert found["schema"] == "attntrace/grade/v1"
    assert found["target"].endswith("returns_nan.py:attention")
    assert found["score"]["total"] == len(found["cases"]) == 24
    kinds = [c["kind"] for c in found["cases"]]
    assert kinds == ["sample"] * 10 + ["random"] * 11 + ["property"] * 3
    first = found["first_failure"]
    assert first["cause"] is None
    assert first["cell"]["found"] == "NaN"
    assert first["cell"]["row_label"] == "cat"
    jsonschema.validate(first["check"], schema("check-v1.schema.json"))
    assert first["check"]["first_divergent"]["stage"] == "output"


@pytest.mark.long
def test_torch_sdpa_passes_in_the_child(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    assert grade(tmp_path, "correct_torch").exit_code == 0


@pytest.mark.long
def test_the_memory_limit_holds_the_child(tmp_path: Path) -> None:
    """A student who allocates past ATTNTRACE_MAX_MEMORY_MB fails (MemoryError in the
    child), and attntrace does not."""
    if sys.platform != "linux":
        pytest.skip("RLIMIT_AS is Linux's")
    path = tmp_path / "greedy.py"
    path.write_text(
        "import numpy as np\n\n\ndef attention(X, WQ, WK, WV, causal=False):\n"
        "    big = np.ones((1 << 30,))\n    return big\n"
    )
    env = {**os.environ, "ATTNTRACE_MAX_MEMORY_MB": "512", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "attntrace", "grade", f"{path}:attention", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    first = json.loads(result.stdout)["first_failure"]
    assert first["error"]["kind"] == "raised"
    assert "MemoryError" in first["message"]


@pytest.mark.long
@pytest.mark.parametrize("name", ["mask_wrong_triangle", "raises", "stages_no_scaling"])
def test_the_child_and_the_plugin_give_one_verdict(name: str, tmp_path: Path) -> None:
    """The same cases, verdicts and causes, called in a child or in this process."""
    import importlib.util

    from attntrace.grading.grade_json import grade_to_dict
    from attntrace.grading.grader import grade_function

    found = document(tmp_path, name)
    spec = importlib.util.spec_from_file_location(f"grade_same_{name}", tmp_path / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    here = grade_to_dict(grade_function(module.attention))
    assert here["cases"] == found["cases"]
    assert here["score"] == found["score"]


NO_CAUSAL = """import numpy as np


def attention(X, WQ, WK, WV, mask=None):
    return X @ WV
"""


def test_a_function_without_causal_is_told_its_signature(tmp_path: Path) -> None:
    (tmp_path / "nocausal.py").write_text(NO_CAUSAL, encoding="utf-8")
    result = invoke("grade", f"{tmp_path / 'nocausal.py'}:attention")
    assert result.exit_code == 1, result.output
    out = " ".join(result.stdout.split())
    assert (
        "attention cannot be called as attention(X, WQ, WK, WV, causal=False): its "
        "signature is (X, WQ, WK, WV, mask=None)" in out
    )
    assert "runner.py" not in out
    assert "TypeError" not in out
    assert "0 of 24 cases pass" in out


BIG_DICT = """import numpy as np


def attention(X, WQ, WK, WV, causal=False):
    a = np.zeros((6000, 6000), dtype=np.float32)
    return {"Q": a, "K": a, "V": a, "scores": a, "softmax": a, "output": a}
"""


@pytest.mark.long
def test_a_result_too_large_to_read_names_no_line_of_attntrace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six 6000² float32 arrays widened to float64 pass the child's memory cap while
    attntrace reads them: the failure says so, at no line of attntrace's."""
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "1024")
    (tmp_path / "bigdict.py").write_text(BIG_DICT, encoding="utf-8")
    result = invoke("grade", f"{tmp_path / 'bigdict.py'}:attention")
    assert result.exit_code == 1, result.output
    assert "while its result was read" in result.stdout
    assert "user_arrays" not in result.stdout


@pytest.mark.parametrize("timeout", ["0", "-1", "1e9", "soon"])
def test_a_bad_timeout_is_echoed_as_typed(timeout: str, tmp_path: Path) -> None:
    line = one_line_error(grade(tmp_path, "correct_numpy", "--timeout", timeout), "--timeout")
    assert line.endswith(f"got {timeout!r}"), line


def test_a_target_with_two_colons_says_what_was_expected(tmp_path: Path) -> None:
    path = student_file(tmp_path, "correct_numpy")
    line = one_line_error(invoke("grade", f"{path}:attention:extra"), "FILE.py:FUNCTION")
    assert "suffix" not in line
    assert "one FUNCTION after FILE.py:" in line


INT_OUTPUT = """import numpy as np


def attention(X, WQ, WK, WV, causal=False):
    return np.zeros((X.shape[0], WV.shape[1]), dtype=np.int64)
"""


def test_an_integer_output_is_named_on_each_case_line(tmp_path: Path) -> None:
    (tmp_path / "intout.py").write_text(INT_OUTPUT, encoding="utf-8")
    result = invoke("grade", f"{tmp_path / 'intout.py'}:attention")
    assert result.exit_code == 1
    assert "returned nothing to compare" not in result.stdout
    case_lines = [line for line in result.stdout.splitlines() if line.startswith("✗ ")]
    assert sum(line.endswith("  int64, not floats") for line in case_lines) == 21, result.stdout
