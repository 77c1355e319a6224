"""The plan before paying, measured against the runs it plans, in one fresh runs folder.

(a) ``plan`` for the whole book at demo scale with a profile pointing at the loopback fake OpenAI server, before
    any recommender is stored (stand-in lists, nothing trained), beside the calls the same book then actually sent
    to that server. Calls match exactly where they depend only on users, pairs, orders and templates (notebooks
    03 and 04); notebook 02 judges each distinct (user, item) pair once, so its stand-in count (lists that share no
    item) is about the most a run makes.
(b) In the same folder: the first run (judge A, trains every recommender) beside a second run with another judge
    profile (judge B, reuses every trained model): wall time, training time (the manifest's ``training_seconds``)
    and the training share of each.
(c) The embedded judge (SmolLM2): the default demo book planned after the recommenders are stored (exact requests;
    prompt tokens by SmolLM2's own tokenizer and chat template), then run, then planned again (completion tokens now
    calibrated by that run): per notebook, planned / actual calls, prompt and completion tokens, and their ratios.
    Running the embedded judge takes ~15 minutes on 2 cores; ``--no-embedded`` skips (c).

Run (about 25 minutes on 2 cores with (c); take the shared heavy-job lock):
    flock /tmp/recjudge-heavy.lock .venv/bin/python benchmarks/bench_plan.py [--no-embedded]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from fake_openai_server import FakeOpenAIServer  # noqa: E402
from format_aware_script import FormatAwareScript  # noqa: E402

from recjudge_utils import book  # noqa: E402
from recjudge_utils.judge.loading import load_profile  # noqa: E402
from recjudge_utils.judge.profile import JudgeProfile  # noqa: E402


def profile(server: FakeOpenAIServer, name: str) -> JudgeProfile:
    return load_profile({"name": name, "model": server.model, "base_url": server.base_url, "max_concurrency": 4})


def by_notebook(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["notebook"]: r for r in rows if r["notebook"] != "TOTAL"}


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def plan_vs_actual(plan: dict[str, Any], actual_rows: list[dict[str, Any]], title: str) -> None:
    """Per notebook: planned / actual calls, prompt and completion tokens, with actual / planned ratios."""
    planned, actual = by_notebook(plan["notebooks"]), by_notebook(actual_rows)
    print(title)
    print(f"  prompt tokens: {plan.get('prompt_token_rule')}")
    print(f"  completion tokens: {plan.get('completion_token_rule')}")
    print(
        f"  {'notebook':32} {'calls plan/actual':>18} {'prompt tok plan/actual':>24} {'ratio':>6} "
        f"{'compl tok plan/actual':>22} {'ratio':>6}  requests rendered from"
    )
    for nb, p in planned.items():
        a = actual.get(nb, {})
        calls, a_calls = p["calls"], a.get("calls", 0)
        print(
            f"  {nb:32} {calls:>8} / {a_calls:<8} {p['prompt_tokens']:>11,} / {a.get('prompt_tokens', 0):<11,}"
            f"{ratio(a.get('prompt_tokens', 0), p['prompt_tokens']):>6} {p['completion_tokens']:>9,} / "
            f"{a.get('completion_tokens', 0):<10,}{ratio(a.get('completion_tokens', 0), p['completion_tokens']):>6}  "
            f"{p.get('requests', '')}"
        )
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-embedded", action="store_true", help="skip (c), the ~15-minute embedded judge run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RECJUDGE_RUNS_DIR"] = str(Path(tmp) / "runs")
        with FakeOpenAIServer(script=FormatAwareScript(), model="fake-model-a") as server_a:
            t0 = time.perf_counter()
            plan = book.plan(profile(server_a, "fake-a"), "judge-a", root=REPO)
            plan_s = time.perf_counter() - t0
            assert not server_a.requests, "the plan called the model"
            first = book.run(profile(server_a, "fake-a"), "judge-a", build=False, root=REPO)
        with FakeOpenAIServer(script=FormatAwareScript(), model="fake-model-b") as server_b:
            second = book.run(profile(server_b, "fake-b"), "judge-b", build=False, root=REPO)

        planned, actual = by_notebook(plan["notebooks"]), by_notebook((first.actual or {}).get("notebooks", []))
        print(f"(a) plan before any recommender is stored vs actual, demo scale (plan: {plan_s:.0f} s, no call)")
        print(f"  {'notebook':32} {'planned':>8} {'actual':>8} {'exact':>6} {'est.':>5}  requests rendered from")
        for nb, p in planned.items():
            a_calls = actual.get(nb, {}).get("calls", 0)
            exact = "yes" if p["calls"] == a_calls else "NO"
            print(f"  {nb:32} {p['calls']:>8} {a_calls:>8} {exact:>6} {p['estimated_calls']:>5}  {p['requests']}")
        print("  'est.' = calls whose prompt depends on an earlier answer (LtM): their tokens are estimates")
        print()
        print("(b) a rerun with another judge retrains nothing")
        for label, manifest in (("first run, judge A", first), ("second run, judge B", second)):
            share = manifest.training_seconds / manifest.seconds if manifest.seconds else float("nan")
            print(
                f"  {label:22} wall {manifest.seconds:7.1f} s   training {manifest.training_seconds:7.1f} s "
                f"({100 * share:4.1f}% of the run)"
            )
        print()
        if args.no_embedded:
            print("(c) skipped (--no-embedded)")
            return 0
        embedded = load_profile("embedded")
        t0 = time.perf_counter()
        before = book.plan(embedded, "embedded", root=REPO)
        plan_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        run = book.run(embedded, "embedded", build=False, root=REPO)
        run_s = time.perf_counter() - t0
        # the cache now answers every request (a plan counts no tokens for those): plan against an empty one
        runs = Path(os.environ["RECJUDGE_RUNS_DIR"])
        for name in ("cache.sqlite", "cache.sqlite-wal", "cache.sqlite-shm"):
            if (runs / name).exists():
                (runs / name).rename(runs / f"{name}.aside")
        after = book.plan(embedded, "embedded-again", root=REPO)
        rows = (run.actual or {}).get("notebooks", [])
        plan_vs_actual(before, rows, f"(c) embedded judge: plan ({plan_s:.0f} s) before the run ({run_s:.0f} s)")
        plan_vs_actual(after, rows, "(c') embedded judge: the same plan made after that run (completions calibrated)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
