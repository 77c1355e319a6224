"""What the introduction shows: the data at a glance, one judgment in detail, and what that judgment showed."""

from __future__ import annotations

import math
import re

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from recjudge_utils.data import Dataset, dataset_statistics
from recjudge_utils.judge.backends.sim import SIM_PREFIX
from recjudge_utils.judge.types import JudgeResult
from recjudge_utils.reporting.callouts import Callout
from recjudge_utils.reporting.figures import palette

__all__ = [
    "first_ratings",
    "judgment_table",
    "ratings_figure",
    "ratings_sentence",
    "statistics_table",
    "takeaways_items",
]


def statistics_table(ds: Dataset) -> pd.DataFrame:
    """The dataset's size in words: users, items, interactions, categories and density (% of user-item pairs)."""
    stats = dataset_statistics(ds).iloc[0]
    return pd.DataFrame(
        [
            {
                "users": f"{stats['users']:,}",
                "items": f"{stats['items']:,}",
                "interactions": f"{stats['interactions']:,}",
                "categories (genres)": f"{stats['categories']:,}",
                "density (% of user-item pairs)": f"{100 * stats['density']:.2f}",
            }
        ]
    )


def first_ratings(ds: Dataset, n: int = 5) -> pd.DataFrame:
    """The first ``n`` interactions as a reader reads them: user, item and its title, rating, date (UTC)."""
    head = ds.interactions.head(n).merge(ds.items[["item", "title"]], on="item", how="left")
    return pd.DataFrame(
        {
            "user": head["user"],
            "item": head["item"],
            "title": head["title"].fillna("(not in the catalogue)"),
            "rating (stars)": head["rating"].map(lambda r: f"{r:g}"),
            "rated on (UTC)": pd.to_datetime(head["timestamp"], unit="s", utc=True).dt.strftime("%Y-%m-%d %H:%M"),
        }
    )


def ratings_figure(ds: Dataset) -> Figure:
    """Ratings given (left) and ratings per genre (right; a movie counts once per genre)."""
    genre_counts = (
        ds.interactions[["item"]]
        .merge(ds.items[["item", "genres"]], on="item")
        .explode("genres")
        .dropna(subset=["genres"])
        .value_counts("genres")
        .rename("ratings")
        .reset_index()
    )
    colours = palette(2)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), gridspec_kw={"width_ratios": [1, 2]})
    sns.countplot(data=ds.interactions, x="rating", ax=axes[0], color=colours[0])
    axes[0].set(title="Ratings given", xlabel="rating (stars)", ylabel="count")
    sns.barplot(data=genre_counts, y="genres", x="ratings", ax=axes[1], color=colours[1])
    axes[1].set(title="Ratings per genre", xlabel="ratings (a movie counts once per genre)", ylabel="")
    fig.tight_layout()
    plt.close(fig)
    return fig


def ratings_sentence(ds: Dataset) -> Callout:
    """What the ratings figure shows, computed: the share of ratings of 4 stars or more and the three genres with the
    most ratings (a movie counts once per genre)."""
    ratings = ds.interactions["rating"]
    high = 100 * float((ratings >= 4).mean()) if len(ratings) else float("nan")
    genres = (
        ds.interactions[["item"]].merge(ds.items[["item", "genres"]], on="item").explode("genres").dropna()["genres"]
    )
    top = genres.value_counts().head(3)
    named = ", ".join(f"{genre} ({100 * count / len(ratings):.0f} %)" for genre, count in top.items())
    return Callout(
        f"{high:.0f} % of the {len(ratings):,} ratings are four stars or more. The genres with the most ratings are "
        f"{named}: the share of all ratings given to a movie of that genre (a movie can have several genres)."
    )


def judgment_table(result: JudgeResult[dict[str, int]], judge_name: str) -> pd.DataFrame:
    """One judgment as two columns (what, value): judge, question, status, parsed score or the reason it has none,
    raw answer, label probabilities and expected score when the judge reports them, tokens, and where it came from."""
    question = next((m["content"] for m in reversed(result.request.messages) if m["role"] == "user"), "")
    rows = [
        ("judge", judge_name),
        ("prompt file", f"prompts/{result.request.template_id}.md"),
        ("question", " ".join(question.split())),
        ("status", result.status),
        ("parsed score", "none" if result.value is None else ", ".join(f"{k} {v}" for k, v in result.value.items())),
    ]
    if result.reason:
        rows.append(("why it has no score", result.reason))
    rows.append(("raw answer", repr(result.raw_text)))
    if result.label_probs:
        probs = ", ".join(f"{k}: {v:.3f}" for k, v in result.label_probs.items())
        rows.append(("label probabilities", probs))
        if result.expected_label is not None:
            rows.append(("expected score", f"{result.expected_label:.2f}"))
    rows += [
        ("tokens in / out", f"{result.prompt_tokens:,} / {result.completion_tokens:,}"),
        ("answered from", "the cache (this call cost nothing)" if result.cache_hit else "the judge (a new call)"),
    ]
    return pd.DataFrame(rows, columns=["what", "value"])


def takeaways_items(result: JudgeResult[dict[str, int]], judge_name: str) -> list[str]:
    """The introduction's key takeaways, from its one judgment: what came back, what it cost, what it cannot show."""
    said = "no answer" if result.raw_text is None else _inline_code(result.raw_text)
    judge = judge_name.split(" (", 1)[0]  # the model's name without its details
    if result.status == "parsed" and result.value is not None:
        score = ", ".join(f"{v}" for v in result.value.values())
        answer = (
            f"The judge, {judge}, answered {said}, which parsed to the score {score} on the five-level scale: "
            "the whole pipeline (data, prompt file, judge client, parser) works end to end."
        )
    elif result.status == "unparsed":
        answer = (
            f"The judge, {judge}, answered {said}, which did not parse ({result.reason or 'no reason given'}): "
            "the chapters count such an answer as an {term}`unparseable answer` and never replace it by a default "
            "score."
        )
    else:
        answer = (
            f"The call to the judge, {judge}, failed ({result.reason or 'no reason given'}): the chapters count "
            "failed calls and leave their items unjudged."
        )
    items = [answer]
    if result.label_probs and result.expected_label is not None:
        items.append(
            f"This judge also reports its probabilities over the five levels: their expected score is "
            f"{result.expected_label:.2f}, a finer reading than the one label it wrote."
        )
    if result.cache_hit:
        items.append("The answer came from the disk cache: a rerun of this page asks the judge nothing.")
    else:
        items.append(
            f"The answer was a new call ({result.prompt_tokens:,} tokens in, {result.completion_tokens:,} out, "
            + (f"US$ {result.cost_usd:.4f}" if math.isfinite(result.cost_usd) else "price unknown for this model")
            + "); it is now cached, so a rerun of this page costs nothing."
        )
    if judge_name.startswith(SIM_PREFIX):
        source = (
            "this question carries no truth, so its score is noise around the middle of the scale"
            if result.request.truth is None
            else "its score comes from the truth the experiment attached, corrupted by its error model"
        )
        items.append(
            f"The {{term}}`simulated judge` answered here and never read the question: {source}. "
            "{doc}`Chapter 5 <05_protocols_detect>` shows what it is for."
        )
    items.append(
        "One answer says nothing about whether the judge is any good: {doc}`chapter 1 "
        "<01_serendipity_prompt_selection>` measures it against users' labels, {doc}`chapter 3 <03_recsys_arena>` "
        "and {doc}`chapter 4 <04_saer>` against swapped positions and adversarial lists."
    )
    return items


def _inline_code(text: str) -> str:
    """``text`` as one Markdown code span, fenced with more backticks than it contains."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if "`" in text else ""  # a code span may not start or end with its own fence's character
    return f"{fence}{pad}{text}{pad}{fence}"
