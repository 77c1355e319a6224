"""The introduction's one judgment, end to end: a real user, a candidate item, one call through the judge client.

``run(judge, dataset, IntroductionConfig(...)) -> IntroductionRun``, the shape of every experiment: the run holds the
judgment (parsed, unparsed or failed, with its reason and raw answer) and writes its score to ``results.json``.
:func:`overview` counts what the page shows of the data before it asks the judge anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd

from recjudge_utils.data import Dataset, dataset_statistics
from recjudge_utils.experiments.run import Result, Run, result
from recjudge_utils.judge.types import Judge, JudgeRequest, JudgeResult, make_request
from recjudge_utils.prompts import load_prompt
from recjudge_utils.protocols.single import ask_one

__all__ = ["DataOverview", "IntroductionConfig", "IntroductionRun", "fit_request", "overview", "run"]


@dataclass(frozen=True)
class IntroductionConfig:
    """The notebook's parameters: the seed that draws the candidate, and how many history items the prompt shows."""

    seed: int = 0
    n_history: int = 5


def fit_request(dataset: Dataset, seed: int = 0, n_history: int = 5) -> JudgeRequest:
    """The first user's last ``n_history`` items and a random candidate, rendered from ``introduction/fit`` in the
    dataset's words (``Dataset.domain``)."""
    tpl = load_prompt("introduction/fit")
    inter = dataset.interactions
    user = int(inter["user"].iloc[0])
    history = inter[inter["user"] == user].sort_values("timestamp").tail(n_history)
    titles = dataset.items.set_index("item").loc[history["item"], "title"].tolist()
    candidate = dataset.items.sample(1, random_state=seed).iloc[0]
    return make_request(
        tpl,
        tpl.render(
            history="; ".join(titles),
            candidate=f"{candidate['title']} ({', '.join(candidate['genres'])})",
            domain=dataset.domain,
        ),
        answer_options={"fields": ("score",)},
        json_schema={"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]},
        label_options=("1", "2", "3", "4", "5"),
        label_field="score",
        metadata={
            "user": user,
            "item": int(candidate["item"]),
            # what the disclosure table says the judge was told: the words and the item fields shown
            "domain_words": " / ".join(
                (dataset.domain.item, dataset.domain.items, dataset.domain.consumed, dataset.domain.platform)
            ),
            "item_fields": "title (history); title, genres (candidate)",
        },
    )


@dataclass(frozen=True)
class DataOverview:
    """The dataset at a glance: its size, its first ratings, and how ratings fall over stars and genres."""

    label: str  # the dataset's display label
    statistics: dict[str, Any]  # users, items, interactions, categories, density (:func:`dataset_statistics`)
    first: pd.DataFrame  # the first interactions with the item's title (NaN: the item is not in the catalogue)
    ratings: pd.Series  # ratings given per star level
    genres: pd.Series  # ratings per genre, most first (a movie counts once for each of its genres)
    genre_share: pd.Series  # the same as a share of all ratings
    high_share: float  # the share of ratings of four stars or more (NaN without ratings)


def overview(dataset: Dataset, n_first: int = 5) -> DataOverview:
    """What the introduction shows of ``dataset`` before it asks the judge anything."""
    inter = dataset.interactions
    genres = inter[["item"]].merge(dataset.items[["item", "genres"]], on="item").explode("genres")["genres"]
    counts = genres.dropna().value_counts()
    return DataOverview(
        label=dataset.display_label,
        statistics=dataset_statistics(dataset).iloc[0].to_dict(),
        first=inter.head(n_first).merge(dataset.items[["item", "title"]], on="item", how="left"),
        ratings=inter["rating"].value_counts().sort_index(),
        genres=counts,
        genre_share=counts / len(inter),
        high_share=float((inter["rating"] >= 4).mean()) if len(inter) else math.nan,
    )


@dataclass(kw_only=True)
class IntroductionRun(Run):
    """The one judgment: its request (user, candidate) and what came back."""

    experiment: ClassVar[str] = "introduction"

    config: IntroductionConfig
    judgment: JudgeResult[Any]

    @property
    def score(self) -> int | None:
        """The parsed score (None when the answer could not be read or the call failed)."""
        value = self.judgment.value
        return int(value["score"]) if self.judgment.ok and value is not None else None

    def results(self) -> list[Result]:
        """The score (null unless parsed) and whether the answer was read."""
        return [result("score", self.score, n=1), result("parsed", int(self.judgment.ok), n=1)]

    def items(self) -> dict[str, list[dict[str, Any]]]:
        """The one judged (user, item) pair and its score."""
        meta = self.judgment.request.metadata or {}
        return {"scores": [{"user": meta.get("user"), "item": meta.get("item"), "label": self.score}]}


def run(judge: Judge, dataset: Dataset, config: IntroductionConfig | None = None) -> IntroductionRun:
    """Ask the judge the introduction's question once; the run says parsed / unparsed / error and why."""
    cfg = config or IntroductionConfig()
    judgment = ask_one(judge, fit_request(dataset, cfg.seed, cfg.n_history))
    return IntroductionRun(config=cfg, judge_name=judge.model_name, data_label=dataset.display_label, judgment=judgment)
