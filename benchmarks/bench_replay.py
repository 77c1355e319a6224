"""Replaying an exported run against the original run, measured side by side in one run.

The whole book at demo scale is run once with a judge profile pointing at the loopback fake OpenAI server (each
answer delayed by ``--latency`` seconds, a stand-in for a remote API), exported, and replayed twice with the server
stopped: on a reader's clean machine (empty runs folder: no cache, no trained models, so the recommenders are
retrained) and on a machine that already holds the trained models. Each replay is checked for ``results.json``
identical to the archived ones.

Run (several minutes on 2 cores; take the shared heavy-job lock):
    flock /tmp/recjudge-heavy.lock .venv/bin/python benchmarks/bench_replay.py [--latency 0.2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from fake_openai_server import FakeOpenAIServer  # noqa: E402
from format_aware_script import FormatAwareScript  # noqa: E402

from recjudge_utils import book  # noqa: E402
from recjudge_utils.book import cli  # noqa: E402
from recjudge_utils.book.archive import export_run  # noqa: E402
from recjudge_utils.judge.loading import load_profile  # noqa: E402


def timed_replay(archive: Path, runs: Path) -> tuple[float, int]:
    os.environ["RECJUDGE_RUNS_DIR"] = str(runs)
    started = time.perf_counter()
    code = cli.main(["replay", str(archive), "--no-build"])
    return time.perf_counter() - started, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the fake server waits per answer")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        original, clean, warm = (Path(tmp) / name for name in ("original", "clean", "warm"))
        os.environ["RECJUDGE_RUNS_DIR"] = str(original)
        with FakeOpenAIServer(script=FormatAwareScript(), latency=args.latency, model="fake-model") as server:
            judge = load_profile(
                {"name": "fake", "model": server.model, "base_url": server.base_url, "max_concurrency": 4}
            )
            started = time.perf_counter()
            manifest = book.run(judge, "orig", build=False, root=REPO)
            original_s = time.perf_counter() - started
            calls = len(server.requests)
        archive = export_run(original / "orig", Path(tmp) / "orig.recjudge.jsonl.gz")
        clean.mkdir()
        clean_s, clean_code = timed_replay(archive, clean)
        shutil.copytree(original / "artifacts", warm / "artifacts")
        warm_s, warm_code = timed_replay(archive, warm)
        size_kb = archive.stat().st_size / 1024

    print(
        f"original run: {original_s:6.1f} s, {calls} HTTP calls at {args.latency:.2f} s latency, "
        f"training {manifest.training_seconds:.1f} s; archive {size_kb:.0f} KiB"
    )
    for label, seconds, code in (
        ("replay, clean machine (retrains)", clean_s, clean_code),
        ("replay, trained models present", warm_s, warm_code),
    ):
        verdict = "identical results.json" if code == 0 else f"RESULTS DIFFER (exit {code})"
        print(f"{label:34} {seconds:6.1f} s  = {seconds / original_s:4.2f} x the original  ({verdict})")
    return 0 if clean_code == warm_code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
