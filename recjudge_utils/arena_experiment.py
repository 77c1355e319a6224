"""RecSys Arena experiment: train the recommenders, offline metrics, pair-wise and absolute judging, tables.

The notebook ``03_recsys_arena.ipynb`` calls :func:`run_arena` and then the table helpers here, so
that everything it prints is computed (and tested) in the package.

Protocol (choices the paper leaves open are stated here):

* split: per user, the last ``n_test`` interactions by timestamp are the test set, the rest train
  (every interaction is an implicit positive); the judge sees the user's most recent training items;
* offline metrics over all users with test items: AUC (test items vs every item the user has not
  interacted with), nDCG@k (binary), URD@k (genre Jaccard), see :mod:`offline_metrics`;
* judged users: ``n_users`` drawn at random (seeded) among the users with test items;
* comparisons: every recommender vs the baseline (FM, as in Table 2), plus the ``n_close_pairs``
  pairs of non-baseline recommenders with the closest offline AUC (Figures 3-4); each judged in
  both orders unless ``both_orders=False`` (then only with x shown as A, as in the paper).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.arena import (
    OVERALL,
    AbsoluteJudge,
    ArenaContext,
    PairwiseJudge,
    adjudicated_outcomes,
    arena_table,
    paper_table,
    position_consistency,
)
from recjudge_utils.offline_metrics import evaluate_recommender, genre_jaccard, offline_table, pearson
from recjudge_utils.recommenders._torch import torch_threads

DEFAULT_RECOMMENDERS = ("FM", "MiniLM-content", "LightGCN", "SASRec", "DeepFM")
# our model -> the paper's row it stands in for
PAPER_NAMES = {"FM": "FM", "MiniLM-content": "NRMS", "LightGCN": "LightGCN", "SASRec": "SASRec", "DeepFM": "DeepFM"}
# training sizes: "small" keeps the default notebook within its time budget on 2 cores
SIZES: dict[str, dict[str, dict[str, Any]]] = {
    "small": {
        "FM": {"epochs": 5},
        "DeepFM": {"epochs": 5},
        "LightGCN": {"epochs": 5, "batch_size": 4096, "lr": 1e-2},
        "SASRec": {"epochs": 8, "max_len": 50, "dim": 64},
        "MiniLM-content": {},
    },
    "paper": {
        "FM": {"epochs": 30},
        "DeepFM": {"epochs": 30},
        "LightGCN": {"epochs": 100},
        "SASRec": {"epochs": 100, "max_len": 50, "dim": 64},
        "MiniLM-content": {},
    },
}


def build_recommender(name: str, users: pd.DataFrame | None, seed: int, size: str = "small") -> Any:
    """Instantiate one of :data:`DEFAULT_RECOMMENDERS` with the ``size`` hyperparameters."""
    params = dict(SIZES[size].get(name, {}))
    if name == "FM":
        from recjudge_utils.recommenders.fm import FM

        return FM(users=users, seed=seed, **params)
    if name == "DeepFM":
        from recjudge_utils.recommenders.deepfm import DeepFM

        return DeepFM(users=users, seed=seed, **params)
    if name == "LightGCN":
        from recjudge_utils.recommenders.lightgcn import LightGCN

        return LightGCN(seed=seed, **params)
    if name == "SASRec":
        from recjudge_utils.recommenders.sasrec import SASRec

        return SASRec(seed=seed, **params)
    if name == "MiniLM-content":
        from recjudge_utils.recommenders.content import ContentMiniLM

        return ContentMiniLM(seed=seed, **params)
    raise KeyError(f"unknown recommender {name!r}; known: {DEFAULT_RECOMMENDERS}")


def split_last_n(interactions: pd.DataFrame, n_test: int = 10, min_train: int = 5) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-user temporal split: each user's last ``n_test`` interactions (by timestamp, ties by item) are test.

    Users with fewer than ``n_test + min_train`` interactions stay entirely in training.
    """
    ordered = interactions.sort_values(["user", "timestamp", "item"], kind="mergesort").reset_index(drop=True)
    size = ordered.groupby("user")["item"].transform("size")
    rank_from_end = ordered.groupby("user").cumcount(ascending=False)
    is_test = (rank_from_end < n_test) & (size >= n_test + min_train)
    return ordered.loc[~is_test].reset_index(drop=True), ordered.loc[is_test].reset_index(drop=True)


def closest_pairs(auc: Mapping[str, float], n: int, exclude: Sequence[str] = ()) -> list[tuple[str, str]]:
    """The ``n`` pairs of models (not in ``exclude``) with the smallest |AUC difference| (higher AUC first)."""
    names = [m for m in auc if m not in exclude]
    pairs = sorted(combinations(names, 2), key=lambda p: (abs(auc[p[0]] - auc[p[1]]), p))
    out = []
    for a, b in pairs[:n]:
        out.append((a, b) if auc[a] >= auc[b] else (b, a))
    return out


@dataclass
class ArenaRun:
    """Everything one run produced (the notebook reads tables from here)."""

    dataset_label: str
    judge_name: str
    baseline: str
    k: int
    both_orders: bool
    users: list[int]
    offline: pd.DataFrame  # per model: auc, ndcg@k, urd, n_users
    offline_per_user: dict[str, pd.DataFrame]
    recs: dict[str, dict[int, list[int]]]
    comparisons: pd.DataFrame  # user, x, y, kind ("vs_baseline" / "close_pair")
    raw: pd.DataFrame  # one row per judged (comparison, order)
    adjudicated: pd.DataFrame  # one row per comparison (both orders)
    absolute: pd.DataFrame  # user, model, score, status
    aspect_keys: list[str]
    timings: dict[str, float] = field(default_factory=dict)


def run_arena(
    client: Any,
    dataset: Any,
    recommenders: Sequence[str] = DEFAULT_RECOMMENDERS,
    baseline: str = "FM",
    k: int = 5,
    n_users: int = 2,
    aspects: Sequence[str] | Mapping[str, str] | None = None,
    both_orders: bool = True,
    n_close_pairs: int = 1,
    absolute: bool = True,
    n_history: int = 10,
    n_test: int = 10,
    size: str = "small",
    seed: int = 0,
    models: Mapping[str, Any] | None = None,
    log: Callable[[str], None] = print,
) -> ArenaRun:
    """Train (unless ``models`` are given, already fitted), evaluate offline, judge, and collect the results."""
    if baseline not in recommenders:
        raise ValueError(f"the baseline {baseline!r} must be one of the recommenders")
    timings: dict[str, float] = {}
    train, test = split_last_n(dataset.interactions, n_test=n_test)
    fitted: dict[str, Any] = dict(models or {})
    for name in recommenders:
        if name in fitted:
            continue
        t0 = time.perf_counter()
        with torch_threads(1):  # see recommenders._torch.torch_threads (also covers SASRec)
            fitted[name] = build_recommender(name, dataset.users, seed, size).fit(train, dataset.items)
        timings[f"train {name}"] = time.perf_counter() - t0
        log(f"trained {name} in {timings[f'train {name}']:.1f} s")

    t0 = time.perf_counter()
    sim = genre_jaccard(dataset.items)
    per_user = {n: evaluate_recommender(fitted[n], train, test, dataset.items, k=k, sim=sim) for n in recommenders}
    offline = offline_table(per_user)
    timings["offline metrics"] = time.perf_counter() - t0

    rng = np.random.default_rng(seed)
    candidates = np.array(sorted(test["user"].unique()))
    users = sorted(int(u) for u in rng.choice(candidates, size=min(n_users, len(candidates)), replace=False))
    recs = {
        n: {u: [int(i) for i in row] for u, row in zip(users, fitted[n].recommend(np.array(users), k=k), strict=True)}
        for n in recommenders
    }

    auc = dict(zip(offline["rs"], offline["auc"], strict=True))
    pairs = [(x, baseline, "vs_baseline") for x in recommenders if x != baseline]
    pairs += [(a, b, "close_pair") for a, b in closest_pairs(auc, n_close_pairs, exclude=[baseline])]
    comparisons = pd.DataFrame(
        [{"user": u, "x": x, "y": y, "kind": kind} for x, y, kind in pairs for u in users],
        columns=["user", "x", "y", "kind"],
    )

    context = ArenaContext(dataset.items, train, dataset.users, n_history=n_history, dataset=dataset.name)
    judge = PairwiseJudge(client, context, aspects=aspects, k=k)
    t0 = time.perf_counter()
    raw = judge.judge(comparisons, recs, both_orders=both_orders)
    raw = raw.merge(comparisons, on=["user", "x", "y"], how="left")
    timings["pairwise judging"] = time.perf_counter() - t0
    log(f"pairwise judging: {len(raw)} calls in {timings['pairwise judging']:.1f} s")
    keys = [*judge.aspect_keys, OVERALL]
    adjudicated = adjudicated_outcomes(raw, keys) if both_orders else pd.DataFrame()
    if both_orders:
        adjudicated = adjudicated.merge(comparisons, on=["user", "x", "y"], how="left")

    abs_frame = pd.DataFrame(columns=["user", "model", "score", "status", "reason"])
    if absolute:
        t0 = time.perf_counter()
        judged = {m: r for m, r in recs.items() if m != baseline}  # Figure 6 compares the non-baseline models
        abs_frame = AbsoluteJudge(client, context, aspects=aspects, k=k).score(users, judged)
        timings["absolute judging"] = time.perf_counter() - t0
        log(f"absolute judging: {len(abs_frame)} calls in {timings['absolute judging']:.1f} s")

    return ArenaRun(
        dataset_label=dataset.label,
        judge_name=getattr(client, "model_name", str(client)),
        baseline=baseline,
        k=k,
        both_orders=both_orders,
        users=users,
        offline=offline,
        offline_per_user=per_user,
        recs=recs,
        comparisons=comparisons,
        raw=raw,
        adjudicated=adjudicated,
        absolute=abs_frame,
        aspect_keys=keys,
        timings=timings,
    )


# ---------------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------------
def table1(run: ArenaRun) -> pd.DataFrame:
    """Our AUC / nDCG@k / URD beside the paper's Table 1 (MovieLens columns)."""
    paper = paper_table(1)
    paper = paper[paper["dataset"] == "MovieLens"].set_index("rs")
    out = run.offline.copy()
    out.insert(1, "paper_row", out["rs"].map(PAPER_NAMES))
    out["paper_auc"] = out["paper_row"].map(paper["auc"])
    out["paper_ndcg@5"] = out["paper_row"].map(paper["ndcg5"])
    return out


def _outcomes_frame(run: ArenaRun, source: str) -> pd.DataFrame:
    """Outcomes per comparison for one source: ``x_first`` / ``y_first`` raw, or ``adjudicated``."""
    if source == "adjudicated":
        if not run.both_orders:
            raise ValueError("adjudication needs both orders")
        return run.adjudicated
    raw = run.raw[run.raw["order"] == source]
    return raw


def versus_table(
    run: ArenaRun, source: str = "adjudicated", key: str = OVERALL, kind: str = "vs_baseline", seed: int = 0
) -> pd.DataFrame:
    """Win/Tie/Lose % of x against y, Q, CIs and rank (Table 2 for ``kind="vs_baseline"``)."""
    frame = _outcomes_frame(run, source)
    frame = frame[frame["kind"] == kind]
    table = arena_table(frame, column=key, seed=seed)
    table.insert(2, "source", source)
    return table


def table2(run: ArenaRun, seed: int = 0) -> pd.DataFrame:
    """Each RS vs the baseline: raw (x shown first = the paper's setting), raw swapped, adjudicated."""
    sources = ["x_first", "y_first", "adjudicated"] if run.both_orders else ["x_first"]
    return pd.concat([versus_table(run, s, seed=seed) for s in sources], ignore_index=True)


def paper_table2_wide(dataset: str = "MovieLens") -> pd.DataFrame:
    """The paper's Table 2 for one dataset, one row per RS, (win, tie, lose, Q, rank) per LLM."""
    p = paper_table(2)
    p = p[p["dataset"] == dataset]
    return p.pivot(index="rs", columns="llm", values=["win", "tie", "lose", "q", "rank"])


def aspect_table(run: ArenaRun, source: str = "adjudicated", kind: str = "vs_baseline", seed: int = 0) -> pd.DataFrame:
    """Win/Tie/Lose and Q per aspect (rows: aspect x comparison)."""
    frames = []
    for key in run.aspect_keys:
        t = versus_table(run, source, key=key, kind=kind, seed=seed)
        t.insert(0, "aspect", key)
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


def table4(run: ArenaRun, source: str = "adjudicated", seed: int = 0) -> pd.DataFrame:
    """Inspiration verdicts vs the baseline beside our URD (the paper's Table 4 layout)."""
    t = versus_table(run, source, key="inspiration", seed=seed)
    urd = dict(zip(run.offline["rs"], run.offline["urd"], strict=True))
    t.insert(2, "urd", t["x"].map(urd))
    return t


def q_auc_correlation(run: ArenaRun, source: str = "adjudicated") -> dict[str, Any]:
    """Pearson r between Q (vs baseline) and AUC over the non-baseline models, with its p-value (Table 3)."""
    t = versus_table(run, source)
    auc = dict(zip(run.offline["rs"], run.offline["auc"], strict=True))
    q = t["Q"].to_numpy(dtype=float)
    a = t["x"].map(auc).to_numpy(dtype=float)
    r, p = pearson(a, q)
    return {"source": source, "n_models": int(np.isfinite(q).sum()), "r": r, "p": p}


def relative_vs_absolute(run: ArenaRun, source: str = "adjudicated", seed: int = 0) -> pd.DataFrame:
    """Figure 6 data: per non-baseline model, AUC, Q vs baseline and mean absolute score, raw and min-max normalised."""
    t = versus_table(run, source).set_index("x")
    auc = run.offline.set_index("rs")["auc"]
    models = list(t.index)
    abs_mean = run.absolute.groupby("model")["score"].mean() if len(run.absolute) else pd.Series(dtype=float)
    out = pd.DataFrame({"model": models})
    out["AUC"] = out["model"].map(auc)
    out["Q"] = out["model"].map(t["Q"])
    out["absolute"] = out["model"].map(abs_mean)
    for col in ("AUC", "Q", "absolute"):
        v = out[col].to_numpy(dtype=float)
        finite = np.isfinite(v)
        span = np.nanmax(v[finite]) - np.nanmin(v[finite]) if finite.any() else np.nan
        out[f"{col} (normalised)"] = (v - np.nanmin(v[finite])) / span if finite.any() and span > 0 else np.nan
    return out


def separation(run: ArenaRun, pair: tuple[str, str], source: str = "adjudicated", seed: int = 0) -> pd.DataFrame:
    """How well AUC, Q and the absolute score separate two models, each as a paired bootstrap over users.

    For each measure: the difference (first minus second), its 95% CI over users, and the
    standardised gap |difference| / bootstrap SE. AUC pairs the models' per-user AUCs (all
    evaluated users); the absolute score pairs the judged users' scores; Q compares each model's
    outcome against the baseline per judged user (Q difference, resampling users).
    """
    x, y = pair
    rows = []
    pu = run.offline_per_user
    merged = pu[x][["user", "auc"]].merge(pu[y][["user", "auc"]], on="user", suffixes=("_x", "_y"))
    rows.append(
        (
            "AUC (all evaluated users)",
            *_boot_gap(merged["auc_x"].to_numpy(), merged["auc_y"].to_numpy(), seed),
            len(merged),
        )
    )
    if len(run.absolute):
        piv = run.absolute.pivot(index="user", columns="model", values="score")
        if x in piv and y in piv:
            rows.append(
                (
                    "absolute score",
                    *_boot_gap(piv[x].to_numpy(float), piv[y].to_numpy(float), seed),
                    int(piv[[x, y]].notna().all(axis=1).sum()),
                )
            )
    frame = _outcomes_frame(run, source)
    frame = frame[frame["kind"] == "vs_baseline"]
    code = {"win": 1.0, "tie": 0.0, "lose": -1.0}
    per = frame.pivot_table(index="user", columns="x", values=OVERALL, aggfunc="first")
    if x in per and y in per:
        ox = per[x].map(code).to_numpy(dtype=float)
        oy = per[y].map(code).to_numpy(dtype=float)
        ok = np.isfinite(ox) & np.isfinite(oy)
        rows.append(("Q vs baseline", *_boot_q_gap(ox[ok], oy[ok], seed), int(ok.sum())))
    return pd.DataFrame(rows, columns=["measure", "difference", "low", "high", "standardised_gap", "n_users"])


def _boot_gap(a: np.ndarray, b: np.ndarray, seed: int, n_boot: int = 2000) -> tuple[float, float, float, float]:
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if len(a) < 2:
        return (float("nan"),) * 4
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(n_boot, len(a)))
    diffs = (a[idx] - b[idx]).mean(axis=1)
    point = float(np.mean(a - b))
    se = float(np.std(diffs))
    lo, hi = np.quantile(diffs, [0.025, 0.975])
    return point, float(lo), float(hi), abs(point) / se if se > 0 else float("inf") if point != 0 else float("nan")


def _q(codes: np.ndarray) -> float:
    w, t, lo = (float(np.sum(codes == c)) for c in (1, 0, -1))
    den = lo + t
    return (w + t) / den if den else float("nan")


def _boot_q_gap(ox: np.ndarray, oy: np.ndarray, seed: int, n_boot: int = 2000) -> tuple[float, float, float, float]:
    if len(ox) < 2:
        return (float("nan"),) * 4
    point = _q(ox) - _q(oy)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(ox), size=(n_boot, len(ox)))
    diffs = np.array([_q(ox[i]) - _q(oy[i]) for i in idx])
    diffs = diffs[np.isfinite(diffs)]
    if not np.isfinite(point) or len(diffs) < 2:
        return point, float("nan"), float("nan"), float("nan")
    se = float(np.std(diffs))
    lo, hi = np.quantile(diffs, [0.025, 0.975])
    return (
        float(point),
        float(lo),
        float(hi),
        abs(point) / se if se > 0 else float("inf") if point != 0 else float("nan"),
    )


def unparsed_summary(run: ArenaRun) -> pd.DataFrame:
    """Calls and unparsed answers per judge (pair-wise, absolute), with the most common reasons."""
    rows = []
    for name, frame in (("pairwise", run.raw), ("absolute", run.absolute)):
        if not len(frame):
            continue
        bad = frame[frame["status"] != "parsed"]
        reasons = bad["reason"].astype(str).str.slice(0, 60).value_counts().head(3)
        rows.append(
            {
                "judge": name,
                "calls": len(frame),
                "unparsed_or_error": len(bad),
                "rate": len(bad) / len(frame),
                "top_reasons": "; ".join(f"{r} ({c})" for r, c in reasons.items()),
            }
        )
    return pd.DataFrame(rows)


__all__ = [
    "DEFAULT_RECOMMENDERS",
    "PAPER_NAMES",
    "ArenaRun",
    "aspect_table",
    "build_recommender",
    "closest_pairs",
    "paper_table2_wide",
    "position_consistency",
    "q_auc_correlation",
    "relative_vs_absolute",
    "run_arena",
    "separation",
    "split_last_n",
    "table1",
    "table2",
    "table4",
    "unparsed_summary",
    "versus_table",
]
