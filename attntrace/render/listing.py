"""The ``attntrace samples`` listing: one line per sample, cut to the terminal width."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rich.text import Text

from attntrace.samples import SampleSummary

_SENTENCE_WIDTH = 24


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def sample_lines(summaries: Sequence[SampleSummary]) -> Iterator[Text]:
    """``name  d_model N  "sentence"  what it shows``, a line each, names aligned."""
    name_width = max(len(s.name) for s in summaries)
    sentence_width = min(_SENTENCE_WIDTH, max(len(s.sentence) for s in summaries) + 2)
    for s in summaries:
        line = Text()
        line.append(f"{s.name:<{name_width}}", style="bold")
        line.append(f"  d_model {s.d_model:<3} ", style="cyan")
        quoted = f'"{_shorten(s.sentence, sentence_width - 2)}"'
        line.append(f" {quoted:<{sentence_width}}  ")
        line.append(s.summary, style="dim")
        yield line
