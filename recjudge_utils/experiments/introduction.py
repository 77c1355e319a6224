"""The introduction's one judgment, end to end: a real user, a candidate movie, one call through the judge client."""

from __future__ import annotations

from recjudge_utils.data import Dataset
from recjudge_utils.judge.types import Judge, JudgeRequest, JudgeResult, make_request
from recjudge_utils.prompts import load_prompt
from recjudge_utils.protocols.single import ask_one

__all__ = ["fit_request", "one_judgment"]


def fit_request(dataset: Dataset, seed: int = 0, n_history: int = 5) -> JudgeRequest:
    """The first user's last ``n_history`` movies and a random candidate, rendered from ``introduction/fit``."""
    tpl = load_prompt("introduction/fit")
    inter = dataset.interactions
    user = int(inter["user"].iloc[0])
    history = inter[inter["user"] == user].sort_values("timestamp").tail(n_history)
    titles = dataset.items.set_index("item").loc[history["item"], "title"].tolist()
    candidate = dataset.items.sample(1, random_state=seed).iloc[0]
    return make_request(
        tpl,
        tpl.render(history="; ".join(titles), candidate=f"{candidate['title']} ({', '.join(candidate['genres'])})"),
        answer_options={"fields": ("score",)},
        json_schema={"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]},
        label_options=("1", "2", "3", "4", "5"),
        label_field="score",
        metadata={"user": user, "item": int(candidate["item"])},
    )


def one_judgment(judge: Judge, dataset: Dataset, seed: int = 0) -> JudgeResult[dict[str, int]]:
    """Ask the judge the introduction's question once; the result says parsed / unparsed / error and why."""
    return ask_one(judge, fit_request(dataset, seed))
