"""What the introduction shows: the data at a glance, one judgment in detail, and what that judgment showed. The
words are ``text/introduction.yaml``; the counts come from :func:`recjudge_utils.experiments.introduction.overview`."""

from __future__ import annotations

import math
import re

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.experiments.introduction import DataOverview
from recjudge_utils.judge.backends.sim import SIM_PREFIX
from recjudge_utils.judge.types import JudgeResult
from recjudge_utils.reporting.callouts import Callout
from recjudge_utils.reporting.figures import done, palette
from recjudge_utils.reporting.tables import text_table
from recjudge_utils.reporting.text import chapter_text

__all__ = [
    "first_ratings", "judgment_table", "ratings_figure", "ratings_sentence", "statistics_table", "takeaways_items"
]  # fmt: skip

T = chapter_text("introduction")


def statistics_table(view: DataOverview) -> Styler:
    """The dataset's size in words: users, items, interactions, categories and density (% of user-item pairs)."""
    s = view.statistics
    counts = [f"{s[k]:,}" for k in ("users", "items", "interactions", "categories")]
    return text_table(
        T, "captions.statistics", "columns.statistics", [[*counts, f"{100 * s['density']:.2f}"]], data=view.label
    )


def first_ratings(view: DataOverview) -> Styler:
    """The first interactions as a reader reads them: user, item and its title, rating, date (UTC)."""
    f = view.first
    when = pd.to_datetime(f["timestamp"], unit="s", utc=True).dt.strftime("%Y-%m-%d %H:%M")
    titles = f["title"].fillna(T("not_in_catalogue"))
    rows = zip(f["user"], f["item"], titles, f["rating"].map("{:g}".format), when, strict=True)
    return text_table(T, "captions.first", "columns.first", [list(r) for r in rows])


def ratings_figure(view: DataOverview) -> Figure:
    """Ratings given (left) and ratings per genre (right; a movie counts once per genre)."""
    colours = palette(2)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), gridspec_kw={"width_ratios": [1, 2]})
    sns.barplot(x=view.ratings.index, y=view.ratings.to_numpy(), ax=axes[0], color=colours[0])
    sns.barplot(x=view.genres.to_numpy(), y=view.genres.index, ax=axes[1], color=colours[1])
    for ax, key in zip(axes, ("ratings", "genres"), strict=True):
        title, xlabel, ylabel = T.raw(f"figure.{key}")
        ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    return done(fig)


def ratings_sentence(view: DataOverview) -> Callout:
    """What the ratings figure shows: the share of ratings of 4 stars or more and the three genres most rated."""
    named = ", ".join(T("genre", genre=g, share=f"{100 * v:.0f}") for g, v in view.genre_share.head(3).items())
    n = view.statistics["interactions"]
    return Callout(T("ratings", high=f"{100 * view.high_share:.0f}", n=f"{n:,}", named=named))


def judgment_table(result: JudgeResult[dict[str, int]], judge_name: str) -> Styler:
    """One judgment as two columns (what, value): judge, question, status, parsed score or the reason it has none,
    raw answer, label probabilities and expected score when the judge reports them, tokens, and where it came from."""
    question = next((m["content"] for m in reversed(result.request.messages) if m["role"] == "user"), "")
    value, probs, expected = result.value, result.label_probs or {}, result.expected_label
    rows = {"judge": judge_name, "prompt": f"prompts/{result.request.template_id}.md",
            "question": " ".join(question.split()),
            "words": (result.request.metadata or {}).get("domain_words"),
            "fields": (result.request.metadata or {}).get("item_fields"), "status": result.status,
            "score": T("judgment.no_score") if value is None else ", ".join(f"{k} {v}" for k, v in value.items()),
            "reason": result.reason or None, "raw": repr(result.raw_text),
            "probs": ", ".join(f"{k}: {v:.3f}" for k, v in probs.items()) or None,
            "expected": f"{expected:.2f}" if probs and expected is not None else None,
            "tokens": f"{result.prompt_tokens:,} / {result.completion_tokens:,}",
            "source": T("judgment.cached") if result.cache_hit else T("judgment.called")}  # fmt: skip
    return text_table(
        T, "captions.judgment", "columns.judgment", [[T(f"judgment.{k}"), v] for k, v in rows.items() if v is not None]
    )


def takeaways_items(result: JudgeResult[dict[str, int]], judge_name: str) -> list[str]:
    """The introduction's key takeaways, from its one judgment: what came back, what it cost, what it cannot show."""
    said = T("takeaways.no_answer") if result.raw_text is None else _inline_code(result.raw_text)
    key = "parsed" if result.ok and result.value is not None else "unparsed" if result.status == "unparsed" else "error"
    score = ", ".join(f"{v}" for v in (result.value or {}).values())
    items = [T(f"takeaways.{key}", judge=judge_name.split(" (", 1)[0], said=said, score=score,
               reason=result.reason or T("takeaways.no_reason"))]  # fmt: skip
    if result.label_probs and result.expected_label is not None:
        items.append(T("takeaways.expected", expected=f"{result.expected_label:.2f}"))
    usd = T("takeaways.cost", usd=f"{result.cost_usd:.4f}" if math.isfinite(result.cost_usd) else "")
    tokens = {"tokens_in": f"{result.prompt_tokens:,}", "tokens_out": f"{result.completion_tokens:,}"}
    items.append(T("takeaways.cached") if result.cache_hit else T("takeaways.called", **tokens, cost=usd))
    if judge_name.startswith(SIM_PREFIX):
        source = T("takeaways.no_truth") if result.request.truth is None else T("takeaways.truth")
        items.append(T("takeaways.simulated", source=source))
    return [*items, T("takeaways.one_answer")]


def _inline_code(text: str) -> str:
    """``text`` as one Markdown code span, fenced with more backticks than it contains."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if "`" in text else ""  # a code span may not start or end with its own fence's character
    return f"{fence}{pad}{text}{pad}{fence}"
