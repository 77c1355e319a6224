"""What a chapter got from its judge, in one sentence: how many answers could be read and why the rest could not.

Every chapter runs to its end with any mix of parsed, unparsed and failed judgments. Where a number cannot be computed
the chapter says so with :func:`AnswerHealth.sentence` ("0 of 32 answers could be read: 32 had no JSON object"), and
where the chapter's question cannot be answered at all it shows :func:`unanswerable_warning` instead of a verdict.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import pandas as pd

from recjudge_utils.judge.records import UNUSABLE_SHARE_FLAG, reason_kind
from recjudge_utils.reporting.callouts import Callout, admonition

__all__ = ["NO_PARSED", "AnswerHealth", "unanswerable_warning"]

#: the cell a table shows where no parsed judgment exists to compute it from
NO_PARSED = "no parsed judgment"
_STATUSES = ("parsed", "unparsed", "error")


def _text(reason: object) -> str | None:
    """A frame's reason cell as text: pandas gives NaN where a judgment has none."""
    return None if reason is None or (isinstance(reason, float) and pd.isna(reason)) else str(reason)


@dataclass(frozen=True)
class AnswerHealth:
    """Counts of one chapter's judgments by status, with the reasons of the unusable ones, most frequent first."""

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
        # grouped as the run manifest groups them: the quoted answer and the endpoint taken out
        bad = Counter(reason_kind(_text(r), s) for s, r in zip(status, why, strict=True) if s != "parsed")
        return cls(
            n=len(status),
            parsed=status.count("parsed"),
            unparsed=status.count("unparsed"),
            errors=status.count("error"),
            reasons=tuple(bad.most_common()),
        )

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
        """More than :data:`~recjudge_utils.judge.records.UNUSABLE_SHARE_FLAG` of the answers were unusable, as the
        run manifest flags a notebook."""
        return self.unusable > UNUSABLE_SHARE_FLAG * self.n

    @property
    def nothing_usable(self) -> bool:
        """No answer could be read (also when nothing was asked)."""
        return self.parsed == 0

    def sentence(self, noun: str = "answers", reasons: int = 3) -> str:
        """``"0 of 32 answers could be read: 32 had no JSON object."``; the ``reasons`` most frequent reasons."""
        if self.n == 0:
            return f"No {noun} were asked for."
        head = f"{self.parsed} of {self.n} {noun} could be read"
        if not self.unusable:
            return head + "."
        shown = [f"{k} × {why}" for why, k in self.reasons[:reasons]]
        rest = sum(k for _, k in self.reasons[reasons:])
        if rest:
            shown.append(f"{rest} for other reasons")
        return f"{head}; the other {self.unusable} ({self._split()}): " + "; ".join(shown) + "."

    def _split(self) -> str:
        parts = []
        if self.unparsed:
            parts.append(f"{self.unparsed} unparsed")
        if self.errors:
            parts.append(f"{self.errors} failed call{'s' if self.errors != 1 else ''}")
        return ", ".join(parts)


def unanswerable_warning(question: str, health: AnswerHealth, noun: str = "answers") -> Callout:
    """The warning a chapter shows where its question cannot be answered at all: what it asked, what it got, and
    what to try. Nothing else in the chapter claims a finding then; the results file still records the counts."""
    body = (
        f"**This run cannot answer {question}.** {health.sentence(noun)} Every table below shows what could be "
        "computed and marks the rest; no number is filled in. To get an answer, rerun the chapter with a judge that "
        'follows the answer format (a capable judge profile, or `judge = "sim"` to see the protocol at work), '
        "and check the unparsed answers below for what this judge wrote instead."
    )
    return Callout(admonition("admonition", body, title="No usable judgments", classes=("warning",)))
