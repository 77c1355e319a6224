"""Accuracy and serendipity at k of recommendation lists, per user and averaged over folds
(paper: serendipity-llm-judge, Section 5, Table 3).

* accuracy: Precision/NDCG@k against the user's test positives (every evaluation user);
* serendipity: every reported list of a judged user is judged (its top k, Pop and Random included), and an item is
  serendipitous when its own score E is at least 4 (the paper, Sec. 5.1: "items receiving an LLM-as-a-Judge score
  E of four or higher were considered serendipitous"). Precision_ser@k is the share of the list's k slots holding
  such an item. NDCG_ser@k is the list's DCG with gain 1 for such an item (discount 1/log2(rank + 1)) divided by
  the DCG of the ideal ranking, which the paper does not define; here the ideal ranking is a list of k
  serendipitous items, ``IDCG = sum_{r=1..k} 1/log2(r + 1)``, because the judge scores only recommended items
  and no user has a known set of serendipitous items beyond them. Each list is thus scored on its own items
  only, so no list's score depends on which other recommenders were run; Avg.Score@k, the mean score of the list.

Unparsed judgments have no score: they count as "not shown to be serendipitous" in the numerators, are left
out of Avg.Score, and are counted per recommender. :func:`summarise` averages per fold and then over folds
(the paper's three-fold average); the 95% CI is a percentile bootstrap over users that recomputes that same
mean of fold means (no CI when only one user has a value: a bootstrap over one user is a zero-width interval).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.metrics.intervals import bootstrap_ci
from recjudge_utils.metrics.ranking import hit_matrix, ndcg_at_k, precision_at_k
from recjudge_utils.splitting.temporal import ground_truth

__all__ = [
    "METRICS", "METRIC_LABELS", "SERENDIPITY_METRICS", "SUMMARY_COLUMNS", "of_measure", "per_user_metrics", "summarise",
]  # fmt: skip

METRICS: tuple[str, ...] = ("p_acc", "n_acc", "p_ser", "n_ser", "avg")
SERENDIPITY_METRICS: tuple[str, ...] = ("p_ser", "n_ser", "avg")  # computed over the judged users only
#: the columns of :func:`summarise`: one row per RS and measure
SUMMARY_COLUMNS: tuple[str, ...] = ("rs", "measure", "value", "low", "high", "n")


METRIC_LABELS: dict[str, str] = {
    "p_acc": "Precision_acc@k",
    "n_acc": "NDCG_acc@k",
    "p_ser": "Precision_ser@k",
    "n_ser": "NDCG_ser@k",
    "avg": "Avg.Score@k",
}


def _lists(recs: pd.DataFrame, rs: str, users: np.ndarray, k: int) -> np.ndarray:
    sub = recs.loc[recs["rs"] == rs].sort_values(["user", "rank"])
    out = np.full((len(users), k), -1, dtype=np.int64)
    index = {int(u): r for r, u in enumerate(users)}
    rows = sub["user"].map(index)
    keep = rows.notna().to_numpy() & (sub["rank"].to_numpy() <= k)
    out[rows[keep].astype(int).to_numpy(), sub["rank"].to_numpy()[keep] - 1] = sub["item"].to_numpy()[keep]
    return out


def per_user_metrics(
    recs: pd.DataFrame,
    test: pd.DataFrame,
    judgments: pd.DataFrame | None,
    k: int = 20,
    threshold: float = 4,
    fold: int = 0,
) -> pd.DataFrame:
    """One row per (rs, user): p_acc, n_acc for every user in ``recs``; p_ser, n_ser, avg, n_unparsed for judged ones.

    Users are judged when ``judgments`` holds at least one of their pairs; other users get NaN serendipity columns.
    A list item is serendipitous when its own judged score is at least ``threshold``; a slot without a parsed
    score (or beyond the list's end) is not; the ideal ranking of N_ser is k serendipitous items (module docstring).
    A judged list none of whose scores parsed has NaN p_ser, n_ser and avg: there is nothing to count its slots
    against, and a 0 would be a number the judge never gave.
    """
    truth = ground_truth(test)
    users = np.sort(recs["user"].unique()).astype(np.int64)
    relevant = [truth.get(int(u), set()) for u in users]
    n_rel = np.array([len(r) for r in relevant])
    judged_users: np.ndarray = np.array([], dtype=np.int64)
    score_of: dict[tuple[int, int], float] = {}
    if judgments is not None and len(judgments):
        judged_users = np.sort(judgments["user"].unique()).astype(np.int64)
        scores = pd.to_numeric(judgments["score"], errors="coerce").to_numpy(dtype=float)
        for u, i, s in zip(judgments["user"].to_numpy(), judgments["item"].to_numpy(), scores, strict=True):
            score_of[(int(u), int(i))] = s
    is_judged = np.isin(users, judged_users)
    frames = []
    for rs in recs["rs"].unique():
        lists = _lists(recs, rs, users, k)
        hits = hit_matrix(lists, relevant)
        df = pd.DataFrame(
            {
                "fold": fold,
                "rs": rs,
                "user": users,
                "p_acc": precision_at_k(hits, k),
                "n_acc": ndcg_at_k(hits, n_rel, k),
                "judged": is_judged,
            }
        )
        for col in ("p_ser", "n_ser", "avg"):
            df[col] = np.nan
        df["n_unparsed"] = 0
        if is_judged.any():
            rows = np.flatnonzero(is_judged)
            sc = np.array(
                [[score_of.get((int(users[r]), int(i)), np.nan) for i in lists[r]] for r in rows], dtype=float
            ).reshape(len(rows), k)
            valid = lists[rows] >= 0
            scored = valid & ~np.isnan(sc)
            ser_hits = np.greater_equal(sc, threshold, where=scored, out=np.zeros(sc.shape, dtype=bool))
            n_scored = scored.sum(axis=1)
            # a list without one parsed score has no Avg.Score (NaN), and no "mean of empty slice" warning
            avg = np.where(n_scored > 0, np.where(scored, sc, 0.0).sum(axis=1) / np.maximum(n_scored, 1), np.nan)
            # a list with no parsed score measured nothing: its P_ser and N_ser are missing, not 0
            df.loc[rows, "p_ser"] = np.where(n_scored > 0, precision_at_k(ser_hits, k), np.nan)
            df.loc[rows, "n_ser"] = np.where(n_scored > 0, ndcg_at_k(ser_hits, np.full(len(rows), k), k), np.nan)
            df.loc[rows, "avg"] = avg
            df.loc[rows, "n_unparsed"] = (np.isnan(sc) & valid).sum(axis=1)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _mean_of_fold_means(values: np.ndarray, folds: np.ndarray) -> float:
    ok = ~np.isnan(values)
    if not ok.any():
        return float("nan")
    v, f = values[ok], folds[ok]
    uniq = np.unique(f)
    return float(np.mean([v[f == x].mean() for x in uniq]))


def summarise(
    per_user: pd.DataFrame, n_boot: int = 1000, seed: int = 0, percent: bool = True, ci: float = 0.95
) -> pd.DataFrame:
    """Per RS and measure, one row (:data:`SUMMARY_COLUMNS`): each of :data:`METRICS` as the mean over folds of its
    per-fold mean with a bootstrap CI (``low``, ``high``) and ``n``, the users it rests on (every evaluation user for
    accuracy, the judged ones for serendipity), then ``unparsed``: the unparsed count out of the judged list slots
    (no interval, no ``n``).

    Precision/NDCG are in percent when ``percent`` (as the paper prints them); Avg.Score stays on 1..5.
    """
    rows: list[tuple[Any, ...]] = []
    for rs, grp in per_user.groupby("rs", sort=False):
        folds = grp["fold"].to_numpy()
        judged = grp.loc[grp["judged"]]
        for m in METRICS:
            users = len(judged) if m in SERENDIPITY_METRICS else len(grp)
            vals = grp[m].to_numpy(dtype=float)
            scale = 100.0 if (percent and m != "avg") else 1.0
            ok = ~np.isnan(vals)
            if not ok.any():
                rows.append((rs, m, np.nan, np.nan, np.nan, users))
                continue
            point, lo, hi = bootstrap_ci(
                (vals[ok], folds[ok]), statistic=_mean_of_fold_means, n_boot=n_boot, ci=ci, seed=seed
            )
            if ok.sum() < 2:  # a bootstrap over one user is a zero-width interval: report no CI instead
                lo = hi = float("nan")
            rows.append((rs, m, point * scale, lo * scale, hi * scale, users))
        rows.append((rs, "unparsed", float(judged["n_unparsed"].sum()), np.nan, np.nan, pd.NA))
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS)).astype({"value": float, "n": "Int64"})


def of_measure(summary: pd.DataFrame, measure: str) -> pd.DataFrame:
    """The rows of one measure of a :func:`summarise` frame, one per RS in the frame's order (index 0, 1, ...)."""
    return summary.loc[summary["measure"] == measure].reset_index(drop=True)
