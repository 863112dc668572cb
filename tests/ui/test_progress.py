"""Long work shows its progress on a terminal's stderr, and nowhere else (issue 12, item 9).

The CLI runs in a pseudo-terminal for stderr (stdout a pipe, as in ``--json | jq``), or
for both; ATTNTRACE_PROGRESS_AFTER=0 shows the display from the start, so the smallest
real model's few layers are enough to see it.
"""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ctrl_c_as_a_terminal_delivers_it, invoke
from terminals import COLOUR, ESCAPE, Terminal, environment

from attntrace.kernel import progress
from attntrace.real.catalog import MINILM, SMOLLM2, RealModel, file_sha256


def need(model: RealModel) -> None:
    if not model.installed:
        pytest.skip(f"{model.name}'s weights are not installed: {model.install}")


@pytest.fixture
def terminal() -> Terminal:
    return Terminal()


STARTED: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def no_process_left() -> Iterator[None]:
    """A test that fails while its command runs leaves no process behind."""
    yield
    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            process.kill()
        process.communicate()


def start(
    args: list[str],
    stderr: Any,
    stdout: Any = subprocess.PIPE,
    python: tuple[str, ...] = (),
    **env: str,
) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, *python, "-m", "attntrace", *args],
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        env=environment(**env),
        preexec_fn=ctrl_c_as_a_terminal_delivers_it,
    )
    STARTED.append(process)
    return process


def run_on(terminal: Terminal, args: list[str], **env: str) -> tuple[int, bytes, str]:
    """Exit code, stdout (a pipe) and what stderr (the terminal) showed."""
    process = start(args, terminal.slave, subprocess.PIPE, (), **env)
    stdout, _ = process.communicate(timeout=120)
    return process.returncode, stdout, terminal.closed()


MINILM_LAYER_5 = ["run", "--model", "minilm", "--layer", "5", "--json"]


def test_a_terminal_on_stderr_shows_the_layers_while_json_goes_to_the_pipe(
    terminal: Terminal,
) -> None:
    need(MINILM)
    code, stdout, shown = run_on(terminal, MINILM_LAYER_5, ATTNTRACE_PROGRESS_AFTER="0")
    assert code == 0
    seen = ESCAPE.sub("", shown)
    assert "minilm up to layer 5" in seen
    assert "5/5 layers" in seen  # the honest total, reached
    assert "tracing minilm L5" in seen
    document = json.loads(stdout)  # the pipe holds the JSON alone
    assert document["model"]["name"] == "minilm L5"
    assert b"\x1b" not in stdout
    assert b"layers" not in stdout


def test_stderr_into_a_pipe_shows_no_progress_at_all() -> None:
    need(MINILM)
    done = subprocess.run(
        [sys.executable, "-m", "attntrace", *MINILM_LAYER_5],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=environment(ATTNTRACE_PROGRESS_AFTER="0"),
        timeout=120,
    )
    assert done.returncode == 0
    assert done.stderr == b""
    json.loads(done.stdout)


def test_heads_shows_every_layer_it_ranks(terminal: Terminal) -> None:
    need(MINILM)
    code, stdout, shown = run_on(terminal, ["heads", "--top", "1"], ATTNTRACE_PROGRESS_AFTER="0")
    assert code == 0
    assert "ranking 72 heads" in ESCAPE.sub("", shown)
    assert "6/6 layers" in ESCAPE.sub("", shown)
    assert stdout.decode().startswith("How much 'it' (position 10) attends to 'animal'")


def test_decode_of_a_real_model_shows_the_tokens_it_decodes(terminal: Terminal) -> None:
    need(SMOLLM2)
    args = ["decode", "--model", "smollm2", "--layer", "1", "cat eats fish", "--json"]
    code, stdout, shown = run_on(terminal, args, ATTNTRACE_PROGRESS_AFTER="0")
    assert code == 0
    seen = ESCAPE.sub("", shown)
    assert "smollm2 up to layer 1" in seen
    assert "decoding smollm2 L1" in seen
    assert "3/3 tokens" in seen
    assert len(json.loads(stdout)["steps"]) == 3


def test_the_display_is_coloured_but_not_under_no_color() -> None:
    need(MINILM)
    coloured, plain = Terminal(), Terminal()
    assert run_on(coloured, MINILM_LAYER_5, ATTNTRACE_PROGRESS_AFTER="0")[0] == 0
    assert run_on(plain, MINILM_LAYER_5, ATTNTRACE_PROGRESS_AFTER="0", NO_COLOR="1")[0] == 0
    assert COLOUR.search(coloured.text)  # so the next line can fail
    assert "5/5 layers" in ESCAPE.sub("", plain.text)
    assert not COLOUR.search(plain.text), COLOUR.findall(plain.text)[:3]


def test_work_shorter_than_the_delay_shows_nothing(
    terminal: Terminal, monkeypatch: pytest.MonkeyPatch
) -> None:
    need(MINILM)
    args = ["run", "--model", "minilm", "--layer", "3", "--json"]
    code, stdout, shown = run_on(terminal, args, ATTNTRACE_PROGRESS_AFTER="30")
    assert code == 0
    assert shown == ""
    json.loads(stdout)
    from attntrace.cli.progress import progress_after

    monkeypatch.delenv("ATTNTRACE_PROGRESS_AFTER", raising=False)
    assert progress_after() == 1.0  # the default: about a second


def test_the_display_is_gone_before_the_tables_are_printed() -> None:
    # stdout and stderr on one terminal, as a person runs it: the display's lines are
    # erased, then the tables come, and none of the display is drawn after them
    need(MINILM)
    screen = Terminal(columns=100)
    args = ["run", "--model", "minilm", "--layer", "5", "--head", "0", "--max-rows", "3"]
    process = start(args, screen.slave, stdout=screen.slave, ATTNTRACE_PROGRESS_AFTER="0")
    assert process.wait(timeout=120) == 0
    text = screen.closed()
    plain = ESCAPE.sub("", text)
    header = plain.index("minilm L5 · 15 tokens")
    assert plain.rindex("minilm up to layer 5") < header
    assert "up to layer" not in plain[header:]
    assert text.rindex("\x1b[?25h") < text.index("15 tokens")  # the cursor back, then tables


def test_ctrl_c_during_the_display_exits_130_and_clears_it(terminal: Terminal) -> None:
    need(SMOLLM2)
    sentence = " ".join(["the cat sat on the mat"] * 80)
    process = start(
        ["run", "--model", "smollm2", "--layer", "29", sentence, "--json"],
        terminal.slave,
        ATTNTRACE_PROGRESS_AFTER="0",
    )
    terminal.wait_for("layers", timeout=30)
    process.send_signal(signal.SIGINT)
    stdout, _ = process.communicate(timeout=60)
    assert process.returncode == 130
    shown = terminal.closed()
    assert "Traceback" not in shown
    assert "KeyboardInterrupt" not in shown
    assert stdout == b""
    assert shown.rindex("\x1b[?25h") > shown.rindex("\x1b[?25l")  # the cursor shown again


@pytest.mark.parametrize("value", ["-1", "soon", "nan"])
def test_a_progress_delay_must_be_a_number_of_seconds(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    need(MINILM)
    monkeypatch.setenv("ATTNTRACE_PROGRESS_AFTER", value)
    result = invoke("heads", "--json")
    assert result.exit_code == 2
    assert result.stderr == (
        f"attntrace: error: ATTNTRACE_PROGRESS_AFTER: expected a number "
        f"of seconds ≥ 0, got {value!r}\n"
    )


def test_the_worked_example_and_work_within_the_delay_import_no_display() -> None:
    # stderr a terminal in both; -X importtime lists every module imported. Every command
    # listens for progress now (issue 29), so the worked example imports the listener's
    # small modules, but never Rich's progress machinery: its work ends within the delay
    need(MINILM)
    cases: tuple[tuple[list[str], dict[str, str], str], ...] = (
        (["run", "cat eats fish", "--json"], {}, "rich.progress"),
        (["heads", "--json"], {"ATTNTRACE_PROGRESS_AFTER": "30"}, "rich.progress"),
    )
    for args, delay, absent in cases:
        screen = Terminal()
        process = start(args, screen.slave, subprocess.DEVNULL, ("-X", "importtime"), **delay)
        assert process.wait(timeout=120) == 0
        imported = {line.split("|")[-1].strip() for line in screen.closed().splitlines()}
        assert "attntrace.cli" in imported  # the listing is there, so the next can fail
        assert absent not in imported, args


# --- the hook and the display, in process


class Notes:
    """A listener that writes down what it is told."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def started(self, description: str, total: int | None, unit: str) -> int:
        self.events.append(("started", description, total, unit))
        return len(self.events)

    def advanced(self, key: int, completed: int) -> None:
        self.events.append(("advanced", key, completed))

    def finished(self, key: int) -> None:
        self.events.append(("finished", key))


def test_a_task_reports_to_the_listener_and_ends_on_an_error() -> None:
    notes = Notes()

    def interrupted() -> None:
        with progress.task("layers", 3, "layers") as task:
            task.advance()
            task.advance()
            raise KeyboardInterrupt  # Ctrl-C in the middle of the work

    with progress.reporting_to(notes), pytest.raises(KeyboardInterrupt):
        interrupted()
    assert notes.events == [
        ("started", "layers", 3, "layers"),
        ("advanced", 1, 1),
        ("advanced", 1, 2),
        ("finished", 1),
    ]
    with progress.task("unheard", 1) as task:  # nobody listens now: nothing is told
        task.advance()
    assert len(notes.events) == 4


def test_hashing_reports_every_byte(tmp_path: Path) -> None:
    path = tmp_path / "weights.bin"
    path.write_bytes(b"x" * ((1 << 22) + 5))
    told: list[int] = []
    assert file_sha256(path, told.append) == file_sha256(path)
    assert told == [1 << 22, 5]


def test_a_forward_pass_reports_each_layer() -> None:
    need(MINILM)
    from attntrace.real.layer import open_model

    notes = Notes()
    model = open_model("minilm")
    with progress.reporting_to(notes):
        model.layer_input(model.tokenizer.encode("cat"), 2)
    # each layer's attention beats as it goes (progress.beat: the count unchanged)
    counted, last = [], 0  # a task starts at 0
    for event in notes.events:
        if event[0] != "advanced" or event[2] != last:
            counted.append(event)
        last = event[2] if event[0] == "advanced" else last
    assert len(counted) < len(notes.events)  # there were beats, so the filter matters
    assert counted == [
        ("started", "minilm up to layer 2", 2, "layers"),
        ("advanced", 1, 1),
        ("advanced", 1, 2),
        ("finished", 1),
    ]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def patched_display(monkeypatch: pytest.MonkeyPatch) -> Any:
    from rich.console import Console

    from attntrace.ui import progress_bars

    outputs: list[io.StringIO] = []

    def make(width: int) -> None:
        def new_display(clock: Any) -> progress_bars.Display:
            out = io.StringIO()
            outputs.append(out)
            console = Console(file=out, width=width, force_terminal=True, force_interactive=True)
            return progress_bars.Display(console, clock)

        monkeypatch.setattr(progress_bars, "new_display", new_display)

    return make, outputs


def test_nothing_is_drawn_before_the_delay_and_all_of_it_after(patched_display: Any) -> None:
    from attntrace.ui.progress import StderrProgress

    make, outputs = patched_display
    make(80)
    clock = Clock()
    with StderrProgress(1.0, clock) as display, progress.reporting_to(display):
        with progress.task("hashing minilm weights", 90_000_000, "bytes") as hashing:
            hashing.advance(90_000_000)
        with progress.task("minilm up to layer 5", 5, "layers") as layers:
            clock.now += 0.5
            layers.advance()
            assert not display.shown
            assert outputs == []
            clock.now += 0.6
            layers.advance()
            assert display.shown  # past the second, at the next report
            frame = ESCAPE.sub("", outputs[0].getvalue())
            assert "hashing minilm weights" in frame
            assert "90/90 MB" in frame
            assert "2/5 layers" in frame
    assert not display.shown


def test_a_beat_draws_a_display_due_in_the_middle_of_one_long_step(
    patched_display: Any,
) -> None:
    # one head of a long sentence: one step of seconds, whose stages beat (issue 29)
    from attntrace.ui.progress import StderrProgress

    make, outputs = patched_display
    make(80)
    clock = Clock()
    with (
        StderrProgress(1.0, clock) as display,
        progress.reporting_to(display),
        progress.task("tracing big", 1, "heads"),
    ):
        clock.now += 0.5
        progress.beat()
        assert not display.shown  # within the delay
        clock.now += 0.6
        progress.beat()
        assert display.shown  # past it: drawn at the beat, not at the end
        assert "0/1 heads" in ESCAPE.sub("", outputs[0].getvalue())
    progress.beat()  # nobody listens, no task runs: nothing happens


def test_a_trace_beats_at_each_stage_and_counts_its_heads() -> None:
    from attntrace.forward.attention import trace_block
    from attntrace.modelfile.model_file import load_model
    from attntrace.modelfile.samples import sample_path

    model = load_model(sample_path("two-heads"))
    notes = Notes()
    with progress.reporting_to(notes):
        trace = trace_block(model, ["cat", "eats", "fish"])
    started = [event for event in notes.events if event[0] == "started"]
    assert started == [("started", f"tracing {model.name}", 2, "heads")]
    counts = [event[2] for event in notes.events if event[0] == "advanced"]
    assert counts[-1] == 2  # both heads
    # at least a beat for each stage of a head (its attention's steps beat too), made
    # while the heads are counted
    per_head = len([stage for stage in trace.stages if stage.head == 0])
    assert counts.index(1) >= per_head  # head 0 beat before it was counted
    assert len(counts) - counts.index(1) - 1 >= per_head  # head 1 too, counted after
    assert counts == sorted(counts)


def test_the_display_is_erased_whenever_no_work_runs(patched_display: Any) -> None:
    # one display serves a whole command (issue 29): what the command prints between two
    # pieces of work lands on a clean screen, and the next piece draws a display anew
    from attntrace.ui.progress import StderrProgress

    make, outputs = patched_display
    make(80)
    clock = Clock()
    with StderrProgress(0, clock) as display, progress.reporting_to(display):
        with progress.task("reading tiny.json"):
            assert display.shown
        assert not display.shown  # erased: nothing runs
        with progress.task("tracing tiny", 2, "heads") as tracing:
            tracing.advance()
            assert display.shown
        assert len(outputs) == 2  # a display of its own
        second = ESCAPE.sub("", outputs[1].getvalue())
        assert "tracing tiny" in second
        assert "reading tiny.json" not in second  # the erased work is not drawn again
    assert not display.shown


@pytest.mark.parametrize("width", [80, 40, 30])
def test_each_line_fits_the_width_and_keeps_its_count_whole(
    width: int, patched_display: Any
) -> None:
    from attntrace.ui.progress import StderrProgress

    make, outputs = patched_display
    make(width)
    clock = Clock()
    with (
        StderrProgress(0, clock) as display,
        progress.reporting_to(display),
        progress.task("smollm2 up to layer 29", 29, "layers") as layers,
    ):
        for _ in range(12):
            clock.now += 0.9
            layers.advance()
        frames = ESCAPE.sub("", outputs[0].getvalue()).replace("\r", "\n")
        last = [line for line in frames.splitlines() if line.strip()][-1]
    assert len(last) <= width
    assert "12/29" in last
    assert "10.8 s" in last
    assert ("━" in last) == (width >= 60)  # the bar is the first to go
    assert ("smollm2 up to layer 29" in last) == (width >= 40)  # then the description shrinks


def test_a_terminal_that_cannot_be_written_stops_the_display_not_the_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from attntrace.ui import progress_bars
    from attntrace.ui.progress import StderrProgress

    class Broken:
        def draw(self, works: object) -> None:
            raise OSError(5, "Input/output error")

        def stop(self) -> None:
            raise AssertionError("never drawn, so never stopped")

    monkeypatch.setattr(progress_bars, "new_display", lambda clock: Broken())
    with StderrProgress(0) as display, progress.reporting_to(display):
        with progress.task("layers", 3, "layers") as layers:
            for _ in range(3):
                layers.advance()
        assert not display.shown
