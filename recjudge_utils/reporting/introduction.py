"""What the introduction shows: the data at a glance, one judgment in detail, and what that judgment showed. Headers
and labels are written here, captions in the notebook; ``text/introduction.yaml`` holds the takeaways, whose wording
depends on the judgment. The counts come from :func:`recjudge_utils.experiments.introduction.overview`."""

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
from recjudge_utils.reporting.tables import rows_table
from recjudge_utils.reporting.text import chapter_text

__all__ = [
    "first_ratings", "judgment_table", "ratings_figure", "ratings_sentence", "statistics_table", "takeaways_items"
]  # fmt: skip

T = chapter_text("introduction")


def statistics_table(view: DataOverview, caption: str) -> Styler:
    """The dataset's size in words: users, items, interactions, categories and density (% of user-item pairs)."""
    s = view.statistics
    counts = [f"{s[k]:,}" for k in ("users", "items", "interactions", "categories")]
    columns = ["users", "items", "interactions", "categories (genres)", "density (% of user-item pairs)"]
    return rows_table(caption, columns, [[*counts, f"{100 * s['density']:.2f}"]])


def first_ratings(view: DataOverview, caption: str) -> Styler:
    """The first interactions as a reader reads them: user, item and its title, rating, date (UTC)."""
    f = view.first
    when = pd.to_datetime(f["timestamp"], unit="s", utc=True).dt.strftime("%Y-%m-%d %H:%M")
    titles = f["title"].fillna("(not in the catalogue)")
    rows = zip(f["user"], f["item"], titles, f["rating"].map("{:g}".format), when, strict=True)
    columns = ["user", "item", "title", "rating (stars)", "rated on (UTC)"]
    return rows_table(caption, columns, [list(r) for r in rows])


def ratings_figure(view: DataOverview) -> Figure:
    """Ratings given (left) and ratings per genre (right; a movie counts once per genre)."""
    colours = palette(2)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), gridspec_kw={"width_ratios": [1, 2]})
    sns.barplot(x=view.ratings.index, y=view.ratings.to_numpy(), ax=axes[0], color=colours[0])
    sns.barplot(x=view.genres.to_numpy(), y=view.genres.index, ax=axes[1], color=colours[1])
    axes[0].set(title="Ratings given", xlabel="rating (stars)", ylabel="count")
    axes[1].set(title="Ratings per genre", xlabel="ratings (a movie counts once per genre)", ylabel="")
    return done(fig)


def ratings_sentence(view: DataOverview) -> Callout:
    """What the ratings figure shows: the share of ratings of 4 stars or more and the three genres most rated."""
    named = ", ".join(f"{genre} ({100 * share:.0f} %)" for genre, share in view.genre_share.head(3).items())
    return Callout(
        f"{100 * view.high_share:.0f} % of the {view.statistics['interactions']:,} ratings are four stars or more. "
        f"The genres with the most ratings are {named}: the share of all ratings given to a movie of that genre "
        "(a movie can have several genres)."
    )


def judgment_table(result: JudgeResult[dict[str, int]], judge_name: str, caption: str) -> Styler:
    """One judgment as two columns (what, value): judge, question, status, parsed score or the reason it has none,
    raw answer, label probabilities and expected score when the judge reports them, tokens, and where it came from."""
    question = next((m["content"] for m in reversed(result.request.messages) if m["role"] == "user"), "")
    value, probs, expected = result.value, result.label_probs or {}, result.expected_label
    rows = {"judge": judge_name, "prompt file": f"prompts/{result.request.template_id}.md",
            "question": " ".join(question.split()),
            "domain words (item / items / consumed / platform)": (result.request.metadata or {}).get("domain_words"),
            "item fields shown": (result.request.metadata or {}).get("item_fields"), "status": result.status,
            "parsed score": "none" if value is None else ", ".join(f"{k} {v}" for k, v in value.items()),
            "why it has no score": result.reason or None, "raw answer": repr(result.raw_text),
            "label probabilities": ", ".join(f"{k}: {v:.3f}" for k, v in probs.items()) or None,
            "expected score": f"{expected:.2f}" if probs and expected is not None else None,
            "tokens in / out": f"{result.prompt_tokens:,} / {result.completion_tokens:,}",
            "answered from": "the cache (this call cost nothing)" if result.cache_hit else "the judge (a new call)",
            }  # fmt: skip
    return rows_table(caption, ["what", "value"], [[what, v] for what, v in rows.items() if v is not None])


def takeaways_items(result: JudgeResult[dict[str, int]], judge_name: str) -> list[str]:
    """The introduction's key takeaways, from its one judgment: what came back, what it cost, what it cannot show."""
    said = T("takeaways.no_answer") if result.raw_text is None else _inline_code(result.raw_text)
    if result.ok and result.value is not None:
        outcome = "takeaways.parsed"
    elif result.status == "unparsed":
        outcome = "takeaways.unparsed"
    else:
        outcome = "takeaways.error"
    score = ", ".join(f"{v}" for v in (result.value or {}).values())
    items = [T(outcome, judge=judge_name.split(" (", 1)[0], said=said, score=score,
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
