"""How big a page is, plain and packed (issue 30): a real model's page was mostly its
weights as decimal JSON, 16 MB for 12 tokens of SmolLM2.

Run:  python benchmarks/page_size.py        (about a minute; a model whose weights
      are not installed is skipped, saying so)

For each case, `attntrace run ... --export page.html` in this process, twice: with every
block embedded as plain JSON (attntrace.page.packing.PACK_AT set past any size: the page
before packing) and as written today (a block over 1 MiB packed). Printed: the JSON
`run --json` writes, both pages' sizes, the time to write the packed page (median of 3),
and that the packed page gives the JSON back byte for byte (packing.page_documents).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's attntrace

from attntrace.cli import app
from attntrace.page import packing
from attntrace.real.catalog import CATALOG

TWELVE = "The quick brown fox jumps over the lazy dog and the cat"  # 12 tokens in SmolLM2
CASES = {
    "sample it-animal": ("run", "-s", "it-animal"),
    "sample gqa": ("run", "-s", "gqa"),
    "minilm layer 2": ("run", "-m", "minilm", "--layer", "2", TWELVE),
    "smollm2 layer 3": ("run", "-m", "smollm2", "--layer", "3", TWELVE),
    "gemma3 layer 5": ("run", "-m", "gemma3", "--layer", "5", TWELVE),
}
REPEATS = 3


def written(args: tuple[str, ...], target: Path) -> float:
    """Seconds to write the page of ``args`` to ``target``."""
    start = time.perf_counter()
    result = CliRunner().invoke(app, [*args, "--export", str(target)])
    seconds = time.perf_counter() - start
    if result.exit_code != 0:
        raise SystemExit(f"{' '.join(args)}: {result.output}")
    return seconds


def measure(name: str, args: tuple[str, ...], folder: Path) -> str:
    json_bytes = CliRunner().invoke(app, [*args, "--json"]).stdout_bytes
    target = folder / "page.html"
    pack_at = packing.PACK_AT
    packing.PACK_AT = 1 << 62
    written(args, target)
    plain = target.stat().st_size
    packing.PACK_AT = pack_at
    seconds = statistics.median(written(args, target) for _ in range(REPEATS))
    page = target.read_text(encoding="utf-8")
    documents = packing.page_documents(page)
    exact = "yes" if documents["trace"] + b"\n" == json_bytes else "NO"
    return (
        f"{name:<18} {len(json_bytes) / 1e6:>7.2f} MB {plain / 1e6:>8.2f} MB "
        f"{len(page.encode()) / 1e6:>8.2f} MB {seconds:>7.2f} s   {exact}"
    )


def main() -> None:
    installed = {model.name: model.installed for model in CATALOG}
    print(f"{'page of':<18} {'--json':>10} {'plain':>11} {'packed':>11} {'write':>9}   exact")
    with tempfile.TemporaryDirectory() as folder:
        for name, args in CASES.items():
            model = args[2] if args[1] == "-m" else None
            if model is not None and not installed.get(model, False):
                print(f"{name:<18} skipped: {model}'s weights are not installed")
                continue
            print(measure(name, args, Path(folder)), flush=True)


if __name__ == "__main__":
    main()
