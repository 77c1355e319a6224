"""The judgment log of a run, and what a chapter's answers were worth (:class:`AnswerHealth`).

Every judgment (API call, cache hit or error) becomes one line of ``<run_dir>/judgments.jsonl`` with its
cache key, raw answer, parse status and reason, usage, cost, route and the request's metadata and truth.
The full messages are written once per distinct prompt to ``<run_dir>/messages.jsonl`` (keyed by their
hash), so the log stays small even with long few-shot prompts. Every line passes through the backend's
``scrub`` first, so a secret that leaked into an error message never reaches the disk. The log also keeps this
session's usage rows, which :func:`recjudge_utils.judge.usage.usage_table` sums; :func:`read_jsonl` reads the logs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from recjudge_utils.answer_formats.truth import truth_to_dict
from recjudge_utils.judge.backends.base import PreparedCall
from recjudge_utils.judge.types import JudgeRequest, JudgeResult
from recjudge_utils.judge.usage import judgment_usage

__all__ = ["UNUSABLE_SHARE_FLAG", "AnswerHealth", "JudgmentLog", "read_jsonl", "reason_kind"]


def read_jsonl(path: Path, start: int = 0) -> list[dict[str, Any]]:
    """The records of a JSONL file (a judgment log, a plan's records) from line ``start`` (0-based); none when the
    file does not exist."""
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for k, line in enumerate(fh) if k >= start and line.strip()]


def _utcnow() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):
        with contextlib.suppress(Exception):
            return o.item()
    if isinstance(o, set | frozenset | tuple):
        return list(o)
    if hasattr(o, "__dict__"):
        return dict(o.__dict__)
    return str(o)


class JudgmentLog:
    """Append-only JSONL records of one run folder, plus the in-memory rows of this session's usage (one
    :func:`~recjudge_utils.judge.usage.judgment_usage` per judgment)."""

    def __init__(self, run_dir: Path, scrub: Callable[[str], str]) -> None:
        self.run_dir = run_dir
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = run_dir / "judgments.jsonl"
        self.messages_path = run_dir / "messages.jsonl"
        self._scrub = scrub
        self._lock = threading.Lock()
        self._logged_messages = self._load_logged_message_hashes()
        self.rows: list[dict[str, Any]] = []

    def _load_logged_message_hashes(self) -> set[str]:
        seen: set[str] = set()
        if self.messages_path.exists():
            with open(self.messages_path, encoding="utf-8") as fh:
                for line in fh:
                    m = re.match(r'\{"messages_hash": "([0-9a-f]{64})"', line)
                    if m:
                        seen.add(m.group(1))
        return seen

    def _write_line(self, path: Path, record: dict[str, Any]) -> None:
        line = self._scrub(json.dumps(record, ensure_ascii=False, default=_json_default)) + "\n"
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()

    def write(
        self,
        request: JudgeRequest,
        plan: PreparedCall,
        result: JudgeResult[Any],
        *,
        run_name: str,
        model: str,
        model_name: str,
        endpoint: str,
        route: str,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Append one judgment's record (and its messages, once per hash) to the run's logs; ``extra`` adds fields (a
        panel's ``members``, whose calls are then what the usage table counts as API calls, tokens and dollars)."""
        record = {
            "ts": _utcnow(),
            "run": run_name,
            "template_id": request.template_id,
            "template_version": str(request.template_version),
            "model": model,
            "model_name": model_name,
            "endpoint": endpoint,
            "cache_key": plan.key,
            "messages_hash": plan.messages_hash,
            "messages_ref": f"{self.messages_path.name}#{plan.messages_hash}",
            "raw_response": result.raw_text,
            "finish_reason": result.finish_reason,
            "parsed": result.value,
            "status": result.status,
            "reason": result.reason,
            "label_probs": result.label_probs,
            "expected_label": result.expected_label,
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "reasoning_tokens": result.reasoning_tokens,
            "budget_spent": result.budget_spent,
            "latency_s": round(result.latency_s, 4),
            "cache_hit": result.cache_hit,
            "cost_usd": None if math.isnan(result.cost_usd) else result.cost_usd,
            "route": route,
            "attempts": result.attempts,
            "metadata": dict(request.metadata) if request.metadata is not None else None,
            "truth": truth_to_dict(request.truth),
            **(extra or {}),
        }
        usage = judgment_usage(record, result)
        with self._lock:
            if plan.messages_hash not in self._logged_messages:
                self._write_line(
                    self.messages_path, {"messages_hash": plan.messages_hash, "messages": plan.params["messages"]}
                )
                self._logged_messages.add(plan.messages_hash)
            self._write_line(self.log_path, record)
            self.rows.append(usage)


#: a notebook (or a chapter's table) is flagged when more than this share of its answers were unusable (unparsed or
#: failed): beyond it, its numbers rest on visibly fewer judgments than it asked for
UNUSABLE_SHARE_FLAG = 0.2
_QUOTED_TAIL = re.compile(r"""^(.*?):\s*(?:'.*'|".*")\s*$""", re.DOTALL)
_NUMBERED_ASIDE = re.compile(r"\s*\([^()]*\d[^()]*\)")
_FAILED_AT = re.compile(r"^.*? failed (?:\(not retryable\)|after \d+ attempts) at (.*)$", re.DOTALL)


def reason_kind(reason: str | None, status: str = "unparsed") -> str:
    """A reason with what varies from answer to answer taken out, so that equal causes count together: the quoted
    answer (``no JSON object found in answer: '...'``), numbered asides (``(answer cut at an output budget of 64
    tokens)``), and for a failed call the endpoint and model it names (``HTTP 400: ...`` is what stays)."""
    text = " ".join(str(reason or "").split())
    if not text:
        return "no reason given"
    if status == "error":
        failed = _FAILED_AT.match(text)
        if failed:  # "judge call failed (not retryable) at URL model 'm': HTTP 400: ..." -> "HTTP 400: ..."
            where = failed.group(1)
            cut = where.find("': ")
            text = where[cut + 3 :] if cut >= 0 else where.split(": ", 1)[-1]
        return text[:120]
    quoted = _QUOTED_TAIL.match(text)
    if quoted:
        text = quoted.group(1)
    text = _NUMBERED_ASIDE.sub("", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'...'", text)  # quoted values (a CATEGORY, a verdict) differ per answer
    return re.sub(r"\b\d+\b", "N", text)[:120]


_STATUSES = ("parsed", "unparsed", "error")


@dataclass(frozen=True)
class AnswerHealth:
    """Counts of judgments by status, with the reasons of the unusable ones (grouped by :func:`reason_kind`), most
    frequent first: what a chapter got from its judge."""

    n: int
    parsed: int
    unparsed: int
    errors: int
    reasons: tuple[tuple[str, int], ...] = field(default=())

    @classmethod
    def count(cls, statuses: Iterable[object], reasons: Iterable[object] | None = None) -> AnswerHealth:
        """From one status per judgment (``parsed`` / ``unparsed`` / ``error``) and, optionally, its reason."""
        status = [str(s) for s in statuses]
        why = list(reasons) if reasons is not None else [None] * len(status)
        if len(why) != len(status):
            raise ValueError(f"{len(status)} statuses but {len(why)} reasons")
        unknown = sorted(set(status) - set(_STATUSES))
        if unknown:
            raise ValueError(f"unknown judgment status {unknown}; expected one of {_STATUSES}")
        text = [None if r is None or (isinstance(r, float) and math.isnan(r)) else str(r) for r in why]
        bad = Counter(reason_kind(r, s) for s, r in zip(status, text, strict=True) if s != "parsed")
        n_parsed, n_unparsed = status.count("parsed"), status.count("unparsed")
        return cls(len(status), n_parsed, n_unparsed, status.count("error"), tuple(bad.most_common()))

    @classmethod
    def of_frames(cls, *frames: pd.DataFrame) -> AnswerHealth:
        """From judgment frames with a ``status`` column and, when present, a ``reason`` column (empty ones skipped)."""
        used = [f for f in frames if len(f) and "status" in f]
        if not used:
            return cls(0, 0, 0, 0)
        every = pd.concat(used, ignore_index=True)
        return cls.count(every["status"], every.get("reason"))

    @property
    def unusable(self) -> int:
        return self.unparsed + self.errors

    @property
    def flagged(self) -> bool:
        """More than :data:`UNUSABLE_SHARE_FLAG` of the answers were unusable, as the run manifest flags a notebook."""
        return self.unusable > UNUSABLE_SHARE_FLAG * self.n

    @property
    def nothing_usable(self) -> bool:
        """No answer could be read (also when nothing was asked)."""
        return self.parsed == 0
