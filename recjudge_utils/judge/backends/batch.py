"""The OpenAI Batch API as a judge backend: half the price, answers within the completion window.

Everything the cache cannot answer is written as one JSONL batch file (at most ``max_lines`` lines per
batch), uploaded, submitted, polled until the batch ends, and every answer is delivered as soon as the
output file is read (the client commits each one to the cache at once). Submitted batches are recorded in
``<run_dir>/batches.json``: a process that dies while waiting, or a call that gives up after ``timeout``
seconds, resumes polling the same batch on the next run instead of paying twice. Failed lines become
errors (never cached, so a rerun retries them); ``retry_failed_with_chat=True`` sends them through the
ordinary chat route at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import Field
from tqdm.std import tqdm  # text bars: widget bars need JavaScript the offline book cannot load

from recjudge_utils.files import atomic_write_text
from recjudge_utils.judge.backends import register_backend
from recjudge_utils.judge.backends.base import BackendOptions, CallOutcome, Deliver, Job, Lookup
from recjudge_utils.judge.backends.openai_compatible import OpenAICompatibleBackend, compact_response
from recjudge_utils.judge.transport import RetryPolicy, call_with_retries

__all__ = ["BatchBackend", "BatchOptions"]

_BATCH_ENDPOINT = "/v1/chat/completions"
_TERMINAL = {"completed", "failed", "expired", "cancelled"}


def _write_batch_file(path: Path, items: Sequence[tuple[str, dict[str, object]]]) -> Path:
    """Write ``(custom_id, chat params)`` pairs as Batch API JSONL lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for custom_id, params in items:
            line = {"custom_id": custom_id, "method": "POST", "url": _BATCH_ENDPOINT, "body": params}
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    return path


def _error_text(body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message"))
    return str(body)[:300]


class BatchOptions(BackendOptions):
    """Options of the ``batch`` backend: polling and the completion window."""

    poll_interval: float = Field(30.0, gt=0, description="seconds between status checks")
    completion_window: str = "24h"
    batch_timeout: float | None = Field(None, gt=0, description="give up waiting after this many seconds (resumable)")
    max_lines: int = Field(50_000, ge=1)
    retry_failed_with_chat: bool = False


@register_backend("batch")
class BatchBackend(OpenAICompatibleBackend):
    """OpenAI-compatible endpoint reached through ``/v1/files`` and ``/v1/batches``."""

    name = "batch"
    route = "batch"
    options_model = BatchOptions

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        poll_interval: float = 30.0,
        batch_timeout: float | None = None,
        completion_window: str = "24h",
        max_lines: int = 50_000,
        retry_failed_with_chat: bool = False,
        **options: Any,
    ) -> None:
        if model == "local":
            raise ValueError("the Batch API route needs a remote OpenAI-compatible endpoint, not model='local'")
        super().__init__(model, base_url, **options)
        self.poll_interval = float(poll_interval)
        self.batch_timeout = batch_timeout
        self.completion_window = completion_window
        self.max_lines = int(max_lines)
        self.retry_failed_with_chat = retry_failed_with_chat
        self.state_path: Path | None = None
        self.run_name = "default"
        self.progress = True

    def bind(self, run_dir: Path, run_name: str, progress: bool) -> None:
        """Keep the run's batch state (``batches.json``) in ``run_dir``, so a killed run resumes its batches."""
        self.state_path = run_dir / "batches.json"
        self.run_name = run_name
        self.progress = progress

    # -- state --------------------------------------------------------------------------------------------
    def _load_state(self) -> dict[str, Any]:
        assert self.state_path is not None, "bind() the batch backend to a run folder first"
        if self.state_path.exists():
            return json.loads(self.state_path.read_text(encoding="utf-8"))
        return {"batches": {}}

    def _save_state(self, state: dict[str, Any]) -> None:
        assert self.state_path is not None
        atomic_write_text(self.state_path, json.dumps(state, indent=1))

    def _retry(self, policy: RetryPolicy, fn: Any, what: str) -> Any:
        return call_with_retries(fn, self.classify, policy, what, self.describe(), self.scrub)[0]

    # -- the batch route ----------------------------------------------------------------------------------
    def complete_many(
        self, jobs: Sequence[Job], *, lookup: Lookup, deliver: Deliver, policy: RetryPolicy, stop: threading.Event
    ) -> None:
        """Answer the jobs through the Batch API: submit, poll, and deliver as batches finish."""
        if not jobs:
            return
        oa = self.sdk
        by_key: dict[str, Job] = {}
        for job in jobs:
            by_key.setdefault(job.plan.key, job)
        state = self._load_state()
        # resume batches a previous process submitted and did not fold
        to_wait = [
            bid
            for bid, b in state["batches"].items()
            if not b.get("folded") and any(k in by_key for k in b["keys"]) and b.get("endpoint") == self.endpoint_id
        ]
        covered = {k for bid in to_wait for k in state["batches"][bid]["keys"]}
        new_keys = [k for k in by_key if k not in covered]
        for start in range(0, len(new_keys), self.max_lines):
            chunk = new_keys[start : start + self.max_lines]
            stamp = time.strftime("%Y%m%dT%H%M%S")
            assert self.state_path is not None
            path = _write_batch_file(
                self.state_path.parent / "batch_inputs" / f"{stamp}-{start // self.max_lines}.jsonl",
                [(k, by_key[k].plan.params) for k in chunk],
            )

            def upload(path: Path = path) -> Any:
                with open(path, "rb") as fh:
                    return oa.files.create(file=fh, purpose="batch")

            uploaded = self._retry(policy, upload, "batch file upload")
            batch = self._retry(
                policy,
                lambda uploaded=uploaded: oa.batches.create(
                    input_file_id=uploaded.id,
                    endpoint=_BATCH_ENDPOINT,
                    completion_window=self.completion_window,
                    metadata={"recjudge_run": self.run_name},
                ),
                "batch creation",
            )
            state["batches"][batch.id] = {
                "input_file": str(path),
                "input_file_id": uploaded.id,
                "endpoint": self.endpoint_id,
                "model": self.api_model,
                "keys": chunk,
                "submitted": time.time(),
                "folded": False,
            }
            self._save_state(state)
            to_wait.append(batch.id)

        delivered: set[str] = set()
        failed: list[Job] = []
        deadline = None if self.batch_timeout is None else time.monotonic() + self.batch_timeout
        bar = tqdm(total=len(by_key), desc=f"{jobs[0].request.template_id} [batch]", disable=not self.progress)
        try:
            for bid in to_wait:
                info = state["batches"][bid]
                while True:
                    batch = self._retry(policy, lambda bid=bid: oa.batches.retrieve(bid), "batch poll")
                    if batch.status in _TERMINAL:
                        break
                    if deadline is not None and time.monotonic() > deadline:
                        raise TimeoutError(
                            f"batch {bid} still {batch.status!r} after {self.batch_timeout:.0f}s; call again later "
                            f"to resume (state in {self.state_path})"
                        )
                    time.sleep(self.poll_interval)
                failures: dict[str, str] = {}
                for file_id in (batch.output_file_id, batch.error_file_id):
                    if not file_id:
                        continue
                    content = self._retry(policy, lambda f=file_id: oa.files.content(f).text, "batch download")
                    for line in content.splitlines():
                        if not line.strip():
                            continue
                        rec = json.loads(line)
                        key = rec.get("custom_id")
                        if key not in by_key or key in delivered:
                            continue
                        resp = rec.get("response") or {}
                        body = resp.get("body")
                        if resp.get("status_code") == 200 and isinstance(body, dict) and not rec.get("error"):
                            from openai.types.chat import ChatCompletion

                            completion = replace(
                                compact_response(ChatCompletion.model_validate(body), 0.0, route="batch"),
                                latency_s=None,
                                batch_id=bid,
                            )
                            deliver(by_key[key], CallOutcome(by_key[key].plan, completion, attempts=1, batch=True))
                            delivered.add(key)
                            bar.update(1)
                        else:
                            err = rec.get("error") or {}
                            msg = err.get("message") if isinstance(err, dict) and err else _error_text(body)
                            failures[key] = f"batch {bid} line failed (HTTP {resp.get('status_code')}): {msg}"
                for key in info["keys"]:
                    if key in by_key and key not in delivered:
                        reason = failures.get(key) or f"batch {bid} ended {batch.status!r} without an answer"
                        if self.retry_failed_with_chat:
                            failed.append(by_key[key])
                        else:
                            deliver(by_key[key], CallOutcome(by_key[key].plan, None, error=reason, attempts=1))
                        delivered.add(key)
                info["folded"] = True
                info["status"] = batch.status
                self._save_state(state)
        finally:
            bar.close()
        for key, job in by_key.items():
            if key not in delivered:
                deliver(job, CallOutcome(job.plan, None, error="no answer in the batch output", attempts=1))
        if failed:
            super().complete_many(failed, lookup=lookup, deliver=deliver, policy=policy, stop=stop)
