"""The embedded judge under each OpenMP wait policy, on an idle machine and on a busy one, in one run.

llama.cpp's CPU workers are OpenMP threads; between the many small steps of generating one token they wait for each
other. ``OMP_WAIT_POLICY=PASSIVE`` makes a waiting thread sleep at once, libgomp's default spins for a while first.
Spinning wins when the cores are free (a token's steps follow each other faster than a thread wakes up) and loses
when other processes want the cores (a spinning thread burns the time slice its partner needs). The embedded server
inherits the policy from the environment (``recjudge_utils.judge.embedded_server.start_server``): this measures what
each choice costs, to back the default (none set: libgomp's) and CI's choice (PASSIVE: its lanes share the cores).

The workload is bench_embedded.py's book-shaped recording (chapters 1-4 with their default parameters; a
``--fraction`` of each chapter), replayed through the package's judge client with a fresh cache and llama-server
with 1 slot, once per policy; "busy" adds 2 processes spinning in pure Python, as a test lane beside the book does.

    flock /tmp/recjudge-cpu.lock .venv/bin/python benchmarks/bench_wait_policy.py --fraction 0.05 --limit 8

(the busy machine under libgomp's default is slow: 24 requests had not finished after 8 minutes, hence ``--limit``,
which keeps the first requests: chapter 1's, whose answers are a few tokens, so they measure prompt processing, where
the policy matters little; generation, the Arena's and SAER's long answers, is where it doubles or halves)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_embedded import REPO, load_workload, replay_new, sample

from recjudge_utils import __version__

POLICIES = {"libgomp default": None, "PASSIVE": "PASSIVE", "ACTIVE": "ACTIVE"}


def busy_processes(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fraction", type=float, default=0.1, help="share of each chapter's requests (1: all)")
    ap.add_argument("--limit", type=int, default=None, help="replay at most this many of the sampled requests")
    ap.add_argument("--busy", type=int, default=2, help="spinning processes on the busy machine")
    ap.add_argument("--policies", nargs="+", default=["libgomp default", "PASSIVE"], choices=list(POLICIES))
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="recjudge-bench-wait-"))
    workload = load_workload(REPO / "runs" / "bench_embedded" / f"workload-{__version__}.pkl", scratch)
    requests = sample(workload, args.fraction)[: args.limit]
    print(f"workload: {len(requests)} requests (fraction {args.fraction}); 1 slot; {os.cpu_count()} cores", flush=True)
    walls: dict[tuple[str, str], float] = {}
    for machine in ("idle", "busy"):
        hogs = busy_processes(args.busy) if machine == "busy" else []
        try:
            for name in args.policies:
                os.environ.pop("OMP_WAIT_POLICY", None)
                if POLICIES[name]:
                    os.environ["OMP_WAIT_POLICY"] = POLICIES[name]
                print(f"{machine} machine, {name}:", flush=True)
                row = replay_new(1, requests, scratch / f"{machine}-{name.split()[0]}")
                walls[machine, name] = row.wall
        finally:
            for h in hogs:
                h.kill()
    base = "PASSIVE"
    print(f"\n{'policy':<18} {'idle s':>7} {'busy s':>7} {'idle vs PASSIVE':>16} {'busy vs PASSIVE':>16}")
    for name in args.policies:
        idle, busy = walls["idle", name], walls["busy", name]
        ratio = (
            f"{walls['idle', base] / idle:15.2f}x {walls['busy', base] / busy:15.2f}x"
            if base in args.policies
            else f"{'':>16} {'':>16}"
        )
        print(f"{name:<18} {idle:7.1f} {busy:7.1f} {ratio}")
    print("(ratios: PASSIVE's wall / this policy's: above 1 is faster than PASSIVE)")


if __name__ == "__main__":
    main()
