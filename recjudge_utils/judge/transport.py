"""Getting one answer over an unreliable network: retries with backoff, and what counts as retryable.

:func:`call_with_retries` runs one attempt function until it succeeds, a non-retryable error occurs, or the
retries are spent, sleeping with exponential backoff and jitter in between and honouring ``Retry-After``
(seconds, HTTP date or ``retry-after-ms``). :func:`classify_openai_error` says how an ``openai`` SDK error is
to be treated; it is shared by every backend that talks the OpenAI protocol (remote, embedded, Batch).
"""

from __future__ import annotations

import contextlib
import email.utils
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from recjudge_utils.judge.types import JudgeError

__all__ = [
    "Downgrade",
    "Failure",
    "RetryPolicy",
    "call_with_retries",
    "classify_openai_error",
    "rejected_parameters",
]

T = TypeVar("T")


class Downgrade(Exception):
    """The endpoint rejected a request parameter or value it can do without (``temperature``, ``max_tokens``,
    ``logprobs``, ``seed``, ``json_schema`` ...): ``names`` are the parameters the error names, most specific first."""

    def __init__(self, names: tuple[str, ...], message: str = "") -> None:
        super().__init__(", ".join(names))
        self.names = names
        self.message = message

    @property
    def what(self) -> str:
        """The first parameter the endpoint rejected."""
        return self.names[0]


@dataclass(frozen=True)
class Failure:
    """How to treat an exception raised by one attempt."""

    retryable: bool
    description: str
    retry_after: float | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` retries after the first attempt; backoff ``base * 2**attempt`` capped at ``backoff_max``."""

    max_retries: int = 6
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    max_retry_after: float = 600.0

    def delay(self, attempt: int, failure: Failure) -> float:
        """Seconds to wait before retry ``attempt``: the server's Retry-After, else jittered backoff."""
        if failure.retry_after is not None:
            ra = min(failure.retry_after, self.max_retry_after)
            return ra + random.uniform(0.0, min(1.0, 0.1 * ra + 0.05))
        cap = min(self.backoff_max, self.backoff_base * (2**attempt))
        return random.uniform(cap / 2.0, cap)  # "equal jitter"


def _retry_after_seconds(headers: object) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date), else None."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    ms = get("retry-after-ms")
    if ms:
        with contextlib.suppress(ValueError):
            return max(0.0, float(ms) / 1000.0)
    ra = get("retry-after")
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        with contextlib.suppress(TypeError, ValueError):
            when = email.utils.parsedate_to_datetime(ra)
            return max(0.0, when.timestamp() - time.time())
    return None


#: request parameters an endpoint may reject that a judgment can do without (or send under another name)
_ADAPTABLE_PARAMETERS = (
    "max_completion_tokens",
    "max_tokens",
    "top_logprobs",
    "logprobs",
    "temperature",
    "seed",
    "reasoning_effort",
    "json_schema",
    "response_format",
    "top_p",
    "frequency_penalty",
    "presence_penalty",
    "parallel_tool_calls",
    "service_tier",
    "store",
)
# words with which providers say that a parameter or its value is not accepted
_REJECTION = re.compile(
    r"unsupported|not supported|does not support|unknown (?:name|field|parameter)|unrecognized|not permitted|"
    r"extra (?:inputs|fields)|only the default|not allowed|invalid (?:parameter|value|argument)|cannot find field",
    re.IGNORECASE,
)


def _error_fields(exc: Exception) -> tuple[str, str | None]:
    """(message, ``param``) of an SDK status error, whatever the provider's error shape."""
    body = getattr(exc, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], dict):  # Gemini wraps its error in a list
        body = body[0]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    message = str(getattr(exc, "message", "") or "")
    param = None
    if isinstance(body, dict):
        message = str(body.get("message") or message)
        raw = body.get("param")
        param = str(raw) if raw else None
    return message, param


def rejected_parameters(message: str, param: str | None = None, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The request parameters a 400 names as unsupported, most specific first (empty: not a parameter error).

    ``param`` is the error's own field (OpenAI, Azure); otherwise the parameter is read from the message, quoted
    names first (``'max_tokens'``, ``"logprobs"``), then bare words, and only when the message says that
    something is unsupported, unknown or not permitted. ``extra`` adds names a profile sends in ``extra_body``.
    """
    known = (*_ADAPTABLE_PARAMETERS, *extra)
    names: list[str] = []
    if param:
        leaf = param.split(".")[-1].strip("[]'\"")
        if leaf in known:
            names.append(leaf)
    if not _REJECTION.search(message) and not names:
        return ()
    low = message.lower()

    def first(pattern: str) -> list[str]:
        """Known names the message matches with ``pattern``, in the order they appear in it."""
        found = [(m.start(), n) for n in known if (m := re.search(pattern.format(re.escape(n)), low))]
        return [n for _, n in sorted(found)]

    quoted = first(r"[\'\"`]{}[\'\"`]")
    bare = first(r"(?<![a-z_]){}(?![a-z_])")
    for n in (*quoted, *bare):
        if n not in names:
            names.append(n)
    if "json_schema" in low:  # "response_format json_schema is not supported": the schema mode, not any format
        names = ["json_schema", *(n for n in names if n != "json_schema")]
    return tuple(names)


def classify_openai_error(exc: Exception, timeout: float, extra_parameters: tuple[str, ...] = ()) -> Failure:
    """Timeouts, connection errors, 408/409/425/429 and 5xx are retryable; a 400 (or 422) that names a request
    parameter or value the endpoint does not accept raises :class:`Downgrade` so the backend can adapt the request."""
    import openai  # imported here so that importing the module stays cheap

    if isinstance(exc, openai.APITimeoutError):
        return Failure(True, f"timeout after {timeout:.0f}s")
    if isinstance(exc, openai.APIConnectionError):
        return Failure(True, f"connection error: {exc}")
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        message, param = _error_fields(exc)
        if code in (400, 422):
            names = rejected_parameters(message, param, extra_parameters)
            if names:
                raise Downgrade(names, message) from exc
        elif "logprobs is not supported" in message.lower():
            raise Downgrade(("logprobs",), message) from exc
        retryable = code in (408, 409, 425, 429) or code >= 500
        headers = getattr(getattr(exc, "response", None), "headers", None)
        return Failure(retryable, f"HTTP {code}: {message}", _retry_after_seconds(headers))
    return Failure(False, f"{type(exc).__name__}: {exc}")


def call_with_retries(
    attempt: Callable[[], T],
    classify: Callable[[Exception], Failure],
    policy: RetryPolicy,
    what: str,
    where: str,
    scrub: Callable[[str], str] = lambda s: s,
) -> tuple[T, int]:
    """Run ``attempt`` with retries; return (result, attempts). :class:`Downgrade` passes through.

    Raises:
        JudgeError: a non-retryable error, or the last retry failed; the message names ``what`` and ``where``.
    """
    last = ""
    for n in range(policy.max_retries + 1):
        try:
            return attempt(), n + 1
        except Downgrade:
            raise
        except Exception as exc:
            failure = classify(exc)
            last = scrub(failure.description)
            if not failure.retryable:
                raise JudgeError(f"{what} failed (not retryable) at {where}: {last}") from None
            if n < policy.max_retries:
                time.sleep(policy.delay(n, failure))
    raise JudgeError(f"{what} failed after {policy.max_retries + 1} attempts at {where}: {last}")
