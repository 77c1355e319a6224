"""Caveats, takeaways and exercises as MyST admonitions, displayed from a notebook cell.

Each function returns a :class:`Callout` (one admonition's MyST source). A notebook shows it as ``text/markdown``,
which the book renders as MyST (``nb_render_markdown_format: myst``), so ``{cite:p}`` and ``{term}`` roles resolve
there; JupyterLab cannot resolve them, so each output also carries ``text/html``
(:func:`recjudge_utils.myst_html.myst_to_html`), which Lab shows and the book does not (``nb_mime_priority_overrides``
in ``book/_config.yml``). :class:`MySTText` (:func:`myst`) is the same pair for any MyST text a chapter displays.
The words are ``text/common.yaml``; the simulated judge's admonition has a class of its own (``simulated``, styled in
``book/_static/callouts.css``), so that it never looks like a caveat about an LLM.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from recjudge_utils.judge.backends.sim import SIM_PREFIX
from recjudge_utils.myst_html import myst_to_html
from recjudge_utils.reporting.text import chapter_text

__all__ = [
    "Callout",
    "MySTText",
    "admonition",
    "exercise",
    "judge_caveat",
    "judge_caveat_sentence",
    "myst",
    "simulated_judge_note",
    "small_model",
    "stand_in_note",
    "takeaways",
]

T = chapter_text("common")
_BACKTICK_RUN = re.compile(r"`+")
#: how the book names judges whose numbers cannot be read as a judge's opinion
_SMALL_MODEL_MARKERS = ("SmolLM2-135M",)


def small_model(judge_name: str) -> bool:
    """The judge is one of the tiny embedded models that judge close to randomly."""
    return any(m in judge_name for m in _SMALL_MODEL_MARKERS)


def judge_caveat_sentence(judge_name: str) -> str | None:
    """The sentence every chapter prints beside a simulated or small embedded judge's numbers (None for others)."""
    if judge_name.startswith(SIM_PREFIX):
        return T("caveat.simulated", judge=judge_name)
    return T("caveat.small", judge=judge_name) if small_model(judge_name) else None


@dataclass(frozen=True, repr=False)
class MySTText:
    """MyST text displayed from a notebook cell: ``text/markdown`` (the source, which the book renders) and
    ``text/html`` (which JupyterLab shows); a console prints the source."""

    text: str

    def _repr_markdown_(self) -> str:
        return self.text

    def _repr_html_(self) -> str | None:
        return myst_to_html(self.text)

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


def myst(text: str) -> MySTText:
    """MyST ``text`` to display in the book and in JupyterLab alike (IPython's ``Markdown``: raw MyST in Lab)."""
    return MySTText(text)


@dataclass(frozen=True, repr=False)
class Callout(MySTText):
    """One admonition's MyST source, displayed as :class:`MySTText` is."""


def admonition(directive: str, body: str, title: str | None = None, classes: Iterable[str] = ()) -> str:
    """The MyST source of ``directive`` (``note``, ``admonition`` ...) with an optional title and CSS classes around
    ``body``, fenced one backtick longer than any backtick run in it (so a nested directive cannot close it)."""
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
    """A small embedded model's warning, the simulated judge's note, or None for any other judge (nothing to show)."""
    if judge_label.startswith(SIM_PREFIX):
        return simulated_judge_note(judge_label)
    sentence = judge_caveat_sentence(judge_label)
    return Callout(admonition("admonition", sentence, "Judge caveat", ("warning",))) if sentence else None


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
    body = T("stand_in", data=dataset_label, paper_data=paper_data) + (f" {detail.strip()}" if detail else "")
    return Callout(admonition("admonition", body, title="Stand-in data", classes=("note",)))


def takeaways(items: Iterable[str]) -> Callout:
    """The chapter's closing admonition: key takeaways, one bullet each (computed from the run by the caller)."""
    return Callout(admonition("admonition", _bullets(items), title="Key takeaways", classes=("takeaways",)))


def exercise(title: str, body: str, solution: str) -> Callout:
    """An exercise with its solution hidden in a dropdown (opened by a click, in the book and in JupyterLab)."""
    hidden = admonition("admonition", solution, title="Solution", classes=("dropdown",))
    return Callout(admonition("admonition", f"{body.strip()}\n\n{hidden}", f"Exercise: {title}", ("exercise",)))
