"""Planning a run before paying: every request the notebooks would send, recorded, and none sent.

In plan mode (the book runner's ``--plan`` sets ``RECJUDGE_PLAN``), :func:`recjudge_utils.judge.profiles.open_judge`
returns a client over :class:`PlanBackend`. It plans each request with the real profile's backend (so its cache key
is the real one, and a request the shared cache already answers is known to cost nothing), writes one record per
request to ``<run folder>/<notebook>/plan.jsonl``, and answers with the simulated judge (a perfect one) so the
notebook can go on: later stages of a chained prompt (LtM) get plausible inputs, and their records are marked as
estimates. Its answers go to a throwaway cache; the real cache is only read.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

from recjudge_utils.judge.backends.base import Backend, CallOutcome, Deliver, Job, Lookup, Plan
from recjudge_utils.judge.backends.sim import SimParameters, _rng, simulated_answer
from recjudge_utils.judge.cache import JudgeCache
from recjudge_utils.judge.transport import RetryPolicy
from recjudge_utils.judge.types import Completion, JudgeRequest
from recjudge_utils.paths import runs_dir
from recjudge_utils.prompts import load_prompt

__all__ = ["PLAN_FILE", "PlanBackend", "estimate_tokens"]

PLAN_FILE = "plan.jsonl"


def estimate_tokens(text: str) -> int:
    """Tokens of a text, estimated as characters / 4 (the usual rule for English with BPE tokenizers)."""
    return max(1, len(text) // 4)


def _chained(template_id: str) -> bool:
    try:
        return bool(load_prompt(template_id).get("chained", False))
    except (FileNotFoundError, ValueError):
        return False


class PlanBackend(Backend):
    """Records what ``inner`` would be asked (under its cache keys) and answers like a perfect simulated judge."""

    route = "plan"

    def __init__(self, inner: Backend, real_cache: Path | None = None) -> None:
        self.inner = inner
        self.name = "plan"  # type: ignore[misc]
        self.endpoint_id = inner.endpoint_id
        self.api_model = inner.api_model
        self.model_name = f"plan of {inner.model_name}"
        self.price_model = inner.price_model
        self.max_concurrency = 1
        self.real_cache = JudgeCache(real_cache or runs_dir() / "cache.sqlite")
        self.records_path: Path | None = None
        self._params = SimParameters()

    def bind(self, run_dir: Path, run_name: str, progress: bool) -> None:
        self.records_path = run_dir / PLAN_FILE

    def plan(self, request: JudgeRequest) -> Plan:
        return self.inner.plan(request)

    def complete_many(
        self, jobs: Sequence[Job], *, lookup: Lookup, deliver: Deliver, policy: RetryPolicy, stop: threading.Event
    ) -> None:
        assert self.records_path is not None, "bind() the plan backend to a run folder first"
        self.records_path.parent.mkdir(parents=True, exist_ok=True)
        cached = self.real_cache.get_many([j.plan.key for j in jobs])
        with open(self.records_path, "a", encoding="utf-8") as fh:
            for job in jobs:
                req = job.request
                prompt_text = "".join(str(m["content"]) for m in req.messages)
                text = simulated_answer(req, self._params, _rng(0, job.plan.key)) if req.answer_format else "{}"
                prompt_tokens = estimate_tokens(prompt_text)
                completion_tokens = estimate_tokens(text)
                record = {
                    "template_id": req.template_id,
                    "cache_key": job.plan.key,
                    "cached": job.plan.key in cached,
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "max_tokens": req.max_tokens,
                    "chained": _chained(req.template_id),
                }
                fh.write(json.dumps(record) + "\n")
                completion = Completion(text, "stop", prompt_tokens, completion_tokens, route="plan")
                deliver(job, CallOutcome(job.plan, completion, attempts=0))

    def close(self) -> None:
        self.real_cache.close()
        self.inner.close()
