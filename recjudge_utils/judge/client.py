"""The one judge client every LLM call in recjudge goes through.

A judge profile makes it (:func:`recjudge_utils.judge.loading.open_judge`, or
:func:`~recjudge_utils.judge.loading.client_for` with a model name: ``client_for()`` is the embedded
SmolLM2-135M-Instruct server, ``client_for("gpt-4o-mini")`` OpenAI, ``client_for(model, base_url=...)`` any
OpenAI-compatible server), over the backend the profile names (the Batch API and the simulated judge included).
Who answers is a backend (:mod:`recjudge_utils.judge.backends`); what every call gets is the client's job:

* a persistent SQLite cache (:mod:`recjudge_utils.judge.cache`): a rerun of the same work makes zero calls,
  identical requests in one batch are asked once, and every answer is committed as soon as it arrives, so a
  run killed with SIGKILL resumes without repeating a finished call;
* retries with backoff (:mod:`recjudge_utils.judge.transport`), done by the backend under the client's policy;
* parsing into a typed :class:`JudgeResult` that says parsed / unparsed / error with the raw text and the
  reason (an unparseable answer is reported, never dropped), and the logprob expected label when asked for;
* one JSONL record per judgment (:mod:`recjudge_utils.judge.records`) and a usage table
  (:mod:`recjudge_utils.judge.usage`), with costs from the price table (:mod:`recjudge_utils.judge.pricing`).

The API key is read only from the environment variable named by ``api_key_env``; it is never a parameter and
never written anywhere.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

import pandas as pd
from tqdm.std import tqdm  # text bars: widget bars need JavaScript the offline book cannot load

from recjudge_utils.answer_formats import answer_format
from recjudge_utils.answer_formats.parsing import ParseError, parse_json_object
from recjudge_utils.judge.backends.base import Backend, CallOutcome, Job, PreparedCall
from recjudge_utils.judge.cache import JudgeCache
from recjudge_utils.judge.logprobs import label_distribution
from recjudge_utils.judge.pricing import PriceTable
from recjudge_utils.judge.records import JudgmentLog
from recjudge_utils.judge.transport import RetryPolicy
from recjudge_utils.judge.types import Completion, JudgeError, JudgeRequest, JudgeResult, Status
from recjudge_utils.judge.usage import usage_table
from recjudge_utils.paths import current_run_dir, runs_dir

__all__ = ["JudgeClient", "JudgeError", "JudgeRequest", "JudgeResult", "ParseError"]

T = TypeVar("T")


def _format_parser(fmt: str | None, options: tuple[tuple[str, object], ...]) -> Callable[[str], Any]:
    if fmt is None:
        return parse_json_object
    return answer_format(fmt).parser(**dict(options))


def request_parser(request: JudgeRequest) -> Callable[[str], Any]:
    """The strict parser of the answer format ``request`` declares (plain JSON when it declares none)."""
    return _format_parser(request.answer_format, request.answer_options)


def _sent_budget(plan: PreparedCall) -> int | None:
    """The answer budget the request was sent with (``max_tokens`` or ``max_completion_tokens``), if any."""
    for name in ("max_completion_tokens", "max_tokens"):
        value = plan.params.get(name)
        if isinstance(value, int):
            return value
    return None


class JudgeClient:
    """Cached, retrying, accounted judge client over one backend.

    The client knows backends, not profiles: a judge profile builds its backend and its client
    (:meth:`recjudge_utils.judge.profile.JudgeProfile.client`; :func:`recjudge_utils.judge.loading.client_for` from a
    model name and endpoint alone).

    Args:
        backend: the constructed :class:`Backend` that answers (``openai``, ``embedded``, ``batch``, ``sim``, ...).
        run_name: JSONL logs go to ``current_run_dir()/<run_name>/`` (``runs/default/<run_name>`` outside the book
            runner); ``run_dir`` overrides the folder.
        cache_path: SQLite cache file (default ``runs_dir()/cache.sqlite``, shared by all notebooks).
        retry: the retry policy on 429/5xx/timeouts (default: 6 retries, backoff from 1 s up to 60 s).
        pricing: dict or JSON path overriding the price table (USD per 1M input/output tokens).
        repair: one extra call asking for bare JSON when an answer is unparseable (the profile's ``repair``).
        progress: tqdm bars on batches.
        offline: answer only from the cache (an offline replay): a miss is an error and no call is made.
        name: the judge profile's name (what the manifest and the runs' tables call this judge).
        log_judgments: write each judgment to the run's JSONL log (False: a judge panel's member, whose answers the
            panel's own record of each judgment holds; :mod:`recjudge_utils.judge.panel`).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        run_name: str | None = None,
        run_dir: str | Path | None = None,
        cache_path: str | Path | None = None,
        retry: RetryPolicy | None = None,
        pricing: Mapping[str, Any] | str | Path | None = None,
        repair: bool = False,
        progress: bool = True,
        offline: bool = False,
        name: str | None = None,
        log_judgments: bool = True,
    ) -> None:
        if not isinstance(backend, Backend):
            raise TypeError(
                f"JudgeClient needs a constructed Backend, not {backend!r}: open a judge with "
                "recjudge_utils.judge.loading.open_judge(profile) or client_for(model=..., base_url=...)"
            )
        self.backend = backend
        self.policy = retry or RetryPolicy()
        self.repair = bool(repair)
        self.progress = bool(progress)
        self.offline = bool(offline)
        self.log_judgments = bool(log_judgments)
        self.prices = PriceTable(pricing)
        self.run_dir = Path(run_dir) if run_dir is not None else current_run_dir() / (run_name or "judge")
        self.run_name = self.run_dir.name
        self.log = JudgmentLog(self.run_dir, self.backend.scrub)
        self.backend.bind(self.run_dir, self.run_name, self.progress)
        self.cache = JudgeCache(cache_path if cache_path is not None else runs_dir() / "cache.sqlite")
        self.profile_name = name or backend.model_name
        self._closed = False

    # ------------------------------------------------------------------ identity
    @property
    def model_name(self) -> str:
        """Human-readable judge model name for tables and figure titles."""
        return self.backend.model_name

    @property
    def endpoint_id(self) -> str:
        """The identity of the endpoint answering (part of every cache key)."""
        return self.backend.endpoint_id

    @property
    def api_model(self) -> str:
        """The model id sent to the endpoint."""
        return self.backend.api_model

    @property
    def list_price(self) -> dict[str, float] | None:
        """This judge's list price, USD per 1M input and output tokens (None when the price table has none)."""
        return self.prices.price(self.backend.price_model)

    @property
    def max_concurrency(self) -> int:
        """Requests in flight."""
        return self.backend.max_concurrency

    @property
    def json_mode(self) -> str | None:
        """The response format asked for now (after any the endpoint rejected)."""
        current = getattr(self.backend, "current_json_mode", None)
        return current() if callable(current) else getattr(self.backend, "json_mode", None)

    @property
    def log_path(self) -> Path:
        """The JSONL judgment log of this client's run folder."""
        return self.log.log_path

    @property
    def messages_path(self) -> Path:
        """The JSONL log of the messages sent, by hash."""
        return self.log.messages_path

    @property
    def local_server(self) -> Any:
        """The embedded llama.cpp server (started on first access); None for other backends."""
        return getattr(self.backend, "server", None)

    # ------------------------------------------------------------------ judging
    @overload
    def judge(self, request: JudgeRequest) -> JudgeResult[dict[str, Any]]: ...

    @overload
    def judge(self, request: JudgeRequest, parse: Callable[[str], T]) -> JudgeResult[T]: ...

    def judge(self, request: JudgeRequest, parse: Callable[[str], Any] | None = None) -> JudgeResult[Any]:
        """One judgment, parsed as :meth:`judge_many` parses. Raises :class:`JudgeError` when the call fails after the
        last retry."""
        return self.judge_many([request], parse=parse, progress=False, on_error="raise")[0]

    def judge_many(
        self,
        requests: Sequence[JudgeRequest],
        parse: Callable[[str], Any] | None = None,
        desc: str | None = None,
        *,
        progress: bool | None = None,
        on_error: Literal["record", "raise"] = "record",
    ) -> list[JudgeResult[Any]]:
        """Judge many requests (same order). Cached answers cost nothing; identical requests are asked once.

        Each answer is parsed by its request's answer format (:func:`request_parser`); ``parse`` overrides that for
        every request (a test's or a notebook reader's own parser). Failed calls become
        ``JudgeResult(status="error")`` with the reason (never cached), or raise :class:`JudgeError` with
        ``on_error="raise"``.
        """
        requests = list(requests)
        n = len(requests)
        if n == 0:
            return []
        parsers: dict[tuple[str | None, tuple[tuple[str, object], ...]], Callable[[str], Any]] = {}

        def parser_of(request: JudgeRequest) -> Callable[[str], Any]:
            if parse is not None:
                return parse
            key = (request.answer_format, request.answer_options)
            if key not in parsers:  # one parser per format and options, not one per request
                parsers[key] = _format_parser(*key)
            return parsers[key]

        results: list[JudgeResult[Any] | None] = [None] * n
        show = self.progress if progress is None else progress
        bar = tqdm(total=n, desc=desc or requests[0].template_id, disable=not show, leave=True, dynamic_ncols=True)
        try:
            plans = [self.backend.prepare(r) for r in requests]
            cached = self.cache.get_many([p.key for p in plans])
            first_index: dict[str, int] = {}
            duplicates: dict[str, list[int]] = {}
            jobs: list[Job] = []
            for i, plan in enumerate(plans):
                if plan.key in cached:
                    results[i] = self._finish(
                        requests[i], plan, Completion.from_dict(cached[plan.key]), parser_of(requests[i]), True
                    )
                    bar.update(1)
                elif plan.key in first_index:
                    duplicates.setdefault(plan.key, []).append(i)
                else:
                    first_index[plan.key] = i
                    jobs.append(Job(i, requests[i], plan))

            def deliver(job: Job, outcome: CallOutcome) -> None:
                i = job.index
                if outcome.completion is None:
                    reason = outcome.error or "no answer"
                    result = self._error_result(requests[i], outcome.plan, reason, outcome.attempts)
                    if on_error == "raise":
                        raise JudgeError(reason)
                else:
                    if not outcome.from_cache:  # committed at once: a SIGKILL after this line loses nothing
                        self.cache.put(
                            outcome.plan.key,
                            outcome.completion.to_dict(),
                            endpoint=self.backend.endpoint_id,
                            model=self.backend.api_model,
                            template_id=requests[i].template_id,
                            template_version=str(requests[i].template_version),
                        )
                    result = self._finish(
                        requests[i],
                        outcome.plan,
                        outcome.completion,
                        parser_of(requests[i]),
                        outcome.from_cache,
                        latency=outcome.latency_s,
                        attempts=outcome.attempts,
                        batch=outcome.batch,
                    )
                results[i] = result
                bar.update(1)
                for j in duplicates.get(job.plan.key, []):
                    if outcome.completion is None:
                        duplicate = replace(result, request=requests[j])
                        results[j] = duplicate
                        self._write(requests[j], outcome.plan, duplicate)
                    else:
                        results[j] = self._finish(
                            requests[j], outcome.plan, outcome.completion, parser_of(requests[j]), True
                        )
                    bar.update(1)

            if jobs and self.offline and not self.backend.computes_answers:
                for job in jobs:
                    deliver(job, self._offline_outcome(job))
            elif jobs:
                self.backend.complete_many(
                    jobs, lookup=self._lookup, deliver=deliver, policy=self.policy, stop=threading.Event()
                )
        finally:
            bar.close()
        out = [r for r in results if r is not None]
        if len(out) != n:
            raise JudgeError(f"internal error: {n - len(out)} of {n} requests were never answered")
        if self.repair:
            out = self._repair(out, parse, desc)
        return out

    def _lookup(self, key: str) -> Completion | None:
        hit = self.cache.get(key)
        return None if hit is None else Completion.from_dict(hit)

    def _offline_outcome(self, job: Job) -> CallOutcome:
        """Offline replay: the answer may have been recorded under a downgraded plan; no call is ever made."""
        for plan in self.backend.prepare_variants(job.request):
            hit = self.cache.get(plan.key)
            if hit is not None:
                return CallOutcome(plan, Completion.from_dict(hit), from_cache=True)
        return CallOutcome(job.plan, None, error="offline replay: this request is not in the imported archive")

    def usage_summary(self, total: bool = True) -> pd.DataFrame:
        """Per template: judgments, cache hits, API calls, parsed/unparsed/errors, tokens and dollars spent by
        API calls in this session (cache hits cost nothing), and seconds (summed call latency)."""
        return usage_table(self.log.rows, self.model_name, total=total)

    def close(self) -> None:
        """Close the backend (stopping nothing shared) and the cache."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self.backend.close()
        self.cache.close()

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"JudgeClient(model={self.model_name!r}, endpoint={self.endpoint_id!r}, run_dir={str(self.run_dir)!r})"

    # ------------------------------------------------------------------ results and logging
    def _finish(
        self,
        request: JudgeRequest,
        plan: PreparedCall,
        completion: Completion,
        parse: Callable[[str], Any],
        cache_hit: bool,
        *,
        latency: float = 0.0,
        attempts: int = 0,
        batch: bool = False,
    ) -> JudgeResult[Any]:
        text, finish = completion.text, completion.finish_reason
        value: Any = None
        reason: str | None = None
        status: Status
        budget = _sent_budget(plan)
        budget_spent = False
        if text is None or not str(text).strip():
            status = "unparsed"
            if finish == "length":
                budget_spent = True
                spent = f"{completion.reasoning_tokens} reasoning tokens of " if completion.reasoning_tokens else ""
                reason = (
                    f"the output budget was spent before an answer ({spent}{budget or '?'}): "
                    "raise generation.max_output_tokens in the judge profile"
                )
            else:
                reason = f"empty answer (finish_reason={finish})"
        else:
            try:
                value = parse(text)
                status = "parsed"
            except ParseError as exc:
                status = "unparsed"
                reason = str(exc) or "unparseable answer"
                if finish == "length":
                    reason += f" (answer cut at an output budget of {budget or request.max_tokens} tokens)"
        probs = expected = argmax = None
        if request.label_options and completion.logprobs:
            dist = label_distribution(completion.logprobs, request.label_options, request.label_field)
            if dist is not None:
                probs, expected, argmax = dist.probs, dist.expected, dist.argmax
        pt, ct = completion.prompt_tokens, completion.completion_tokens
        cost = 0.0 if cache_hit else self.prices.cost(self.backend.price_model, pt, ct, batch=batch)
        result: JudgeResult[Any] = JudgeResult(
            request=request,
            status=status,
            raw_text=text,
            value=value,
            reason=reason,
            label_probs=probs,
            expected_label=expected,
            prompt_tokens=pt,
            completion_tokens=ct,
            latency_s=float(latency),
            cost_usd=cost,
            cache_hit=cache_hit,
            argmax_label=argmax,
            finish_reason=finish,
            cache_key=plan.key,
            attempts=attempts,
            reasoning_tokens=completion.reasoning_tokens,
            budget_spent=budget_spent,
        )
        self._write(request, plan, result, route=completion.route)
        return result

    def _error_result(self, request: JudgeRequest, plan: PreparedCall, reason: str, attempts: int) -> JudgeResult[Any]:
        result: JudgeResult[Any] = JudgeResult(
            request=request,
            status="error",
            raw_text=None,
            value=None,
            reason=self.backend.scrub(reason),
            label_probs=None,
            expected_label=None,
            prompt_tokens=0,
            completion_tokens=0,
            latency_s=0.0,
            cost_usd=0.0,
            cache_hit=False,
            cache_key=plan.key,
            attempts=attempts,
        )
        self._write(request, plan, result)
        return result

    def _write(
        self, request: JudgeRequest, plan: PreparedCall, result: JudgeResult[Any], route: str | None = None
    ) -> None:
        if not (self.log_judgments and self.backend.logs_judgments):
            return
        self.log.write(
            request,
            plan,
            result,
            run_name=self.run_name,
            model=self.backend.api_model,
            model_name=self.model_name,
            endpoint=self.backend.endpoint_id,
            route=route or self.backend.route,
        )

    # ------------------------------------------------------------------ repair
    def _repair(
        self, results: list[JudgeResult[Any]], parse: Callable[[str], Any] | None, desc: str | None
    ) -> list[JudgeResult[Any]]:
        idx = [i for i, r in enumerate(results) if r.status == "unparsed" and r.raw_text]
        if not idx:
            return results
        reqs = []
        for i in idx:
            r = results[i]
            note = (
                f"Your previous answer could not be parsed ({r.reason}). "
                "Reply again with only the JSON object, nothing else."
            )
            reqs.append(
                replace(
                    r.request,
                    messages=(
                        *r.request.messages,
                        {"role": "assistant", "content": r.raw_text or ""},
                        {"role": "user", "content": note},
                    ),
                    template_version=f"{r.request.template_version}+repair1",
                )
            )
        self.repair = False
        try:
            fixed = self.judge_many(reqs, parse=parse, desc=f"{desc or reqs[0].template_id} (repair)")
        finally:
            self.repair = True
        out = list(results)
        for i, f in zip(idx, fixed, strict=True):
            orig = results[i]
            if f.status == "parsed":
                out[i] = replace(
                    f,
                    request=orig.request,
                    reason=f"repaired after: {orig.reason}",
                    prompt_tokens=orig.prompt_tokens + f.prompt_tokens,
                    completion_tokens=orig.completion_tokens + f.completion_tokens,
                    latency_s=orig.latency_s + f.latency_s,
                    cost_usd=orig.cost_usd + f.cost_usd,
                    cache_hit=orig.cache_hit and f.cache_hit,
                )
        return out
