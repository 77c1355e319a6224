"""The plan before paying, and a rerun with a new judge, measured side by side in one run.

(a) ``--plan`` for the whole book at demo scale with a profile pointing at the loopback fake OpenAI server, in one
    fresh runs folder, beside the calls and tokens the same book then actually sent to that server in another fresh
    runs folder. Calls must match exactly for notebooks without chained prompts; tokens are the plan's estimate
    against the fake server's token count.
(c) The plan's token estimate (characters / 4) beside the tokens the embedded judge's real tokenizer counted for the
    same prompts, read from the default run's ``usage.json`` files when ``runs/default`` holds an embedded run (the
    fake server counts characters / 4 too, so in (a) equal tokens show only that the plan renders the prompts sent).
(b) In that second folder: the first run (judge A, trains every recommender) beside a second run with another judge
    profile (judge B, reuses every trained model): wall time, training time (the manifest's ``training_seconds``)
    and the training share of each.

Run (several minutes on 2 cores; take the shared heavy-job lock):
    flock /tmp/recjudge-heavy.lock .venv/bin/python benchmarks/bench_plan.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from fake_openai_server import FakeOpenAIServer  # noqa: E402
from format_aware_script import FormatAwareScript  # noqa: E402

from recjudge_utils import book  # noqa: E402
from recjudge_utils.judge.profiles import JudgeProfile, load_profile  # noqa: E402
from recjudge_utils.paths import runs_dir  # noqa: E402


def profile(server: FakeOpenAIServer, name: str) -> JudgeProfile:
    return load_profile({"name": name, "model": server.model, "base_url": server.base_url, "max_concurrency": 4})


def in_runs_folder(folder: Path) -> None:
    os.environ["RECJUDGE_RUNS_DIR"] = str(folder)


def main() -> int:
    embedded_run = runs_dir() / "default"  # before the benchmark points RECJUDGE_RUNS_DIR at its own folders
    with tempfile.TemporaryDirectory() as tmp:
        planned_dir, run_dir = Path(tmp) / "plan", Path(tmp) / "runs"
        with FakeOpenAIServer(script=FormatAwareScript(), model="fake-model-a") as server_a:
            in_runs_folder(planned_dir)
            t0 = time.perf_counter()
            plan = book.plan(profile(server_a, "fake-a"), "bench", root=REPO)
            plan_s = time.perf_counter() - t0
            assert not server_a.requests, "the plan called the model"
            in_runs_folder(run_dir)
            first = book.run(profile(server_a, "fake-a"), "judge-a", build=False, root=REPO)
        with FakeOpenAIServer(script=FormatAwareScript(), model="fake-model-b") as server_b:
            second = book.run(profile(server_b, "fake-b"), "judge-b", build=False, root=REPO)

    planned = {r["notebook"]: r for r in plan["notebooks"]}
    actual = {r["notebook"]: r for r in first.actual["notebooks"]} if first.actual else {}
    print(f"(a) plan vs actual, whole book at demo scale (plan rendered in {plan_s:.0f} s, calling nothing)")
    header = f"{'notebook':34} {'planned':>8} {'actual':>8} {'exact':>6} {'est.':>5} {'plan tok':>9} {'actual tok':>10}"
    print(header)
    for nb, p in planned.items():
        a = actual.get(nb, {})
        exact = "yes" if p["calls"] == a.get("calls") else "NO"
        print(
            f"{nb:34} {p['calls']:>8} {a.get('calls', 0):>8} {exact:>6} {p['estimated_calls']:>5} "
            f"{p['prompt_tokens']:>9} {a.get('prompt_tokens', 0):>10}"
        )
    print("'est.' = calls whose prompt depends on an earlier answer (LtM): their tokens are estimates")
    print()
    print("(b) a rerun with another judge retrains nothing")
    for label, manifest in (("first run, judge A", first), ("second run, judge B", second)):
        share = manifest.training_seconds / manifest.seconds if manifest.seconds else float("nan")
        print(
            f"{label:22} wall {manifest.seconds:7.1f} s   training {manifest.training_seconds:7.1f} s "
            f"({100 * share:4.1f}% of the run)"
        )
    print()
    print(f"(c) plan's characters/4 vs the embedded judge's tokenizer ({embedded_run})")
    for nb, p in planned.items():
        usage_path = embedded_run / nb / "usage.json"
        if nb == "TOTAL" or not usage_path.exists():
            continue
        real = json.loads(usage_path.read_text())["prompt_tokens"]
        print(f"{nb:34} plan {p['prompt_tokens']:>9,}  SmolLM2 {real:>9,}  ratio {real / p['prompt_tokens']:.2f}")
    ratio = first.seconds / second.seconds if second.seconds else float("nan")
    print(f"second run / first run wall time: {1 / ratio:.2f} (the first takes {ratio:.2f}x as long)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
