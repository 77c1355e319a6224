"""What a judge backend is: it turns a request into a planned call with a cache key, and answers planned calls.

The client (:class:`recjudge_utils.judge.client.JudgeClient`) owns the cache, the log and the accounting; a
backend owns everything that depends on *who* answers: the request body it sends, the identity that goes
into the cache key (never an API key), how many calls may be in flight, and how calls are made.

* :class:`BackendOptions` is what a backend's options model derives from: each backend declares its own
  (``options_model``), which a judge profile's ``options:`` block is validated against.
* :class:`Backend` is the interface. ``complete_many`` receives the calls the cache could not answer and
  reports each outcome through a callback as soon as it is known (the client commits it to the cache at
  once, so a crash loses only calls still in flight).
* :class:`ChatBackend` implements ``complete_many`` for request/response APIs: a bounded thread pool, retries
  with backoff (:mod:`recjudge_utils.judge.transport`), and adaptations (an endpoint that rejects a parameter such
  as ``temperature``, ``max_tokens`` or ``json_schema`` is asked again without it, under the new cache key).
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from recjudge_utils.judge.cache import cache_key, messages_hash
from recjudge_utils.judge.transport import Downgrade, Failure, RetryPolicy, call_with_retries
from recjudge_utils.judge.types import Completion, JudgeError, JudgeRequest

__all__ = ["Backend", "BackendOptions", "CallOutcome", "ChatBackend", "Job", "PreparedCall"]


class BackendOptions(BaseModel):
    """A backend's own options (a profile's ``options:`` block): unknown fields are refused, values never change."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class PreparedCall:
    """The call a backend would make for a request: the body it sends and the cache key of the answer.

    ``version`` is how many adaptations the backend had made when it prepared the call: a call prepared before a later
    adaptation is prepared again before it is sent, and only then (:meth:`ChatBackend.adaptation_version`)."""

    params: dict[str, object]
    key: str
    messages_hash: str
    version: int = 0

    @classmethod
    def build(cls, params: dict[str, object], key: str) -> PreparedCall:
        """The call of these request parameters under a key made elsewhere (a panel's verdict, a stored call)."""
        msgs = params.get("messages", [])
        return cls(params=params, key=key, messages_hash=messages_hash(msgs if isinstance(msgs, list) else []))

    @classmethod
    def for_request(
        cls,
        request: JudgeRequest,
        params: dict[str, object],
        *,
        endpoint: str,
        model: str,
        response_format: dict | None = None,
        extra: dict | None = None,
        sampling: Mapping[str, object] | None = None,
        version: int = 0,
    ) -> PreparedCall:
        """The call for ``request`` sent as ``params``, keyed by the one cache-key rule: the request's messages and
        template, its sampling (``sampling`` overrides temperature, seed and max_tokens with what is actually sent),
        the backend's identity, the response format, and ``extra`` (whatever else changes this backend's answer)."""
        sent: dict[str, object] = {"temperature": request.temperature, "seed": request.seed,
                                   "max_tokens": request.max_tokens}  # fmt: skip
        sent.update(sampling or {})
        key = cache_key(
            endpoint=endpoint,
            model=model,
            messages=[dict(m) for m in request.messages],
            temperature=sent["temperature"],  # type: ignore[arg-type]
            seed=sent["seed"],  # type: ignore[arg-type]
            max_tokens=sent["max_tokens"],  # type: ignore[arg-type]
            response_format=response_format,
            template_id=request.template_id,
            template_version=request.template_version,
            extra=extra,
        )
        return replace(cls.build(params, key), version=version)


@dataclass(frozen=True)
class Job:
    """One call the cache could not answer: its position in the caller's list, the request and its plan."""

    index: int
    request: JudgeRequest
    plan: PreparedCall


@dataclass(frozen=True)
class CallOutcome:
    """How one job ended: an answer or an error, under which plan, at what cost in time and attempts."""

    plan: PreparedCall
    completion: Completion | None
    error: str | None = None
    latency_s: float = 0.0
    attempts: int = 0
    from_cache: bool = False  # answered by the cache under a downgraded plan's key
    batch: bool = False  # billed at the Batch API price


Lookup = Callable[[str], Completion | None]
Deliver = Callable[[Job, CallOutcome], None]


class Backend(ABC):
    """A judge backend, registered by name with :func:`recjudge_utils.judge.backends.register_backend`."""

    name: ClassVar[str]
    endpoint_id: str  # identity in the cache key: a URL, a model file's hash, "sim:<parameters>"; never a key
    api_model: str  # model name sent in requests
    model_name: str  # human-readable, for titles
    price_model: str  # row of the price table
    max_concurrency: int = 1
    route: str = "chat"  # how answers are billed and logged ("chat", "batch", "sim")
    #: answers are computed from the request alone on this machine (no model, network, key or cost): an offline
    #: replay may compute what its archive does not hold
    computes_answers: ClassVar[bool] = False
    #: the options a judge profile gives this backend (``options:``); None: a backend whose constructor checks them
    options_model: ClassVar[type[BackendOptions] | None] = None
    #: every judgment goes to the run's JSONL log; a plan keeps its own records (``plan.jsonl``) and writes none
    logs_judgments: ClassVar[bool] = True

    @abstractmethod
    def prepare(self, request: JudgeRequest) -> PreparedCall:
        """Request body and cache key for ``request`` under the backend's current options."""

    def prepare_variants(self, request: JudgeRequest) -> list[PreparedCall]:
        """The calls this request may have been answered under (current first); downgradable backends add the
        downgraded forms, so an offline replay finds answers recorded after a downgrade."""
        return [self.prepare(request)]

    def describe(self) -> str:
        """Where calls go, for error messages."""
        return f"{self.name} backend, model {self.api_model!r}"

    def scrub(self, text: str) -> str:
        """Remove secrets from text that may be logged (nothing to remove by default)."""
        return text

    @abstractmethod
    def complete_many(
        self, jobs: Sequence[Job], *, lookup: Lookup, deliver: Deliver, policy: RetryPolicy, stop: threading.Event
    ) -> None:
        """Answer every job, calling ``deliver(job, outcome)`` once per job as soon as it is known.

        ``lookup(key)`` reads the cache (for keys that change mid-run, e.g. after a downgrade). Setting
        ``stop`` asks the backend to finish early (jobs not yet started are not delivered).
        """

    def bind(self, run_dir: Path, run_name: str, progress: bool) -> None:
        """Tell the backend which run folder it works for (the Batch API keeps its state there)."""
        return None

    def preflight(self) -> None:
        """Check that the endpoint answers and serves the model (judge profiles call it before a run)."""
        return None

    def close(self) -> None:
        """Release connections, pools and servers."""
        return None


class ChatBackend(Backend):
    """A request/response backend: subclasses implement :meth:`call` (one attempt) and :meth:`classify`."""

    timeout: float = 120.0

    @abstractmethod
    def call(self, plan: PreparedCall) -> Completion:
        """One attempt at one call; raise on failure (:meth:`classify` says whether to retry)."""

    def classify(self, exc: Exception) -> Failure:
        """How to treat an exception of one attempt (here: never retried; backends know better)."""
        return Failure(False, f"{type(exc).__name__}: {exc}")

    def downgrade(self, names: tuple[str, ...], message: str, sent: Mapping[str, object]) -> bool:
        """Stop sending a parameter the endpoint rejected in the body ``sent`` (or send it another way); False when
        nothing changed."""
        return False

    #: how many rejected parameters one request may shed before it counts as an error
    MAX_ADAPTATIONS = 8

    def adaptation_version(self) -> int:
        """How many adaptations the backend has made (0 for a backend that never adapts)."""
        return 0

    def _one(self, job: Job, lookup: Lookup, policy: RetryPolicy) -> CallOutcome:
        plan = job.plan
        if plan.version != self.adaptation_version():  # another thread adapted the request since planning
            plan = self.prepare(job.request)
            hit = lookup(plan.key)
            if hit is not None:
                return CallOutcome(plan, hit, from_cache=True)
        for _ in range(self.MAX_ADAPTATIONS + 1):
            started = [0.0]

            def attempt(plan: PreparedCall = plan, started: list[float] = started) -> Completion:
                started[0] = time.perf_counter()
                return self.call(plan)

            try:
                completion, attempts = call_with_retries(
                    attempt, self.classify, policy, "judge call", self.describe(), self.scrub
                )
            except Downgrade as d:
                self.downgrade(d.names, d.message, plan.params)
                new = self.prepare(job.request)  # adapted here, or by another thread that met the same 400 first
                if new.params == plan.params:
                    raise JudgeError(f"{self.describe()} rejected the request: {self.scrub(d.message)}") from None
                plan = new
                hit = lookup(plan.key)
                if hit is not None:
                    return CallOutcome(plan, hit, from_cache=True)
                continue
            latency = time.perf_counter() - started[0]
            return CallOutcome(plan, completion, latency_s=latency, attempts=attempts)
        raise JudgeError(f"{self.describe()}: request parameters rejected more than {self.MAX_ADAPTATIONS} times")

    def complete_many(
        self, jobs: Sequence[Job], *, lookup: Lookup, deliver: Deliver, policy: RetryPolicy, stop: threading.Event
    ) -> None:
        """Answer every job, up to ``max_concurrency`` at a time, retrying under ``policy``."""
        if not jobs:
            return
        queue = list(reversed(jobs))
        pending: dict[Future[CallOutcome], Job] = {}
        with ThreadPoolExecutor(max_workers=self.max_concurrency, thread_name_prefix="recjudge-judge") as pool:
            try:
                while queue or pending:
                    while queue and len(pending) < self.max_concurrency and not stop.is_set():
                        job = queue.pop()
                        pending[pool.submit(self._one, job, lookup, policy)] = job
                    if not pending:
                        break
                    done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                    for fut in done:
                        job = pending.pop(fut)
                        try:
                            outcome = fut.result()
                        except JudgeError as exc:
                            outcome = CallOutcome(
                                job.plan, None, error=self.scrub(str(exc)), attempts=policy.max_retries + 1
                            )
                        deliver(job, outcome)
            finally:
                for fut in pending:
                    fut.cancel()
