"""Re-evaluating recommenders for accuracy and serendipity with the LLM judge (serendipity paper, Section 5).

The pipeline behind ``notebooks/02_rs_reevaluation.ipynb``, fold by fold:

1. ``prepare_folds``: positives (rating >= 4), temporal global split (see :mod:`recjudge_utils.splits`
   for the unseen-user/item rules), the *evaluation users* of a fold (test users with training history
   and at least one test positive among training items) and a seeded sample of ``n_users`` of them to be
   judged (the same users for every recommender).
2. ``fit_recommenders``: TPE tuning on validation Recall@10 (``n_trials`` per RS per fold), refit with the
   best parameters on the fold's training slices, seeded.
3. ``top_k_frame``: top-k lists (training items excluded) for every evaluation user.
4. ``judge_recommendations``: every distinct (user, item) pair of the judged users' lists, over all
   recommenders, is judged **once** with a :class:`~recjudge_utils.serendipity.SerendipityJudge`; the history
   is the user's last ``n_history`` training items.
5. ``per_user_metrics``: Precision/NDCG@k for accuracy on the test positives (all evaluation users) and for
   serendipity on the judged users, Avg.Score@k and unparsed counts.

Serendipity ground truth. Only recommended items are judged, so the serendipitous ground truth of a user
is the *pool* of all judged items of that user (from any recommender) with score E >= 4 (TREC-style
pooling). ``Precision_ser@k`` = serendipitous items in the list / k; ``NDCG_ser@k`` uses the ideal DCG over
min(|pool|, k). Unparsed judgments have no score: they count as "not shown to be serendipitous" in the
precision/NDCG numerators, are left out of Avg.Score, and are reported per recommender.

``summarise`` averages per fold and then over folds (the paper's three-fold average); the 95% CI is a
percentile bootstrap over users that recomputes that same mean of fold means (no CI, NaN, when only
one user has a value: a bootstrap over one user would be a zero-width interval).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .ranking_metrics import hit_matrix, ndcg_at_k, precision_at_k
from .recommenders import DISPLAY_NAMES, make_recommender
from .recommenders.base import Recommender
from .recommenders.tuning import TuneResult, tune
from .splits import (
    UnseenReport,
    ground_truth,
    last_items,
    positive_interactions,
    slice_bounds,
    split_global_time,
    unseen_report,
)
from .stats import bootstrap_ci

METRICS: tuple[str, ...] = ("p_acc", "n_acc", "p_ser", "n_ser", "avg")
METRIC_LABELS: dict[str, str] = {
    "p_acc": "Precision_acc@k",
    "n_acc": "NDCG_acc@k",
    "p_ser": "Precision_ser@k",
    "n_ser": "NDCG_ser@k",
    "avg": "Avg.Score@k",
}


@dataclass
class Fold:
    fold: int
    train: pd.DataFrame
    valid: pd.DataFrame
    test: pd.DataFrame
    eval_users: np.ndarray
    judged_users: np.ndarray
    report: UnseenReport
    time_range: tuple[int, int, int, int] = (0, 0, 0, 0)  # train start, train end, test start, test end

    def summary(self) -> dict[str, Any]:
        return {
            "fold": self.fold,
            "train": len(self.train),
            "valid": len(self.valid),
            "test": len(self.test),
            "train_users": self.train["user"].nunique(),
            "eval_users": len(self.eval_users),
            "judged_users": len(self.judged_users),
            "test_rows_raw": self.report.rows,
            "test_rows_unseen_user": self.report.rows_unseen_user,
            "test_rows_unseen_item": self.report.rows_unseen_item_only,
            "test_users_unseen": self.report.users_unseen,
        }


def prepare_folds(
    interactions: pd.DataFrame,
    folds: int = 1,
    n_users: int = 8,
    seed: int = 0,
    threshold: float = 4,
    n_slices: int = 10,
    train_slices: int = 6,
) -> list[Fold]:
    """Positives + temporal split per fold + evaluation users + seeded sample of judged users."""
    pos = positive_interactions(interactions, threshold) if "rating" in interactions.columns else interactions
    out = []
    for f in range(folds):
        train, valid, test = split_global_time(pos, n_slices, train_slices, fold=f)
        _, _, raw_test = split_global_time(pos, n_slices, train_slices, fold=f, drop_unseen=False)
        users = np.sort(test["user"].unique()).astype(np.int64)
        rng = np.random.default_rng([seed, f])
        judged = np.sort(rng.choice(users, size=min(n_users, len(users)), replace=False)) if n_users else users[:0]
        ordered = pos.sort_values(["timestamp", "user", "item"], kind="mergesort")
        b = slice_bounds(len(ordered), n_slices)
        ts = ordered["timestamp"].to_numpy()
        last = f + train_slices + 1
        span = (int(ts[b[f]]), int(ts[b[f + train_slices] - 1]), int(ts[b[last]]), int(ts[b[last + 1] - 1]))
        out.append(Fold(f, train, valid, test, users, judged, unseen_report(raw_test, train), span))
    return out


@dataclass
class Fitted:
    name: str
    model: Recommender
    tuning: TuneResult
    fit_seconds: float


def fit_recommenders(
    fold: Fold,
    names: Sequence[str],
    n_trials: int,
    seed: int = 0,
    fixed_params: dict[str, dict[str, Any]] | None = None,
    items: pd.DataFrame | None = None,
    progress: bool = True,
) -> dict[str, Fitted]:
    """Tune each RS on the fold's validation slice (Recall@10); keep the best trial's model (trained on train).

    Every fit is seeded, so the kept model is exactly what a refit with the best parameters would give.
    """
    from tqdm.std import tqdm  # text bars: widget bars need JavaScript the offline book cannot load

    fixed_params = fixed_params or {}
    fitted: dict[str, Fitted] = {}
    bar = tqdm(list(names), desc=f"fold {fold.fold}: tune+train", disable=not progress)
    for name in bar:
        bar.set_postfix_str(name)
        fixed = fixed_params.get(name, {})
        result = tune(name, fold.train, fold.valid, n_trials=n_trials, seed=seed, fixed=fixed, items=items)
        start = time.perf_counter()
        model = result.model  # the best trial's model, fitted on fold.train with result.params and the seed
        if model is None:
            model = make_recommender(name, seed=seed, **result.params).fit(fold.train, items)
        fitted[name] = Fitted(name, model, result, time.perf_counter() - start)
    return fitted


def top_k_frame(models: dict[str, Recommender], users: np.ndarray, k: int = 20) -> pd.DataFrame:
    """Long frame (rs, user, rank (1-based), item) of every model's top-k for ``users``."""
    parts = []
    for name, model in models.items():
        recs = model.recommend(users, k=k)
        kk = recs.shape[1]
        parts.append(
            pd.DataFrame(
                {
                    "rs": name,
                    "user": np.repeat(users, kk),
                    "rank": np.tile(np.arange(1, kk + 1), len(users)),
                    "item": recs.ravel(),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def judge_recommendations(
    recs: pd.DataFrame,
    train: pd.DataFrame,
    items: pd.DataFrame,
    judge: Any,
    n_history: int = 10,
    desc: str | None = None,
) -> pd.DataFrame:
    """Judge each distinct (user, item) pair of ``recs`` once; returns the judge's frame (one row per pair)."""
    pairs = recs[["user", "item"]].drop_duplicates().sort_values(["user", "item"]).reset_index(drop=True)
    hist = last_items(train, n_history)
    pairs["history"] = [hist.get(int(u), []) for u in pairs["user"]]
    if pairs.empty:
        return pd.DataFrame(columns=["user", "item", "score", "status"])
    judged = judge.score(pairs, items, desc=desc) if desc else judge.score(pairs, items)
    if len(judged) != len(pairs):
        raise RuntimeError(f"judge returned {len(judged)} rows for {len(pairs)} pairs")
    judged = judged.copy()
    judged["user"] = pairs["user"].to_numpy()
    judged["item"] = pairs["item"].to_numpy()
    return judged


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
    """
    truth = ground_truth(test)
    users = np.sort(recs["user"].unique()).astype(np.int64)
    relevant = [truth.get(int(u), set()) for u in users]
    n_rel = np.array([len(r) for r in relevant])
    judged_users: np.ndarray = np.array([], dtype=np.int64)
    score_of: dict[tuple[int, int], float] = {}
    pool: dict[int, set[int]] = {}
    if judgments is not None and len(judgments):
        judged_users = np.sort(judgments["user"].unique()).astype(np.int64)
        scores = pd.to_numeric(judgments["score"], errors="coerce").to_numpy(dtype=float)
        for u, i, s in zip(judgments["user"].to_numpy(), judgments["item"].to_numpy(), scores, strict=True):
            score_of[(int(u), int(i))] = s
            if s >= threshold:
                pool.setdefault(int(u), set()).add(int(i))
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
            ser_sets = [pool.get(int(users[r]), set()) for r in rows]
            ser_hits = hit_matrix(lists[rows], ser_sets)
            n_ser = np.array([len(s) for s in ser_sets])
            sc = np.array(
                [[score_of.get((int(users[r]), int(i)), np.nan) for i in lists[r]] for r in rows], dtype=float
            )
            valid = lists[rows] >= 0
            with np.errstate(invalid="ignore"):
                avg = np.nanmean(np.where(valid, sc, np.nan), axis=1) if sc.size else np.zeros(len(rows))
            df.loc[rows, "p_ser"] = precision_at_k(ser_hits, k)
            df.loc[rows, "n_ser"] = ndcg_at_k(ser_hits, n_ser, k)
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
    """Per RS: mean over folds of the per-fold mean of each metric, with a bootstrap CI (columns m, m_lo, m_hi).

    Precision/NDCG are in percent when ``percent`` (as the paper prints them); Avg.Score stays on 1..5.
    Also: users evaluated for accuracy / judged, and the unparsed count out of the judged list slots.
    """
    rows = []
    for rs, grp in per_user.groupby("rs", sort=False):
        row: dict[str, Any] = {"rs": rs}
        folds = grp["fold"].to_numpy()
        for m in METRICS:
            vals = grp[m].to_numpy(dtype=float)
            scale = 100.0 if (percent and m != "avg") else 1.0
            ok = ~np.isnan(vals)
            if not ok.any():
                row[m], row[f"{m}_lo"], row[f"{m}_hi"] = np.nan, np.nan, np.nan
                continue
            point, lo, hi = bootstrap_ci(
                (vals[ok], folds[ok]), statistic=_mean_of_fold_means, n_boot=n_boot, ci=ci, seed=seed
            )
            if ok.sum() < 2:  # a bootstrap over one user is a zero-width interval: report no CI instead
                lo = hi = float("nan")
            row[m], row[f"{m}_lo"], row[f"{m}_hi"] = point * scale, lo * scale, hi * scale
        row["users_acc"] = len(grp)
        judged = grp.loc[grp["judged"]]
        row["users_judged"] = len(judged)
        row["unparsed"] = int(judged["n_unparsed"].sum())
        rows.append(row)
    return pd.DataFrame(rows)


def paper_table3(dataset: str | None = None) -> pd.DataFrame:
    """The paper's Table 3 (percent except avg) from ``paper_tables/serendipity_table3.csv``."""
    from importlib import resources

    res = resources.files("recjudge_utils").joinpath("paper_tables", "serendipity_table3.csv")
    with res.open("r", encoding="utf-8") as fh:
        table = pd.read_csv(fh, comment="#")
    return table if dataset is None else table.loc[table["dataset"] == dataset].reset_index(drop=True)


def paper_table2() -> pd.DataFrame:
    """The paper's Table 2 (dataset statistics) from ``paper_tables/serendipity_table2.csv``."""
    from importlib import resources

    res = resources.files("recjudge_utils").joinpath("paper_tables", "serendipity_table2.csv")
    with res.open("r", encoding="utf-8") as fh:
        return pd.read_csv(fh, comment="#")


PAPER_DATASET = {"ml-1m": "ML-1M", "goodreads": "Goodreads", "amazon-beauty": "Beauty"}


def table3_beside_paper(summary: pd.DataFrame, paper_dataset: str = "ML-1M", digits: int = 3) -> pd.DataFrame:
    """Our metrics (mean [lo, hi]) next to the paper's Table 3 row of the same RS (NaN where the paper has none)."""
    paper = paper_table3(paper_dataset).set_index("rs")
    rows = []
    for _, r in summary.iterrows():
        name = DISPLAY_NAMES.get(str(r["rs"]), str(r["rs"]))
        row: dict[str, Any] = {"RS": name}
        for m in METRICS:
            if pd.isna(r[m]):
                row[f"{m} ours"] = "n/a"
            elif pd.isna(r[f"{m}_lo"]):
                row[f"{m} ours"] = f"{r[m]:.{digits}g} [no CI: 1 user]"
            else:
                row[f"{m} ours"] = f"{r[m]:.{digits}g} [{r[f'{m}_lo']:.{digits}g}, {r[f'{m}_hi']:.{digits}g}]"
            row[f"{m} paper"] = paper.loc[name, m] if name in paper.index else "-"
        row["unparsed"] = r["unparsed"]
        rows.append(row)
    return pd.DataFrame(rows).set_index("RS")


@dataclass
class Reevaluation:
    folds: list[Fold]
    fitted: list[dict[str, Fitted]]
    recs: pd.DataFrame
    judgments: pd.DataFrame
    per_user: pd.DataFrame
    summary: pd.DataFrame
    timings: dict[str, float] = field(default_factory=dict)

    def tuning_table(self) -> pd.DataFrame:
        rows = []
        for f, fitted in zip(self.folds, self.fitted, strict=True):
            for name, fit in fitted.items():
                rows.append(
                    {
                        "fold": f.fold,
                        "rs": DISPLAY_NAMES.get(name, name),
                        "trials": fit.tuning.n_trials,
                        "valid Recall@10": fit.tuning.value,
                        "tune s": round(fit.tuning.seconds, 1),
                        "refit s": round(fit.fit_seconds, 1),
                        "params": fit.tuning.params,
                    }
                )
        return pd.DataFrame(rows)


def evaluate_recommenders(
    interactions: pd.DataFrame,
    items: pd.DataFrame,
    names: Sequence[str],
    make_judge: Callable[[Iterable[int]], Any] | None,
    folds: int = 1,
    n_trials: int = 2,
    n_users: int = 8,
    top_k: int = 20,
    seed: int = 0,
    fixed_params: dict[str, dict[str, Any]] | None = None,
    n_history: int = 10,
    progress: bool = True,
    prepared: list[Fold] | None = None,
    n_boot: int = 1000,
) -> Reevaluation:
    """Run the whole protocol. ``make_judge(judged_users)`` builds the judge once, after the judged users are
    known (so that its few-shot examples can exclude them); None skips judging (accuracy only)."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    fold_data = prepared or prepare_folds(interactions, folds=folds, n_users=n_users, seed=seed)
    timings["split"] = time.perf_counter() - t0
    all_judged = sorted({int(u) for f in fold_data for u in f.judged_users})
    judge = make_judge(all_judged) if make_judge is not None and all_judged else None
    fitted_all, recs_all, judg_all, per_user_all = [], [], [], []
    timings["train"] = timings["judge"] = 0.0
    for f in fold_data:
        t = time.perf_counter()
        fitted = fit_recommenders(f, names, n_trials, seed=seed, fixed_params=fixed_params, progress=progress)
        timings["train"] += time.perf_counter() - t
        models = {name: fit.model for name, fit in fitted.items()}
        recs = top_k_frame(models, f.eval_users, k=top_k)
        recs.insert(0, "fold", f.fold)
        judgments = None
        if judge is not None and len(f.judged_users):
            t = time.perf_counter()
            to_judge = recs.loc[recs["user"].isin(f.judged_users)]
            judgments = judge_recommendations(
                to_judge, f.train, items, judge, n_history=n_history, desc=f"fold {f.fold}: judge"
            )
            judgments.insert(0, "fold", f.fold)
            judg_all.append(judgments)
            timings["judge"] += time.perf_counter() - t
        per_user_all.append(per_user_metrics(recs, f.test, judgments, k=top_k, fold=f.fold))
        fitted_all.append(fitted)
        recs_all.append(recs)
    per_user = pd.concat(per_user_all, ignore_index=True)
    judgments_df = pd.concat(judg_all, ignore_index=True) if judg_all else pd.DataFrame()
    t = time.perf_counter()
    summary = summarise(per_user, n_boot=n_boot, seed=seed)
    timings["summarise"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t0
    return Reevaluation(
        fold_data, fitted_all, pd.concat(recs_all, ignore_index=True), judgments_df, per_user, summary, timings
    )


#: Epoch budgets. "small" keeps the default notebook within its CI time budget on 2 cores (measured on
#: MovieLens-100K fold 0: ~0.3-1 s per epoch for BPRMF/SASRec/DESR, ~5 s per epoch for PURS, one torch thread);
#: "paper" uses the modules' own defaults and tunes everything else.
TRAINING_BUDGETS: dict[str, dict[str, dict[str, Any]]] = {
    "small": {
        "bprmf": {"epochs": 10},
        "sasrec": {"epochs": 10},
        "purs": {"epochs": 2},
        "desr": {"epochs": 5},
    },
    "paper": {},
}


def training_budget(name: str) -> dict[str, dict[str, Any]]:
    """Fixed (untuned) training settings per RS for a named budget ("small" or "paper")."""
    if name not in TRAINING_BUDGETS:
        raise KeyError(f"unknown training budget {name!r}; known: {sorted(TRAINING_BUDGETS)}")
    return {k: dict(v) for k, v in TRAINING_BUDGETS[name].items()}


def _best(summary: pd.DataFrame, m: str) -> tuple[str, bool]:
    """Best RS on metric m and whether its CI lies above the runner-up's CI."""
    ranked = summary.dropna(subset=[m]).sort_values(m, ascending=False)
    if ranked.empty:
        return "n/a", False
    top = ranked.iloc[0]
    clear = len(ranked) == 1 or bool(top[f"{m}_lo"] > ranked.iloc[1][f"{m}_hi"])
    return DISPLAY_NAMES.get(str(top["rs"]), str(top["rs"])), clear


def observations(summary: pd.DataFrame, judgments: pd.DataFrame | None = None) -> list[str]:
    """Plain-language checks of the paper's observations on this run's numbers (CIs taken into account)."""
    lines: list[str] = []
    name = {r: DISPLAY_NAMES.get(r, r) for r in summary["rs"]}
    winners = {}
    for m in METRICS:
        best, clear = _best(summary, m)
        winners[m] = best
        lines.append(
            f"best on {METRIC_LABELS[m]}: {best} "
            + (
                "(its CI is above every other RS's CI)"
                if clear
                else "(its CI overlaps the runner-up's: not a clear win)"
            )
        )
    distinct = {w for w in winners.values() if w != "n/a"}
    if len(distinct) == 1:
        lines.append(
            f"one RS ({distinct.pop()}) is best on every metric: the paper's 'no RS best on all' does NOT hold"
        )
    else:
        lines.append(f"no single RS is best on every metric (winners: {sorted(distinct)}), as in the paper")
    avg = summary.dropna(subset=["avg"])
    if len(avg):
        inside = avg[(avg["avg"] >= 2.1) & (avg["avg"] <= 2.4)]
        lines.append(
            f"Avg.Score ranges {avg['avg'].min():.2f}-{avg['avg'].max():.2f}; "
            f"{len(inside)} of {len(avg)} RSs inside the paper's 2.1-2.4"
        )
    ser = summary.dropna(subset=["p_ser"])
    if "random" in set(ser["rs"]) and len(ser) > 1:
        rnd = ser.loc[ser["rs"] == "random"].iloc[0]
        above = [name[r["rs"]] for _, r in ser.iterrows() if r["rs"] != "random" and r["p_ser_lo"] > rnd["p_ser_hi"]]
        lines.append(
            "RSs whose Precision_ser CI is above Random's: "
            + (", ".join(above) if above else "none")
            + " (if none, the serendipity metric does not separate any RS from random lists on this sample)"
        )
    if len(ser) >= 3:
        rho = ser[["p_acc", "p_ser"]].corr(method="spearman").iloc[0, 1]
        lines.append(f"Spearman correlation across RSs between Precision_acc and Precision_ser: {rho:.2f}")
    if judgments is not None and len(judgments) and "score" in judgments:
        sc = pd.to_numeric(judgments["score"], errors="coerce")
        parsed = sc.dropna()
        if len(parsed):
            top_share = parsed.value_counts(normalize=True).iloc[0]
            top_val = parsed.value_counts().index[0]
            lines.append(
                f"the judge gave {len(parsed)} parsed scores, {100 * top_share:.0f}% of them equal to {top_val:g}; "
                f"share of E >= 4: {100 * (parsed >= 4).mean():.0f}%; unparsed: {int(sc.isna().sum())} of {len(sc)}"
            )
    return lines
