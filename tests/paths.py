"""Where things are, for tests at any depth of tests/: the repository, goldens, samples."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
SAMPLES = ROOT / "attntrace" / "samples"
