"""OpenAI Batch API route for large runs (half the price, answers within the completion window).

:func:`judge_many_batch` takes the same requests and parser as :meth:`JudgeClient.judge_many`, skips
everything already in the cache, writes the rest as a JSONL batch file, uploads it, creates the batch,
polls until it ends, downloads the output and folds every answer into the SAME cache (one commit per
answer), then returns results in request order. Submitted batches are recorded in
``<run_dir>/batches.json``, so a process that dies while waiting resumes polling the same batch
instead of paying twice. Failed lines become ``status="error"`` results (never cached); rerun to retry
them, or pass ``retry_failed_with_chat=True`` to send them through the normal chat route at once.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm.std import tqdm  # text bars: widget bars need JavaScript the offline book cannot load

from recjudge_utils.client import JudgeClient, JudgeError, JudgeRequest, JudgeResult
from recjudge_utils.parsing import parse_json_object

__all__ = ["BATCH_ENDPOINT", "judge_many_batch", "write_batch_file"]

BATCH_ENDPOINT = "/v1/chat/completions"
_TERMINAL = {"completed", "failed", "expired", "cancelled"}


def write_batch_file(path: Path, items: Sequence[tuple[str, dict]]) -> Path:
    """Write ``(custom_id, chat params)`` pairs as Batch API JSONL lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for custom_id, params in items:
            line = {"custom_id": custom_id, "method": "POST", "url": BATCH_ENDPOINT, "body": params}
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    return path


def _load_state(path: Path) -> dict[str, Any]:
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    return {"batches": {}}


def _save_state(path: Path, state: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _error_text(body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message"))
    return str(body)[:300]


def judge_many_batch(
    client: JudgeClient,
    requests: Sequence[JudgeRequest],
    parse: Callable[[str], Any] | None = None,
    *,
    desc: str | None = None,
    poll_interval: float = 30.0,
    timeout: float | None = None,
    completion_window: str = "24h",
    max_lines: int = 50_000,
    retry_failed_with_chat: bool = False,
    progress: bool | None = None,
) -> list[JudgeResult]:
    """Judge ``requests`` through the Batch API, folding the answers into ``client``'s cache.

    Returns results in request order, like :meth:`JudgeClient.judge_many`; fresh batch answers are
    billed at the batch price (half), cached answers at 0.
    """
    if client.is_local:
        raise ValueError("the Batch API route needs a remote OpenAI-compatible endpoint, not model='local'")
    parse = parse or parse_json_object
    requests = list(requests)
    if not requests:
        return []
    oa = client._oa
    show = client.progress if progress is None else progress
    plans = [client._plan(r) for r in requests]
    keys = [p["key"] for p in plans]
    cached = client.cache.get_many(keys) if client.use_cache else {}
    missing: dict[str, int] = {}
    for i, k in enumerate(keys):
        if k not in cached and k not in missing:
            missing[k] = i

    state_path = client.run_dir / "batches.json"
    state = _load_state(state_path)
    fresh: dict[str, dict] = {}
    failures: dict[str, str] = {}

    # resume batches a previous process submitted and did not fold
    to_wait = [
        bid
        for bid, b in state["batches"].items()
        if not b.get("folded") and any(k in missing for k in b["keys"]) and b.get("endpoint") == client.endpoint_id
    ]
    covered = {k for bid in to_wait for k in state["batches"][bid]["keys"]}
    new_keys = [k for k in missing if k not in covered]
    for start in range(0, len(new_keys), max_lines):
        chunk = new_keys[start : start + max_lines]
        stamp = time.strftime("%Y%m%dT%H%M%S")
        path = write_batch_file(
            client.run_dir / "batch_inputs" / f"{stamp}-{start // max_lines}.jsonl",
            [(k, plans[missing[k]]["params"]) for k in chunk],
        )

        def upload(path: Path = path) -> Any:
            with open(path, "rb") as fh:
                return oa.files.create(file=fh, purpose="batch")

        uploaded, _ = client._with_retries(upload, "batch file upload")
        batch, _ = client._with_retries(
            lambda uploaded=uploaded: oa.batches.create(
                input_file_id=uploaded.id,
                endpoint=BATCH_ENDPOINT,
                completion_window=completion_window,
                metadata={"recjudge_run": client.run_name},
            ),
            "batch creation",
        )
        state["batches"][batch.id] = {
            "input_file": str(path),
            "input_file_id": uploaded.id,
            "endpoint": client.endpoint_id,
            "model": client.api_model,
            "keys": chunk,
            "submitted": time.time(),
            "folded": False,
        }
        _save_state(state_path, state)
        to_wait.append(batch.id)

    key_to_plan = {p["key"]: (requests[i], p) for i, p in enumerate(plans)}
    deadline = None if timeout is None else time.monotonic() + timeout
    bar = tqdm(total=len(missing), desc=(desc or requests[0].template_id) + " [batch]", disable=not show)
    try:
        for bid in to_wait:
            info = state["batches"][bid]
            while True:
                batch, _ = client._with_retries(lambda bid=bid: oa.batches.retrieve(bid), "batch poll")
                if batch.status in _TERMINAL:
                    break
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(
                        f"batch {bid} still {batch.status!r} after {timeout:.0f}s; call again later to resume "
                        f"(state in {state_path})"
                    )
                time.sleep(poll_interval)
            for file_id in (batch.output_file_id, batch.error_file_id):
                if not file_id:
                    continue
                content, _ = client._with_retries(lambda f=file_id: oa.files.content(f).text, "batch download")
                for line in content.splitlines():
                    if not line.strip():
                        continue
                    rec = json.loads(line)
                    key = rec.get("custom_id")
                    if key not in key_to_plan:
                        continue
                    resp = rec.get("response") or {}
                    body = resp.get("body")
                    if resp.get("status_code") == 200 and isinstance(body, dict) and not rec.get("error"):
                        from openai.types.chat import ChatCompletion

                        compact = client._compact_response(ChatCompletion.model_validate(body), 0.0)
                        compact.update(route="batch", batch_id=bid, latency_s=None)
                        req, plan = key_to_plan[key]
                        client.cache.put(
                            key,
                            compact,
                            endpoint=client.endpoint_id,
                            model=client.api_model,
                            template_id=req.template_id,
                            template_version=str(req.template_version),
                        )
                        fresh[key] = compact
                        bar.update(1)
                    else:
                        err = rec.get("error") or {}
                        msg = err.get("message") if isinstance(err, dict) and err else _error_text(body)
                        failures[key] = f"batch {bid} line failed (HTTP {resp.get('status_code')}): {msg}"
            if batch.status != "completed":
                for k in info["keys"]:
                    if k not in fresh and k not in failures:
                        failures[k] = f"batch {bid} ended {batch.status!r} without an answer for this request"
            info["folded"] = True
            info["status"] = batch.status
            _save_state(state_path, state)
    finally:
        bar.close()

    results: list[JudgeResult | None] = [None] * len(requests)
    used: set[str] = set()
    for i, (req, plan) in enumerate(zip(requests, plans, strict=True)):
        k = plan["key"]
        if k in cached:
            results[i] = client._finish(req, plan, cached[k], parse, cache_hit=True, latency=0.0)
        elif k in fresh:
            first = k not in used
            used.add(k)
            results[i] = client._finish(req, plan, fresh[k], parse, cache_hit=not first, latency=0.0, batch=first)
        else:
            reason = failures.get(k, "no answer in the batch output")
            results[i] = client._error_result(req, plan, reason)

    if retry_failed_with_chat:
        idx = [i for i, r in enumerate(results) if r is not None and r.status == "error"]
        if idx:
            redo = client.judge_many([requests[i] for i in idx], parse=parse, desc=f"{desc or 'batch'} (chat retry)")
            for i, r in zip(idx, redo, strict=True):
                results[i] = r
    out = [r for r in results if r is not None]
    if len(out) != len(requests):  # pragma: no cover - defensive
        raise JudgeError("internal error: batch results do not line up with requests")
    return out
