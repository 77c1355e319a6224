"""Steps several chapters share: which users are judged, what each recommender shows them, and how the serendipity
judge scores the items of their lists (chapters 2 and 7).

**Few-shot examples (chapters 2 and 7).** Tokutake et al. re-evaluate with "all other settings for the LLM-as-a-Judge
... consistent with those used in previous experiments" (Sec. 5), so :func:`few_shot_examples` takes chapter 1's
examples from its hand-over record in the run folder (the same pairs, in the same order), rebuilt from the labelled
pairs. It draws afresh, as chapter 1 does but never from a judged user, when chapter 1 has not run in this run,
selected no template, drew them with another ``n_shots`` / ``n_history`` or from other pairs, or when one of its
example users is judged here (then the user's own labelled pair would sit in the prompt that judges the user);
:class:`FewShotSource` says which and why. Examples of another domain than the judged dataset's (the labelled pairs
are movies, the judged items books) are not shown: the judge would read movies under the books' words, so it judges
zero-shot and says so.

Chapter 5 (what the protocols detect) calls these same functions, so its panels are built as the chapters build
theirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from recjudge_utils.data import SerendipityPairs
from recjudge_utils.data.domain import DomainWords
from recjudge_utils.judge.types import Judge
from recjudge_utils.paths import SELECTED_TEMPLATE_FILE, current_run_dir
from recjudge_utils.protocols.few_shot import examples_from_records, select_few_shot_examples
from recjudge_utils.protocols.pointwise_score import SerendipityJudge, load_selected_template
from recjudge_utils.protocols.truth import reevaluation_truth
from recjudge_utils.recommenders.base import Recommender
from recjudge_utils.splitting.temporal import last_items

__all__ = [
    "FewShotSource",
    "few_shot_examples",
    "judge_recommendations",
    "sample_users",
    "serendipity_scorer",
    "top_lists",
]


def sample_users(candidates: Iterable[int], n: int, seed: int | Sequence[int]) -> list[int]:
    """``n`` distinct users drawn with ``default_rng(seed)`` from the sorted candidates, sorted; all when ``n`` is 0
    or there are fewer candidates than ``n``."""
    pool = np.array(sorted({int(u) for u in candidates}))
    size = len(pool) if n == 0 else min(n, len(pool))
    rng = np.random.default_rng(seed)
    return sorted(int(u) for u in rng.choice(pool, size=size, replace=False))


def top_lists(
    models: Mapping[str, Recommender], users: Sequence[int], k: int, exclude_seen: bool = True
) -> dict[str, dict[int, list[int]]]:
    """Top-``k`` list per model per user (items the model saw the user consume excluded unless ``exclude_seen``
    is False)."""
    users_arr = np.asarray(list(users), dtype=np.int64)
    out: dict[str, dict[int, list[int]]] = {}
    for name, model in models.items():
        recs = model.recommend(users_arr, k=k, exclude_seen=exclude_seen)
        out[name] = {int(u): [int(i) for i in row] for u, row in zip(users_arr, recs, strict=True)}
    return out


@dataclass(frozen=True)
class FewShotSource:
    """The few-shot examples a chapter judges with, where they come from (``origin``) and why."""

    examples: pd.DataFrame  # the frame SerendipityJudge reads (see protocols.few_shot.select_few_shot_examples)
    origin: Literal["chapter 1", "fresh draw", "none"]
    why: str

    def line(self) -> str:
        """One printable sentence: which examples, from which users, and why."""
        if self.origin == "none":
            return f"few-shot examples: none (zero-shot); {self.why}"
        users = ", ".join(str(int(u)) for u in sorted(set(self.examples["user"])))
        n = len(self.examples)
        what = f"chapter 1's {n}" if self.origin == "chapter 1" else f"{n} drawn here, not chapter 1's"
        return f"few-shot examples: {what} (users {users or 'none'}); {self.why}"


def _chapter1_examples(
    example_pairs: SerendipityPairs,
    evaluated: set[int],
    dataset_name: str | None,
    n_shots: int,
    n_history: int,
    path: Path,
) -> tuple[pd.DataFrame | None, str]:
    """(chapter 1's examples rebuilt from ``example_pairs``, or None; the reason in words)."""
    if not path.is_file():
        return None, "chapter 1 has not run in this run"
    record = load_selected_template(path, default=None)
    if record.get("template") is None:
        return None, f"chapter 1 selected no template ({record.get('reason', 'no reason recorded')})"
    records = record.get("examples")
    if not isinstance(records, list) or not records:
        return None, "chapter 1's record holds no examples"
    if (record.get("n_shots"), record.get("n_history")) != (n_shots, n_history):
        return None, (
            f"chapter 1 drew {record.get('n_shots')} examples with {record.get('n_history')} history items, this "
            f"chapter asks for {n_shots} with {n_history}"
        )
    if record.get("data") != example_pairs.display_label:
        return None, f"chapter 1 drew them from {record.get('data')}, not from {example_pairs.display_label}"
    try:
        frame = examples_from_records(example_pairs.pairs, example_pairs.items, records)
    except ValueError as exc:
        return None, f"chapter 1's examples do not match these pairs ({exc})"
    # the labelled pairs' user ids name the users of one dataset; unknown (None): treat them as this dataset's
    users_of = example_pairs.extra.get("users_of")
    shared = set() if users_of is not None and users_of != dataset_name else {int(u) for u in frame["user"]} & evaluated
    if shared:
        return None, (
            f"chapter 1's example user(s) {', '.join(map(str, sorted(shared)))} are judged here, and no judged user's "
            "own labelled pair may sit in the prompt that judges them"
        )
    return (
        frame,
        f"chapter 1 drew them in this run (it selected {record['template']}); the paper keeps the judge's settings",
    )


def few_shot_examples(
    example_pairs: SerendipityPairs,
    evaluated_users: Iterable[int],
    n_shots: int,
    n_history: int,
    seed: int,
    dataset_name: str | None = None,
    record: str | Path | None = None,
    words: DomainWords | None = None,
) -> FewShotSource:
    """Chapter 1's few-shot examples when its hand-over ``record`` (default: the run folder's
    :data:`~recjudge_utils.paths.SELECTED_TEMPLATE_FILE`) holds them for the same ``n_shots`` / ``n_history`` and
    pairs, and none of their users is evaluated here; else ``n_shots`` examples (the same number per level) drawn
    from ``example_pairs`` with ``seed``, never from an evaluated user. ``dataset_name``: the judged dataset, whose
    user ids a conflict is checked against (see the module doc); ``words``: its domain words, when they differ from
    the labelled pairs' the judge is shown no examples (None: the pairs' own domain)."""
    if words is not None and words != example_pairs.domain:
        why = (f"the labelled pairs ({example_pairs.display_label}) are {example_pairs.domain.items}, the judged "
               f"{words.items} are another domain, whose judge would read them under the wrong words")  # fmt: skip
        return FewShotSource(example_pairs.pairs.iloc[:0], "none", why)
    evaluated = {int(u) for u in evaluated_users}
    path = Path(record) if record is not None else current_run_dir() / SELECTED_TEMPLATE_FILE
    frame, why = _chapter1_examples(example_pairs, evaluated, dataset_name, n_shots, n_history, path)
    if frame is not None:
        return FewShotSource(frame, "chapter 1", why)
    drawn = select_few_shot_examples(
        example_pairs.pairs, example_pairs.items, n_per_level=n_shots // 5, exclude_users=evaluated, seed=seed
    )
    if set(drawn["user"]) & evaluated:
        raise AssertionError("few-shot leakage: an evaluated user is also an example user")
    return FewShotSource(drawn, "fresh draw", f"seed {seed}, never from a judged user, because {why}")


def serendipity_scorer(
    judge: Judge,
    examples: pd.DataFrame,
    template: str,
    n_history: int,
    words: DomainWords,
    texts: Mapping[int, str] | None = None,
) -> SerendipityJudge:
    """The serendipity judge with the few-shot ``examples`` (:func:`few_shot_examples`), in the judged dataset's
    ``words`` (``Dataset.domain``), showing its items as its card says (``texts``:
    :func:`~recjudge_utils.data.folder.judge_item_texts`; None: the paper's item line)."""
    return SerendipityJudge(judge, template=template, examples=examples, n_history=n_history, words=words, texts=texts)


def judge_recommendations(
    recs: pd.DataFrame,
    train: pd.DataFrame,
    items: pd.DataFrame,
    judge: SerendipityJudge,
    n_history: int = 10,
    desc: str | None = None,
    future: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Judge each distinct (user, item) pair of ``recs`` once; returns the judge's frame (one row per pair).

    ``future`` (ratings after the training period) makes each request carry its truth for the simulated judge
    (:func:`recjudge_utils.protocols.truth.reevaluation_truth`); the judged pairs get columns ``truth_g`` etc.
    """
    pairs = recs[["user", "item"]].drop_duplicates().sort_values(["user", "item"]).reset_index(drop=True)
    hist = last_items(train, n_history)
    pairs["history"] = [hist.get(int(u), []) for u in pairs["user"]]
    if pairs.empty:
        return pd.DataFrame(columns=["user", "item", "score", "status"])
    if future is not None:
        pairs = reevaluation_truth(pairs, future, items, hist)
    judged = judge.score(pairs, items, desc=desc) if desc else judge.score(pairs, items)
    if len(judged) != len(pairs):
        raise RuntimeError(f"judge returned {len(judged)} rows for {len(pairs)} pairs")
    judged = judged.copy()
    judged["user"] = pairs["user"].to_numpy()
    judged["item"] = pairs["item"].to_numpy()
    for col in ("g", "relevance", "unexpectedness"):
        if col in pairs and future is not None:
            judged[f"truth_{col}"] = pairs[col].to_numpy()
    return judged
