"""Judge-client benchmarks: three ratios measured side by side in one run.

(a) cached rerun vs cold run of the same 50 judgments (embedded model, fresh cache);
(b) embedded model with prompt-prefix reuse vs without, on the same 10-shot prompts: "with" puts the
    fixed instructions and 10 examples first and the per-item content last (the house rule), so
    llama.cpp re-evaluates only the tail; "without" puts the per-item content first, so every
    prompt differs from its first tokens on and is evaluated in full;
(c) 16 requests in flight vs sequential against the loopback fake OpenAI server with 200 ms latency.
It also prints the embedded model's prompt-processing and generation speed (tokens/s), read from
llama.cpp's own per-request timings in the server log.

Run (the real model runs for minutes; take the shared heavy-job lock):
    flock /tmp/recjudge-heavy.lock .venv/bin/python benchmarks/bench_client.py
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from fake_openai_server import FakeOpenAIServer  # noqa: E402

from recjudge_utils.judge.client import JudgeRequest  # noqa: E402
from recjudge_utils.judge.loading import client_for  # noqa: E402

MOVIES = [
    "Toy Story (1995)",
    "Heat (1995)",
    "Fargo (1996)",
    "Star Wars (1977)",
    "Contact (1997)",
    "Scream (1996)",
    "Liar Liar (1997)",
    "Air Force One (1997)",
    "The English Patient (1996)",
    "Titanic (1997)",
    "Jerry Maguire (1996)",
    "Twelve Monkeys (1995)",
    "Babe (1995)",
    "Braveheart (1995)",
    "Casablanca (1942)",
    "Alien (1979)",
    "Vertigo (1958)",
    "Groundhog Day (1993)",
    "The Godfather (1972)",
    "Pulp Fiction (1994)",
]
SYSTEM = (
    "You are a recommender-system evaluator. Given the movies a user watched recently and one new movie, "
    "rate how serendipitous the new movie is for the user: relevant to their taste but unexpected. "
    'Answer with JSON only: {"score": <1-5>}. 1 = not serendipitous at all, 5 = very serendipitous.'
)


def _history(i: int, n: int = 10) -> str:
    return ", ".join(MOVIES[(i * 3 + j) % len(MOVIES)] for j in range(n))


def _examples(k: int = 10) -> list[dict]:
    msgs = []
    for e in range(k):
        msgs.append({"role": "user", "content": f"History: {_history(e + 7)}.\nNew movie: {MOVIES[(e * 7) % 20]}."})
        msgs.append({"role": "assistant", "content": f'{{"score": {e % 5 + 1}}}'})
    return msgs


def ten_shot_request(i: int, prefix_first: bool, tag: str, logprobs: bool = False) -> JudgeRequest:
    item = f"History: {_history(i)}.\nNew movie: {MOVIES[(i * 11 + 5) % 20]} (case {tag}-{i})."
    if prefix_first:
        messages = ({"role": "system", "content": SYSTEM}, *_examples(), {"role": "user", "content": item})
    else:  # per-item content first: no shared prefix between consecutive prompts
        messages = (
            {"role": "system", "content": f"Case under review -> {item}\n\n{SYSTEM}"},
            *_examples(),
            {"role": "user", "content": "Rate the case under review."},
        )
    labels = ("1", "2", "3", "4", "5") if logprobs else None
    return JudgeRequest(
        messages=messages,
        template_id=f"bench/10shot-{tag}",
        template_version="1",
        max_tokens=8,
        label_options=labels,
        label_field="score" if logprobs else None,
    )


def short_request(i: int) -> JudgeRequest:
    return JudgeRequest(
        messages=(
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"History: {_history(i, 3)}.\nNew movie: {MOVIES[(i * 11 + 5) % 20]}. #{i}"},
        ),
        template_id="bench/short",
        template_version="1",
        max_tokens=12,
        json_schema={
            "type": "object",
            "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
            "required": ["score"],
        },
    )


_PROMPT_RE = re.compile(r"prompt eval time\s*=\s*([\d.]+) ms /\s*(\d+) tokens")
# llama-cpp-python's "eval time = ... ms / N runs" and llama-server's "... | eval time = ... ms / N tokens"
_EVAL_RE = re.compile(r"^(?:\S*|.*\|)\s*eval time\s*=\s*([\d.]+) ms /\s*(\d+) (?:runs|tokens)", re.MULTILINE)


def llama_timings(log_text: str) -> tuple[list[tuple[float, int]], list[tuple[float, int]]]:
    """(prompt-eval, generation) (ms, tokens) pairs from llama.cpp's per-request perf lines."""
    prompt = [(float(ms), int(n)) for ms, n in _PROMPT_RE.findall(log_text)]
    gen_lines = "\n".join(line for line in log_text.splitlines() if "prompt eval" not in line)
    gen = [(float(ms), int(n)) for ms, n in _EVAL_RE.findall(gen_lines)]
    return prompt, gen


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def bench_concurrency(tmp: Path, m: int, rows: list) -> None:
    # ---------------------------------------------------------------- (c) 16 in flight vs sequential
    with FakeOpenAIServer(latency=0.2) as srv:
        with client_for(
            model="fake-model",
            base_url=srv.base_url,
            run_dir=tmp / "c1",
            cache_path=tmp / "c1.sqlite",
            max_concurrency=1,
            progress=False,
        ) as c1:
            seq, _ = timed(lambda: c1.judge_many([short_request(i) for i in range(m)]))
        with client_for(
            model="fake-model",
            base_url=srv.base_url,
            run_dir=tmp / "c16",
            cache_path=tmp / "c16.sqlite",
            max_concurrency=16,
            progress=False,
        ) as c16:
            par, _ = timed(lambda: c16.judge_many([short_request(i) for i in range(m)]))
        note = f"max in flight {srv.max_in_flight}"
        rows.append((f"(c) sequential / 16 in flight, {m} calls at 200 ms", seq, par, note))


def print_rows(rows: list) -> None:
    print("\nrecjudge judge-client benchmark (embedded model: SmolLM2-135M-Instruct Q4_1, llama.cpp, 2 threads)")
    print(f"{'comparison':<58} {'slow s':>8} {'fast s':>8} {'ratio':>7}  note")
    for name, slow, fast, note in rows:
        print(f"{name:<58} {slow:8.2f} {fast:8.3f} {slow / fast:7.1f}x  {note}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-cached", type=int, default=50, help="judgments for (a)")
    ap.add_argument("--n-prefix", type=int, default=8, help="10-shot prompts per arm for (b)")
    ap.add_argument("--n-concurrent", type=int, default=48, help="requests for (c)")
    ap.add_argument("--only-c", action="store_true", help="run only (c), the fake-server part (no LLM)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="recjudge-bench-"))
    rows = []

    if args.only_c:
        bench_concurrency(tmp, args.n_concurrent, rows)
        print_rows(rows)
        return
    # ---------------------------------------------------------------- (a) cached rerun vs cold
    # logprobs=True: the server runs with logits_all (needed for the logprobs arm, as notebooks asking for them)
    with client_for(run_dir=tmp / "a", cache_path=tmp / "a.sqlite", progress=False, logprobs=True) as client:
        log_path = client.local_server.log_path
        reqs = [short_request(i) for i in range(args.n_cached)]
        client.judge_many(reqs[:1])  # warm the server (model load, first-call overheads) outside the timing
        reqs = [short_request(i + 1000) for i in range(args.n_cached)]
        cold, res = timed(lambda: client.judge_many(reqs))
        warm, res2 = timed(lambda: client.judge_many(reqs))
        assert all(r.cache_hit for r in res2) and not any(r.cache_hit for r in res)
        parsed = sum(r.status == "parsed" for r in res)
        rows.append((f"(a) cold / cached rerun, {len(reqs)} judgments", cold, warm, f"{parsed}/{len(res)} parsed"))

        # ------------------------------------------------------------ (b) prefix reuse on vs off
        n = args.n_prefix
        client.judge_many([ten_shot_request(0, False, "warmup")])
        log_start = log_path.stat().st_size
        off, _ = timed(lambda: client.judge_many([ten_shot_request(i, False, "off") for i in range(n)]))
        off_log = log_path.read_text(errors="replace")[log_start:]
        client.judge_many([ten_shot_request(0, True, "warmup")])  # the first "with" call pays the full prefix
        log_start = log_path.stat().st_size
        on, r_on = timed(lambda: client.judge_many([ten_shot_request(i, True, "on") for i in range(n)]))
        on_log = log_path.read_text(errors="replace")[log_start:]
        ptoks = statistics.mean(r.prompt_tokens for r in r_on)
        rows.append((f"(b) no prefix reuse / prefix reuse, {n} x 10-shot (~{ptoks:.0f} tok)", off, on, ""))
        # extra: what asking for top-20 logprobs (expected score) costs on llama-server (n_probs), same prompts
        lp, r_lp = timed(lambda: client.judge_many([ten_shot_request(i, True, "on", logprobs=True) for i in range(n)]))
        got = sum(r.label_probs is not None for r in r_lp)
        rows.append((f"(extra) with / without top-20 logprobs, {n} x 10-shot", lp, on, f"label probs {got}/{n}"))

    bench_concurrency(tmp, args.n_concurrent, rows)
    print_rows(rows)

    p_off, g_off = llama_timings(off_log)
    p_on, g_on = llama_timings(on_log)
    if p_off and g_off:
        pms, ptk = sum(x[0] for x in p_off), sum(x[1] for x in p_off)
        gms, gtk = sum(x[0] for x in g_off + g_on), sum(x[1] for x in g_off + g_on)
        print(
            f"\nembedded model speed (llama.cpp timings): prompt processing {ptk / pms * 1000:.0f} tokens/s "
            f"({ptk} tokens without prefix reuse), generation {gtk / gms * 1000:.1f} tokens/s ({gtk} tokens)"
        )
        if p_on:
            print(
                f"prompt tokens evaluated per 10-shot call: {ptk / len(p_off):.0f} without reuse vs "
                f"{sum(x[1] for x in p_on) / len(p_on):.0f} with reuse"
            )
    else:
        print("\n(no llama.cpp timing lines found in the server log; tokens/s not available)")
    print(f"scratch files in {tmp}")


if __name__ == "__main__":
    main()
