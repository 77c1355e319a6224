"""Reading a generated sentence for its claim and its numbers, not its wording.

A takeaway such as "The intervals do not overlap: in this run co-occurrence scores higher than embedding (the paper:
12.5 % against 1.5 %)" is tested for what it says: that the intervals are apart, which side is higher, and the
numbers it carries. These helpers find that with a few direction and negation words and the names the test passes,
so a reworded sentence still passes and a flipped claim (overlap for apart, the other winner, a wrong number) fails.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "about",
    "affirms",
    "clauses",
    "counts_in",
    "denies",
    "has_number",
    "interval_after",
    "intervals_in",
    "markdown_table",
    "numbers_in",
    "says_apart",
    "says_higher",
    "says_no_ranking",
    "says_overlap",
    "sentences",
]

# 1,100  12.5  −0.010  -3  .5 is not written by the reporting layer; a thousands comma needs three digits after it
_NUMBER = r"[−-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[−-]?\d+(?:\.\d+)?"
_NUMBER_RE = re.compile(rf"(?<![\w.])(?:{_NUMBER})(?!\w)")
_INTERVAL_RE = re.compile(rf"({_NUMBER})\s*%?\s*\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\]")
_COUNT_RE = re.compile(rf"({_NUMBER})\s+of\s+(?:the\s+)?({_NUMBER})\b")

_HIGHER = r"higher|highest|above|more|better|beats?|ahead|exceeds?|outscores?|larger|greater|best"
_LOWER = r"lower|lowest|below|less|worse|behind|smaller|fewer"
_NEGATION = r"\b(?:cannot|can't|can ?not|not|no|never|neither|nor)\b"


def _float(token: str) -> float:
    return float(token.replace(",", "").replace("−", "-"))


def numbers_in(text: str) -> list[float]:
    """Every number written in ``text``, in order (``1,100`` is 1100.0, ``−0.01`` is -0.01)."""
    return [_float(m.group(0)) for m in _NUMBER_RE.finditer(text)]


def has_number(text: str, value: float, tol: float = 1e-9) -> bool:
    """``text`` writes ``value`` (to within ``tol``; pass half the last shown digit for a rounded figure)."""
    return any(abs(x - value) <= tol for x in numbers_in(text))


def intervals_in(text: str) -> list[tuple[float, float, float]]:
    """Every ``estimate [low, high]`` in ``text`` (a ``%`` between estimate and bracket allowed), in order."""
    return [tuple(_float(g) for g in m.groups()) for m in _INTERVAL_RE.finditer(text)]  # type: ignore[misc]


def interval_after(text: str, name: str) -> tuple[float, float, float]:
    """The first ``estimate [low, high]`` written after ``name``; AssertionError when there is none."""
    at = text.find(name)
    assert at >= 0, f"{name!r} not in {text!r}"
    found = intervals_in(text[at + len(name) :])
    assert found, f"no 'estimate [low, high]' after {name!r} in {text!r}"
    return found[0]


def counts_in(text: str) -> list[tuple[int, int]]:
    """Every ``a of b`` (``12 of 24``, ``3 of the 8``) in ``text`` as ``(a, b)``."""
    return [(int(_float(a)), int(_float(b))) for a, b in _COUNT_RE.findall(text)]


def clauses(text: str) -> list[str]:
    """``text`` cut at sentence and clause punctuation: ``. ; :`` followed by a space or the end (not inside a number
    such as ``12.5``)."""
    return [c.strip() for c in re.split(r"[.;:](?:\s+|$)", text) if c.strip()]


def _negated(clause: str) -> bool:
    """A negation word in ``clause`` outside its parenthesised asides ("(which does not prove there is none)")."""
    return bool(re.search(_NEGATION, re.sub(r"\([^()]*\)", "", clause), re.I))


def _names(name: str | Iterable[str]) -> str:
    names = [name] if isinstance(name, str) else list(name)
    return r"(?<!\w)(?:" + "|".join(re.escape(n) for n in names) + r")(?!\w)"


def says_higher(text: str, a: str | Iterable[str], b: str | Iterable[str]) -> bool:
    """Some clause of ``text`` ranks ``a`` above ``b`` (``a ... higher/above/beats ... b`` or ``b ... lower/below
    ... a``) and does not negate it (``cannot``, ``not``, ``no``). ``a`` and ``b`` may be several spellings."""
    na, nb = _names(a), _names(b)
    up = re.compile(rf"{na}.*?\b(?:{_HIGHER})\b.*?{nb}", re.I)
    down = re.compile(rf"{nb}.*?\b(?:{_LOWER})\b.*?{na}", re.I)
    return any((up.search(c) or down.search(c)) and not _negated(c) for c in clauses(text))


def affirms(text: str, pattern: str) -> bool:
    """Some clause of ``text`` matches the regular expression ``pattern`` (case-insensitive) and negates nothing: the
    sentence makes that claim (``affirms(s, "less than 95")`` for "covers less than 95 %")."""
    return any(re.search(pattern, c, re.I) and not _negated(c) for c in clauses(text))


def denies(text: str, pattern: str) -> bool:
    """Some clause of ``text`` matches ``pattern`` under a negation (``not``, ``cannot``, ``no``): the sentence declines
    that claim ("is not shown to cover less than 95 %")."""
    return any(re.search(pattern, c, re.I) and _negated(c) for c in clauses(text))


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (a full stop followed by a space or the end; not inside ``12.5``)."""
    return [s.strip() for s in re.split(r"\.(?:\s+|$)", text) if s.strip()]


def about(items: Iterable[str], *words: str) -> str:
    """The one item among ``items`` that contains every one of ``words`` (a takeaway picked by its topic, not its
    position); AssertionError unless exactly one does."""
    found = [t for t in items if all(w in t for w in words)]
    assert len(found) == 1, f"{len(found)} items contain {words}: {found}"
    return found[0]


def markdown_table(text: str, first_header: str) -> dict[str, dict[str, str]]:
    """The Markdown table in ``text`` whose header row starts with ``first_header``: each row's cells by header, keyed
    by the row's first cell (an escaped ``\\|`` stays inside its cell)."""
    lines = text.splitlines()
    (start,) = [i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |")]

    def cells(line: str) -> list[str]:
        return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]

    header, rows = cells(lines[start]), []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(cells(line))
    return {row[0]: dict(zip(header, row, strict=True)) for row in rows}


def says_apart(text: str) -> bool:
    """``text`` says two intervals do not overlap (``do not overlap``, ``does not overlap``, ``are apart``,
    ``separate``)."""
    return bool(
        re.search(r"\b(?:do|does|did)\s+not\s+overlap|\bdon't overlap|\bno overlap|\bapart\b|\bseparate\b", text, re.I)
    )


def says_overlap(text: str) -> bool:
    """``text`` says two intervals overlap (an ``overlap`` that is not negated)."""
    negated = re.compile(r"(?:\bnot|n't|\bno)\s+overlap", re.I)
    return any(not negated.search(text[max(0, m.start() - 12) : m.end()]) for m in re.finditer(r"overlap", text, re.I))


def says_no_ranking(text: str) -> bool:
    """``text`` declines to rank or tell apart (``cannot rank``, ``cannot tell``, ``cannot order``, ``no ranking``)."""
    return bool(re.search(r"\b(?:cannot|can't|can not)\s+(?:rank|tell|order|say|test)|\bno ranking\b", text, re.I))
