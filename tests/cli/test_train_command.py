"""`attntrace train`: the piped table, JSON, --save's round trip, every refusal, and the
live display's frame and pacing (drawn as functions of a step, without a terminal)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from helpers import invoke, schema
from rich.console import Console

from attntrace.api import prepared
from attntrace.forward.attention import trace_block
from attntrace.kernel.trace import Trace
from attntrace.learning.objective import Objective, Resolved
from attntrace.learning.train import StepRecord, train
from attntrace.learning.views.train import shown_steps
from attntrace.learning.views.train_live import LONGEST, LiveTraining, frame, sparkline
from attntrace.modelfile.model_file import load_model
from attntrace.ui.view import View

IT = ("-s", "it-animal", "--from", "it", "--to", "animal", "--init", "random", "--seed", "0")


def test_piped_it_learns_it_animal_and_says_what_changed() -> None:
    result = invoke("train", *IT)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "it-animal · 11 tokens · d_model 6 · d_k 4 · d_v 3"
    assert lines[1] == "L = −log softmax[it, animal] · one head"
    assert lines[2] == "train WQ, WK · 100 steps · lr 0.5 · from random weights (seed 0)"
    top = lines.index("step     loss   it → animal")
    rows = [line.split() for line in lines[top + 1 : top + 22]]
    assert [int(r[0]) for r in rows] == list(range(0, 101, 5))
    assert float(rows[-1][2]) > 0.9
    assert any(line.startswith("ΔWQ = WQ after − WQ before   [6 × 4]") for line in lines)
    assert any(line.startswith("ΔWK = WK after − WK before   [6 × 4]") for line in lines)
    assert max(len(line) for line in lines) <= 80


def test_the_table_and_the_json_say_the_same_numbers() -> None:
    table = invoke("train", *IT, "--steps", "12", "--precision", "6")
    document = json.loads(invoke("train", *IT, "--steps", "12", "--json").stdout)
    jsonschema.validate(
        document, schema("train-v1.schema.json"), cls=jsonschema.Draft202012Validator
    )
    lines = table.stdout.splitlines()
    top = lines.index("step       loss   it → animal")
    for line, entry in zip(lines[top + 1 : top + 14], document["history"], strict=True):
        step, loss, weight = line.split()
        assert int(step) == entry["step"]
        assert loss == f"{entry['loss']:.6f}"
        assert weight == f"{entry['to_weights'][0]:.6f}"
    assert len(document["history"]) == 13
    assert document["settings"] == {
        "train": ["WQ", "WK"],
        "steps": 12,
        "lr": 0.5,
        "init": "random",
        "seed": 0,
    }
    assert document["loss"]["from"] == {"index": 7, "token": "it"}
    change = document["changes"][0]
    delta = np.array(document["after"]["WQ"]) - np.array(document["before"]["WQ"])
    assert np.array_equal(np.array(change["delta"]), delta)


def test_same_input_same_output() -> None:
    for args in (IT, (*IT, "--json")):
        assert invoke("train", *args).stdout == invoke("train", *args).stdout


def test_several_heads_get_a_column_each_and_mse_none() -> None:
    heads = invoke("train", "-s", "two-heads", "--from", "cat", "--to", "fish", "--steps", "3")
    assert heads.exit_code == 0, heads.output
    assert "step     loss   head 0   head 1" in heads.stdout
    assert "summed over 2 heads" in heads.stdout
    one = invoke(
        "train", "-s", "two-heads", "--from", "cat", "--to", "fish", "--head", "1", "--steps", "3"
    )
    assert "head 1 alone" in one.stdout


def test_save_round_trips_exactly(tmp_path: Path) -> None:
    for name in ("trained.yaml", "trained.json"):
        saved = tmp_path / name
        result = invoke("train", *IT, "--steps", "20", "--save", str(saved))
        assert result.exit_code == 0, result.output
        assert f"saved the trained model to {saved}" in " ".join(result.stdout.split())
        ready = prepared(None, sample="it-animal")
        run = train(
            ready.spec,
            ready.tokens,
            None,
            Objective("attend", "it", "animal"),
            steps=20,
            init="random",
            seed=0,
        )
        back = load_model(saved)
        assert back.name == "it-animal-trained"
        expected = trace_block(run.final, ready.tokens, None)
        traced = json.loads(invoke("run", "-c", str(saved), "--json").stdout)
        assert traced["tokens"] == list(ready.tokens)
        for stage, want in zip(traced["stages"], expected.stages, strict=True):
            assert stage["name"] == want.name
            assert np.array_equal(np.array(stage["data"], dtype=float), want.data)  # tolerance 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trained.json", "trained.yaml"]


def test_save_into_a_folder_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    result = invoke("train", *IT, "--steps", "2", "--save", str(tmp_path / "no" / "m.yaml"))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "no folder" in result.stderr
    assert list(tmp_path.iterdir()) == []


REFUSED = [
    (("--model", "minilm"), "not a real model"),
    (("--train", "WV"), "would never change"),
    (("--train", "WO"), "no WO"),
    (("--train", "bQ"), "no bQ"),
    (("--train", "WX"), "names from WQ"),
    (("--train", ","), "--train"),
    (("--steps", "0"), "--steps"),
    (("--steps", "100001"), "--steps"),
    (("--lr", "0"), "--lr"),
    (("--lr", "-1"), "--lr"),
    (("--lr", "inf"), "--lr"),
    (("--lr", "nan"), "--lr"),
    (("--steps", "100000"), "--steps: expected at most 16,"),
    (("--init", "zeros"), "--init"),
    (("--seed", "-1", "--init", "random"), "--seed"),
    (("--seed", "3"), "--seed draws the random weights: add --init random"),
    (("--head", "1"), "--head: expected a head from 0 to 0, got 1"),
    (("--loss", "mse"), "--from"),
    (("--to", "dog"), "--to"),
    (("--head", "3"), "head"),
    (("--save", ""), "--save"),
    (("-c", "x.yaml"), "both name a model"),
]


@pytest.mark.parametrize(("extra", "said"), REFUSED, ids=[" ".join(e) for e, _ in REFUSED])
def test_refusals_are_one_line_and_exit_2(extra: tuple[str, ...], said: str) -> None:
    args = ["train", "-s", "it-animal", "--from", "it", "--to", "animal", *extra]
    if extra[:1] == ("--to",):
        args = ["train", "-s", "it-animal", "--from", "it", *extra]
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("attntrace: error:")
    assert result.stderr.count("\n") == 1
    assert said in result.stderr


def test_no_loss_named_is_a_usage_error() -> None:
    result = invoke("train", "-s", "it-animal")
    assert result.exit_code == 2
    assert "choose a loss" in result.stderr


def test_shown_steps() -> None:
    assert shown_steps(1) == [0, 1]
    assert shown_steps(20) == list(range(21))
    assert shown_steps(100) == list(range(0, 101, 5))
    many = shown_steps(99_999)
    assert (len(many), many[0], many[-1]) == (21, 0, 99_999)
    assert many == sorted(set(many))


def test_sparkline_runs_from_the_lowest_to_the_highest_bar() -> None:
    assert sparkline([3.0, 2.0, 1.0], 10) == "█▅▁"
    assert sparkline([1.0, 1.0], 10) == "▁▁"
    long = sparkline([float(-k) for k in range(1000)], 40)
    assert len(long) == 40
    assert long[0] == "█"
    assert long[-1] == "▁"


def drawn(width: int, step: int = 100) -> list[str]:
    ready = prepared(None, sample="it-animal")
    objective = Objective("attend", "it", "animal")
    records: list[tuple[StepRecord, Trace, Resolved]] = []
    train(
        ready.spec,
        ready.tokens,
        None,
        objective,
        init="random",
        on_step=lambda r, t, loss: records.append((r, t, loss)),
    )
    record, trace, loss = records[step]
    losses = [r.loss for r, _, _ in records[: step + 1]]
    out = StringIO()
    console = Console(file=out, width=width, color_system=None)
    console.print(frame(record, 100, losses, trace, loss, View(), width))
    return out.getvalue().splitlines()


@pytest.mark.parametrize("width", [40, 80, 160])
def test_the_frame_marks_the_to_token_and_fits(width: int) -> None:
    lines = drawn(width)
    assert lines[0].startswith("step 100 of 100 · loss ")
    assert all(len(line) <= width for line in lines)
    animal = next(line for line in lines if line.startswith("animal"))
    assert "◀" in animal
    assert sum(1 for line in lines if "◀" in line) == 1
    street = next(line for line in lines if line.startswith("street"))
    assert animal.count("█") > 8 * street.count("█")  # the learned weight: the longest bar


def test_the_frame_at_step_0_shows_the_start() -> None:
    lines = drawn(80, 0)
    weight = float(lines[0].rsplit(" ", 1)[1])
    assert weight < 0.2
    assert lines[0].startswith("step   0 of 100")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@pytest.mark.parametrize("steps", [5, 100, 5000])
def test_the_live_display_is_paced_and_skips_frames_not_steps(steps: int) -> None:
    ready = prepared(None, sample="it-animal")
    clock = Clock()
    console = Console(file=StringIO(), width=80, force_terminal=True, color_system=None)
    live = LiveTraining(console, steps, "settings", View(), clock=clock, sleep=clock.sleep)
    frames: list[bool] = []  # per step: whether a frame was drawn

    def counting(record: object, trace: object, loss: object) -> None:
        live.on_step(record, trace, loss)  # type: ignore[arg-type]
        frames.append(live.drawn == clock.now)

    run = train(
        ready.spec,
        ready.tokens,
        None,
        Objective("attend", "it", "animal"),
        steps=steps,
        lr=0.1,
        on_step=counting,
    )
    live.stop()
    assert len(run.history) == steps + 1  # every step computed
    assert clock.now <= LONGEST + 1e-9
    assert sum(frames) <= 25 * LONGEST + 2  # at most 25 frames a second, and the last
    assert frames[0]
    assert frames[-1]


def test_a_rate_that_diverges_is_one_line_after_the_lines_printed() -> None:
    result = invoke("train", "-s", "it-animal", "--from", "it", "--to", "animal", "--lr", "1e300")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "lower --lr" in result.stderr
    assert "ΔWQ" not in result.stdout  # no summary: the run did not end
    as_json = invoke(
        "train", "-s", "it-animal", "--from", "it", "--to", "animal", "--lr", "1e300", "--json"
    )
    assert (as_json.exit_code, as_json.stdout) == (2, "")


def test_piped_lines_come_as_their_steps_are_reached() -> None:
    from attntrace.learning.views.train import PipedTraining

    ready = prepared(None, sample="it-animal")
    out = StringIO()
    console = Console(file=out, width=80, color_system=None)
    piped = PipedTraining(console, 100, "settings", View())
    seen: dict[int, str] = {}

    def on_step(record: StepRecord, trace: Trace, loss: Resolved) -> None:
        piped.on_step(record, trace, loss)
        seen[record.step] = out.getvalue()

    train(ready.spec, ready.tokens, None, Objective("attend", "it", "animal"), on_step=on_step)
    first = [
        "it-animal · 11 tokens · d_model 6 · d_k 4 · d_v 3",
        "L = −log softmax[it, animal] · one head",
        "settings",
    ]
    assert seen[0].splitlines()[:3] == first
    assert seen[0].splitlines()[-2:][0] == "step     loss   it → animal"
    for step in (0, 5, 50, 100):  # a shown step's line is out when the step is reached
        assert seen[step].splitlines()[-1].split()[0] == str(step)
    assert seen[4] == seen[1] == seen[0]  # the steps not shown print nothing


def test_ctrl_c_piped_writes_nothing_more(monkeypatch: pytest.MonkeyPatch) -> None:
    import attntrace.learning.train as core

    real = core._step
    calls = []

    def interrupted(*args: object) -> object:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(core, "_step", interrupted)
    as_json = invoke("train", *IT, "--steps", "8", "--json")
    assert (as_json.exit_code, as_json.stdout) == (130, "")
    calls.clear()
    table = invoke("train", *IT, "--steps", "8")
    assert table.exit_code == 130
    lines = table.stdout.split("\n")
    assert lines[-1] == ""  # the last line ended, and no newline of its own after it
    assert [line.split()[0] for line in lines[-4:-1]] == ["0", "1", "2"]


def test_max_rows_and_max_cols_cut_the_change_tables() -> None:
    full = invoke("train", *IT, "--steps", "2", "--max-rows", "0", "--max-cols", "0")
    assert full.exit_code == 0, full.output
    assert "showing" not in full.stdout
    cut = invoke("train", *IT, "--steps", "2", "--max-rows", "2", "--max-cols", "2")
    assert cut.exit_code == 0, cut.output
    assert cut.stdout.count("showing 2 of 6 rows and 2 of 4 columns (--max-rows/--max-cols") == 2
    help_text = " ".join(invoke("train", "--help", columns=200).stdout.split())
    assert "--max-rows" in help_text
    assert "--map" not in help_text


def test_the_live_view_says_what_follows_for_the_heads_it_leaves_out() -> None:
    from attntrace.kernel.spec import ModelSpec

    rng = np.random.default_rng(0)
    square = rng.normal(size=(12, 12)) / np.sqrt(12)
    model = ModelSpec(
        embeddings={w: rng.normal(size=12) for w in ("a", "b", "c")},
        WQ=square,
        WK=square,
        WV=square,
        heads=6,
    )
    records: list[tuple[StepRecord, Trace, Resolved]] = []
    run = train(
        model,
        ("a", "b", "c"),
        None,
        Objective("attend", "a", "b"),
        steps=1,
        on_step=lambda r, t, loss: records.append((r, t, loss)),
    )
    record, trace, loss = records[-1]
    out = StringIO()
    Console(file=out, width=80, color_system=None).print(
        frame(record, 1, [1.0, 0.5], trace, loss, View(), 80)
    )
    assert "and 2 more heads (the line after the run has every head's weight)" in out.getvalue()
    from attntrace.learning.views.train import before_after

    said = before_after(run, View()).plain
    assert all(f"head {h} " in said for h in range(6))
