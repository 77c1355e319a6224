"""Benchmark: a ``recjudge book`` process's start, jsonschema's "iri" format check imported vs skipped
(:func:`recjudge_utils._startup.skip_iri_format_check`).

Each variant imports the book's command line (``recjudge_utils.book.cli``, which reaches nbformat, then jsonschema)
in a fresh interpreter, alternating, ``REPEATS`` times each; the medians and their ratio are printed. The skipped
variant must still read and validate a notebook: it reads ``notebooks/00_introduction.ipynb`` with nbformat.
Run: ``.venv/bin/python benchmarks/bench_cli_start.py``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

REPEATS = 5
ROOT = Path(__file__).resolve().parents[1]
IMPORTED = "import recjudge_utils.book.cli"
SKIPPED = (
    "from recjudge_utils._startup import skip_iri_format_check; skip_iri_format_check(); "
    "import recjudge_utils.book.cli, nbformat; "
    f"nbformat.validate(nbformat.read({str(ROOT / 'notebooks' / '00_introduction.ipynb')!r}, as_version=4))"
)


def _seconds(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    return time.perf_counter() - started


def main() -> None:
    times: dict[str, list[float]] = {"imported": [], "skipped": []}
    for _ in range(REPEATS):
        times["imported"].append(_seconds(IMPORTED))
        times["skipped"].append(_seconds(SKIPPED))
    imported, skipped = (statistics.median(times[k]) for k in ("imported", "skipped"))
    print(f"start of the book's command line, median of {REPEATS} fresh interpreters each:")
    print(f"  rfc3987_syntax imported: {imported:.2f} s")
    print(f"  rfc3987_syntax skipped:  {skipped:.2f} s (and a notebook read and validated)")
    print(f"  ratio imported / skipped: {imported / skipped:.2f}")


if __name__ == "__main__":
    main()
