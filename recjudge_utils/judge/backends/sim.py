"""The simulated judge: a backend of known quality that answers from the truth each request carries.

It exists to show, and to test, what each protocol measures and when it fails: an LLM of unknown quality cannot.
Every answer is written in the exact format the prompt asks for (the request's ``answer_format``), so the real
parsers read it. It is labelled "simulated judge" everywhere it appears and is never the default judge.

**The error model** (all probabilities per answer; ``Z`` a standard normal draw; one seeded generator per request,
from ``seed`` and the request's cache key, so the same request always gets the same answer):

* *context neglect* ``c``: with probability ``c`` the judge ignores the user's history and profile and has no
  information about the truth (it sees the scale midpoint, or no preference);
* *score noise* ``noise`` and *leniency* ``leniency``: a pointwise answer is ``round(truth + leniency + noise * Z)``
  clipped to the scale (five levels for scores; Poor / Partial / Good for SAER labels; an absolute list score
  uses the same on a [0, 1] scale divided by 4);
* pairwise: the perceived evidence difference ``s = (first - second) + noise * Z`` (the truth is the held-out
  positives each list holds; 0 under context neglect). A *strong* preference (``|s| >= margin``, default 0.5)
  names the list with more evidence, except that with *tie propensity* ``t`` it answers Tie anyway. A *weak or
  absent* preference names the list shown first with probability ``position_bias`` (``b``) and is a Tie otherwise;
  so with no preference the list shown first wins with probability ``b`` and ties ``1 - b``: a single-order win
  rate, ties counted half, of ``0.5 + b / 2``;
* *unparseable answers* ``unparseable``: with that probability the answer is prose no parser accepts;
* *failed calls* ``failing``: with that probability the call fails as a provider's would (no answer, an error the
  client records and never caches), drawn before everything else.

With every parameter at 0 the judge reproduces the truth exactly through every protocol.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import Field

from recjudge_utils.answer_formats import AnswerFormat, answer_format
from recjudge_utils.answer_formats.truth import LabelTruth, ListScoreTruth, PreferenceTruth, ScoreTruth, truth_to_dict
from recjudge_utils.judge.backends import register_backend
from recjudge_utils.judge.backends.base import (
    Backend,
    BackendOptions,
    CallOutcome,
    Deliver,
    Job,
    Lookup,
    PreparedCall,
)
from recjudge_utils.judge.transport import RetryPolicy
from recjudge_utils.judge.types import Completion, JudgeRequest

__all__ = ["SIM_PREFIX", "SimParameters", "SimulatedJudge", "simulated_answer"]

SIM_PREFIX = "simulated judge"
UNPARSEABLE_ANSWER = "I am not sure how to judge this one; both look reasonable to me."
#: the error a failing simulated call reports (``failing``)
SIMULATED_FAILURE = "simulated judge: the call failed (the failing parameter)"


class SimParameters(BackendOptions):
    """The simulated judge's error model, a sim profile's ``options:`` (:mod:`recjudge_utils.judge.backends.sim`)."""

    noise: float = Field(0.0, ge=0)
    leniency: float = 0.0
    position_bias: float = Field(0.0, ge=0, le=1)
    tie_propensity: float = Field(0.0, ge=0, le=1)
    context_neglect: float = Field(0.0, ge=0, le=1)
    unparseable: float = Field(0.0, ge=0, le=1)
    failing: float = Field(0.0, ge=0, le=1)
    margin: float = Field(0.5, ge=0)
    seed: int = 0

    def describe(self) -> str:
        """The judge's name in tables: 'simulated judge' and its non-zero parameters."""
        parts = [f"noise {self.noise:g}"]
        for name, label in (
            ("leniency", "leniency"),
            ("position_bias", "position bias"),
            ("tie_propensity", "tie propensity"),
            ("context_neglect", "context neglect"),
            ("unparseable", "unparseable"),
            ("failing", "failing"),
        ):
            value = getattr(self, name)
            if value:
                parts.append(f"{label} {value:g}")
        return f"{SIM_PREFIX} ({', '.join(parts)})"


def _rng(seed: int, key: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _required(request: JudgeRequest) -> list[str]:
    schema = request.json_schema or {}
    required = schema.get("required") if isinstance(schema, Mapping) else None
    return [str(f) for f in required] if isinstance(required, list | tuple) else []


def _level(truth: float, p: SimParameters, rng: np.random.Generator, low: int, high: int, neglect: bool) -> int:
    centre = (low + high) / 2 if neglect else truth
    return int(np.clip(np.rint(centre + p.leniency + p.noise * rng.standard_normal()), low, high))


def _prefer(truth: PreferenceTruth | None, p: SimParameters, rng: np.random.Generator) -> str:
    """'first', 'second' or 'tie' (see the module docstring)."""
    neglect = rng.random() < p.context_neglect
    diff = 0.0 if neglect or truth is None else float(truth.first - truth.second)
    s = diff + p.noise * rng.standard_normal()
    if abs(s) >= p.margin:
        if rng.random() < p.tie_propensity:
            return "tie"
        return "first" if s > 0 else "second"
    return "first" if rng.random() < p.position_bias else "tie"


# What the judge decides per answer field, by the truth type the format answers from (the error model above).
_Decide = Callable[[Any, SimParameters, np.random.Generator, Sequence[str], AnswerFormat], dict[str, Any]]


def _levels(
    truth: ScoreTruth | None, p: SimParameters, rng: np.random.Generator, fields: Sequence[str], fmt: AnswerFormat
) -> dict[str, int]:
    neglect = rng.random() < p.context_neglect
    values = {}
    for f in fields:
        t = None if truth is None else truth.level(f)
        if t is None and truth is not None:
            t = truth.level("score")
        values[f] = _level(3.0 if t is None else float(t), p, rng, 1, 5, neglect or t is None)
    return values


def _preferences(
    truth: PreferenceTruth | None, p: SimParameters, rng: np.random.Generator, fields: Sequence[str], fmt: AnswerFormat
) -> dict[str, str]:
    return {f: _prefer(truth, p, rng) for f in fields}


def _list_scores(
    truth: ListScoreTruth | None, p: SimParameters, rng: np.random.Generator, fields: Sequence[str], fmt: AnswerFormat
) -> dict[str, float]:
    neglect = rng.random() < p.context_neglect
    centre = 0.5 if neglect or truth is None else truth.value
    return {f: float(np.clip(centre + (p.leniency + p.noise * rng.standard_normal()) / 4.0, 0.0, 1.0)) for f in fields}


def _labels(
    truth: LabelTruth | None, p: SimParameters, rng: np.random.Generator, fields: Sequence[str], fmt: AnswerFormat
) -> dict[str, str]:
    neglect = rng.random() < p.context_neglect or truth is None
    labels, level = (fmt.labels, 1) if truth is None else (truth.labels, truth.level)
    return {f: labels[_level(float(level), p, rng, 0, len(labels) - 1, neglect)] for f in fields}


_DECIDE: dict[type, _Decide] = {
    ScoreTruth: _levels,
    PreferenceTruth: _preferences,
    ListScoreTruth: _list_scores,
    LabelTruth: _labels,
}


def simulated_answer(request: JudgeRequest, p: SimParameters, rng: np.random.Generator) -> str:
    """The answer text for one request, in the format its prompt asks for (rendered by the format's registry entry)."""
    if rng.random() < p.unparseable:
        return UNPARSEABLE_ANSWER
    try:
        fmt = answer_format(request.answer_format)
    except KeyError:
        raise ValueError(
            f"the simulated judge cannot answer format {request.answer_format!r} (request {request.template_id})"
        ) from None
    truth = request.truth if isinstance(request.truth, fmt.truth) else None
    return fmt.render(_DECIDE[fmt.truth](truth, p, rng, fmt.answer_fields(_required(request)), fmt))


@register_backend("sim")
class SimulatedJudge(Backend):
    """A judge of known quality (see the module docstring); options are the :class:`SimParameters` fields."""

    name = "sim"
    route = "sim"
    computes_answers = True
    options_model = SimParameters

    def __init__(self, model: str = "sim", offline: bool = False, **parameters: float) -> None:
        self.params = SimParameters(**parameters)
        self.api_model = model
        self.model_name = self.params.describe()
        self.endpoint_id = "sim:" + json.dumps(self.params.model_dump(), sort_keys=True)
        self.price_model = "local"
        self.max_concurrency = 1

    def prepare(self, request: JudgeRequest) -> PreparedCall:
        """The request's cache key: its messages, answer format and truth under these parameters."""
        params: dict[str, object] = {
            "model": self.api_model,
            "messages": [dict(m) for m in request.messages],
            "answer_format": request.answer_format,
        }
        return PreparedCall.for_request(
            request,
            params,
            endpoint=self.endpoint_id,
            model=self.api_model,
            response_format={"required": _required(request)},
            extra={"truth": truth_to_dict(request.truth), "answer_format": request.answer_format},
        )

    def complete_many(
        self, jobs: Sequence[Job], *, lookup: Lookup, deliver: Deliver, policy: RetryPolicy, stop: threading.Event
    ) -> None:
        """Answer every job from its truth, one seeded generator per request."""
        for job in jobs:
            if stop.is_set():
                return
            rng = _rng(self.params.seed, job.plan.key)
            if self.params.failing and rng.random() < self.params.failing:
                deliver(job, CallOutcome(job.plan, None, error=SIMULATED_FAILURE, attempts=1))
                continue
            text = simulated_answer(job.request, self.params, rng)
            prompt_chars = sum(len(str(m["content"])) for m in job.request.messages)
            completion = Completion(
                text=text,
                finish_reason="stop",
                prompt_tokens=max(1, prompt_chars // 4),
                completion_tokens=max(1, len(text) // 4),
                latency_s=0.0,
                route="sim",
            )
            deliver(job, CallOutcome(job.plan, completion, attempts=1))
