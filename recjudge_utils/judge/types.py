"""The seams of the judge stage: what a protocol asks for, what it gets back, and who answers.

* :class:`JudgeRequest`: one judgment to ask for (messages, prompt identity, decoding settings, the answer
  format the prompt asks for, and the truth an experiment attaches for the simulated judge).
* :class:`Completion`: what a backend returned for one request (raw text, usage, logprobs); this is what
  the cache stores, so a changed parser never needs new calls.
* :class:`JudgeResult`: a completion after parsing, with its cost and accounting; ``to_row()`` gives the one
  row shape every table in the book is built from.
* :class:`Judge`: the protocol every experiment talks to (``JudgeClient`` implements it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from recjudge_utils.answer_formats.truth import Truth
from recjudge_utils.prompts.loader import Message, PromptTemplate

__all__ = [
    "Completion",
    "Judge",
    "JudgeError",
    "JudgeRequest",
    "JudgeResult",
    "MetadataValue",
    "Parser",
    "Status",
    "make_request",
]

Status = Literal["parsed", "unparsed", "error"]
MetadataValue = str | int | float | bool | None
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
Parser = Callable[[str], T]


class JudgeError(RuntimeError):
    """A judge call failed for good (after the last retry, or a non-retryable error)."""


@dataclass(frozen=True)
class JudgeRequest:
    """One judgment to ask for.

    Put fixed instructions and few-shot examples FIRST in ``messages`` and the per-item content LAST, so a
    backend can reuse the shared prompt prefix (the SAER and RecSys Arena prompts put their guidelines or
    aspects after the lists, as their papers do, and share only the text before the per-item content).
    ``answer_format`` names the format the prompt asks for (from the prompt file's front matter); the simulated
    judge answers in it. ``truth`` is what the experiment knows
    to be right for this item: never sent to an LLM backend, part of the simulated judge's cache key.
    ``metadata`` identifies the item (user, item, order, ...) in logs and rows and never changes the answer.
    """

    messages: tuple[Message, ...]
    template_id: str
    template_version: str
    max_tokens: int = 256
    temperature: float | None = None  # None: the judge profile's ``generation.temperature`` (or the endpoint's default)
    seed: int | None = 0
    json_schema: Mapping[str, object] | None = None
    label_options: tuple[str, ...] | None = None
    label_field: str | None = None
    answer_format: str | None = None
    #: the keyword options the answer format's parser is built with (``fields``, ``aspect_keys``, ``n_items``)
    answer_options: tuple[tuple[str, object], ...] = ()
    truth: Truth | None = field(default=None, compare=False)
    metadata: Mapping[str, MetadataValue] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))
        if self.label_options is not None and not isinstance(self.label_options, tuple):
            object.__setattr__(self, "label_options", tuple(str(o) for o in self.label_options))
        if not self.messages:
            raise ValueError("JudgeRequest.messages is empty")
        for m in self.messages:
            if not isinstance(m, dict) or "role" not in m or "content" not in m:
                raise ValueError(f"each message needs 'role' and 'content': {m!r}")


@dataclass(frozen=True)
class Completion:
    """One backend answer as stored in the cache (a plain dict on disk, see :meth:`to_dict`)."""

    text: str | None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    logprobs: list[list[object]] | None = None
    model: str | None = None
    latency_s: float | None = None
    route: str = "chat"
    batch_id: str | None = None
    #: hidden reasoning tokens, already counted in ``completion_tokens`` (they are billed as output)
    reasoning_tokens: int = 0

    def to_dict(self) -> dict[str, object]:
        """The completion as the cache stores it."""
        out: dict[str, object] = {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "logprobs": self.logprobs,
            "model": self.model,
            "latency_s": self.latency_s,
            "route": self.route,
        }
        if self.batch_id is not None:
            out["batch_id"] = self.batch_id
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> Completion:
        """A completion read back from the cache (missing or malformed counts become 0/None)."""

        def as_int(v: object) -> int:
            return int(v) if isinstance(v, int | float | str) and str(v) != "" else 0

        latency = d.get("latency_s")
        lp = d.get("logprobs")
        text = d.get("text")
        finish = d.get("finish_reason")
        model = d.get("model")
        batch_id = d.get("batch_id")
        return cls(
            text=None if text is None else str(text),
            finish_reason=None if finish is None else str(finish),
            prompt_tokens=as_int(d.get("prompt_tokens")),
            completion_tokens=as_int(d.get("completion_tokens")),
            reasoning_tokens=as_int(d.get("reasoning_tokens")),
            logprobs=lp if isinstance(lp, list) else None,
            model=None if model is None else str(model),
            latency_s=float(latency) if isinstance(latency, int | float) else None,
            route=str(d.get("route") or "chat"),
            batch_id=None if batch_id is None else str(batch_id),
        )


@dataclass
class JudgeResult(Generic[T]):
    """The outcome of one judgment. ``value`` is the parser's output when ``status == "parsed"``.

    Token counts are those of the answer (also for cache hits); ``cost_usd`` is what this call spent
    (0 for cache hits).
    """

    request: JudgeRequest
    status: Status
    raw_text: str | None
    value: T | None
    reason: str | None
    label_probs: dict[str, float] | None
    expected_label: float | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cost_usd: float
    cache_hit: bool
    argmax_label: str | None = None
    finish_reason: str | None = None
    cache_key: str | None = None
    attempts: int = 0
    reasoning_tokens: int = 0
    #: the output budget was spent before any answer (a reasoning model that thought too long)
    budget_spent: bool = False

    @property
    def ok(self) -> bool:
        """Whether the answer was parsed."""
        return self.status == "parsed"

    def to_row(self) -> dict[str, MetadataValue]:
        """The one row shape of a judgment: the request's metadata, then status, raw answer and accounting."""
        row: dict[str, MetadataValue] = dict(self.request.metadata or {})
        row.update(
            template_id=self.request.template_id,
            template_version=self.request.template_version,
            status=self.status,
            reason=self.reason,
            raw_text=self.raw_text,
            expected_label=self.expected_label,
            prompt_tokens=int(self.prompt_tokens),
            completion_tokens=int(self.completion_tokens),
            reasoning_tokens=int(self.reasoning_tokens),
            latency_s=float(self.latency_s),
            cost_usd=float(self.cost_usd),
            cache_hit=bool(self.cache_hit),
            attempts=int(self.attempts),
        )
        return row


def make_request(
    prompt: PromptTemplate,
    messages: Sequence[Message],
    *,
    answer_options: Mapping[str, object] | None = None,
    metadata: Mapping[str, MetadataValue] | None = None,
    truth: Truth | None = None,
    json_schema: Mapping[str, object] | None = None,
    label_options: Sequence[str] | None = None,
    label_field: str | None = None,
    max_tokens: int | None = None,
    seed: int | None = 0,
) -> JudgeRequest:
    """The one way a request is made: from its prompt file, which gives the template's id and version (with its
    content hash), the answer budget (front matter ``max_tokens``, unless ``max_tokens`` overrides it) and the answer
    format the client parses the answer with (built with ``answer_options``)."""
    budget = max_tokens if max_tokens is not None else prompt.get("max_tokens")
    if not isinstance(budget, int) or budget < 1:
        raise ValueError(f"{prompt.id}: the prompt file gives no positive max_tokens and none was passed")
    return JudgeRequest(
        messages=tuple(messages),
        template_id=prompt.id,
        template_version=prompt.key,
        max_tokens=budget,
        seed=seed,
        json_schema=json_schema,
        label_options=None if label_options is None else tuple(label_options),
        label_field=label_field,
        answer_format=prompt.answer_format,
        # lists become tuples: the client keys its parsers on the options
        answer_options=tuple(
            sorted((k, tuple(v) if isinstance(v, list | tuple) else v) for k, v in (answer_options or {}).items())
        ),
        truth=truth,
        metadata=metadata,
    )


class Judge(Protocol):
    """What every protocol and experiment needs from a judge: a name for titles and a batch call."""

    @property
    def model_name(self) -> str:
        """The judge's name for tables and titles."""
        ...

    def judge_many(
        self, requests: Sequence[JudgeRequest], parse: Callable[[str], Any] | None = None, desc: str | None = None
    ) -> list[JudgeResult[Any]]:
        """One result per request, in order, each parsed by its request's answer format; unparsed and failed answers
        are results too."""
        ...
