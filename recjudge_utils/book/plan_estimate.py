"""The plan's estimate: what a run would cost (calls, tokens, dollars and hours per notebook) before paying.

The plan (``recjudge book plan``, :mod:`recjudge_utils.book.planner`) executes the notebooks with every request
recorded and none sent (:mod:`recjudge_utils.judge.planning`); :func:`plan_summary` reads those ``plan.jsonl``
records and estimates, per notebook, what the run would use, in the columns the manifest shows beside the actual
usage (:mod:`recjudge_utils.book.run_logs`, summed by :mod:`recjudge_utils.judge.usage`). Dollars are tokens times
the judge's prices (:func:`recjudge_utils.judge.pricing.usd`). Wall time is planned from the latency of earlier
calls of the same judge (same model and endpoint, in any run), or a stated default when there are none.

Tokens (:func:`token_rule`): the plan knows every request's exact characters. The embedded judge's prompts are
counted with SmolLM2's own tokenizer and chat template on a seeded sample of up to 200 requests per template, and
every request's characters are scaled by its template's measured tokens per character. A remote judge's prompts are
characters / 4, times the ratio of actual to estimated tokens over that judge's earlier calls (same endpoint and
model, any run) when there are any. Completion tokens start from the simulated judge's answers (SmolLM2's tokens,
or characters / 4), which are much shorter than a real model's, and are calibrated per template by the judge's
earlier calls when there are any. Each rule is stated in the plan.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.judge.panel import member_folder
from recjudge_utils.judge.planning import JUDGE_FILE, PLAN_FILE, SAMPLE_SIZE, SAMPLES_FILE, prompt_chars
from recjudge_utils.judge.pricing import PriceTable, usd
from recjudge_utils.judge.profile import JudgeProfile, PanelProfile
from recjudge_utils.judge.records import read_jsonl
from recjudge_utils.judge.usage import is_paid, with_total
from recjudge_utils.paths import runs_dir

__all__ = ["METHOD_FILE", "TokenRule", "earlier_calls", "plan_summary", "token_rule"]

#: seconds per call when no earlier run of this judge has measured it (embedded: measured here on 2 cores)
_DEFAULT_LATENCY_S = {"embedded": 6.0, "openai": 2.0, "batch": 2.0, "sim": 0.0}
#: per notebook in the plan folder: how its requests were rendered (written by the runner, see plan_standin)
METHOD_FILE = "plan_method.json"
#: earlier calls read per template to calibrate tokens (enough for a stable ratio, bounded time on big logs)
_MAX_CALIBRATION_CALLS = 2000
_PLAN_COLUMNS = [
    "notebook",
    "requests",
    "calls",
    "cached",
    "prompt_tokens",
    "completion_tokens",
    "estimated_calls",
    "cost_usd",
    "cost_usd_batch",
    "hours",
]


def _prices(profile: JudgeProfile) -> tuple[float, float]:
    if profile.prices is not None:
        return float(profile.prices["input"]), float(profile.prices["output"])
    price = PriceTable().price(profile.model_for_prices())
    return (price["input"], price["output"]) if price else (float("nan"), float("nan"))


def _measured(record: Mapping[str, Any]) -> bool:
    """Whether a judgment record is a call of a real judge that measured something: paid for (not a cache hit, not
    failed) and neither a plan's nor the simulated judge's answer."""
    return is_paid(record.get("cache_hit"), record.get("status")) and record.get("route") not in ("plan", "sim")


@dataclass(frozen=True)
class Latency:
    """Seconds per judge call and where the number comes from (earlier runs or the stated default)."""

    seconds: float
    source: str


def _judge_latency(profile: JudgeProfile, exclude: Path | None = None) -> Latency:
    """Mean seconds per fresh call of this judge in earlier runs (same model), or the stated default."""
    samples: list[float] = []
    for log in runs_dir().glob("*/*/judgments.jsonl"):
        if exclude is not None and exclude in log.parents:
            continue
        for rec in read_jsonl(log):
            if not _measured(rec):
                continue
            if rec.get("model_name") and profile.backend_name != "embedded" and rec.get("model") != profile.model:
                continue
            if profile.backend_name == "embedded" and not str(rec.get("endpoint", "")).startswith("local:"):
                continue
            if isinstance(rec.get("latency_s"), int | float):
                samples.append(float(rec["latency_s"]))
    if samples:
        return Latency(sum(samples) / len(samples), f"mean of {len(samples)} earlier calls of this judge")
    default = _DEFAULT_LATENCY_S.get(profile.backend_name, 2.0)
    return Latency(default, f"default {default:g} s per call (no earlier run of this judge)")


@dataclass
class TokenRule:
    """How the plan turns its records' characters into tokens: per template, tokens per character and per call
    (prompt), tokens per character (completion), calibration factors from earlier calls, and what it did, in words."""

    prompt: str
    completion: str
    prompt_per_char: dict[str, float] = field(default_factory=dict)
    prompt_per_call: dict[str, float] = field(default_factory=dict)
    completion_per_char: dict[str, float] = field(default_factory=dict)
    prompt_factor: dict[str, float] = field(default_factory=dict)
    completion_factor: dict[str, float] = field(default_factory=dict)
    default_per_char: float = 0.25
    default_completion_per_char: float = 0.25

    def base(self, records: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Uncalibrated (prompt, completion) tokens per record."""
        tpl = records["template_id"]
        per_char = tpl.map(self.prompt_per_char).fillna(self.default_per_char).to_numpy(float)
        per_call = tpl.map(self.prompt_per_call).fillna(0.0).to_numpy(float)
        c_per_char = tpl.map(self.completion_per_char).fillna(self.default_completion_per_char).to_numpy(float)
        prompt = records["prompt_chars"].to_numpy(float) * per_char + per_call
        completion = records["completion_chars"].to_numpy(float) * c_per_char
        return np.maximum(prompt, 1.0), np.maximum(completion, 1.0)

    def tokens(self, records: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Calibrated (prompt, completion) tokens per record; a completion never exceeds the request's max_tokens."""
        prompt, completion = self.base(records)
        tpl = records["template_id"]
        prompt = prompt * _factors(tpl, self.prompt_factor)
        completion = completion * _factors(tpl, self.completion_factor)
        if "max_tokens" in records:
            cap = pd.to_numeric(records["max_tokens"], errors="coerce").to_numpy(float)
            completion = np.where(np.isnan(cap), completion, np.minimum(completion, cap))
        return np.rint(prompt), np.rint(completion)


def _factors(templates: pd.Series, factors: Mapping[str, float]) -> np.ndarray:
    """Per record: its template's factor, else the pooled one (key ``*``), else 1."""
    pooled = factors.get("*", 1.0)
    return templates.map(dict(factors)).fillna(pooled).to_numpy(float)


def _plan_records(run_folder: Path, notebooks: Iterable[str]) -> pd.DataFrame:
    frames = []
    for nb in notebooks:
        records = read_jsonl(run_folder / nb / PLAN_FILE)
        frame = pd.DataFrame(records, columns=_RECORD_COLUMNS) if records else pd.DataFrame(columns=_RECORD_COLUMNS)
        if records and "prompt_chars" not in records[0]:  # a plan made before records held characters
            frame["prompt_chars"] = frame["prompt_tokens"] * 4
            frame["completion_chars"] = frame["completion_tokens"] * 4
        frame.insert(0, "notebook", nb)
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["notebook", *_RECORD_COLUMNS])
    out["cached"] = out["cached"].astype(bool)
    out["chained"] = out["chained"].astype(bool)
    return out


_RECORD_COLUMNS = [
    "template_id",
    "cached",
    "prompt_chars",
    "completion_chars",
    "prompt_tokens",
    "completion_tokens",
    "max_tokens",
    "chained",
]


def _judge_identity(run_folder: Path, notebooks: Iterable[str], profile: JudgeProfile) -> dict[str, str]:
    """Backend, endpoint and model the plan backend recorded (who would answer); the profile's when none did.

    Not a "same judge?" rule (that is :func:`recjudge_utils.judge.profile.same_judge`): the endpoint and model the
    judgment logs carry, by which earlier calls of whatever profile on that endpoint calibrate this plan."""
    for nb in notebooks:
        path = run_folder / nb / JUDGE_FILE
        if path.is_file():
            return dict(json.loads(path.read_text(encoding="utf-8")))
    return {"backend": profile.backend_name, "endpoint": "", "model": profile.model}  # no request: nothing to calibrate


@dataclass(frozen=True)
class EarlierCall:
    """One earlier paid call of a judge: its template, reported tokens and prompt characters (None: unknown)."""

    template_id: str
    prompt_tokens: int
    completion_tokens: int
    prompt_chars: int | None


_HASH_AT_START = re.compile(r'\{"messages_hash": "([0-9a-f]{64})"')


def earlier_calls(endpoint: str, model: str, exclude: Path | None = None) -> list[EarlierCall]:
    """Paid calls of the judge at ``endpoint`` serving ``model`` in the judgment logs of every run (not cache hits,
    errors, plans or simulated answers; each cache key once; at most :data:`MAX_CALIBRATION_CALLS` per template),
    with their prompts' characters read from the ``messages.jsonl`` beside each log."""
    found: list[EarlierCall] = []
    seen: set[str] = set()
    per_template: dict[str, int] = defaultdict(int)
    needle = json.dumps(endpoint)
    for log in sorted(runs_dir().glob("*/*/judgments.jsonl")):
        if exclude is not None and (exclude == log.parent or exclude in log.parents):
            continue
        wanted: dict[str, list[int]] = {}
        calls: list[dict[str, Any]] = []
        with open(log, encoding="utf-8") as fh:
            for line in fh:
                if needle not in line:  # most lines of a big log are other judges': skip them unparsed
                    continue
                rec = json.loads(line)
                if rec.get("endpoint") != endpoint or rec.get("model") != model:
                    continue
                if not _measured(rec):
                    continue
                key, tpl = str(rec.get("cache_key")), str(rec.get("template_id"))
                if key in seen or not rec.get("prompt_tokens") or per_template[tpl] >= _MAX_CALIBRATION_CALLS:
                    continue
                seen.add(key)
                per_template[tpl] += 1
                calls.append(rec)
                wanted.setdefault(str(rec.get("messages_hash")), []).append(len(calls) - 1)
        chars: dict[str, int] = {}
        messages = log.with_name("messages.jsonl")
        if wanted and messages.exists():
            with open(messages, encoding="utf-8") as fh:
                for line in fh:
                    m = _HASH_AT_START.match(line)
                    if m and m.group(1) in wanted and m.group(1) not in chars:
                        chars[m.group(1)] = prompt_chars(json.loads(line)["messages"])
        for rec in calls:
            found.append(
                EarlierCall(
                    str(rec["template_id"]),
                    int(rec["prompt_tokens"]),
                    int(rec.get("completion_tokens") or 0),
                    chars.get(str(rec.get("messages_hash"))),
                )
            )
    return found


def _calibrate(
    rule: TokenRule, records: pd.DataFrame, earlier: list[EarlierCall], prompts: bool
) -> tuple[int, int, float]:
    """Set the rule's calibration factors from earlier calls: (calls used for prompts, for completions, and the
    completions' pooled factor). Prompts: actual tokens / the rule's tokens for the same prompt characters.
    Completions: mean actual tokens per call / the plan's mean estimate per call, per template."""
    n_prompt = n_completion = 0
    if prompts:
        by_tpl: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for call in earlier:
            if call.prompt_chars:
                per_char = rule.prompt_per_char.get(call.template_id, rule.default_per_char)
                estimate = call.prompt_chars * per_char + rule.prompt_per_call.get(call.template_id, 0.0)
                by_tpl[call.template_id][0] += call.prompt_tokens
                by_tpl[call.template_id][1] += max(estimate, 1.0)
                n_prompt += 1
        if n_prompt:
            rule.prompt_factor = {t: a / e for t, (a, e) in by_tpl.items()}
            rule.prompt_factor["*"] = sum(a for a, _ in by_tpl.values()) / sum(e for _, e in by_tpl.values())
    _, base_completion = rule.base(records) if len(records) else (None, np.array([]))
    plan_mean = pd.Series(base_completion, index=records.index).groupby(records["template_id"]).mean()
    actual: dict[str, list[int]] = defaultdict(list)
    for call in earlier:
        if call.completion_tokens and call.template_id in plan_mean.index:
            actual[call.template_id].append(call.completion_tokens)
    pooled = 1.0
    if actual:
        n_completion = sum(len(v) for v in actual.values())
        rule.completion_factor = {t: float(np.mean(v)) / float(plan_mean[t]) for t, v in actual.items()}
        pooled = sum(float(np.sum(v)) for v in actual.values()) / sum(
            float(plan_mean[t]) * len(v) for t, v in actual.items()
        )
        rule.completion_factor["*"] = pooled
    return n_prompt, n_completion, pooled


def _embedded_base(run_folder: Path, notebooks: Iterable[str]) -> tuple[TokenRule, int]:
    """Tokens per character per template from the sampled requests, counted with SmolLM2's tokenizer."""
    from recjudge_utils.judge.planning import ChatTokenizer

    samples = [s for nb in notebooks for s in read_jsonl(run_folder / nb / SAMPLES_FILE)]
    rule = TokenRule(prompt="", completion="")
    if not samples:
        return rule, 0
    tokenizer = ChatTokenizer()
    # per template: content tokens, content characters, chat-template tokens, answer tokens, answer characters
    sums: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(5))
    count: dict[str, int] = defaultdict(int)
    overhead: dict[tuple[str, ...], int] = {}
    try:
        for s in samples:
            roles = tuple(str(m["role"]) for m in s["messages"])
            if roles not in overhead:  # the chat template's tokens for these roles, measured once
                overhead[roles] = tokenizer.prompt_tokens([{"role": r, "content": ""} for r in roles])
            answer = str(s.get("answer") or "")
            content = tokenizer.prompt_tokens(s["messages"]) - overhead[roles]
            answer_tokens = tokenizer.text_tokens(answer) if answer else 0
            sums[s["template_id"]] += (content, s["prompt_chars"], overhead[roles], answer_tokens, len(answer))
            count[s["template_id"]] += 1
    finally:
        tokenizer.close()
    for tpl, acc in sums.items():
        rule.prompt_per_char[tpl] = acc[0] / acc[1] if acc[1] else 0.25
        rule.prompt_per_call[tpl] = acc[2] / count[tpl]
        rule.completion_per_char[tpl] = acc[3] / acc[4] if acc[4] else 0.25
    total = np.sum(list(sums.values()), axis=0)
    rule.default_per_char = float(total[0] / total[1]) if total[1] else 0.25
    rule.default_completion_per_char = float(total[3] / total[4]) if total[4] else 0.25
    return rule, len(samples)


def token_rule(
    profile: JudgeProfile, run_folder: Path, notebooks: Iterable[str], records: pd.DataFrame | None = None
) -> TokenRule:
    """The plan's token rule for this judge (see the module docstring), calibrated by its earlier calls."""
    notebooks = list(notebooks)
    records = _plan_records(run_folder, notebooks) if records is None else records
    identity = _judge_identity(run_folder, notebooks, profile)
    earlier = earlier_calls(identity["endpoint"], identity["model"], exclude=run_folder)
    if identity.get("backend") == "embedded":
        rule, sampled = _embedded_base(run_folder, notebooks)
        templates = records["template_id"].nunique()
        rule.prompt = (
            f"SmolLM2 tokenizer with its chat template on {sampled} sampled requests (up to {SAMPLE_SIZE} per "
            f"template, {templates} templates), scaled to every request's characters"
        )
        _, n_completion, pooled = _calibrate(rule, records, earlier, prompts=False)
        rule.completion = (
            f"earlier runs of this judge, per template: {n_completion} calls (the simulated answers' SmolLM2 "
            f"tokens x {pooled:.2f})"
            if n_completion
            else "the simulated judge's answers through the SmolLM2 tokenizer (no earlier run of this judge; a real "
            "model's answers are longer)"
        )
        return rule
    rule = TokenRule(prompt="", completion="")
    n_prompt, n_completion, pooled = _calibrate(rule, records, earlier, prompts=True)
    rule.prompt = (
        f"chars/4 x {rule.prompt_factor['*']:.2f} (measured on {n_prompt} earlier calls of this judge)"
        if n_prompt
        else "chars/4 (no earlier run of this judge)"
    )
    rule.completion = (
        f"chars/4 of the simulated answers x {pooled:.2f} (per template, measured on {n_completion} earlier calls "
        "of this judge)"
        if n_completion
        else "chars/4 of the simulated judge's answers (no earlier run of this judge; a real model's answers are "
        "longer)"
    )
    return rule


def _method(run_folder: Path, nb: str) -> str:
    path = run_folder / nb / METHOD_FILE
    if not path.is_file():
        return "exact requests (no recommenders)"
    return str(json.loads(path.read_text(encoding="utf-8")).get("requests", ""))


def plan_summary(run_folder: Path, profile: JudgeProfile, notebooks: Iterable[str]) -> pd.DataFrame:
    """Per notebook and in total: how its requests were rendered, calls the run would pay for (cached ones
    excluded), tokens by the judge's rule (``attrs``: the rule in words), cost with and without Batch, and hours at
    the profile's concurrency. ``estimated_calls`` counts chained requests whose prompt depends on earlier answers
    (their tokens are estimates; every completion-token count is one). A panel's plan is its members' plans summed
    (:func:`panel_plan_summary`)."""
    notebooks = list(notebooks)
    if isinstance(profile, PanelProfile):
        return _panel_plan_summary(run_folder, profile, notebooks)
    price_in, price_out = _prices(profile)
    latency = _judge_latency(profile, exclude=run_folder)
    records = _plan_records(run_folder, notebooks)
    rule = token_rule(profile, run_folder, notebooks, records)
    fresh = records.loc[~records["cached"]].copy()
    fresh["pt"], fresh["ct"] = rule.tokens(fresh) if len(fresh) else (np.array([]), np.array([]))
    rows = []
    for nb in notebooks:
        mine = fresh.loc[fresh["notebook"] == nb]
        pt, ct = int(mine["pt"].sum()), int(mine["ct"].sum())
        price = {"input": price_in, "output": price_out}
        rows.append(
            {
                "notebook": nb,
                "requests": _method(run_folder, nb),
                "calls": len(mine),
                "cached": int((records["notebook"] == nb).sum()) - len(mine),
                "prompt_tokens": pt,
                "completion_tokens": ct,
                "estimated_calls": int(mine["chained"].sum()),
                "cost_usd": usd(pt, ct, price),
                "cost_usd_batch": usd(pt, ct, price, batch=True),
                "hours": len(mine) * latency.seconds / max(1, profile.max_concurrency) / 3600,
            }
        )
    table = with_total(pd.DataFrame(rows, columns=_PLAN_COLUMNS))
    table.loc[table["notebook"] == "TOTAL", "requests"] = ""
    table.attrs.update(
        latency_s=latency.seconds,
        latency_source=latency.source,
        prices=(price_in, price_out),
        prompt_token_rule=rule.prompt,
        completion_token_rule=rule.completion,
    )
    return table


def _panel_plan_summary(run_folder: Path, profile: PanelProfile, notebooks: Iterable[str]) -> pd.DataFrame:
    """A panel's plan: each member's plan (its own records under ``members/<member>/``, token rule, prices and
    latency: :func:`plan_summary`), summed per notebook (members are asked one after the other, so their hours add
    up too); ``attrs["members"]`` holds each member's table."""
    notebooks = list(notebooks)
    tables = {m.name: plan_summary(member_folder(run_folder, m.name), m, notebooks) for m in profile.member_profiles}
    numeric = [c for c in _PLAN_COLUMNS if c not in ("notebook", "requests")]
    table = next(iter(tables.values())).copy()  # every member's table has the same rows: the notebooks, then TOTAL
    for other in list(tables.values())[1:]:
        for column in numeric:  # column by column: integer counts stay integers
            table[column] = table[column] + other[column].to_numpy()
    table["requests"] = [_method(run_folder, nb) if nb != "TOTAL" else "" for nb in table["notebook"]]

    def each(key: str) -> str:
        return "; ".join(f"{name}: {t.attrs[key]}" for name, t in tables.items())

    prices = [t.attrs["prices"] for t in tables.values()]
    table.attrs.update(
        latency_s=float(sum(t.attrs["latency_s"] for t in tables.values())),
        latency_source="the members' latencies added up (" + each("latency_source") + ")",
        prices=(round(float(sum(p[0] for p in prices)), 9), round(float(sum(p[1] for p in prices)), 9)),
        prompt_token_rule=each("prompt_token_rule"),
        completion_token_rule=each("completion_token_rule"),
        members={name: t.to_dict("records") for name, t in tables.items()},
    )
    return table
