"""Caveats, learning goals, takeaways and exercises as MyST admonitions, displayed from a notebook cell.

Each function returns a :class:`Callout`: its ``text`` is the MyST source of one admonition, and a notebook shows it
as a ``text/markdown`` output. The book renders that output as an admonition because ``book/_config.yml`` sets
myst-nb's ``nb_render_markdown_format: myst``; JupyterLab does the same with the jupyterlab-myst extension (without
it, the reader sees the MyST source, which still reads as text). ``{cite:p}`` and ``{term}`` roles inside an output
resolve in the book build (the output is parsed into the page's own document), so the text given to these functions
may use them; JupyterLab cannot resolve them.

The judge caveat's sentences are :func:`recjudge_utils.reporting.display.judge_caveat`'s, so a printed caveat and an
admonition never say different things. The simulated judge gets an admonition of its own (class ``simulated``,
styled in ``book/_static/callouts.css``) so that it never looks like a caveat about an LLM.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from recjudge_utils.judge.backends.sim import SIM_PREFIX
from recjudge_utils.reporting.display import judge_caveat as judge_caveat_sentence

__all__ = [
    "Callout",
    "admonition",
    "exercise",
    "judge_caveat",
    "learning_goals",
    "simulated_judge_note",
    "stand_in_note",
    "takeaways",
]

_BACKTICK_RUN = re.compile(r"`+")


@dataclass(frozen=True, repr=False)
class Callout:
    """One admonition's MyST source; a notebook displays it as Markdown (``text/markdown``), a console as the source."""

    text: str

    def _repr_markdown_(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


def admonition(directive: str, body: str, title: str | None = None, classes: Iterable[str] = ()) -> str:
    """The MyST source of one directive: ``directive`` (``note``, ``warning``, ``admonition`` ...) with an optional
    title (the directive's argument) and CSS classes, around ``body``.

    The fence is one backtick longer than the longest backtick run in ``body``, so a body holding code or another
    directive (the exercise's solution dropdown) nests without closing the outer fence early."""
    longest = max((len(m.group()) for m in _BACKTICK_RUN.finditer(body)), default=0)
    fence = "`" * max(3, longest + 1)
    head = f"{fence}{{{directive}}}" + (f" {title}" if title else "")
    names = " ".join(classes)
    options = f":class: {names}\n" if names else ""
    return f"{head}\n{options}{body.strip()}\n{fence}"


def _bullets(items: Iterable[str]) -> str:
    lines = [f"- {item.strip()}" for item in items]
    if not lines:
        raise ValueError("a list callout needs at least one item")
    return "\n".join(lines)


def judge_caveat(judge_label: str) -> Callout | None:
    """A warning where a small embedded model's numbers appear, the simulated judge's note for the simulated judge,
    None for any other judge (nothing to display)."""
    if judge_label.startswith(SIM_PREFIX):
        return simulated_judge_note(judge_label)
    sentence = judge_caveat_sentence(judge_label)
    if sentence is None:
        return None
    return Callout(admonition("admonition", sentence, title="Judge caveat", classes=("warning",)))


def simulated_judge_note(judge_label: str = SIM_PREFIX, parameters: Mapping[str, float] | None = None) -> Callout:
    """The note beside every number of the simulated judge, with the error-model parameters when given."""
    sentence = judge_caveat_sentence(judge_label)
    if sentence is None or not judge_label.startswith(SIM_PREFIX):
        raise ValueError(f"{judge_label!r} is not a simulated judge (its name starts with {SIM_PREFIX!r})")
    if parameters:
        settings = ", ".join(f"{name.replace('_', ' ')} {value:g}" for name, value in parameters.items())
        sentence += f"\n\nError model: {settings}."
    return Callout(admonition("admonition", sentence, title="Simulated judge", classes=("simulated",)))


def stand_in_note(dataset_label: str, paper_data: str = "the paper's data", detail: str = "") -> Callout:
    """A note that the numbers below come from a labelled stand-in for ``paper_data``; ``detail`` may say why."""
    body = (
        f"**{dataset_label}** stands in here for {paper_data}: the numbers below show the method at work on it and "
        "are not comparable cell by cell with the paper's."
    )
    if detail:
        body += " " + detail.strip()
    return Callout(admonition("admonition", body, title="Stand-in data", classes=("note",)))


def learning_goals(items: Iterable[str]) -> Callout:
    """The chapter's opening admonition: what the reader will learn, one bullet per goal."""
    return Callout(admonition("admonition", _bullets(items), title="What you will learn", classes=("learning-goals",)))


def takeaways(items: Iterable[str]) -> Callout:
    """The chapter's closing admonition: key takeaways, one bullet each (computed from the run by the caller)."""
    return Callout(admonition("admonition", _bullets(items), title="Key takeaways", classes=("takeaways",)))


def exercise(title: str, body: str, solution: str) -> Callout:
    """An exercise with its solution hidden in a dropdown (opened by a click, in the book and in JupyterLab)."""
    hidden = admonition("admonition", solution, title="Solution", classes=("dropdown",))
    return Callout(
        admonition("admonition", f"{body.strip()}\n\n{hidden}", title=f"Exercise: {title}", classes=("exercise",))
    )
