"""The tokenizer cache (issue 17, part 3): a real model's opening and a whole run, with the
cache cold (no file: the tables are decoded from the GGUF, checked, and written) and warm.

Run:  python benchmarks/tokenizer_cache.py        (about a minute)

In-process figures are the best of 7 (the machine's noise only ever adds time); whole runs
are fresh processes, cold and warm interleaved, medians of 9. The cache lives in a scratch
XDG_CACHE_HOME, never the user's. Gemma 3 is measured where its GGUF is found (as
``$ATTNTRACE_GEMMA3_GGUF``, or the catalogue's joined copy): its GGUF opened with its tokenizer
(``sentencepiece.open_gguf``, what the model class calls), each time from fresh strings.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BEST_OF = 7
RUNS = 9
SENTENCE = "The animal didn't cross the street because it was tired, said the old farmer."


def best(action: Callable[[], object]) -> float:
    times = []
    for _ in range(BEST_OF):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def process(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, env=env, check=True)
    return time.perf_counter() - start


def main() -> None:
    scratch = Path(tempfile.mkdtemp(prefix="attntrace-bench-cache-"))
    os.environ["XDG_CACHE_HOME"] = str(scratch)
    cache = smollm2_in_process()
    smollm2_runs(cache)
    gemma3()
    shutil.rmtree(scratch, ignore_errors=True)


def smollm2_in_process() -> Path:
    """SmolLM2 opened in process, each part of the opening timed; returns the cache file."""
    from attntrace.real.catalog import SMOLLM2
    from attntrace.real.llama import TOKENIZER_ARRAYS, TOKENIZER_KIND, Llama
    from attntrace.real.tokenizers import tokenizer_cache
    from attntrace.real.tokenizers.bpe import ByteLevelBPE
    from attntrace.real.weights.gguf import GGUFFile

    path, sha = SMOLLM2.verified_weights(), SMOLLM2.sha256
    cache = tokenizer_cache.cache_file(TOKENIZER_KIND, sha)

    def cold() -> None:
        cache.unlink(missing_ok=True)
        Llama.load(path, verified_sha256=sha)

    meta = GGUFFile(path).metadata
    print(f"SmolLM2 (best of {BEST_OF}, in process)")
    figures = {
        "GGUF open, every array decoded": best(lambda: GGUFFile(path)),
        "GGUF open, tokenizer arrays stepped over": best(
            lambda: GGUFFile(path, skip=TOKENIZER_ARRAYS)
        ),
        "ByteLevelBPE from the GGUF's lists (checked)": best(
            lambda: ByteLevelBPE.from_lists(
                meta["tokenizer.ggml.tokens"],  # type: ignore[arg-type]
                meta["tokenizer.ggml.merges"],  # type: ignore[arg-type]
                meta["tokenizer.ggml.token_type"],  # type: ignore[arg-type]
            )
        ),
        "Llama.load, cache cold (build + write)": best(cold),
    }
    Llama.load(path, verified_sha256=sha)
    figures["Llama.load, cache warm"] = best(lambda: Llama.load(path, verified_sha256=sha))
    tables = tokenizer_cache.load_tables(TOKENIZER_KIND, sha)
    assert tables is not None
    figures["  of which reading the cache file"] = best(
        lambda: tokenizer_cache.load_tables(TOKENIZER_KIND, sha)
    )
    figures["  of which ByteLevelBPE.from_tables"] = best(lambda: ByteLevelBPE.from_tables(tables))
    for label, seconds in figures.items():
        print(f"  {label:<48} {1000 * seconds:7.1f} ms")
    print(f"  cache file: {cache.stat().st_size / 1e6:.1f} MB")
    return cache


def smollm2_runs(cache: Path) -> None:
    """Whole runs as fresh processes, the cache cold and warm interleaved."""
    command = [sys.executable, "-m", "attntrace", "run", "--model", "smollm2", "--layer", "0"]
    command.append(SENTENCE)
    env = dict(os.environ)
    cold_runs, warm_runs = [], []
    for _ in range(RUNS):
        cache.unlink(missing_ok=True)
        cold_runs.append(process(command, env))
        warm_runs.append(process(command, env))
    print(f"whole `attntrace run --model smollm2 --layer 0` (15 tokens), median of {RUNS}")
    print(f"  cache cold {1000 * statistics.median(cold_runs):7.0f} ms")
    print(f"  cache warm {1000 * statistics.median(warm_runs):7.0f} ms")


def gemma3() -> None:
    """Gemma 3's GGUF opened with its tokenizer, where the GGUF is found."""
    from attntrace.real.catalog import GEMMA3
    from attntrace.real.tokenizers import tokenizer_cache

    given = os.environ.get("ATTNTRACE_GEMMA3_GGUF")
    gemma = Path(given) if given else (GEMMA3.verified_weights() if GEMMA3.installed else None)
    if gemma is not None and gemma.is_file():
        from attntrace.real.tokenizers import sentencepiece

        fake = "0" * 64  # the scratch cache's key; the file is not verified here
        gemma_cache = tokenizer_cache.cache_file(sentencepiece.TOKENIZER_KIND, fake)

        def gemma_cold() -> None:
            gemma_cache.unlink(missing_ok=True)
            sentencepiece.open_gguf(gemma, fake)

        print(f"Gemma 3: GGUF open + tokenizer (best of {BEST_OF}, in process; fresh strings)")
        rows = {
            "no cache (decode, build)": best(lambda: sentencepiece.open_gguf(gemma)),
            "cache cold (decode, build, write)": best(gemma_cold),
        }
        sentencepiece.open_gguf(gemma, fake)
        rows["cache warm (step over, read, build)"] = best(
            lambda: sentencepiece.open_gguf(gemma, fake)
        )
        built = sentencepiece.open_gguf(gemma)[1]
        long_text = " ".join([SENTENCE] * 40)
        rows[f"encode {len(built.encode(long_text))} tokens (one word)"] = best(
            lambda: built.encode(long_text)
        )
        for label, seconds in rows.items():
            print(f"  {label:<48} {1000 * seconds:7.1f} ms")
        print(f"  cache file: {gemma_cache.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
