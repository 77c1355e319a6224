"""The embedded judge's server against its limit, in one run: llama-cpp-python's server (the one before issue 34)
beside llama.cpp's own llama-server with 1 slot and with 2, on a book-shaped workload, and each beside the floor
that llama-bench's rates give.

1. **The workload**: the requests chapters 1-4 make with their default parameters (chapter 1's 10-shot prompts
   under its four templates, chapter 2's CoT prompts, chapter 3's duels and absolute judgments, chapter 4's list
   labels), recorded by running each chapter's experiment (``recjudge_utils.experiments.<chapter>.run``) against the
   simulated judge (it answers at once, so chained prompts and later steps go on; the experiments are told the judge
   is the embedded model, so they build what the book's embedded run builds), in the order the chapters send them.
   ``--fraction`` keeps that share of each chapter in blocks of 6 consecutive requests, evenly spaced (every template
   is reached, and consecutive prompts stay consecutive, as prefix reuse sees them in the book); ``--fraction 1`` is
   the whole book (233 requests). The recording is kept under ``runs/bench_embedded/``.
2. **The rates**: ``llama-bench`` (built with llama-server from the same llama.cpp tree, same flags) on the same GGUF
   with the same threads: prompt processing (pp512) and generation (tg32) at depths 0, 1024, ..., 4096 of context.
   On this model attention over a long context costs as much as the weights, so the rates fall steeply with depth.
3. **The replays**, each through the package's own judge client with a fresh cache (every request is a call), one
   after the other, the server started and warmed before its clock starts:
   a. llama-cpp-python 0.3.36's server (``python -m llama_cpp.server``, what the embedded judge ran on before),
      its settings as they were (n_ctx 8192, n_batch 512, no logits_all), ``json_object`` + schema, temperature 0;
   b. llama-server, 1 slot, ``--cache-reuse 256``, a 1 GiB prompt cache (``judges/embedded.yaml``);
   c. llama-server, 2 slots, 2 requests in flight.
4. **The floor**: for every call, its evaluated prompt tokens (those after the prefix the server reused, as it
   reports them: llama-server's ``usage.prompt_tokens_details.cached_tokens``, llama-cpp-python's per-call
   ``prompt eval`` log lines) at the pp rate, and its completion tokens at the tg rate, each at the depth where they
   are evaluated (seconds per token interpolated between llama-bench's depths): uncached prompt tokens / pp rate +
   completion tokens / tg rate, summed. "floor/wall" is how close a server comes to the compute its own reuse left;
   the workload's floor is the smallest of them.

Run (minutes of model time: take the shared lock):
    flock /tmp/recjudge-cpu.lock .venv/bin/python benchmarks/bench_embedded.py

The old server needs llama-cpp-python, which ``make install`` no longer installs. Give a Python that has it with
``--old-python`` (default: this one, when it has it); make one once (it compiles llama.cpp, ~14 min on 2 cores; pip
caches the wheel afterwards) with the Makefile's flags:
    python3 -m venv /tmp/llcpp-old && CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
        -DGGML_F16C=ON" /tmp/llcpp-old/bin/pip install 'llama-cpp-python[server]==0.3.36'
Without one, the old server's row is left out (and said so).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from recjudge_utils import __version__  # noqa: E402
from recjudge_utils.judge import llama_build  # noqa: E402
from recjudge_utils.judge.backends import openai_compatible  # noqa: E402
from recjudge_utils.judge.embedded_server import (  # noqa: E402
    LOCAL_MODEL_ALIAS,
    LOCAL_MODEL_NAME,
    LocalServer,
    gguf_path,
    server_program,
    start_server,
)
from recjudge_utils.judge.loading import client_for, load_profile  # noqa: E402
from recjudge_utils.judge.types import JudgeRequest  # noqa: E402

CHAPTERS = ("01", "02", "03", "04")
THREADS = 2
BLOCK = 6  # consecutive requests kept together when a fraction of a chapter is replayed
SERVER_OPTIONS = {"n_ctx": 8192, "n_threads": THREADS, "cache_reuse": 256, "cache_ram": 1024}


# ------------------------------------------------------------------------------------------------ the workload
class Recorder:
    """A judge for the experiments: records every request, in order, and lets the simulated judge answer."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.requests: list[JudgeRequest] = []

    @property
    def model_name(self) -> str:
        # the experiments build what they build for an LLM judge (SAER holds nothing out for it, for instance)
        return LOCAL_MODEL_NAME

    def judge_many(
        self, requests: Sequence[JudgeRequest], parse: Any = None, desc: str | None = None, **kw: Any
    ) -> Any:
        requests = list(requests)
        self.requests.extend(requests)
        return self.inner.judge_many(requests, parse=parse, desc=desc, **kw)

    def judge(self, request: JudgeRequest, parse: Any = None) -> Any:
        self.requests.append(request)
        return self.inner.judge(request, parse) if parse is not None else self.inner.judge(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _chapter_runs() -> dict[str, Callable[[Any], object]]:
    """Each chapter's experiment with the notebook's default parameters (the notebooks' parameters cells)."""
    from recjudge_utils.data import load_dataset, load_serendipity_pairs
    from recjudge_utils.experiments import arena, prompt_selection, reevaluation, saer
    from recjudge_utils.experiments.arena import ArenaConfig
    from recjudge_utils.experiments.prompt_selection import PromptSelectionConfig
    from recjudge_utils.experiments.reevaluation import ReevaluationConfig, ReevaluationData
    from recjudge_utils.experiments.saer import SaerConfig

    def ch01(judge: Any) -> object:
        config = PromptSelectionConfig(templates=("base", "ls", "cot", "ltm"), n_pairs=10, n_history=10, n_shots=10)
        return prompt_selection.run(judge, load_serendipity_pairs(n_history=10), config)

    def ch02(judge: Any) -> object:
        data = ReevaluationData(load_dataset("ml-100k"), load_serendipity_pairs(n_history=10))
        return reevaluation.run(judge, data, ReevaluationConfig())

    def ch03(judge: Any) -> object:
        return arena.run(judge, load_dataset("ml-100k"), ArenaConfig())

    def ch04(judge: Any) -> object:
        return saer.run(judge, load_dataset("ml-100k"), SaerConfig())

    return {"01": ch01, "02": ch02, "03": ch03, "04": ch04}


def record_workload(scratch: Path) -> dict[str, list[JudgeRequest]]:
    """Every request of chapters 1-4, per chapter, in order."""
    out: dict[str, list[JudgeRequest]] = {}
    for chapter, fn in _chapter_runs().items():
        sim = load_profile("sim").client(
            run_dir=scratch / "sim" / chapter, cache_path=scratch / "sim.sqlite", progress=False
        )
        recorder = Recorder(sim)
        t0 = time.perf_counter()
        fn(recorder)
        sim.close()
        out[chapter] = recorder.requests
        print(f"  chapter {chapter}: {len(recorder.requests)} requests ({time.perf_counter() - t0:.0f} s)", flush=True)
    return out


def load_workload(path: Path, scratch: Path) -> dict[str, list[JudgeRequest]]:
    if path.exists():
        with open(path, "rb") as fh:
            return pickle.load(fh)  # written by this script
    print(f"recording the workload (chapters {', '.join(CHAPTERS)} with the simulated judge) into {path}", flush=True)
    workload = record_workload(scratch)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        pickle.dump(workload, fh)
    return workload


def sample_chapter(reqs: list[JudgeRequest], fraction: float) -> list[JudgeRequest]:
    """``fraction`` of one chapter's requests (all with 1): blocks of :data:`BLOCK` consecutive requests, evenly
    spaced, so every template is reached and consecutive prompts stay consecutive (what prefix reuse works on)."""
    if fraction >= 1 or not reqs:
        return list(reqs)
    blocks = [reqs[i : i + BLOCK] for i in range(0, len(reqs), BLOCK)]
    k = max(1, round(len(blocks) * fraction))
    return [r for b in sorted({int(i * len(blocks) / k) for i in range(k)}) for r in blocks[b]]


def sample(workload: dict[str, list[JudgeRequest]], fraction: float) -> list[JudgeRequest]:
    """``fraction`` of each chapter's requests, in the chapters' order."""
    return [r for chapter in CHAPTERS for r in sample_chapter(workload[chapter], fraction)]


# ------------------------------------------------------------------------------------------------ llama-bench
DEPTHS = (0, 1024, 2048, 3072, 4096)
PP, TG = 512, 32


@dataclass
class Rates:
    """llama-bench's pp512 and tg32 rates (tokens/s) at each depth of :data:`DEPTHS`."""

    pp: list[float]
    tg: list[float]

    def _seconds_per_token(self, rates: list[float], width: int, depth: float) -> float:
        # a token's cost grows about linearly with the context before it (attention): interpolate the seconds per
        # token between the measured depths, each test's tokens sitting on average at depth + width / 2
        return float(np.interp(depth, [d + width / 2 for d in DEPTHS], [1 / r for r in rates]))

    def call_seconds(self, prompt: int, evaluated: int, completion: int) -> float:
        """The compute one call needs at these rates: its evaluated prompt tokens (after the reused prefix) and its
        generated tokens, each at the depth where it is evaluated."""
        cached = prompt - evaluated
        pp = evaluated * self._seconds_per_token(self.pp, PP, cached + evaluated / 2)
        tg = completion * self._seconds_per_token(self.tg, TG, prompt + completion / 2)
        return pp + tg


def bench_rates(bench: Path, model: Path) -> Rates:
    """pp512 and tg32 at every depth of :data:`DEPTHS` (mean of 2 repetitions; same threads as the servers)."""
    cmd = [str(bench), "-m", str(model), "-t", str(THREADS), "-p", str(PP), "-n", str(TG)]
    cmd += ["-d", ",".join(map(str, DEPTHS)), "-r", "2", "-o", "json"]
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"llama-bench failed ({done.returncode}):\n{done.stderr[-2000:]}")
    rate = {(r["n_prompt"] > 0, int(r.get("n_depth", 0))): float(r["avg_ts"]) for r in json.loads(done.stdout)}
    return Rates([rate[(True, d)] for d in DEPTHS], [rate[(False, d)] for d in DEPTHS])


# ------------------------------------------------------------------------------------------------ the replays
Call = tuple[int, int, int]  # prompt tokens, prompt tokens evaluated (not reused), completion tokens


@dataclass
class Row:
    name: str
    wall: float
    n: int
    parsed: int
    prompt: int
    completion: int
    calls: list[Call] | None  # per call, as the server reported them; None: not known
    answers: list[str | None]

    @property
    def per_min(self) -> float:
        return self.n / self.wall * 60

    @property
    def evaluated(self) -> int | None:
        return None if self.calls is None else sum(c[1] for c in self.calls)

    def floor(self, rates: Rates) -> float | None:
        return None if self.calls is None else sum(rates.call_seconds(*c) for c in self.calls)


_WARM = JudgeRequest(
    messages=({"role": "user", "content": "Say OK."},), template_id="bench/warm", template_version="1", max_tokens=4
)
_OLD_PROMPT_RE = re.compile(r"prompt eval time\s*=\s*[\d.]+ ms /\s*(\d+) tokens")


def _replay(
    name: str, client: Any, requests: list[JudgeRequest], calls: Callable[[list[Any]], list[Call] | None]
) -> Row:
    client.judge_many([_WARM])  # the model loaded and the first-call costs paid before the clock starts
    _captured.clear()
    t0 = time.perf_counter()
    results = client.judge_many(requests)
    wall = time.perf_counter() - t0
    failed = [r for r in results if r.status == "error"]
    if failed:
        print(f"  {name}: {len(failed)} calls failed, e.g. {failed[0].reason}", flush=True)
    row = Row(
        name=name,
        wall=wall,
        n=len(results),
        parsed=sum(r.status == "parsed" for r in results),
        prompt=sum(r.prompt_tokens for r in results),
        completion=sum(r.completion_tokens for r in results),
        calls=calls(results),
        answers=[r.raw_text for r in results],
    )
    print(f"  {name}: {row.wall:.1f} s, {row.per_min:.1f} judgments/min", flush=True)
    return row


# llama-server reports per call the prompt tokens it reused (usage.prompt_tokens_details.cached_tokens), which the
# package's Completion does not keep: recorded here as the responses arrive (any order: the floor is a sum)
_captured: list[Call] = []
_compact = openai_compatible.compact_response


def _capturing_compact(resp: Any, latency: float, route: str = "chat") -> Any:
    usage = getattr(resp, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    if usage is not None and cached is not None:
        prompt = int(usage.prompt_tokens)
        _captured.append((prompt, prompt - int(cached), int(usage.completion_tokens)))
    return _compact(resp, latency, route)


openai_compatible.compact_response = _capturing_compact


def replay_old(old_python: str, requests: list[JudgeRequest], scratch: Path) -> Row:
    model = gguf_path()

    def cmd(port: int) -> list[str]:
        return [
            old_python, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", LOCAL_MODEL_ALIAS,
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--n_threads", str(THREADS),
            "--n_threads_batch", str(THREADS), "--n_batch", "512", "--verbose", "True", "--cache", "False",
            "--logits_all", "False",
        ]  # fmt: skip

    server = start_server(cmd, name="llama-cpp-python-server", model=model, settings={}, ready_path="/v1/models")
    try:
        client = client_for(
            model=LOCAL_MODEL_ALIAS,
            base_url=server.base_url,
            json_mode="llama_schema",
            logprobs=False,
            max_concurrency=1,
            timeout=900,
            generation={"temperature": 0.0},
            run_dir=scratch / "old",
            cache_path=scratch / "old.sqlite",
            progress=False,
        )
        offset = 0

        def calls(results: list[Any]) -> list[Call] | None:
            # its log's "prompt eval ... / N tokens" per call, in order (one request at a time)
            evaluated = [int(n) for n in _OLD_PROMPT_RE.findall(server.log_path.read_text(errors="replace")[offset:])]
            if len(evaluated) != len(results):
                print(f"  ({len(evaluated)} prompt-eval lines for {len(results)} calls: no per-call counts)")
                return None
            return [(r.prompt_tokens, u, r.completion_tokens) for r, u in zip(results, evaluated, strict=True)]

        client.judge_many([_WARM])
        offset = len(server.log_path.read_text(errors="replace"))
        return _replay("llama-cpp-python 0.3.36 server (before)", client, requests, calls)
    finally:
        server.stop()


def replay_new(slots: int, requests: list[JudgeRequest], scratch: Path) -> Row:
    profile = load_profile(
        {"name": f"embedded-{slots}", "backend": "embedded", "max_concurrency": slots, "options": SERVER_OPTIONS}
    )
    client = profile.client(run_dir=scratch / f"new{slots}", cache_path=scratch / f"new{slots}.sqlite", progress=False)
    server: LocalServer = client.local_server
    try:
        client.judge_many([_WARM])
        before = server.metrics()["llamacpp:prompt_tokens_total"]

        def calls(results: list[Any]) -> list[Call] | None:
            got = list(_captured)
            total = server.metrics()["llamacpp:prompt_tokens_total"] - before
            if len(got) != len(results) or sum(c[1] for c in got) != total:
                print(f"  ({len(got)} usages for {len(results)} calls, {total:.0f} evaluated per /metrics)")
            return got if len(got) == len(results) else None

        return _replay(f"llama-server, {slots} slot{'s' if slots > 1 else ''}", client, requests, calls)
    finally:
        server.stop()


def _has_llama_cpp(python: str) -> bool:
    probe = "import importlib.util,sys; sys.exit(0 if importlib.util.find_spec('llama_cpp.server') else 1)"
    return subprocess.run([python, "-c", probe], capture_output=True, check=False).returncode == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fraction", type=float, default=0.35, help="share of each chapter's requests (1: all)")
    ap.add_argument("--old-python", default=sys.executable, help="a Python with llama-cpp-python[server]")
    ap.add_argument("--slots", type=int, nargs="+", default=[1, 2], help="llama-server slot counts to replay")
    ap.add_argument("--workload", type=Path, default=None, help="recorded workload file (default under runs/)")
    ap.add_argument("--no-floor", action="store_true", help="skip llama-bench (the replays only, no floor)")
    ap.add_argument(
        "--flash-attn", choices=("auto", "on", "off"), default=None, help="llama-server's (default: the profile's)"
    )
    args = ap.parse_args()
    if not 0 < args.fraction <= 1:
        raise SystemExit("--fraction must be in (0, 1]")
    scratch = Path(tempfile.mkdtemp(prefix="recjudge-bench-embedded-"))
    workload_file = args.workload or REPO / "runs" / "bench_embedded" / f"workload-{__version__}.pkl"
    workload = load_workload(workload_file, scratch)
    requests = sample(workload, args.fraction)
    per_chapter = {c: len(sample_chapter(workload[c], args.fraction)) for c in CHAPTERS}
    program = server_program()
    build = llama_build.find_build()
    assert program is not None
    if build is None or build.server != program.path:
        raise SystemExit("llama-bench comes with the cached build: unset $RECJUDGE_LLAMA_SERVER for this benchmark")
    model = gguf_path()
    print(
        f"workload: {len(requests)} requests ({', '.join(f'ch{c} {n}' for c, n in per_chapter.items())}; "
        f"fraction {args.fraction} of {sum(len(v) for v in workload.values())}); {build.describe()}",
        flush=True,
    )

    rows: list[Row] = []
    old_python = args.old_python
    if _has_llama_cpp(old_python):
        rows.append(replay_old(old_python, requests, scratch))
    else:
        print(f"  (no llama-cpp-python in {old_python}: the old server's row is left out; see --old-python)")
    if args.flash_attn:
        SERVER_OPTIONS["flash_attn"] = args.flash_attn
    for slots in args.slots:
        rows.append(replay_new(slots, requests, scratch))

    print_table(rows, None if args.no_floor else bench_rates(build.bench, model), len(requests))


def print_table(rows: list[Row], rates: Rates | None, n: int) -> None:
    if rates is not None:
        print(f"\nllama-bench (same build, same GGUF, {THREADS} threads), tokens/s at each depth of context:")
        print(f"{'depth':>8} " + " ".join(f"{d:>7d}" for d in DEPTHS))
        print(f"{'pp512':>8} " + " ".join(f"{r:7.0f}" for r in rates.pp))
        print(f"{'tg32':>8} " + " ".join(f"{r:7.1f}" for r in rates.tg))
    base = rows[0] if rows and rows[0].name.startswith("llama-cpp-python") else None
    head = (
        f"{'server':<40} {'wall s':>7} {'judg/min':>8} {'vs before':>9} {'prompt tok':>10} {'evaluated':>9} "
        f"{'reused':>6} {'compl tok':>9} {'floor s':>7} {'floor/wall':>10}"
    )
    print(f"\nbook-shaped workload, {n} judgments, one run\n{head}")
    for r in rows:
        floor = r.floor(rates) if rates is not None else None
        evaluated = r.evaluated
        reused = f"{1 - evaluated / r.prompt:6.1%}" if evaluated is not None and r.prompt else "     ?"
        print(
            f"{r.name:<40} {r.wall:7.1f} {r.per_min:8.1f} "
            f"{(f'{r.per_min / base.per_min:8.2f}x' if base else '        -')} {r.prompt:10d} "
            f"{(evaluated if evaluated is not None else -1):9d} {reused} {r.completion:9d} "
            f"{(f'{floor:7.1f}' if floor else '      ?')} {(f'{floor / r.wall:10.2f}' if floor else '         ?')}"
        )
    floors = [(f, r) for r in rows if rates is not None and (f := r.floor(rates)) is not None]
    if floors:
        floor, least = min(floors, key=lambda x: x[0])
        best = min(rows, key=lambda r: r.wall)
        print(
            f"\nthe workload's floor: {floor:.1f} s ({least.name}'s evaluated prompt tokens and answers at "
            f"llama-bench's rates); the fastest server ({best.name}, {best.wall:.1f} s) is at "
            f"{floor / best.wall:.2f} of it"
        )
    for r in rows:
        print(f"parsed answers, {r.name}: {r.parsed}/{r.n}")
    if base is not None:
        for r in rows[1:]:
            same = sum(a == b for a, b in zip(base.answers, r.answers, strict=True))
            print(f"answers identical to the old server's (temperature 0), {r.name}: {same}/{r.n}")


if __name__ == "__main__":
    main()
