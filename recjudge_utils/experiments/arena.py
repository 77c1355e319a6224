"""RecSys Arena (Wu et al. 2024): train recommenders, offline metrics, pairwise and absolute judging.

``run(judge, dataset, ArenaConfig(...))``. Protocol (choices the paper leaves open are stated here; the authors'
code, ``anonyProjects/RecSys-Arena``, settles some of them, see :func:`recjudge_utils.reporting.arena.setup_table`):

* split: per user, the last ``n_test`` interactions by timestamp are the test set, the rest train
  (every interaction is an implicit positive; :func:`~recjudge_utils.splitting.temporal.split_last_n`); the
  judge sees the user's ``n_history`` most recent training items (the authors' code: 5). The paper describes no
  split; the authors' prediction files label each listed item 1 (a held-out positive, with its timestamp) or 0
  (timestamp 0), and their five models' lists share most items, i.e. they rank a small per-user candidate pool
  whose construction is not published. Here every model ranks every item the user has not trained on;
* offline metrics over all users with test items: AUC (test items vs every item the user has not
  interacted with), nDCG@k (the paper's gain 2^p - 1, p = the held-out rating), URD@k (genre Jaccard), see
  :mod:`recjudge_utils.metrics.offline`; the paper names the metrics but not how AUC's negatives are chosen;
* judged users: ``n_users`` drawn at random (seeded) among the users with test items (the authors' code: the
  first 1,000 user ids);
* comparisons: every recommender vs the baseline (FM, as in Table 2), plus the ``n_close_pairs`` pairs of
  non-baseline recommenders with the closest offline AUC (Figures 3-4); each judged in both orders unless
  ``both_orders=False`` (then only with x shown as A, as in the paper).

Every CI is computed here, once, with the config's ``n_boot`` and ``seed``: Win/Tie/Lose and Q per aspect,
comparison and source (:attr:`ArenaRun.outcomes`), position consistency and the share of 'A wins', and the paired
differences that separate the closest pair; so are Figure 6's normalisation and the check of the paper's own Table 3
against its Tables 1-2. Chapter 5 builds its samples and judges them with the public steps below
(:func:`split`, :func:`train_models`, :func:`build_sample`, :func:`judge_comparisons`).
Tables and figures: :mod:`recjudge_utils.reporting.arena`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from recjudge_utils.answer_formats.arena_verdicts import OVERALL
from recjudge_utils.data import Dataset
from recjudge_utils.data.folder import judge_item_texts
from recjudge_utils.experiments.run import Result, Run, result
from recjudge_utils.experiments.steps import sample_users, top_lists
from recjudge_utils.judge.records import AnswerHealth
from recjudge_utils.judge.types import Judge
from recjudge_utils.metrics.correlation import pearson_rounding_range
from recjudge_utils.metrics.intervals import wilson
from recjudge_utils.metrics.offline import evaluate_recommender, genre_jaccard, offline_table, pearson
from recjudge_utils.metrics.pairwise import WTL_COLUMNS, WTL_MEASURES, paired_difference, q_share, wtl_summary
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.protocols.arena import AbsoluteJudge, PairwiseJudge
from recjudge_utils.protocols.context.arena import ArenaContext
from recjudge_utils.protocols.pairwise import ORDERS, POSITION_COLUMNS, games, position_summary
from recjudge_utils.protocols.truth import heldout_hits
from recjudge_utils.recommenders import DISPLAY_NAMES
from recjudge_utils.recommenders.base import Recommender
from recjudge_utils.recommenders.budgets import training_budget
from recjudge_utils.recommenders.data_needs import keep_usable, lacking
from recjudge_utils.recommenders.training import Trained, train_each
from recjudge_utils.splitting.temporal import split_last_n

__all__ = [
    "PAPER_NAMES",
    "Q_SHARE_MEASURE",
    "ArenaConfig",
    "ArenaRun",
    "ArenaSample",
    "arena_table",
    "build_sample",
    "consistency_table",
    "judge_comparisons",
    "outcome_tables",
    "paper_correlations",
    "plan_comparisons",
    "run",
    "separation",
    "split",
    "train_models",
]

_DEFAULT_RECOMMENDERS = ("fm", "minilm-content", "lightgcn", "sasrec", "deepfm")
#: our model -> the paper's row it stands in for (MiniLM-content stands in for the news model NRMS)
PAPER_NAMES = {"fm": "FM", "minilm-content": "NRMS", "lightgcn": "LightGCN", "sasrec": "SASRec", "deepfm": "DeepFM"}
#: how the separation table names Q's comparison: the difference of Q's shares s = Q / (1 + Q) (:func:`separation`)
Q_SHARE_MEASURE = "Q vs baseline, as its share Q / (1 + Q)"
#: the measures of :attr:`ArenaRun.outcomes` that ``results.json`` carries: measure -> (metric, interval method)
_HEADLINE = {"win": ("win_pct", "95% Wilson"), "Q": ("Q", "95% percentile bootstrap")}


@dataclass(frozen=True)
class ArenaConfig:
    """Demo defaults. Paper scale follows the authors' code (1,000 users per comparison, 5 history items), with
    longer training; the paper's judges were far larger."""

    recommenders: tuple[str, ...] = _DEFAULT_RECOMMENDERS
    baseline: str = "fm"
    top_k: int = 5
    n_users: int = 2  # judged users; 0 = every user with test items (the authors' code: 1,000)
    aspects: tuple[str, ...] | Mapping[str, str] | None = None
    both_orders: bool = True
    n_close_pairs: int = 1
    absolute: bool = True
    n_history: int = 10  # the user's most recent training items shown (the authors' code: 5)
    n_test: int = 10
    train_budget: str = "small"
    n_boot: int = 2000  # bootstrap resamples of every CI of Q and of the paired differences
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "recommenders", tuple(self.recommenders))
        if isinstance(self.aspects, list):
            object.__setattr__(self, "aspects", tuple(self.aspects))
        if self.baseline not in self.recommenders:
            raise ValueError(f"the baseline {self.baseline!r} must be one of the recommenders {self.recommenders}")
        if self.top_k <= 0:
            raise ValueError("top_k must be positive")
        training_budget("arena", self.train_budget)  # validates the name

    @property
    def sources(self) -> list[str]:
        """The views of the verdicts: each order alone and adjudicated, or the paper's single order."""
        return [*ORDERS, "adjudicated"] if self.both_orders else ["x_first"]

    @property
    def main_source(self) -> str:
        """The view the headline comparisons use: adjudicated when both orders were judged."""
        return "adjudicated" if self.both_orders else "x_first"


def _closest_pairs(auc: Mapping[str, float], n: int, exclude: Sequence[str] = ()) -> list[tuple[str, str]]:
    """The ``n`` pairs of models (not in ``exclude``) with the smallest |AUC difference| (higher AUC first)."""
    names = [m for m in auc if m not in exclude]
    pairs = sorted(combinations(names, 2), key=lambda p: (abs(auc[p[0]] - auc[p[1]]), p))
    out = []
    for a, b in pairs[:n]:
        out.append((a, b) if auc[a] >= auc[b] else (b, a))
    return out


@dataclass(frozen=True)
class ArenaSample:
    """What the judge is shown: the judged users, each model's top-k list for them (the one cut, where they are
    made), the held-out test positives in each list (the truth a simulated judge answers from) and the user context
    (profile, recent history)."""

    users: list[int]
    lists: dict[str, dict[int, list[int]]]
    hits: dict[str, dict[int, int]]  # held-out test positives in each shown list
    context: ArenaContext


@dataclass(kw_only=True)
class ArenaRun(Run):
    """Everything one run produced (the notebook reads tables from here)."""

    experiment: ClassVar[str] = "arena"

    config: ArenaConfig
    dataset_name: str
    sample: ArenaSample
    offline: pd.DataFrame  # per model: auc, ndcg@k, urd, n_users
    offline_per_user: dict[str, pd.DataFrame]
    comparisons: pd.DataFrame  # user, x, y, kind ("vs_baseline" / "close_pair")
    raw: pd.DataFrame  # one row per judged (comparison, order)
    adjudicated: pd.DataFrame  # one row per comparison (both orders)
    absolute: pd.DataFrame  # user, model, score, status
    aspect_keys: list[str]
    outcomes: pd.DataFrame  # Win/Tie/Lose %, Q and CIs per aspect, kind, source, comparison, measure (outcome_tables)
    consistency: pd.DataFrame  # position consistency etc. per comparison and overall, per measure (consistency_table)
    a_wins: pd.DataFrame  # the share of 'A wins' among verdicts naming a winner, overall and per comparison
    correlation: pd.DataFrame  # Pearson r (and p) of Q vs the baseline with AUC, per source
    closest_pair: tuple[str, str] | None
    separation: pd.DataFrame  # the closest pair: AUC, absolute score and Q differences with paired CIs
    paper_correlation: pd.DataFrame  # the paper's Table 3 beside r from its Tables 1-2 (see paper_correlations)

    def versus(self, source: str, key: str = OVERALL, kind: str = "vs_baseline") -> pd.DataFrame:
        """The rows of :attr:`outcomes` for one judged source, aspect and kind of comparison."""
        if source not in self.config.sources:
            raise ValueError(f"source {source!r} was not judged; this run has {self.config.sources}")
        o = self.outcomes
        return o[(o["source"] == source) & (o["aspect"] == key) & (o["kind"] == kind)].reset_index(drop=True)

    def versus_all(self, key: str = OVERALL, kind: str = "vs_baseline") -> pd.DataFrame:
        """:meth:`versus` of every judged source, by recommender (the config's order), then source (as judged)."""
        frame = pd.concat([self.versus(s, key, kind) for s in self.config.sources], ignore_index=True)
        rec, src = ({m: i for i, m in enumerate(names)} for names in (self.config.recommenders, self.config.sources))
        order = frame["x"].map(rec).fillna(len(rec)) * 10 + frame["source"].map(src).fillna(len(src))
        return frame.assign(_key=order.to_numpy()).sort_values("_key", kind="stable").drop(columns="_key")

    def overall(self) -> tuple[dict[str, Any] | None, pd.Series]:
        """The overall position consistency row of :attr:`consistency` (None with one order judged) and the overall
        row of :attr:`a_wins`."""
        c = self.consistency
        rows = c[(c["x"] == "all") & (c["measure"] == "consistency")].to_dict("records")
        return (rows[0] if self.config.both_orders and rows else None), self.a_wins.iloc[0]

    def unreadable(self) -> AnswerHealth | None:
        """Every answer's health (verdicts and absolute scores) when pair-wise verdicts were asked for and none could
        be read; None otherwise."""
        verdicts = AnswerHealth.of_frames(self.raw)
        return AnswerHealth.of_frames(self.raw, self.absolute) if verdicts.n and verdicts.nothing_usable else None

    def unparsed(self) -> pd.DataFrame:
        """Per kind of answer asked (pair-wise, absolute): calls, unusable answers (unparsed or failed) and their %,
        the three most common reasons (first 60 characters) with their counts, and the first unusable raw answer."""
        rows = []
        for name, frame in (("pair-wise", self.raw), ("absolute", self.absolute)):
            if len(frame):
                bad = frame[frame["status"] != "parsed"]
                raw = bad["raw_text"].dropna().astype(str) if "raw_text" in bad else pd.Series(dtype=str)
                reasons = bad["reason"].astype(str).str.slice(0, 60).value_counts().head(3)
                rows.append(
                    {"answers": name, "calls": len(frame), "unusable": len(bad), "pct": 100 * len(bad) / len(frame),
                     "reasons": list(reasons.items()), "example": raw.iloc[0] if len(raw) else None}
                )  # fmt: skip
        return pd.DataFrame(rows, columns=["answers", "calls", "unusable", "pct", "reasons", "example"])

    def relative_vs_absolute(self, source: str = "adjudicated") -> pd.DataFrame:
        """Figure 6: per non-baseline model, AUC, Q against the baseline and the mean absolute score, raw and min-max
        normalised over the finite values (the book's choice: the paper shows "normalized results" without saying
        how); NaN where a value is not finite or all values are equal."""
        versus = self.versus(source)
        q = versus[versus["measure"] == "Q"].set_index("x")["value"]
        absolute = self.absolute.groupby("model")["score"].mean() if len(self.absolute) else pd.Series(dtype=float)
        out = pd.DataFrame({"model": list(q.index)})
        out["AUC"] = out["model"].map(self.offline.set_index("rs")["auc"])
        out["Q"] = out["model"].map(q)
        out["absolute"] = out["model"].map(absolute)
        for col in ("AUC", "Q", "absolute"):
            v = out[col].to_numpy(dtype=float)
            finite = np.isfinite(v)
            span = np.ptp(v[finite]) if finite.any() else 0.0
            scaled = (v - np.min(v[finite])) / span if span > 0 else np.full(len(v), np.nan)
            out[f"{col} (normalised)"] = np.where(finite, scaled, np.nan)
        return out

    def results(self) -> list[Result]:
        """Per RS vs the baseline: win % and Q with CIs per source; Pearson r with AUC; position consistency; AUC."""
        out = []
        for source in self.config.sources:
            for r in self.versus(source).to_dict("records"):
                if r["measure"] in _HEADLINE:
                    metric, method = _HEADLINE[r["measure"]]
                    group = {"x": str(r["x"]), "y": str(r["y"]), "source": source}
                    out.append(result(metric, r["value"], r["low"], r["high"], r["n"], method, **group))
        for c in self.correlation.itertuples(index=False):
            out.append(result("pearson_r_q_auc", c.r, n=c.n_models, source=c.source))
            out.append(result("pearson_p_q_auc", c.p, n=c.n_models, source=c.source))
        overall = self.consistency[self.consistency["x"] == "all"].set_index("measure")
        c, a = overall.loc["consistency"], overall.loc["a_wins_share"]
        out.append(result("position_consistency", c["value"], c["low"], c["high"], c["n"], "95% Wilson"))
        out.append(result("a_wins_share", a["value"], n=int(a["n"])))  # over the parsed answers
        for _, r in self.offline.iterrows():
            out.append(result("auc", r["auc"], n=r["n_users"], rs=str(r["rs"])))
        return out

    def items(self) -> dict[str, list[dict[str, Any]]]:
        """Every pairwise outcome for x, per user, comparison and order."""
        raw = self.raw
        return {
            "pairwise": [
                {"user": int(u), "x": str(x), "y": str(y), "order": str(o), "label": None if pd.isna(v) else str(v)}
                for u, x, y, o, v in zip(raw["user"], raw["x"], raw["y"], raw["order"], raw[OVERALL], strict=True)
            ]
        }


# ----------------------------------------------------------------------------------------------- steps
def split(dataset: Dataset, config: ArenaConfig) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test): each user's last ``config.n_test`` interactions by time are the test set."""
    return split_last_n(dataset.interactions, n_test=config.n_test)


def train_models(
    dataset: Dataset, train: pd.DataFrame, models: Mapping[str, tuple[str, Mapping[str, Any]]], config: ArenaConfig
) -> dict[str, Trained]:
    """Fit (or load) ``label -> (registry key, params)`` on ``train`` through the one training loop, each with the
    config's training budget under its params, saying for each whether it was loaded or trained."""
    budget = training_budget("arena", config.train_budget)
    split = {"kind": "last_n", "n_test": config.n_test, "dataset": dataset.name}
    specs = {label: (key, {**budget.get(key, {}), **params}) for label, (key, params) in models.items()}
    fitted = train_each(specs, train, dataset.items, split=split, seed=config.seed, users=dataset.users)
    for label, fit in fitted.items():
        how = "loaded the stored model of" if fit.loaded else "trained"
        print(f"{how} {DISPLAY_NAMES.get(label, label)} in {fit.seconds:.1f} s")
    return fitted


def _offline_metrics(
    dataset: Dataset, models: Mapping[str, Recommender], train: pd.DataFrame, test: pd.DataFrame, config: ArenaConfig
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """(mean AUC / nDCG@k / URD per model, the per-user metrics) over every user with test items."""
    sim = genre_jaccard(dataset.items)
    per_user = {
        n: evaluate_recommender(m, train, test, dataset.items, k=config.top_k, sim=sim) for n, m in models.items()
    }
    return offline_table(per_user), per_user


def build_sample(
    dataset: Dataset, models: Mapping[str, Recommender], train: pd.DataFrame, test: pd.DataFrame, config: ArenaConfig
) -> ArenaSample:
    """Sample ``config.n_users`` users with test items (seeded), take each model's top-``config.top_k`` list, count
    the held-out test positives in every list, and build the judge's user context from ``train``."""
    users = sample_users(test["user"].unique(), config.n_users, config.seed)
    lists = top_lists(models, users, config.top_k)
    heldout = {int(u): {int(i) for i in g} for u, g in test.groupby("user")["item"]}
    hits = {n: heldout_hits(lists[n], heldout) for n in lists}
    context = ArenaContext(
        dataset.items,
        train,
        dataset.users,
        n_history=config.n_history,
        dataset=dataset.name,
        words=dataset.domain,
        texts=judge_item_texts(dataset),
    )
    return ArenaSample(users=users, lists=lists, hits=hits, context=context)


def plan_comparisons(users: Sequence[int], auc: Mapping[str, float], config: ArenaConfig) -> pd.DataFrame:
    """One row per (user, x, y, kind): every recommender vs the baseline, then the closest-AUC pairs."""
    pairs = [(x, config.baseline, "vs_baseline") for x in config.recommenders if x != config.baseline]
    close = _closest_pairs(auc, config.n_close_pairs, exclude=[config.baseline])
    pairs += [(a, b, "close_pair") for a, b in close]
    return pd.DataFrame(
        [{"user": u, "x": x, "y": y, "kind": kind} for x, y, kind in pairs for u in users],
        columns=["user", "x", "y", "kind"],
    )


def _aspects(config: ArenaConfig) -> list[str] | dict[str, str] | None:
    if config.aspects is None:
        return None
    return dict(config.aspects) if isinstance(config.aspects, Mapping) else list(config.aspects)


def judge_comparisons(
    judge: Judge, sample: ArenaSample, comparisons: pd.DataFrame, config: ArenaConfig, with_analysis: bool = False
) -> tuple[pd.DataFrame, list[str]]:
    """(one row per (comparison, order), the aspect keys + overall): each row of ``comparisons`` (user, x, y, any
    other columns) judged on ``config.aspects``, in both orders when ``config.both_orders`` else with x shown as A."""
    pairwise = PairwiseJudge(judge, sample.context, aspects=_aspects(config), k=config.top_k)
    raw = pairwise.judge(
        comparisons, sample.lists, both_orders=config.both_orders, evidence=sample.hits, with_analysis=with_analysis
    )
    return raw.merge(comparisons, on=["user", "x", "y"], how="left"), [*pairwise.aspect_keys, OVERALL]


def _judge_absolute(judge: Judge, sample: ArenaSample, models: Sequence[str], config: ArenaConfig) -> pd.DataFrame:
    """Score each of ``models``' lists alone in [0, 1] (Figure 6); the truth attached is the held-out share."""
    k = config.top_k
    judged = {m: sample.lists[m] for m in models}
    share = {n: {u: h / k for u, h in sample.hits[n].items()} for n in judged}
    return AbsoluteJudge(judge, sample.context, aspects=_aspects(config), k=k).score(sample.users, judged, truth=share)


# ----------------------------------------------------------------------------------------------- CIs
def arena_table(
    outcomes: pd.DataFrame, column: str = OVERALL, by: Sequence[str] = ("x", "y"), n_boot: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """Per comparison (``by``), one row per measure (:func:`~recjudge_utils.metrics.pairwise.wtl_summary`): Win / Tie
    / Lose % each with its 95 % Wilson interval and Q with its percentile-bootstrap interval, over the comparison's
    ``n`` judged outcomes (``n_unjudged`` the others); ``rank``, on each of its rows, is the comparison's rank by Q
    (1 = best)."""
    frames = []
    for keys, grp in outcomes.groupby(list(by), sort=False):
        keys = keys if isinstance(keys, tuple) else (keys,)
        vals = [None if pd.isna(v) else v for v in grp[column]]
        frames.append(wtl_summary(vals, n_boot=n_boot, seed=seed).assign(**dict(zip(by, keys, strict=True))))
    if not frames:  # no comparison: no row, the same columns with their types
        frames.append(wtl_summary([]).iloc[:0].assign(**dict.fromkeys(by)))
    table = pd.concat(frames, ignore_index=True)[[*by, *WTL_COLUMNS]]
    rank = table.loc[table["measure"] == "Q", "value"].rank(ascending=False, method="min").to_numpy()
    return table.assign(rank=np.repeat(rank, len(WTL_MEASURES)))  # each comparison's rows are its measures in order


def _source_frame(raw: pd.DataFrame, adjudicated: pd.DataFrame, source: str) -> pd.DataFrame:
    """The outcomes of one source: the raw rows of one order (``x_first`` / ``y_first``), or ``adjudicated``."""
    return adjudicated if source == "adjudicated" else raw[raw["order"] == source]


def outcome_tables(
    raw: pd.DataFrame, adjudicated: pd.DataFrame, keys: Sequence[str], sources: Sequence[str], n_boot: int, seed: int
) -> pd.DataFrame:
    """:func:`arena_table` for every aspect key, kind of comparison (when ``raw`` has a ``kind`` column) and source,
    stacked with columns aspect, kind, source in front; ranks are within each (aspect, kind, source)."""
    frames = []
    kinds = list(dict.fromkeys(raw["kind"])) if "kind" in raw else [None]
    for key in keys:
        for kind in kinds:
            for source in sources:
                frame = _source_frame(raw, adjudicated, source)
                if kind is not None:
                    frame = frame[frame["kind"] == kind]
                table = arena_table(frame, column=key, n_boot=n_boot, seed=seed)
                table.insert(0, "source", source)
                table.insert(0, "kind", kind)
                table.insert(0, "aspect", key)
                frames.append(table)
    return pd.concat(frames, ignore_index=True)


def consistency_table(raw: pd.DataFrame, key: str = OVERALL) -> pd.DataFrame:
    """Per comparison (x, y) and overall ("all"), one row per measure (:func:`~recjudge_utils.protocols.pairwise.
    position_summary`): how often both orders agree (``consistency`` with its Wilson CI, over the ``n`` games whose
    two orders were both parsed), how often the judge answers 'A wins' whatever A is (``a_wins_share``, over the
    ``n`` parsed answers) and the unparsed rate (``unparsed_rate``, over the ``n`` answers)."""
    if raw.empty:
        return pd.DataFrame(columns=POSITION_COLUMNS)
    summary = position_summary(raw, key, first_verdict="A wins")
    return summary.assign(measure=summary["measure"].replace("first_share", "a_wins_share"))


def _a_wins_table(raw: pd.DataFrame, key: str = OVERALL) -> pd.DataFrame:
    """Overall (x = y = "all") and per comparison, one row (measure ``a_share``): of the ``n`` parsed verdicts naming a
    winner, the share naming A with its 95 % Wilson interval. With both orders judged each list is A as often as B, so a
    judge without position bias names A in half of them; ties are left out because they name no position."""
    parsed = raw[raw["status"] == "parsed"]
    groups = [("all", "all", parsed)] + [(x, y, g) for (x, y), g in parsed.groupby(["x", "y"], sort=False)]
    rows = []
    for x, y, g in groups:
        verdicts = g[f"verdict_{key}"]
        k, n = int((verdicts == "A wins").sum()), int(verdicts.isin(["A wins", "B wins"]).sum())
        lo, hi = wilson(k, n)
        rows.append((x, y, "a_share", k / n if n else np.nan, lo, hi, n))
    return pd.DataFrame(rows, columns=POSITION_COLUMNS)


def paper_correlations(draws: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The paper's Table 3 (printed r and p per judge and dataset) beside Pearson r and p recomputed from its own
    Tables 1 (AUC) and 2 (Q), and the lowest and highest r when every printed AUC and Q moves uniformly within its
    last digit (:func:`~recjudge_utils.metrics.correlation.pearson_rounding_range`, one random stream over all)."""
    p1, p2 = paper_table("arena_table1"), paper_table("arena_table2")
    rng = np.random.default_rng(seed)
    rows = []
    for (llm, dataset), block in p2.groupby(["llm", "dataset"], sort=False):
        auc = block["rs"].map(p1[p1["dataset"] == dataset].set_index("rs")["auc"]).to_numpy(float)
        q = block["q"].to_numpy(float)
        r, p = pearson(auc, q)
        low, high = pearson_rounding_range(auc, q, half_unit=5e-5, draws=draws, seed=rng)
        rows.append(
            {"llm": llm, "dataset": dataset, "r_recomputed": r, "p_recomputed": p, "r_low": low, "r_high": high}
        )
    return paper_table("arena_table3").merge(pd.DataFrame(rows), on=["llm", "dataset"])


def separation(
    pair: tuple[str, str],
    offline_per_user: Mapping[str, pd.DataFrame],
    absolute: pd.DataFrame,
    outcomes: pd.DataFrame,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """How well AUC, Q and the absolute score separate two models, each as a paired bootstrap over users.

    For each measure: the difference (first minus second), its 95% CI over users, and the standardised gap
    |difference| / bootstrap SE. AUC pairs the models' per-user AUCs (all evaluated users); the absolute score
    pairs the judged users' scores; Q compares each model's outcome against the baseline per judged user
    (``outcomes``: one source's vs-baseline rows) through Q's share s = (W+T)/(W+L+2T) = Q / (1 + Q)
    (:func:`~recjudge_utils.metrics.pairwise.q_share`), which orders the two as Q does and, unlike a difference of
    Q, is defined on every resample: no resample is dropped.
    """
    x, y = pair
    rows = []
    merged = offline_per_user[x][["user", "auc"]].merge(
        offline_per_user[y][["user", "auc"]], on="user", suffixes=("_x", "_y")
    )
    d = paired_difference(merged["auc_x"].to_numpy(), merged["auc_y"].to_numpy(), n_boot=n_boot, seed=seed)
    rows.append(("AUC (all evaluated users)", d.value, d.low, d.high, d.standardised, len(merged)))
    if len(absolute):
        piv = absolute.pivot(index="user", columns="model", values="score")
        if x in piv and y in piv:
            d = paired_difference(piv[x].to_numpy(float), piv[y].to_numpy(float), n_boot=n_boot, seed=seed)
            n = int(piv[[x, y]].notna().all(axis=1).sum())
            rows.append(("absolute score", d.value, d.low, d.high, d.standardised, n))
    code = {"win": 1.0, "tie": 0.0, "lose": -1.0}
    per = outcomes.pivot_table(index="user", columns="x", values=OVERALL, aggfunc="first")
    if x in per and y in per:
        ox = per[x].map(code).to_numpy(dtype=float)
        oy = per[y].map(code).to_numpy(dtype=float)
        # Q's share s = Q / (1 + Q), not Q: a difference of Q is infinite, and its resample dropped, wherever one
        # side has only wins; s is defined on every resample and orders the two as Q does
        d = paired_difference(ox, oy, statistic=q_share, n_boot=n_boot, seed=seed)
        n_both = int((np.isfinite(ox) & np.isfinite(oy)).sum())
        rows.append((Q_SHARE_MEASURE, d.value, d.low, d.high, d.standardised, n_both))
    return pd.DataFrame(rows, columns=["measure", "difference", "low", "high", "standardised_gap", "n_users"])


# ----------------------------------------------------------------------------------------------- the run
def run(judge: Judge, dataset: Dataset, config: ArenaConfig) -> ArenaRun:
    """Train (or load) every recommender, evaluate offline, judge the sample, and compute every table's numbers."""
    if (why := lacking(config.baseline, dataset)) is not None:
        raise ValueError(f"the baseline {config.baseline!r} cannot be trained on {dataset.label}: it needs {why}")
    cfg = keep_usable(config, dataset)  # a model the data cannot train: one line, left out
    timings: dict[str, float] = {}
    train, test = split(dataset, cfg)
    fitted = train_models(dataset, train, {name: (name, {}) for name in cfg.recommenders}, cfg)
    models = {name: fit.model for name, fit in fitted.items()}
    timings.update({f"train {n}": fit.seconds for n, fit in fitted.items()})

    t0 = time.perf_counter()
    offline, per_user = _offline_metrics(dataset, models, train, test, cfg)
    timings["offline metrics"] = time.perf_counter() - t0

    sample = build_sample(dataset, models, train, test, cfg)
    auc = dict(zip(offline["rs"], offline["auc"], strict=True))
    comparisons = plan_comparisons(sample.users, auc, cfg)
    t0 = time.perf_counter()
    raw, keys = judge_comparisons(judge, sample, comparisons, cfg)
    timings["judge pairwise"] = time.perf_counter() - t0
    print(f"pairwise judging: {len(raw)} calls in {timings['judge pairwise']:.1f} s")
    adjudicated = pd.DataFrame()
    if cfg.both_orders:
        adjudicated = games(raw, keys).merge(comparisons, on=["user", "x", "y"], how="left")

    absolute = pd.DataFrame(columns=["user", "model", "score", "status", "reason"])
    if cfg.absolute:
        t0 = time.perf_counter()
        # Figure 6 compares the non-baseline models
        absolute = _judge_absolute(judge, sample, [m for m in cfg.recommenders if m != cfg.baseline], cfg)
        timings["judge absolute"] = time.perf_counter() - t0
        print(f"absolute judging: {len(absolute)} calls in {timings['judge absolute']:.1f} s")

    outcomes = outcome_tables(raw, adjudicated, keys, cfg.sources, cfg.n_boot, cfg.seed)
    correlation = []
    for source in dict.fromkeys(["x_first", cfg.main_source]):
        versus = outcomes[(outcomes["source"] == source) & (outcomes["aspect"] == OVERALL)]
        versus = versus[(versus["kind"] == "vs_baseline") & (versus["measure"] == "Q")]
        q = versus["value"].to_numpy(dtype=float)
        r, p = pearson(versus["x"].map(auc).to_numpy(dtype=float), q)
        correlation.append({"source": source, "n_models": int(np.isfinite(q).sum()), "r": r, "p": p})
    close = _closest_pairs(auc, 1, exclude=[cfg.baseline])
    pair = close[0] if close else None
    sep = pd.DataFrame()
    if pair is not None:
        main = _source_frame(raw, adjudicated, cfg.main_source)
        sep = separation(pair, per_user, absolute, main[main["kind"] == "vs_baseline"], cfg.n_boot, cfg.seed)
    return ArenaRun(
        config=cfg,
        judge_name=judge.model_name,
        data_label=dataset.display_label,
        timings=timings,
        dataset_name=dataset.name,
        sample=sample,
        offline=offline,
        offline_per_user=per_user,
        comparisons=comparisons,
        raw=raw,
        adjudicated=adjudicated,
        absolute=absolute,
        aspect_keys=keys,
        outcomes=outcomes,
        consistency=consistency_table(raw),
        a_wins=_a_wins_table(raw),
        correlation=pd.DataFrame(correlation),
        closest_pair=pair,
        separation=sep,
        paper_correlation=paper_correlations(),
    )
