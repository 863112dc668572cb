"""--focus: the hand arithmetic adds up to the trace's own numbers, and reads right."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from helpers import invoke
from naive import naive_attention
from tolerances import FLOAT64, FLOAT64_APPROX

from attntrace import InputError, trace_attention
from attntrace.forward.attention import trace_block
from attntrace.forward.focus import focus_row, resolve_focus, resolve_position
from attntrace.forward.views.focus import products, vector
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Trace
from attntrace.ui.by_hand import Form


def random_trace(seed: int) -> tuple[Trace, dict[str, list[list[float]]]]:
    """A random trace, and every stage of it computed independently by tests/naive.py."""
    rng = np.random.default_rng(seed)
    d_model, d_k, d_v, n = (int(x) for x in rng.integers(1, 8, size=4))
    model = ModelSpec(
        {f"t{i}": rng.normal(size=d_model) for i in range(5)},
        rng.normal(size=(d_model, d_k)),
        rng.normal(size=(d_model, d_k)),
        rng.normal(size=(d_model, d_v)),
    )
    tokens = [f"t{int(i)}" for i in rng.integers(0, 5, size=n)]
    expected = naive_attention(
        [list(model.embeddings[t]) for t in tokens],
        model.WQ.tolist(),
        model.WK.tolist(),
        model.WV.tolist(),
    )
    return trace_block(model, tokens), expected


@pytest.mark.parametrize("seed", range(10))
def test_the_breakdown_matches_an_independent_computation(seed: int) -> None:
    trace, naive = random_trace(seed)
    for i in range(len(trace.tokens)):
        focus = focus_row(trace, str(i))
        assert focus.index == i
        for j, dot in enumerate(focus.dots):
            # the terms written out are q_i × k_i of the loop implementation's Q and K
            assert dot.products == pytest.approx(
                [q * k for q, k in zip(naive["Q"][i], naive["K"][j], strict=True)], **FLOAT64_APPROX
            )
            assert dot.score == pytest.approx(naive["scores"][i][j], **FLOAT64_APPROX)
            assert focus.softmax[j].scaled == pytest.approx(naive["scaled"][i][j], **FLOAT64_APPROX)
            assert focus.softmax[j].weight == pytest.approx(
                naive["softmax"][i][j], **FLOAT64_APPROX
            )
        exps = [row.exp for row in focus.softmax]
        assert max(exps) == 1.0  # the max was subtracted first
        top = max(naive["scaled"][i])
        assert exps == pytest.approx(
            [math.exp(s - top) for s in naive["scaled"][i]], **FLOAT64_APPROX
        )
        assert focus.exp_sum == pytest.approx(math.fsum(exps), **FLOAT64_APPROX)
        total = np.sum([term.product for term in focus.terms], axis=0)
        np.testing.assert_allclose(total, naive["output"][i], **FLOAT64)
        np.testing.assert_allclose(focus.output, naive["output"][i], **FLOAT64)


def test_which_row() -> None:
    trace = trace_attention(
        "the cat saw the fish",
        model={
            "embeddings": {"the": [1, 0], "cat": [0, 1], "saw": [1, 1], "fish": [2, 1]},
            "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[1, 0], [0, 1]]},
        },
    )
    assert resolve_focus(trace, "2") == (2, "")
    assert resolve_focus(trace, "fish") == (4, "")
    assert resolve_focus(trace, "FISH") == (4, "")
    assert resolve_focus(trace, "the#3") == (3, "")
    index, note = resolve_focus(trace, "the")
    assert index == 0
    assert note == "'the' is at positions 0, 3: this is position 0 (--focus 3 for the next)"
    with pytest.raises(
        InputError, match=r"^--focus: expected a token .*, got 'dog' \(tokens: 0:the"
    ):
        resolve_focus(trace, "dog")
    with pytest.raises(InputError, match="expected a token or an index from 0 to 4, got 5"):
        resolve_focus(trace, "5")


def test_focus_on_a_token_not_in_the_sentence_is_exit_2() -> None:
    result = invoke("run", "cat eats fish", "--focus", "dog")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "attntrace: error: --focus: expected a token of the sentence or its 0-based index, "
        "got 'dog' (tokens: 0:cat, 1:eats, 2:fish)\n"
    )


def test_the_fish_row_by_hand() -> None:
    """docs/model-file.md#the-worked-example: the worked example's last row, written out."""
    out = invoke("run", "cat eats fish", "--focus", "fish").stdout
    assert "fish·cat  = [2, 4]·[1, 2] = 2×1 + 4×2 = 10" in out
    assert "fish·fish = [2, 4]·[2, 4] = 2×2 + 4×4 = 20" in out
    # √2 carries two more digits, so 20 / 1.414214 gives 14.1421 by hand (1.4142: 14.1423)
    assert "fish·cat : 10 / 1.414214 = 7.0711" in out
    assert "fish·fish: 20 / 1.414214 = 14.1421" in out
    assert "cat       7.0711   -7.0711   0.000849   0.0008     0.08%" in out
    assert "fish ◀   14.1421    0.0000   1.000000   0.9983    99.83%" in out
    # the weight carries two more digits, so 0.998304 × 4 = 3.9932 checks by hand
    assert "0.998304 × V[fish] = 0.998304 × [4, 2] = [3.9932, 1.9966]" in out
    assert "sum = [3.9958, 2.0000] = output[fish]" in out


def test_step_mode_puts_each_section_under_its_stage() -> None:
    out = invoke("run", "--step", "--focus", "fish", input="5\n\n\n\nq\n").stdout
    screens = out.split("Stage ")
    scores = next(s for s in screens if s.startswith("5 of 8"))
    assert "fish·eats = [2, 4]·[3, 1] = 2×3 + 4×1 = 10" in scores
    softmax = next(s for s in screens if s.startswith("7 of 8"))
    assert "share = exp / sum = exp / 1.001699" in softmax
    first = next(s for s in screens if s.startswith("1 of 8"))
    assert "fish·" not in first


PLAIN = Form(precision=4, operand_digits=6)


def test_long_sums_keep_their_largest_terms_and_never_the_result() -> None:
    left = [float(i) for i in range(1, 11)]
    assert vector(left, PLAIN) == "[1, 2, 3, …, 8, 9, 10]"
    assert products(left, left, PLAIN) == "… + 5×5 + 6×6 + 7×7 + 8×8 + 9×9 + 10×10"
    # it·street of it-animal: the one non-zero term is the one kept
    terms = products([4.64, 3.47, 2.77, 0.0], [0.0, 2.0, 0.0, 0.0], PLAIN, 1)
    assert terms == "… + 3.47×2 + …"
    assert products([-1.5], [2.0], PLAIN) == "(-1.5)×2"
    # not zero, so never written as zero (issue 29: not "0"; issue 30: not "0.0000")
    assert PLAIN.short(-1e-9) == "-1.0e-09"
    assert PLAIN.short(7.0710678) == "7.0711"
    assert PLAIN.given(7.0710678) == "7.071068"  # an operand carries two more digits


@pytest.mark.parametrize("columns", [40, 80])
def test_a_wide_model_fits_the_terminal(columns: int, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    vocab = {f"w{i}": rng.normal(size=64).round(3).tolist() for i in range(30)}
    weights = {name: rng.normal(size=(64, 64)).round(3).tolist() for name in ("WQ", "WK", "WV")}
    path = tmp_path / "wide.json"
    path.write_text(json.dumps({"embeddings": vocab, "weights": weights}))
    sentence = " ".join(f"w{i}" for i in range(30))
    result = invoke("run", sentence, "-c", str(path), "--focus", "w3", columns=columns)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= columns
    words = " ".join(result.stdout.split())  # at 40 columns the prose wraps
    assert "the 20 largest of 30 weights are written out" in words
    assert "= output[w3]" in words


def test_a_table_label_matches_by_the_same_rules_as_a_token() -> None:
    """the#6 finds Ġthe at position 6, and The#0 finds the at 0; errors list labels."""
    tokens = ["The", "Ġcat", "Ġsaw", "Ġthe", "Ġdog", "Ġand", "Ġthe"]
    assert resolve_position(tokens, "the#6", "--focus") == (6, "")
    assert resolve_position(tokens, "ĠTHE#3", "--focus") == (3, "")
    assert resolve_position(["the", "cat", "the"], "The#0", "--focus") == (0, "")
    # a WordPiece piece has # of its own: the last # numbers the label
    assert resolve_position(["c", "##ing", "a", "##ing"], "##ing#3", "--focus") == (3, "")
    with pytest.raises(InputError, match=r"tokens: 0:the#0, 1:cat, 2:the#2"):
        resolve_position(["the", "cat", "the"], "dog", "--focus")


def test_a_dot_product_keeps_its_largest_term_when_two_do_not_fit() -> None:
    """On a narrow terminal with long tokens, the heaviest term is still written out."""
    from rich.console import Console

    from attntrace.forward.views.focus import dot_section
    from attntrace.ui.view import View

    eye = np.eye(4) * 10.123
    vectors = {
        "supercalifragilistic": np.array([-5.9133, 0.1, 0.2, 0.3]),
        "expialidocious": np.array([-4.1842, 0.4, 0.5, 0.6]),
    }
    trace = trace_block(ModelSpec(vectors, eye, eye, eye), list(vectors))
    console = Console(width=90, record=True, color_system=None)
    console.print(dot_section(focus_row(trace, "supercalifragilistic"), View()))
    lines = console.export_text().splitlines()[1:]
    assert all("×" in line for line in lines), lines
    assert all(len(line) <= 90 for line in lines)
    assert products([1.0, -5.0, 0.5], [1.0, 4.0, 0.1], PLAIN, 1) == "… + (-5)×4 + …"


def test_labels_stay_apart_when_a_token_is_written_like_a_label() -> None:
    """'fish#2' written as a token beside fish twice: labels never collide, and --focus
    finds the token as written, or each label as the tables show it."""
    assert unique_labels(["fish", "fish#2", "fish"]) == ["fish#0", "fish#2#1", "fish#2#2"]
    assert len(set(unique_labels(["a#1", "a", "a", "a#1#1", "a#1"]))) == 5
    tokens = ("fish", "fish#2", "fish")
    assert resolve_position(tokens, "fish#2", "--focus") == (1, "")
    assert resolve_position(tokens, "fish#2#2", "--focus") == (2, "")
    assert resolve_position(tokens, "fish#0", "--focus") == (0, "")


def test_a_token_is_found_however_its_accent_is_spelled(tmp_path: Path) -> None:
    """é composed (U+00E9) and e + U+0301 are two tokens, labelled é#0 and é#1; --focus
    finds each as typed, and a label typed with the other spelling of é."""
    model = tmp_path / "accents.json"
    model.write_text(
        json.dumps(
            {
                "sentence": "\u00e9 e\u0301 cat",
                "embeddings": {"\u00e9": [1.0, 0.0], "e\u0301": [0.0, 1.0], "cat": [1.0, 1.0]},
                "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[1, 0], [0, 1]]},
            }
        ),
        encoding="utf-8",
    )
    for typed, position in (("\u00e9", 0), ("e\u0301", 1), ("\u00e9#1", 1), ("e\u0301#0", 0)):
        out = invoke("run", "--config", str(model), "--focus", typed).stdout
        assert f", position {position} (counting from 0)" in out.splitlines()[0], typed
