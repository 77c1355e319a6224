"""Which labelled pairs the judge is shown as few-shot examples, and which it is asked to judge.

Few-shot examples never come from the users being evaluated (no leakage); :func:`sample_eval_pairs` draws the
judged pairs from the other users.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.answer_formats.json_levels import LEVELS
from recjudge_utils.protocols.context.serendipity import as_item_list, item_texts, lookup

__all__ = ["examples_from_records", "sample_eval_pairs", "select_few_shot_examples"]


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
    return _example_frame(ex, items, label_col=label_col)


def _example_frame(rows: pd.DataFrame, items: pd.DataFrame, label_col: str = "g") -> pd.DataFrame:
    """The few-shot frame the scorer reads (the columns :func:`select_few_shot_examples` documents) for the labelled
    pairs ``rows``, in their order."""
    texts = item_texts(items)
    has_aux = {"relevance", "unexpectedness"} <= set(rows.columns)
    out = pd.DataFrame(
        {
            "user": rows["user"].astype(int).to_numpy(),
            "item": rows["item"].astype(int).to_numpy(),
            "g": rows[label_col].astype(int).to_numpy(),
        }
    )
    if has_aux:
        out["relevance"] = rows["relevance"].astype(int).to_numpy()
        out["unexpectedness"] = rows["unexpectedness"].astype(int).to_numpy()
    else:
        out["relevance"] = out["g"].to_numpy()
        out["unexpectedness"] = out["g"].to_numpy()
    out["history_text"] = [[lookup(texts, i) for i in as_item_list(h)] for h in rows["history"]]
    out["candidate_text"] = [lookup(texts, i) for i in rows["item"]]
    out["aux_source"] = "data" if has_aux else "g"
    return out.reset_index(drop=True)


def examples_from_records(
    pairs: pd.DataFrame, items: pd.DataFrame, records: Sequence[Mapping[str, Any]], label_col: str = "g"
) -> pd.DataFrame:
    """The few-shot frame of examples recorded elsewhere (chapter 1's hand-over: user, item, g, relevance,
    unexpectedness per example, in prompt order), rebuilt from ``pairs`` so that the history and item texts are
    those of the pairs the examples were drawn from.

    ValueError when an example is not among ``pairs`` or its recorded labels differ from the pairs' (the record was
    written from other data), so a caller never shows examples the data does not hold.
    """
    keyed = pairs.reset_index(drop=True).drop_duplicates(["user", "item"]).set_index(["user", "item"], drop=False)
    keys = [(int(r["user"]), int(r["item"])) for r in records]
    missing = [k for k in keys if k not in keyed.index]
    if missing:
        raise ValueError(f"{len(missing)} recorded example(s) are not among the pairs, e.g. (user, item) {missing[0]}")
    out = _example_frame(keyed.loc[keys], items, label_col=label_col)
    for col in ("g", "relevance", "unexpectedness"):
        recorded = [r.get(col) for r in records]
        differ = [k for k, a, b in zip(keys, recorded, out[col], strict=True) if a is not None and int(a) != int(b)]
        if differ:
            raise ValueError(f"recorded {col} differs from the pairs' for {len(differ)} example(s), e.g. {differ[0]}")
    return out
