"""What the introduction shows: the data at a glance, and one judgment in detail."""

from __future__ import annotations

import matplotlib.pyplot as plt
import seaborn as sns
from matplotlib.figure import Figure

from recjudge_utils.data import Dataset
from recjudge_utils.judge.types import JudgeResult

__all__ = ["judgment_lines", "ratings_figure"]


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
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1, 2]})
    sns.countplot(data=ds.interactions, x="rating", ax=axes[0], color="C0")
    axes[0].set(title="Ratings given", xlabel="rating (1-5 stars)", ylabel="count")
    sns.barplot(data=genre_counts, y="genres", x="ratings", ax=axes[1], color="C1")
    axes[1].set(title="Ratings per genre (a movie counts once per genre)", xlabel="ratings", ylabel="")
    fig.suptitle(ds.label, y=1.02)
    fig.tight_layout()
    plt.close(fig)
    return fig


def judgment_lines(result: JudgeResult[dict[str, int]], judge_name: str) -> list[str]:
    """Text lines for one judgment: judge, status, value, reason, raw answer, label probabilities if any."""
    lines = [
        f"judge: {judge_name}",
        f"status: {result.status} | parsed value: {result.value} | reason: {result.reason}",
        f"raw answer: {result.raw_text!r}",
    ]
    if result.label_probs:
        lines.append("label probabilities: " + str({k: round(v, 3) for k, v in result.label_probs.items()}))
        if result.expected_label is not None:
            lines.append(f"expected score: {result.expected_label:.2f}")
    return lines
