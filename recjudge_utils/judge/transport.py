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
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from recjudge_utils.judge.types import JudgeError

__all__ = ["Downgrade", "Failure", "RetryPolicy", "call_with_retries", "classify_openai_error", "retry_after_seconds"]

T = TypeVar("T")


class Downgrade(Exception):
    """The backend rejected a request option it can do without (``json_schema``, ``logprobs``)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


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
        if failure.retry_after is not None:
            ra = min(failure.retry_after, self.max_retry_after)
            return ra + random.uniform(0.0, min(1.0, 0.1 * ra + 0.05))
        cap = min(self.backoff_max, self.backoff_base * (2**attempt))
        return random.uniform(cap / 2.0, cap)  # "equal jitter"


def retry_after_seconds(headers: object) -> float | None:
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


def classify_openai_error(exc: Exception, timeout: float) -> Failure:
    """Timeouts, connection errors, 408/409/425/429 and 5xx are retryable; a 400 that names ``json_schema`` /
    ``response_format`` or ``logprobs`` raises :class:`Downgrade` so the caller can drop that option."""
    import openai  # imported here so that importing the module stays cheap

    if isinstance(exc, openai.APITimeoutError):
        return Failure(True, f"timeout after {timeout:.0f}s")
    if isinstance(exc, openai.APIConnectionError):
        return Failure(True, f"connection error: {exc}")
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        low = str(exc.message).lower()
        if code == 400 and ("json_schema" in low or "response_format" in low):
            raise Downgrade("json_schema") from exc
        if (code == 400 and "logprobs" in low) or "logprobs is not supported" in low:
            raise Downgrade("logprobs") from exc
        retryable = code in (408, 409, 425, 429) or code >= 500
        headers = getattr(getattr(exc, "response", None), "headers", None)
        return Failure(retryable, f"HTTP {code}: {exc.message}", retry_after_seconds(headers))
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
