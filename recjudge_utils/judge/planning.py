"""Planning a run before paying: every request the notebooks would send, recorded, and none sent.

In plan mode (the book runner's ``plan`` sets ``RECJUDGE_PLAN``), :func:`recjudge_utils.judge.loading.open_judge`
returns a client over :class:`PlanBackend`. It plans each request with the real profile's backend (so its cache key
is the real one, and a request the shared cache already answers is known to cost nothing), writes one record per
request to ``<run folder>/<notebook>/plan.jsonl``, and answers with the simulated judge (a perfect one) so the
notebook can go on: later stages of a chained prompt (LtM) get plausible inputs, and their records are marked as
estimates. Its answers go to a throwaway cache; the real cache is only read. No key is needed: the real backend is
built offline and never called.

A record holds the request's exact character counts; tokens are counted afterwards
(:func:`recjudge_utils.book.plan_estimate.plan_summary`) by the judge's own rule. For that, the backend keeps a seeded
random sample of up to :data:`SAMPLE_SIZE` rendered requests per template (``plan_samples.jsonl``), which the
embedded judge's tokenizer (:class:`ChatTokenizer`, SmolLM2's own, with its chat template) counts.
"""

from __future__ import annotations

import functools
import hashlib
import http.client
import json
import random
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from recjudge_utils.files import atomic_write
from recjudge_utils.judge.backends.base import Backend, CallOutcome, Deliver, Job, Lookup, PreparedCall
from recjudge_utils.judge.backends.sim import SimParameters, simulated_answer
from recjudge_utils.judge.cache import JudgeCache
from recjudge_utils.judge.panel import MEMBERS_DIR
from recjudge_utils.judge.transport import RetryPolicy
from recjudge_utils.judge.types import Completion, JudgeRequest
from recjudge_utils.paths import runs_dir
from recjudge_utils.prompts import load_prompt

__all__ = [
    "JUDGE_FILE",
    "PLAN_FILE",
    "SAMPLES_FILE",
    "SAMPLE_SIZE",
    "ChatTokenizer",
    "PlanBackend",
    "plan_files",
    "prompt_chars",
]

PLAN_FILE = "plan.jsonl"
SAMPLES_FILE = "plan_samples.jsonl"
JUDGE_FILE = "plan_judge.json"
#: rendered requests kept per template for counting tokens with the judge's own tokenizer
SAMPLE_SIZE = 200


def plan_files(folder: Path, notebook: str) -> list[Path]:
    """The plan records of one notebook in the plan ``folder``: its judge's, or each panel member's
    (``members/<member>/<notebook>/``, :mod:`recjudge_utils.judge.panel`)."""
    own = folder / notebook / PLAN_FILE
    return ([own] if own.exists() else []) + sorted(folder.glob(f"{MEMBERS_DIR}/*/{notebook}/{PLAN_FILE}"))


def _estimate_tokens(text: str) -> int:
    """Tokens of a text, estimated as characters / 4 (the usual rule for English with BPE tokenizers)."""
    return max(1, len(text) // 4)


def prompt_chars(messages: Sequence[Mapping[str, Any]]) -> int:
    """Characters of a request's message contents (what characters / 4 counts)."""
    return sum(len(str(m.get("content") or "")) for m in messages)


@functools.cache
def _chained(template_id: str) -> bool:
    # one prompt file read per template, not per request (a paper-scale plan renders ~100k requests)
    try:
        return bool(load_prompt(template_id).get("chained", False))
    except (FileNotFoundError, ValueError):
        return False


class _Reservoir:
    """A uniform random sample of at most ``size`` items of a stream (algorithm R), seeded: the same stream gives
    the same sample."""

    def __init__(self, size: int, seed: str) -> None:
        self.size = size
        self.seen = 0
        self.items: list[dict[str, Any]] = []
        self._rng = random.Random(int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "little"))

    def slot(self) -> int | None:
        """Where the next item goes (None: not sampled); the caller builds the item only when it is kept."""
        self.seen += 1
        if len(self.items) < self.size:
            self.items.append({})
            return len(self.items) - 1
        j = self._rng.randrange(self.seen)
        return j if j < self.size else None


class PlanBackend(Backend):
    """Records what ``inner`` would be asked (under its cache keys) and answers like a perfect simulated judge."""

    route = "plan"
    logs_judgments = False  # hundreds of MB of judgment logs at paper scale, read by nobody

    def __init__(self, inner: Backend, real_cache: Path | None = None, sample_size: int = SAMPLE_SIZE) -> None:
        self.inner = inner
        self.name = "plan"  # type: ignore[misc]
        self.endpoint_id = inner.endpoint_id
        self.api_model = inner.api_model
        self.model_name = f"plan of {inner.model_name}"
        self.price_model = inner.price_model
        self.max_concurrency = 1
        self.real_cache = JudgeCache(real_cache or runs_dir() / "cache.sqlite")
        self.records_path: Path | None = None
        self.sample_size = sample_size
        self._samples: dict[str, _Reservoir] = {}
        self._params = SimParameters()
        # a perfect judge answers from the truth alone (no noise, bias or neglect), so its draws never matter: one
        # generator for every request instead of one seeded per request (a paper-scale plan renders ~60k)
        self._rng = np.random.default_rng(0)

    def bind(self, run_dir: Path, run_name: str, progress: bool) -> None:
        """Write the plan records and the identity of the judge that would answer into ``run_dir``."""
        self.records_path = run_dir / PLAN_FILE
        run_dir.mkdir(parents=True, exist_ok=True)
        # who would answer: earlier runs of the same judge calibrate the plan's token counts
        identity = {"backend": self.inner.name, "endpoint": self.inner.endpoint_id, "model": self.inner.api_model}
        (run_dir / JUDGE_FILE).write_text(json.dumps(identity) + "\n", encoding="utf-8")

    def prepare(self, request: JudgeRequest) -> PreparedCall:
        """The real backend's plan (so the cache key is the real one)."""
        return self.inner.prepare(request)

    def _sample(self, req: JudgeRequest, text: str, chars: int) -> None:
        reservoir = self._samples.get(req.template_id)
        if reservoir is None:
            reservoir = self._samples[req.template_id] = _Reservoir(self.sample_size, req.template_id)
        k = reservoir.slot()
        if k is not None:
            messages = [{"role": str(m["role"]), "content": str(m.get("content") or "")} for m in req.messages]
            reservoir.items[k] = {
                "template_id": req.template_id,
                "messages": messages,
                "answer": text,
                "prompt_chars": chars,
            }

    def complete_many(
        self, jobs: Sequence[Job], *, lookup: Lookup, deliver: Deliver, policy: RetryPolicy, stop: threading.Event
    ) -> None:
        """Record every job and answer it with the perfect simulated judge; nothing is sent."""
        assert self.records_path is not None, "bind() the plan backend to a run folder first"
        self.records_path.parent.mkdir(parents=True, exist_ok=True)
        cached = self.real_cache.get_many([j.plan.key for j in jobs])
        lines = []
        for job in jobs:
            req = job.request
            chars = prompt_chars(req.messages)
            text = simulated_answer(req, self._params, self._rng) if req.answer_format else "{}"
            self._sample(req, text, chars)
            prompt_tokens, completion_tokens = max(1, chars // 4), _estimate_tokens(text)
            record = {
                "template_id": req.template_id,
                "cache_key": job.plan.key,
                "cached": job.plan.key in cached,
                "prompt_chars": chars,
                "completion_chars": len(text),
                "messages": len(req.messages),
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "max_tokens": req.max_tokens,
                "chained": _chained(req.template_id),
            }
            lines.append(json.dumps(record) + "\n")
            completion = Completion(text, "stop", prompt_tokens, completion_tokens, route="plan")
            deliver(job, CallOutcome(job.plan, completion, attempts=0))
        with open(self.records_path, "a", encoding="utf-8") as fh:  # one write per batch, not per request
            fh.writelines(lines)
        self._write_samples()

    def _write_samples(self) -> None:
        assert self.records_path is not None
        path = self.records_path.with_name(SAMPLES_FILE)
        with atomic_write(path) as fh:
            for reservoir in self._samples.values():
                fh.writelines(json.dumps(item) + "\n" for item in reservoir.items if item)

    def close(self) -> None:
        """Close the real cache and the real backend."""
        self.real_cache.close()
        self.inner.close()


class ChatTokenizer:
    """The embedded judge's own tokenizer and chat template, applied by the server that answers: the messages go
    through llama-server's ``/apply-template`` (the GGUF's chat template: ChatML for SmolLM2) and the prompt through
    its ``/tokenize`` with the special tokens a chat request gets, so a prompt is counted as the server counts it
    (``tests/judge/test_judge_embedded.py`` checks the count against a completion's ``usage.prompt_tokens``).

    It asks a llama-server this process already runs, else a small one of its own, stopped by :meth:`close`."""

    def __init__(self) -> None:
        from recjudge_utils.judge.embedded_server import tokenizer_server

        self.server, self._owned = tokenizer_server()
        self.model_path = self.server.model_path
        self._conn: http.client.HTTPConnection | None = None

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        # one kept-alive connection: a plan counts thousands of sampled prompts, two calls each
        for attempt in (0, 1):
            if self._conn is None:
                self._conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=120)
            try:
                self._conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
                resp = self._conn.getresponse()
                data = resp.read()
            except (http.client.HTTPException, OSError):
                self._conn.close()
                self._conn = None
                if attempt or not self.server.alive():
                    raise
                continue
            if resp.status != 200:
                raise RuntimeError(f"llama-server {path} answered {resp.status}: {data[:300]!r}")
            return json.loads(data)
        raise AssertionError("unreachable")

    def text_tokens(self, text: str) -> int:
        """Tokens of a plain text (an answer), without special tokens."""
        body = {"content": text, "add_special": False, "parse_special": False}
        return len(self._post("/tokenize", body)["tokens"])

    def prompt_tokens(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """Tokens of a chat request's prompt as the server evaluates it (chat template and generation prefix)."""
        chat = [{"role": str(m["role"]), "content": str(m.get("content") or "")} for m in messages]
        prompt = self._post("/apply-template", {"messages": chat})["prompt"]
        # what llama-server does with a chat prompt: special tokens added (BOS if the model wants one) and parsed
        return len(self._post("/tokenize", {"content": prompt, "add_special": True, "parse_special": True})["tokens"])

    def close(self) -> None:
        """Close the connection, and stop the server if this tokenizer started it."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._owned:
            self.server.stop()
