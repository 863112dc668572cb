"""The ``attntrace samples`` listing: two lines per sample, cut to the terminal width."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rich.text import Text

from attntrace.modelfile.samples import SampleSummary


def sample_lines(summaries: Sequence[SampleSummary]) -> Iterator[Text]:
    """``name  d_model N  "sentence"``, then the first sentence of its description."""
    name_width = max(len(s.name) for s in summaries)
    for s in summaries:
        line = Text()
        line.append(f"{s.name:<{name_width}}", style="bold")
        line.append(f"  d_model {s.d_model:<3} ", style="cyan")
        line.append(f' "{s.sentence}"' if s.sentence else " (no sentence)")
        if s.twins:
            line.append(f"  (also {', '.join(s.twins)})", style="dim")
        yield line
        yield Text(f"    {s.summary}", style="dim")
