"""Which labelled pairs the judge is shown as few-shot examples, and which it is asked to judge.

Few-shot examples never come from the users being evaluated (no leakage); :func:`sample_eval_pairs` draws the
judged pairs from the other users.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import numpy as np
import pandas as pd

from recjudge_utils.answer_formats.json_levels import LEVELS
from recjudge_utils.protocols.context.serendipity import as_item_list, item_texts, lookup

__all__ = ["sample_eval_pairs", "select_few_shot_examples"]


def sample_eval_pairs(
    pairs: pd.DataFrame, n_pairs: int | None, exclude_users: Iterable[int] = (), seed: int = 0
) -> pd.DataFrame:
    """A uniform random sample of ``n_pairs`` pairs from users not in ``exclude_users`` (all of them when None).

    Rows keep their original order (sorted by index) so results are stable; deterministic under ``seed``.
    """
    pool = pairs[~pairs["user"].isin(list(exclude_users))]
    if n_pairs is None or n_pairs >= len(pool):
        return pool.copy()
    return pool.sample(n=int(n_pairs), random_state=seed).sort_index()


def select_few_shot_examples(
    pairs: pd.DataFrame,
    items: pd.DataFrame,
    n_per_level: int = 2,
    exclude_users: Iterable[int] | None = None,
    seed: int = 0,
    label_col: str = "g",
) -> pd.DataFrame:
    """Pick ``n_per_level`` labelled pairs per score level (1..5) as few-shot examples.

    Examples never come from ``exclude_users`` (the users being evaluated): no leakage. Within a level, pairs
    are drawn at random (``seed``) preferring distinct users. The returned frame carries the rendered text, so
    the examples can be used with any items frame later (notebook 2 judges other datasets with them):

    columns user, item, g, relevance, unexpectedness, history_text (list[str], oldest first), candidate_text,
    aux_source. ``relevance`` / ``unexpectedness`` (shown in the CoT/LtM example answers) come from the pairs'
    own ``relevance`` / ``unexpectedness`` columns when the data has them (``aux_source="data"``); otherwise they
    are set to the example's g (``aux_source="g"``), i.e. the examples then only teach the final score. The
    rows are shuffled (``seed``) so that the levels are interleaved, and the order is the same for every template.
    A level with fewer candidates than ``n_per_level`` gives what it has, with a warning.
    """
    if n_per_level < 0:
        raise ValueError("n_per_level must be >= 0")
    excluded = set() if exclude_users is None else {int(u) for u in exclude_users}
    pairs = pairs.reset_index(drop=True)  # positional labels: a duplicated index cannot duplicate examples
    pool = pairs[~pairs["user"].isin(list(excluded))]
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for level in LEVELS:
        if n_per_level == 0:
            break
        cand = pool[pool[label_col].to_numpy() == level]
        if len(cand) < n_per_level:
            warnings.warn(
                f"only {len(cand)} candidate examples with {label_col}={level} (wanted {n_per_level})",
                stacklevel=2,
            )
        order = rng.permutation(len(cand))
        picked: list[int] = []
        used_users: set[int] = set()
        for pos in order:  # first pass: distinct users
            u = int(cand["user"].iloc[pos])
            if u not in used_users and len(picked) < n_per_level:
                picked.append(int(pos))
                used_users.add(u)
        for pos in order:  # second pass: fill up if there are too few distinct users
            if len(picked) >= n_per_level:
                break
            if int(pos) not in picked:
                picked.append(int(pos))
        chosen.extend(cand.index[picked].tolist())
    ex = pairs.loc[chosen]
    ex = ex.iloc[rng.permutation(len(ex))] if len(ex) else ex
    texts = item_texts(items)
    has_aux = {"relevance", "unexpectedness"} <= set(pairs.columns)
    out = pd.DataFrame(
        {
            "user": ex["user"].astype(int).to_numpy(),
            "item": ex["item"].astype(int).to_numpy(),
            "g": ex[label_col].astype(int).to_numpy(),
        }
    )
    if has_aux:
        out["relevance"] = ex["relevance"].astype(int).to_numpy()
        out["unexpectedness"] = ex["unexpectedness"].astype(int).to_numpy()
    else:
        out["relevance"] = out["g"].to_numpy()
        out["unexpectedness"] = out["g"].to_numpy()
    out["history_text"] = [[lookup(texts, i) for i in as_item_list(h)] for h in ex["history"]]
    out["candidate_text"] = [lookup(texts, i) for i in ex["item"]]
    out["aux_source"] = "data" if has_aux else "g"
    return out.reset_index(drop=True)
