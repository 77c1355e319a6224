"""The whole book against an endpoint that behaves as a reasoning model, under two names, measured side by side.

The loopback fake OpenAI server plays OpenAI's reasoning models (``tests/fake_providers.py``: 400 for temperature,
max_tokens and logprobs; 150-450 hidden reasoning tokens spent from ``max_completion_tokens`` before each answer),
once under a name that says what the model is (``gpt-5-mini``) and once under an opaque deployment name
(``my-judge-deployment``). Each run uses a profile a researcher would write for a non-reasoning judge (temperature 0,
no output budget), so every adaptation has to be learned from the endpoint. Printed per notebook: judgments, errors,
unparsed (and how many of them spent the output budget before an answer), reasoning tokens, and the requests the
endpoint refused.

Run (about 5 minutes on 2 cores, the recommenders trained once and shared by both runs):
    flock /tmp/recjudge-heavy.lock .venv/bin/python benchmarks/bench_reasoning_rerun.py
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import pandas as pd  # noqa: E402
from fake_openai_server import FakeOpenAIServer  # noqa: E402
from fake_providers import PROVIDERS  # noqa: E402
from format_aware_script import FormatAwareScript  # noqa: E402

from recjudge_utils import book  # noqa: E402
from recjudge_utils.judge.loading import load_profile  # noqa: E402
from recjudge_utils.judge.records import read_jsonl  # noqa: E402


def summarise(run_folder: Path, name: str) -> pd.DataFrame:
    """Per notebook: judgments, errors, unparsed, budget spent, reasoning tokens."""
    rows = []
    for log in sorted(run_folder.glob("*/judgments.jsonl")):
        recs = [r for r in read_jsonl(log) if r.get("route") != "sim"]  # chapter 5's simulated judge is not this one
        if not recs:
            continue
        rows.append(
            {
                "endpoint name": name,
                "notebook": log.parent.name,
                "judgments": len(recs),
                "errors": sum(r["status"] == "error" for r in recs),
                "unparsed": sum(r["status"] == "unparsed" for r in recs),
                "budget spent": sum(bool(r.get("budget_spent")) for r in recs),
                "reasoning tokens": sum(int(r.get("reasoning_tokens") or 0) for r in recs),
            }
        )
    table = pd.DataFrame(rows)
    table["unparsed %"] = (100 * table["unparsed"] / table["judgments"].clip(lower=1)).round(1)
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", default=None, help="notebook prefixes (default: every notebook)")
    args = parser.parse_args()
    tables = []
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RECJUDGE_RUNS_DIR"] = tmp
        for provider in ("openai-reasoning", "opaque-reasoning"):
            with FakeOpenAIServer(script=FormatAwareScript(), provider=PROVIDERS[provider]) as server:
                profile = load_profile(
                    {
                        "name": f"fake-{server.model}",
                        "model": server.model,
                        "base_url": server.base_url,
                        "max_concurrency": 4,
                        "generation": {"temperature": 0.0},
                    }
                )
                started = time.perf_counter()
                try:
                    book.run(profile, provider, only=args.only, build=False, root=REPO)
                except book.NotebookFailed as exc:
                    print(f"{provider}: {exc}")
                    failed = True
                seconds = time.perf_counter() - started
                refused = len(server.refused)
            table = summarise(Path(tmp) / provider, server.model)
            tables.append(table)
            manifest = json.loads((Path(tmp) / provider / "manifest.json").read_text())
            print(f"{server.model}: {seconds:.0f} s, {refused} requests refused by the endpoint; adaptations:")
            for state in (manifest.get("endpoint_adaptations") or {}).values():
                for entry in state["log"]:
                    print(f"  {entry['parameter']}: {entry['action']}")
    out = pd.concat(tables, ignore_index=True)
    print(out.to_string(index=False))
    total = out.groupby("endpoint name")[["judgments", "errors", "unparsed"]].sum()
    total["unparsed %"] = (100 * total["unparsed"] / total["judgments"]).round(2)
    print(total.to_string())
    return 1 if failed or int(out["errors"].sum()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
