"""The listings of real models: `attntrace models` and the head ranking of `attntrace heads`."""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from rich.text import Text

from attntrace.labels import unique_labels

if TYPE_CHECKING:  # `attntrace models` should not pay for numpy
    from attntrace.real.catalog import RealModel
    from attntrace.real.layer import HeadRanking


def model_lines(catalog: Sequence[RealModel]) -> Iterator[Text]:
    """Three lines a model: name and title; its shapes; installed, or how to install it."""
    width = max(len(m.name) for m in catalog)
    for index, m in enumerate(catalog):
        if index:
            yield Text()
        yield Text.assemble(
            (f"{m.name:<{width}}", "bold"), "  ", m.title, (f" · {m.license}", "dim")
        )
        kv = f" sharing {m.kv_heads} K/V heads" if m.kv_heads != m.heads else ""
        kind = "causal" if m.causal else "bidirectional"
        pad = " " * width
        yield Text(f"{pad}  {m.layers} layers × {m.heads} heads{kv}, d_model {m.d_model}, "
                   f"head dim {m.head_dim}", style="cyan")  # fmt: skip
        yield Text(f"{pad}  {m.positions} positions, {kind}; {m.notes}", style="dim")
        state = ("installed", "green") if m.installed else ("not installed", "yellow")
        yield Text.assemble(f"{pad}  {m.install}  (", state, ")")


def ranking_lines(ranking: HeadRanking, top: int) -> Iterator[Text]:
    """A heading, then one line per head: rank, layer, head, weight as a number and a bar."""
    tokens, q, k = unique_labels(ranking.tokens), ranking.query, ranking.key
    heads = len(ranking.rows)
    yield Text.assemble(
        "How much ", (repr(tokens[q]), "bold"), f" (position {q}) attends to ",
        (repr(tokens[k]), "bold"), f" (position {k}), in each of the {heads} heads of "
        f"{ranking.model.name}, heaviest first:",
    )  # fmt: skip
    yield Text()
    yield Text(f"rank  layer  head  {'weight':<28}  heaviest key of the row", style="bold")
    shown = ranking.rows if top == 0 else ranking.rows[:top]
    for rank, row in enumerate(shown, 1):
        bar = "█" * round(row.weight * 20)
        top_key = tokens[row.top_key] + ("" if row.top_key != k else " (this key)")
        yield Text.assemble(
            f"{rank:>4}  {row.layer:>5}  {row.head:>4}  {row.weight:.4f} ",
            (f"{bar:<20}", "cyan"),
            f"   {top_key}",
        )
    if len(shown) < heads:
        yield Text(f"… {heads - len(shown)} more (--top 0 lists them all)", style="dim")
    yield Text()
    yield Text(next_command(ranking), style="dim")


def next_command(ranking: HeadRanking) -> str:
    """``next: attntrace run ...``: the first head, the same sentence, ready to paste
    (the sentence last, shell-quoted, after ``--`` where it starts with a dash)."""
    best = ranking.rows[0]
    words = ["attntrace", "run", "-m", ranking.model.name, "--layer", str(best.layer),
             "--head", str(best.head), "--focus", str(ranking.query), "--step"]  # fmt: skip
    if ranking.sentence is not None:
        words += ["--"] if ranking.sentence.startswith("-") else []
        words.append(_quoted(ranking.sentence))
    return "next: " + " ".join(words)


def _quoted(sentence: str) -> str:
    """The sentence as a shell reads it back: in double quotes where only an apostrophe
    needs quoting (didn't), as people write it, else shlex's single quotes."""
    if "'" in sentence and not any(c in sentence for c in '"$`\\!'):
        return f'"{sentence}"'
    return shlex.quote(sentence)
