"""Step mode: the keys of docs/cli.md#step-mode-keys, fed through stdin as a script would."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import invoke

from attntrace import trace_attention
from attntrace.forward.views.step import interpret
from attntrace.ui.pager import Move


def screens(output: str) -> list[str]:
    """The stage names shown, in order, from 'Stage i of N · NAME' headers."""
    return re.findall(r"Stage \d+ of \d+ · (\S+)", output)


@pytest.mark.parametrize(
    ("keys", "shown"),
    [
        ("\n\nb\nq\n", ["X", "Q", "K", "Q"]),
        ("n\nn\nn\n", ["X", "Q", "K", "V"]),
        ("5\n", ["X", "scores"]),
        ("softmax\nb\n", ["X", "softmax", "scaled"]),
        ("Q\n", ["X", "Q"]),  # upper-case Q jumps to the stage; lower-case q quits
        ("v\n", ["X", "V"]),  # names fold case where that is unambiguous
        ("q\n\n\n", ["X"]),
        ("", ["X"]),  # end of input at the first prompt
        ("b\n9\n0\nwhat\n?\nq\n", ["X"]),  # complaints and help never move
        ("\n" * 8, ["X", "Q", "K", "V", "scores", "scaled", "softmax", "output"]),
    ],
)
def test_keys_move_between_stages(keys: str, shown: list[str]) -> None:
    result = invoke("run", "cat eats fish", "--step", input=keys)
    assert result.exit_code == 0, result.output
    assert screens(result.stdout) == shown
    assert "Traceback" not in result.output


@pytest.mark.parametrize("tail", ["", "\n"], ids=["never-ends", "ends-too-late"])
def test_a_key_line_without_end_is_refused_after_the_screens_shown(tail: str) -> None:
    """stdin that is no keyboard (``< /dev/zero``: NULs without a newline) grew one
    line until the memory ran out (684 MiB in the hostile catalogue): a line past 4,096
    characters is one error line, exit 2, after the screens already shown."""
    result = invoke("run", "cat eats fish", "--step", input="\n" + "\0" * 10_000 + tail)
    assert result.exit_code == 2, result.output
    assert screens(result.stdout) == ["X", "Q"]
    assert result.stderr == (
        "attntrace: error: stdin: a line of more than 4,096 characters, where a key was "
        "expected (is stdin a file or a device rather than typed keys?)\n"
    )


def test_a_key_line_of_4096_characters_is_read_as_a_key() -> None:
    result = invoke("run", "cat eats fish", "--step", input="x" * 4096 + "\nq\n")
    assert result.exit_code == 0, result.output
    assert screens(result.stdout) == ["X"]


def test_each_screen_has_formula_shapes_explanation_and_table() -> None:
    result = invoke("run", "--step", input="7\nq\n")
    softmax_screen = result.stdout.split("Stage 7 of 8")[1]
    assert "softmax = exp(scaled − row max) / row sum   [3 × 3]" in softmax_screen
    assert "softmax of each row of scaled [3 × 3] = softmax [3 × 3]" in softmax_screen
    assert "Every row sums to 1." in softmax_screen
    assert "fish   0.0008   0.0008   0.9983" in softmax_screen


def test_complaints_and_help() -> None:
    result = invoke("run", "--step", input="b\n9\nwhat\n?\nq\n")
    assert "already at the first stage" in result.stdout
    assert "no stage 9: stages are numbered 1 to 8" in result.stdout
    assert "unknown key 'what': type ? for help" in result.stdout
    assert "Enter or n: next stage · b: back · 1-8 or a stage name" in result.stdout


def test_piped_keys_are_echoed_after_the_prompt() -> None:
    result = invoke("run", "--step", input="3\nq\n")
    assert "help) > 3\n" in result.stdout
    assert "help) > q\n" in result.stdout


def test_scaled_screen_shows_the_divisor_from_the_model() -> None:
    result = invoke("run", "--sample", "it-animal", "--step", input="6\nq\n")
    assert "scores [11 × 11] / √4 (= 2.0000) = scaled [11 × 11]" in result.stdout


@pytest.mark.parametrize(
    ("line", "current", "move"),
    [
        ("", 0, Move(index=1)),
        ("", 7, Move(quit=True)),
        ("n", 3, Move(index=4)),
        ("b", 3, Move(index=2)),
        (" 2 ", 5, Move(index=1)),
        ("scores", 0, Move(index=4)),
        ("SCORES", 0, Move(index=4)),
        ("K", 0, Move(index=2)),
        ("q", 2, Move(quit=True)),
        ("?", 2, Move(help=True)),
    ],
)
def test_interpret(line: str, current: int, move: Move) -> None:
    assert interpret(line, current, trace_attention("cat eats fish")) == move


def test_h_switches_head_and_names_keep_it() -> None:
    keys = "scores\nh\nsoftmax\nh 0\nh 5\nX\nh\nq\n"
    out = invoke("run", "-s", "two-heads", "--step", input=keys).stdout
    shown = re.findall(r"Stage (\d+) of 17 · (\S+)(  head \d)?", out)
    assert [(int(n), name, head.strip()) for n, name, head in shown] == [
        (1, "X", ""),
        (5, "scores", "head 0"),
        (12, "scores", "head 1"),
        (14, "softmax", "head 1"),  # the name keeps the head on screen
        (7, "softmax", "head 0"),
        (1, "X", ""),
    ]
    assert "no head 5: heads are 0 to 1" in out
    assert "X is shared by all heads: go to a head's stage first" in out
    shown_help = invoke("run", "-s", "two-heads", "--step", input="?\nq\n").stdout
    words = " ".join(shown_help.split())  # the help wraps at 80 columns
    assert "h: the same stage of the next head · h N: of head N (0-1)" in words


def test_decode_pages_take_the_same_keys_and_complaints_as_stages() -> None:
    """decode --step pages through its steps and summary with the stage walk's keys; 'b'
    on the first step and a number out of range say so (both were 'unknown key'). The
    numbers count the steps; 'summary' is the page after them."""
    out = invoke("decode", "-s", "causal", "--step", input="b\n99\nzz\n?\nsummary\nn\n").stdout
    assert "already at the first step" in out
    assert "no step 99: steps are numbered 1 to 6, then summary" in out
    assert "unknown key 'zz': type ? for help" in out
    assert (
        "Enter or n: next step · b: back · 1-6: jump to a step · summary: the summary · "
        "q: quit · ?: this help" in " ".join(out.split())
    )
    assert "(last page: Enter ends · b back · q quit · ? help) > n" in out


def test_shape_equations_name_each_bias_also_in_a_saved_cut_trace(tmp_path: Path) -> None:
    """'+ bQ [2]' after Q's product, '+ bO [4]' after projected's (it once looked for
    '+ bprojected'); a saved trace cut to one head keeps its bias slices."""
    from attntrace.forward.replay import load_trace
    from attntrace.forward.trace_json import dump_bytes
    from attntrace.forward.words import shape_equation

    identity = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    path = tmp_path / "biased.json"
    path.write_text(
        json.dumps(
            {
                "embeddings": {"a": [1, 0, 0, 1], "b": [0, 1, 1, 0]},
                "weights": dict.fromkeys(("WQ", "WK", "WV", "WO"), identity),
                "heads": 2,
                "biases": {"bQ": [1, 2, 3, 4], "bO": [0.5, 0.5, 0.5, 0.5]},
            }
        )
    )
    trace = trace_attention("a b", config=path)
    cut = load_trace(dump_bytes(trace, heads=[1]).decode(), "t")  # no concat, projected
    projected = "concat [2 × 4] · WO [4 × 4] + bO [4] = projected [2 × 4]"
    assert shape_equation(trace["projected"], trace) == projected
    for each in (trace, cut):
        q = "X [2 × 4] · WQ[:, 2:4] [4 × 2] + bQ [2] = Q [2 × 2]"
        assert shape_equation(each.stage("Q", head=1), each) == q
        assert shape_equation(each.stage("scores", head=1), each).startswith("Q [2 × 2] · Kᵀ")
