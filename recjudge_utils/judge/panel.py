"""Judge panels: several judges asked the same request, one verdict.

A panel is a judge profile (``backend: panel``, :class:`recjudge_utils.judge.profile.PanelProfile`) whose members are
other profiles. :class:`PanelClient` owns one real :class:`~recjudge_utils.judge.client.JudgeClient` per member, so
every member's call goes through the one client like any other judge's: cached under the member's own key (a panel of
judges already run costs nothing new), retried, priced, parsed by the request's answer format, an unparsed answer
reported with its reason. The panel then aggregates the members' parsed answers
(:mod:`recjudge_utils.judge.aggregation`) into one answer written in the request's answer format, which the request's
parser reads as it reads any judge's answer, so protocols and experiments never know a panel answered.

Why the panel sits above the client and is not a backend: a backend answers with text under one cache key, and the
client parses it. A panel needs its members' *parsed* answers (a majority of verdicts, the mean of levels), and each
member's answer must be cached under that member's own key; so the panel is a client of clients, and the judgment it
logs is one record (as FastChat and Arena-Hard log one record per judgment) holding every member's answer.

**The rules** (``aggregate`` and ``min_members`` in the profile):

* a member whose answer did not parse, or whose call failed, is *excluded*: it casts no vote, and the record counts it
  (``panel.excluded``) with its status and reason; it is never dropped silently;
* fewer usable answers than ``min_members`` (default: a majority of the members): the judgment is unparsed (or an
  error, when no member got any answer) with the reason naming each excluded member;
* pairwise verdicts take a strict majority of the usable answers; with none, the verdict is a tie: never decided by
  member order;
* ordered answers take their median: a five-level score the median of the members' levels (or, by choice, their
  mean) and a SAER label the median label, which is the majority label whenever there is one; a value halfway
  between two levels or labels takes the lower one (:mod:`recjudge_utils.judge.aggregation` says why).

**The record.** Each judgment is one line of the run's ``judgments.jsonl`` (:class:`recjudge_utils.judge.records.
JudgmentLog`): the panel's answer, status and reason, with ``members`` (each member's raw answer, parse status and
reason, cache key, tokens, cost, cache hit and whether it voted) and ``panel`` (the rule, the votes or values per
answer field and the outcome). Usage counts the members' calls (:func:`recjudge_utils.judge.usage.logged_calls`):
a judgment whose members all came from the cache made no call. The members write no log of their own; their folders
(``members/<member>/<notebook>/`` in the run) hold only what a backend keeps (a Batch job's state, a plan's records).

**Labels.** A panel of simulated judges is a simulated judge: its name starts with
:data:`~recjudge_utils.judge.backends.sim.SIM_PREFIX`, so every table keeps it apart from LLM judges; a panel mixing
simulated and LLM members is refused when its profile is read.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import pandas as pd

from recjudge_utils.answer_formats.parsing import ParseError
from recjudge_utils.judge.aggregation import Rule, aggregator, central
from recjudge_utils.judge.backends.base import PreparedCall
from recjudge_utils.judge.backends.sim import SIM_PREFIX
from recjudge_utils.judge.client import JudgeClient, request_parser
from recjudge_utils.judge.records import JudgmentLog
from recjudge_utils.judge.types import JudgeError, JudgeRequest, JudgeResult, Status
from recjudge_utils.judge.usage import is_paid, usage_table

__all__ = [
    "MEMBERS_DIR",
    "MemberAnswer",
    "PanelClient",
    "PanelMember",
    "PanelResult",
    "member_folder",
    "member_run_dir",
]

T = TypeVar("T")

#: the folder of a run that holds the panel members' folders: ``<run>/members/<member>/<notebook>/``
MEMBERS_DIR = "members"
_ROUTE = "panel"


def member_folder(run_folder: Path, member: str) -> Path:
    """A member's folder in the panel's run folder, ``members/<member>/``, laid out as a run folder (one folder per
    notebook), so a plan of the member reads as a plan of a run."""
    return run_folder / MEMBERS_DIR / member.replace("/", "_").replace(":", "_")


def member_run_dir(panel_run_dir: Path, member: str) -> Path:
    """The folder of one member of the panel whose notebook folder is ``panel_run_dir``: in the same run,
    ``members/<member>/<notebook>/``."""
    return member_folder(panel_run_dir.parent, member) / panel_run_dir.name


@dataclass(frozen=True)
class PanelMember:
    """One member of a panel: its profile's name, its client and whether it is a simulated judge."""

    name: str
    client: JudgeClient
    simulated: bool = False


@dataclass(frozen=True)
class MemberAnswer:
    """One member's answer to one judgment of the panel, and whether it voted."""

    member: str
    result: JudgeResult[Any]
    included: bool
    model: str
    model_name: str
    endpoint: str
    route: str

    def record(self) -> dict[str, Any]:
        """The member's entry in the panel's judgment record (what a judge's own record holds of its call)."""
        r = self.result
        return {
            "member": self.member,
            "model": self.model,
            "model_name": self.model_name,
            "endpoint": self.endpoint,
            "cache_key": r.cache_key,
            "included": self.included,
            "status": r.status,
            "reason": r.reason,
            "raw_response": r.raw_text,
            "finish_reason": r.finish_reason,
            "parsed": r.value,
            "label_probs": r.label_probs,
            "expected_label": r.expected_label,
            "prompt_tokens": r.prompt_tokens,
            "completion_tokens": r.completion_tokens,
            "reasoning_tokens": r.reasoning_tokens,
            "budget_spent": r.budget_spent,
            "latency_s": round(r.latency_s, 4),
            "cache_hit": r.cache_hit,
            "cost_usd": None if math.isnan(r.cost_usd) else r.cost_usd,
            "route": self.route,
            "attempts": r.attempts,
        }


@dataclass
class PanelResult(JudgeResult[T]):
    """A panel's judgment: a :class:`JudgeResult` (the panel's answer, parsed as the request's format; tokens, cost,
    latency and attempts summed over the members; a cache hit when every member's answer was) with every member's
    answer and the aggregation's outcome."""

    members: tuple[MemberAnswer, ...] = ()
    panel: dict[str, Any] = field(default_factory=dict)

    @property
    def excluded(self) -> tuple[MemberAnswer, ...]:
        """The members whose answer cast no vote (unparsed, failed, or too few usable answers to decide)."""
        return tuple(a for a in self.members if not a.included)


class PanelClient:
    """A judge made of judges (see the module docstring); implements :class:`~recjudge_utils.judge.types.Judge`.

    Args:
        members: the members, each with its own :class:`JudgeClient` (made with ``log_judgments=False``).
        aggregate: the rule per answer format (``{"json_levels": "mean", "arena_pairwise": "majority", ...}``).
        min_members: usable answers below which a judgment is unparsed.
        run_dir: this notebook's folder of the run (the panel's ``judgments.jsonl``).
        name: the profile's name; ``model``: the profile's model field (the members' models).
        log_judgments: False in plan mode (a plan keeps its own records).
    """

    def __init__(
        self,
        members: Sequence[PanelMember],
        *,
        aggregate: Mapping[str, str],
        min_members: int,
        run_dir: Path,
        name: str = "panel",
        model: str = "panel",
        progress: bool = True,
        log_judgments: bool = True,
    ) -> None:
        if len(members) < 2:
            raise ValueError("a panel needs at least two members")
        if not 1 <= min_members <= len(members):
            raise ValueError(f"min_members must be between 1 and the {len(members)} members, not {min_members}")
        self.members = list(members)
        self.aggregate = dict(aggregate)
        self.min_members = int(min_members)
        self.run_dir = Path(run_dir)
        self.run_name = self.run_dir.name
        self.profile_name = name
        self.api_model = model
        self.progress = bool(progress)
        self.log_judgments = bool(log_judgments)
        self.simulated = all(m.simulated for m in self.members)
        scrubs = [m.client.backend.scrub for m in self.members]
        self.log = JudgmentLog(self.run_dir, lambda text: _scrub_all(scrubs, text))
        identity = json.dumps([m.client.endpoint_id for m in self.members])
        self.endpoint_id = "panel:" + hashlib.sha256(identity.encode()).hexdigest()[:16]
        self._member_rows: list[dict[str, Any]] = []
        self._closed = False

    # ------------------------------------------------------------------ identity
    @property
    def model_name(self) -> str:
        """The panel's name in tables: a simulated panel's starts with the simulated judge's prefix (so it is kept
        apart from LLM judges) and names its members' profiles; an LLM panel's names its members' models."""
        if self.simulated:
            return f"{SIM_PREFIX} panel of {len(self.members)} ({', '.join(m.name for m in self.members)})"
        return f"panel of {len(self.members)} ({', '.join(m.client.model_name for m in self.members)})"

    @property
    def list_price(self) -> dict[str, float] | None:
        """USD per 1M input and output tokens of one panel judgment: the members' list prices summed (each member
        reads the same prompt); None when a member has no price."""
        prices = [m.client.list_price for m in self.members]
        if any(p is None for p in prices):
            return None
        return {k: sum(float(p[k]) for p in prices if p is not None) for k in ("input", "output")}

    @property
    def max_concurrency(self) -> int:
        """Requests in flight (members are asked one after the other, each at its own concurrency)."""
        return max(m.client.max_concurrency for m in self.members)

    @property
    def offline(self) -> bool:
        """Whether the members answer only from the cache."""
        return all(m.client.offline for m in self.members)

    @property
    def json_mode(self) -> str | None:
        """No single response format: each member asks for its own."""
        return None

    @property
    def local_server(self) -> Any:
        """No server of its own."""
        return None

    @property
    def log_path(self) -> Path:
        """The panel's JSONL judgment log in this notebook's folder of the run."""
        return self.log.log_path

    @property
    def messages_path(self) -> Path:
        """The JSONL log of the messages asked, by hash."""
        return self.log.messages_path

    def rule(self, answer_format: str | None) -> Rule:
        """The aggregation rule of ``answer_format`` (its first rule when the profile names none)."""
        agg = aggregator(answer_format)
        chosen = next((r for r in agg.rules if r == self.aggregate.get(str(answer_format), agg.rules[0])), None)
        if chosen is None:
            wanted = self.aggregate.get(str(answer_format))
            raise ValueError(f"answer format {answer_format!r} is aggregated by {' or '.join(agg.rules)}, not {wanted}")
        return chosen

    # ------------------------------------------------------------------ judging
    def judge(self, request: JudgeRequest, parse: Callable[[str], Any] | None = None) -> PanelResult[Any]:
        """One judgment; raises :class:`JudgeError` when no member got an answer."""
        return self.judge_many([request], parse=parse, progress=False, on_error="raise")[0]

    def judge_many(
        self,
        requests: Sequence[JudgeRequest],
        parse: Callable[[str], Any] | None = None,
        desc: str | None = None,
        *,
        progress: bool | None = None,
        on_error: Literal["record", "raise"] = "record",
    ) -> list[PanelResult[Any]]:
        """One panel judgment per request, in order: every member is asked every request (through its own client:
        cached, retried, parsed), then the usable answers are aggregated by the request's answer format. ``parse``
        (a caller's own parser) reads the panel's aggregated answer; the members' answers are always read by the
        request's answer format, which is what the panel aggregates."""
        requests = list(requests)
        if not requests:
            return []
        show = self.progress if progress is None else progress
        label = desc or requests[0].template_id
        answers = [
            m.client.judge_many(requests, desc=f"{label} [{m.name}]", progress=show, on_error="record")
            for m in self.members
        ]
        out = [self._combine(request, [a[i] for a in answers], parse) for i, request in enumerate(requests)]
        if on_error == "raise":
            failed = next((r for r in out if r.status == "error"), None)
            if failed is not None:
                raise JudgeError(failed.reason or "no member of the panel got an answer")
        return out

    def _combine(
        self, request: JudgeRequest, results: Sequence[JudgeResult[Any]], parse: Callable[[str], Any] | None
    ) -> PanelResult[Any]:
        usable = [r for r in results if r.status == "parsed"]
        status: Status = "unparsed"
        raw: str | None = None
        value: Any = None
        reason: str | None = None
        info: dict[str, Any] = {
            "answer_format": request.answer_format,
            "members": len(results),
            "usable": len(usable),
            "min_members": self.min_members,
        }
        voted = False
        if len(usable) < self.min_members:
            status = "error" if all(r.status == "error" for r in results) else "unparsed"
            why = "; ".join(
                f"{m.name} {r.status}: {r.reason or 'no reason given'}"
                for m, r in zip(self.members, results, strict=True)
                if r.status != "parsed"
            )
            reason = (
                f"panel: {len(usable)} of {len(results)} members gave a usable answer, fewer than min_members "
                f"{self.min_members} ({why})"
            )
        else:
            try:
                rule = self.rule(request.answer_format)
            except (KeyError, ValueError) as exc:
                reason = f"panel: {exc.args[0]}"
            else:
                info["rule"] = rule
                outcome = aggregator(request.answer_format).combine([r.value for r in usable], rule)
                info["outcome"] = outcome.outcome
                voted = True
                if outcome.text is None:
                    reason = f"panel: {outcome.reason}"
                else:
                    raw = outcome.text
                    try:
                        value = (parse or request_parser(request))(raw)
                        status = "parsed"
                    except ParseError as exc:
                        reason = f"panel: its aggregated answer does not parse as {request.answer_format} ({exc})"
        answers = tuple(
            MemberAnswer(
                member=m.name,
                result=r,
                included=voted and r.status == "parsed",
                model=m.client.api_model,
                model_name=m.client.model_name,
                endpoint=m.client.endpoint_id,
                route=m.client.backend.route,
            )
            for m, r in zip(self.members, results, strict=True)
        )
        info["excluded"] = [
            {"member": a.member, "status": a.result.status, "reason": a.result.reason}
            for a in answers
            if not a.included
        ]
        probs, expected, argmax = self._label_distribution(request, usable, info.get("rule"))
        keys = [r.cache_key for r in results]
        result: PanelResult[Any] = PanelResult(
            request=request,
            status=status,
            raw_text=raw,
            value=value,
            reason=reason,
            label_probs=probs,
            expected_label=expected,
            prompt_tokens=sum(r.prompt_tokens for r in results),
            completion_tokens=sum(r.completion_tokens for r in results),
            latency_s=float(sum(r.latency_s for r in results)),
            cost_usd=float(sum(r.cost_usd for r in results)),
            cache_hit=all(r.cache_hit for r in results),
            argmax_label=argmax,
            finish_reason=None,
            cache_key=_panel_key(keys, info.get("rule"), self.min_members),
            attempts=sum(r.attempts for r in results),
            reasoning_tokens=sum(r.reasoning_tokens for r in results),
            budget_spent=False,
            members=answers,
            panel=info,
        )
        self._record(request, result, keys)
        return result

    def _label_distribution(
        self, request: JudgeRequest, usable: Sequence[JudgeResult[Any]], rule: str | None
    ) -> tuple[dict[str, float] | None, float | None, str | None]:
        """The members' logprob label distributions averaged, and their expected labels aggregated by the format's
        score rule, when every usable member has them (None otherwise)."""
        if not usable or any(r.label_probs is None or r.expected_label is None for r in usable):
            return None, None, None
        labels = list(request.label_options or sorted({k for r in usable for k in (r.label_probs or {})}))
        probs = {k: float(sum((r.label_probs or {}).get(k, 0.0) for r in usable) / len(usable)) for k in labels}
        expected = central([float(r.expected_label or 0.0) for r in usable], "median" if rule == "median" else "mean")
        top = max(probs.values(), default=0.0)
        winners = [k for k, p in probs.items() if p == top]
        return probs, expected, winners[0] if len(winners) == 1 else None

    def _record(self, request: JudgeRequest, result: PanelResult[Any], keys: Sequence[str | None]) -> None:
        for answer in result.members:
            r = answer.result
            paid = is_paid(r.cache_hit, r.status)
            self._member_rows.append(
                {
                    "member": answer.member,
                    "model_name": answer.model_name,
                    "status": r.status,
                    "included": answer.included,
                    "cache_hit": bool(r.cache_hit),
                    "api_calls": int(paid),
                    "prompt_tokens": r.prompt_tokens if paid else 0,
                    "completion_tokens": r.completion_tokens if paid else 0,
                    "cost_usd": r.cost_usd,
                }
            )
        if not self.log_judgments:
            return
        params: dict[str, object] = {"messages": [dict(m) for m in request.messages], "members": list(keys)}
        plan = PreparedCall.build(params, result.cache_key or "")
        self.log.write(
            request,
            plan,
            result,
            run_name=self.run_name,
            model=self.api_model,
            model_name=self.model_name,
            endpoint=self.endpoint_id,
            route=_ROUTE,
            extra={"panel": result.panel, "members": [a.record() for a in result.members]},
        )

    # ------------------------------------------------------------------ accounting
    def usage_summary(self, total: bool = True) -> pd.DataFrame:
        """Per template, as a judge's usage table: judgments (the panel's), cache hits (judgments no member paid
        for), API calls, tokens and dollars of the members' calls, parsed/unparsed/errors of the panel's answers."""
        return usage_table(self.log.rows, self.model_name, total=total)

    def member_summary(self) -> pd.DataFrame:
        """Per member, over this session's judgments: answers, parsed, unparsed, errors, how many cast no vote
        (excluded), cache hits, API calls, tokens and dollars."""
        columns = [
            "member",
            "model_name",
            "answers",
            "parsed",
            "unparsed",
            "errors",
            "excluded",
            "cache_hits",
            "api_calls",
            "prompt_tokens",
            "completion_tokens",
            "cost_usd",
        ]
        rows = []
        for m in self.members:
            mine = [r for r in self._member_rows if r["member"] == m.name]
            rows.append(
                {
                    "member": m.name,
                    "model_name": m.client.model_name,
                    "answers": len(mine),
                    "parsed": sum(r["status"] == "parsed" for r in mine),
                    "unparsed": sum(r["status"] == "unparsed" for r in mine),
                    "errors": sum(r["status"] == "error" for r in mine),
                    "excluded": sum(not r["included"] for r in mine),
                    "cache_hits": sum(r["cache_hit"] for r in mine),
                    "api_calls": sum(r["api_calls"] for r in mine),
                    "prompt_tokens": sum(r["prompt_tokens"] for r in mine),
                    "completion_tokens": sum(r["completion_tokens"] for r in mine),
                    "cost_usd": float(sum(r["cost_usd"] for r in mine if r["api_calls"])),
                }
            )
        return pd.DataFrame(rows, columns=columns)

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Close every member's client."""
        if self._closed:
            return
        self._closed = True
        for m in self.members:
            m.client.close()

    def __enter__(self) -> PanelClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PanelClient(model={self.model_name!r}, members={[m.name for m in self.members]!r})"


def _scrub_all(scrubs: Sequence[Callable[[str], str]], text: str) -> str:
    for scrub in scrubs:
        text = scrub(text)
    return text


def _panel_key(keys: Sequence[str | None], rule: str | None, min_members: int) -> str:
    """The panel judgment's identity in its log (not a cache key: the panel caches nothing of its own; each member's
    answer is cached under the member's key)."""
    payload = json.dumps({"members": list(keys), "rule": rule, "min_members": min_members}, sort_keys=True)
    return "panel-" + hashlib.sha256(payload.encode()).hexdigest()
