"""What a chapter got from its judge, in words: how many answers could be read and why the rest could not.

Every chapter runs to its end with any mix of parsed, unparsed and failed judgments (counted by
:class:`~recjudge_utils.judge.records.AnswerHealth`): :func:`health_sentence` says so where a number cannot be
computed, :func:`unanswerable_warning` stands instead of a verdict where the question cannot be answered at all.
"""

from __future__ import annotations

from recjudge_utils.judge.records import AnswerHealth
from recjudge_utils.reporting.callouts import Callout, admonition
from recjudge_utils.reporting.text import chapter_text

__all__ = ["NO_PARSED", "health_sentence", "unanswerable_warning"]

#: the cell a table shows where no parsed judgment exists to compute it from
NO_PARSED = "no parsed judgment"


def health_sentence(health: AnswerHealth, noun: str = "answers", reasons: int = 3) -> str:
    """``"0 of 32 answers could be read; the other 32 (32 unparsed): 32 × no JSON object found in answer."``"""
    if health.n == 0:
        return f"No {noun} were asked for."
    head = f"{health.parsed} of {health.n} {noun} could be read"
    if not health.unusable:
        return head + "."
    shown = [f"{k} × {why}" for why, k in health.reasons[:reasons]]
    rest = sum(k for _, k in health.reasons[reasons:])
    shown += [f"{rest} for other reasons"] if rest else []
    split = [f"{health.unparsed} unparsed"] if health.unparsed else []
    split += [f"{health.errors} failed call{'s' if health.errors != 1 else ''}"] if health.errors else []
    return f"{head}; the other {health.unusable} ({', '.join(split)}): " + "; ".join(shown) + "."


def unanswerable_warning(question: str, health: AnswerHealth, noun: str = "answers") -> Callout:
    """The warning a chapter shows where its question cannot be answered at all: what it asked, what it got, and
    what to try. Nothing else in the chapter claims a finding then; the results file still records the counts."""
    body = chapter_text("common")("unanswerable", question=question, health=health_sentence(health, noun))
    return Callout(admonition("admonition", body, title="No usable judgments", classes=("warning",)))
