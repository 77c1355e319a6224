"""Judge your own recommender: lists trained anywhere, three protocols side by side, and whether they agree.

``run(judge, YourRecommendersData(...), YourRecommendersConfig(...))`` takes the top-k lists of any number of
systems (read by :func:`recjudge_utils.lists.read_lists` from the formats RS toolkits write), on the book's
temporal split of one fold (the split chapter 2 trains on; ``python -m recjudge_utils.data export-split`` writes it
for a system trained elsewhere), and judges the same seeded users' lists with one judge under each protocol:

============  ========================================================  =====================================
protocol      what the judge answers                                    the system's score per user
============  ========================================================  =====================================
serendipity   a 1-5 serendipity score per (user history, item)          Avg.Score@k (and P_ser@k, N_ser@k)
              (:class:`~recjudge_utils.protocols.pointwise_score.
              SerendipityJudge`, chapter 1's template)
arena         which of two lists the user prefers, in both orders,      share of points in its duels (win 1,
              adjudicated (:class:`~recjudge_utils.protocols.arena.     tie 1/2, lose 0)
              PairwiseJudge`)
saer          Good / Partial / Poor Match for one list                  the label on 0 (Poor) .. 2 (Good)
              (:class:`~recjudge_utils.protocols.saer.SaerPointwise`)
============  ========================================================  =====================================

Each protocol gives a users x systems matrix; so does each offline metric (Precision, Recall, NDCG@k on the fold's
test positives). :mod:`recjudge_utils.metrics.system_agreement` turns them into system means with CIs, Kendall's
tau between every two rankings with a bootstrap CI over users, and the pairs each measure separates.

**The simulated judge's truth.** Every request carries what a simulated judge answers from (an LLM never sees it):
for Arena and SAER, how many of the user's held-out test positives a list holds; for the serendipity score, the
stand-in rule of :func:`~recjudge_utils.protocols.truth.reevaluation_truth`. :func:`recovery` judges the same lists
with a simulated judge twice, once perfect and once with the error model of its profile, and measures how well each
protocol's noisy ranking recovers its perfect one and the held-out truth (Precision@k on the test split).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from recjudge_utils.answer_formats.arena_verdicts import OVERALL
from recjudge_utils.answer_formats.saer_fields import LABELS_WORST_FIRST
from recjudge_utils.data import Dataset, SerendipityPairs
from recjudge_utils.data.folder import judge_item_texts
from recjudge_utils.experiments.run import Result, Run, result
from recjudge_utils.experiments.steps import (
    FewShotSource,
    few_shot_examples,
    judge_recommendations,
    sample_users,
    serendipity_scorer,
)
from recjudge_utils.judge.client import JudgeClient
from recjudge_utils.judge.loading import load_profile
from recjudge_utils.judge.pricing import usd
from recjudge_utils.judge.types import Judge
from recjudge_utils.judge.usage import frame_usage, scaled
from recjudge_utils.lists import RecommendationLists, lists_frame, read_lists
from recjudge_utils.metrics.beyond_accuracy import (
    PopularityFit,
    catalogue_coverage,
    gini_exposure,
    per_user_beyond_accuracy,
    popularity_regression,
)
from recjudge_utils.metrics.discriminative_power import discriminative_power, swap_rate, users_needed_curve
from recjudge_utils.metrics.missingness import unparsed_test
from recjudge_utils.metrics.numbers import number_or_nan
from recjudge_utils.metrics.pairwise import WTL_COLUMNS, wtl_summary
from recjudge_utils.metrics.power import pairwise_users_needed
from recjudge_utils.metrics.qrels import write_qrels
from recjudge_utils.metrics.rank_agreement import (
    agreement_claim,
    split_half_reliability,
    tau_ap_symmetric,
    tau_over_decided,
)
from recjudge_utils.metrics.ranking import hit_matrix, ndcg_at_k, precision_at_k, recall_at_k
from recjudge_utils.metrics.serendipity_at_k import per_user_metrics
from recjudge_utils.metrics.system_agreement import Tau, kendall_tau, mean_per_system, system_means
from recjudge_utils.metrics.system_tests import DECISIONS, MIN_USERS, compare_systems
from recjudge_utils.metrics.tournament import davidson_fit
from recjudge_utils.paths import book_lists_dir, current_run_dir
from recjudge_utils.protocols.arena import PairwiseJudge
from recjudge_utils.protocols.context.arena import ArenaContext
from recjudge_utils.protocols.context.saer import Catalogue, build_context, saer_variant
from recjudge_utils.protocols.pairwise import games
from recjudge_utils.protocols.pointwise_score import TEMPLATES
from recjudge_utils.protocols.saer import SaerPointwise
from recjudge_utils.protocols.truth import heldout_hits
from recjudge_utils.splitting.export import TemporalFold
from recjudge_utils.splitting.temporal import ground_truth

__all__ = [
    "OFFLINE",
    "PROTOCOLS",
    "YourRecommendersConfig",
    "YourRecommendersData",
    "YourRecommendersRun",
    "YourRecommendersSample",
    "arena_comparisons",
    "beyond_accuracy",
    "chosen_systems",
    "comparisons",
    "cost_at_scale",
    "discrimination",
    "distinct_resamples",
    "judged_users",
    "planned_calls",
    "read_system_lists",
    "recovery",
    "run",
    "tau_coverage",
    "write_run_files",
]

PROTOCOLS: tuple[str, ...] = ("serendipity", "arena", "saer")
OFFLINE: tuple[str, ...] = ("precision", "recall", "ndcg")
#: the serendipity paper's list metrics shown beside Avg.Score@k (its own per-user values, from serendipity_at_k)
_SERENDIPITY_ALSO: tuple[str, ...] = ("p_ser", "n_ser")
_SAER_LEVEL = {label: level for level, label in enumerate(LABELS_WORST_FIRST)}
_POINTS = {"win": 1.0, "tie": 0.5, "lose": 0.0}
#: the beyond-accuracy measures per user (users x systems, tested like the others) and per system
BEYOND_PER_USER: tuple[str, ...] = ("arp", "novelty", "ild")
#: the family-wise level of every decision the chapter makes
ALPHA = 0.05


@dataclass(frozen=True)
class YourRecommendersConfig:
    """The chapter's parameters (the notebook's names). ``arena_pairs``: ``"all"`` (every two systems) or the name
    of one system that every other one is compared against. ``template``: the serendipity prompt (None: chapter 1's
    selection, else the paper's CoT). The lists' length is no field here: it is the ``top_k`` they were read with
    (:attr:`~recjudge_utils.lists.types.RecommendationLists.top_k`), the one cut."""

    fold: int = 0
    protocols: tuple[str, ...] = PROTOCOLS
    systems: tuple[str, ...] | None = None  # the systems judged, by name (None: every one read)
    n_users: int = 3
    arena_pairs: str = "all"
    template: str = "cot"
    n_history: int = 10
    n_shots: int = 10
    seed: int = 0
    n_boot: int = 1000

    def __post_init__(self) -> None:
        object.__setattr__(self, "protocols", tuple(self.protocols))
        if self.systems is not None:
            object.__setattr__(self, "systems", tuple(str(s) for s in self.systems))
        unknown = set(self.protocols) - set(PROTOCOLS)
        if unknown or not self.protocols:
            raise ValueError(f"protocols must be some of {PROTOCOLS}, not {list(self.protocols)}")
        if self.n_users < 0:
            raise ValueError("n_users must be >= 0 (0: every evaluation user)")
        if self.template not in TEMPLATES:
            raise ValueError(f"template must be one of {TEMPLATES}, not {self.template!r}")
        if self.n_shots % 5:
            raise ValueError("n_shots must be a multiple of 5 (the same number of examples for every score level)")


@dataclass(frozen=True)
class YourRecommendersData:
    """The dataset, the fold of chapter 2's split (:func:`~recjudge_utils.splitting.export.temporal_fold`, what
    ``export-split`` writes), the labelled pairs the serendipity judge's few-shot examples come from, and the systems'
    lists."""

    dataset: Dataset
    fold: TemporalFold
    examples: SerendipityPairs
    lists: RecommendationLists

    @property
    def display_label(self) -> str:
        """The dataset's label, marked ``[STAND-IN]`` when it is not the paper's data."""
        return self.dataset.display_label


def read_system_lists(
    dataset: Dataset,
    fold: TemporalFold,
    source: str | Path | Sequence[str | Path] | None,
    *,
    top_k: int,
    seen: Literal["keep", "drop"] = "keep",
    allow_short: bool = False,
) -> RecommendationLists:
    """The systems' lists from ``source`` (a file, folder or glob; None: chapter 2's lists in this run's folder),
    checked against the dataset's own ids and the fold's training items, before any judge call."""
    if source is None:
        source = book_lists_dir(fold.fold)
        if not source.is_dir() or not any(source.glob("*.trec")):
            raise FileNotFoundError(
                f"no lists in {source}: run chapter 2 first (it writes its recommenders' lists there), or pass your "
                "own with -p lists PATH"
            )
    return read_lists(
        source,
        top_k=top_k,
        users=dataset.interactions["user"].unique(),
        items=dataset.items["item"],
        train=fold.train,
        seen=seen,
        allow_short=allow_short,
    )


def _listed_users(fold: TemporalFold, lists: RecommendationLists) -> list[int]:
    """The fold's evaluation users that have a list in every system, sorted: the users the offline metrics cover and
    the judged users are drawn from."""
    return sorted({int(u) for u in fold.eval_users} & lists.users())


def judged_users(fold: TemporalFold, lists: RecommendationLists, n_users: int, seed: int) -> list[int]:
    """A seeded sample of ``n_users`` of :func:`listed_users` (all of them when ``n_users`` is 0): the same users for
    every protocol and every system."""
    return sample_users(_listed_users(fold, lists), n_users, seed=[seed, fold.fold])


def chosen_systems(lists: RecommendationLists, names: Sequence[str] | None) -> list[str]:
    """The systems to judge, in the order read: ``names`` (every one read when None); an unknown name is refused
    with the names read."""
    read = list(lists.systems)
    if names is None:
        return read
    unknown = [n for n in names if n not in lists.systems]
    if unknown:
        raise ValueError(f"systems {unknown} were not read; the systems read are {read}")
    return [s for s in read if s in set(names)]


def arena_comparisons(systems: Sequence[str], users: Sequence[int], arena_pairs: str) -> pd.DataFrame:
    """One row per (user, x, y): every two systems, or every system against the baseline named by ``arena_pairs``
    (x is the other system, y the baseline)."""
    if arena_pairs == "all":
        pairs = list(combinations(systems, 2))
    elif arena_pairs in systems:
        pairs = [(s, arena_pairs) for s in systems if s != arena_pairs]
    else:
        raise ValueError(f"arena_pairs must be 'all' or one of the systems {list(systems)}, not {arena_pairs!r}")
    return pd.DataFrame([(u, x, y) for x, y in pairs for u in users], columns=["user", "x", "y"])


def planned_calls(n_systems: int, n_users: int, top_k: int, arena_pairs: str, template: str = "cot") -> dict[str, int]:
    """Judge calls per protocol before judging: serendipity at most one per (user, item, template stage) (lists that
    share items cost less), Arena two orders per pair per user, SAER one per list."""
    n_pairs = n_systems * (n_systems - 1) // 2 if arena_pairs == "all" else n_systems - 1
    stages = 3 if template == "ltm" else 1
    return {
        "serendipity": n_systems * n_users * top_k * stages,
        "arena": 2 * n_pairs * n_users,
        "saer": n_systems * n_users,
    }


# ----------------------------------------------------------------------------------------------- the sample
@dataclass(frozen=True)
class YourRecommendersSample:
    """What every protocol judges: the users, each system's top-k list for each of them (the lists as read, cut once
    to ``top_k``, as :data:`~recjudge_utils.lists.types.ListsBySystem`), and the held-out truth."""

    users: list[int]
    systems: list[str]
    lists: dict[str, dict[int, list[int]]]
    hits: dict[str, dict[int, int]]  # held-out test positives in each list (the Arena / SAER truth)
    top_k: int  # what the lists were cut to when read


def build_sample(data: YourRecommendersData, config: YourRecommendersConfig) -> YourRecommendersSample:
    """Sample the users and take every chosen system's list for them."""
    users = judged_users(data.fold, data.lists, config.n_users, config.seed)
    systems = chosen_systems(data.lists, config.systems)
    lists = data.lists.by_system(systems, users)
    positives = ground_truth(data.fold.test)
    hits = {s: heldout_hits(lists[s], positives) for s in systems}
    return YourRecommendersSample(users, systems, lists, hits, data.lists.top_k)


def _offline_matrices(data: YourRecommendersData, config: YourRecommendersConfig) -> dict[str, pd.DataFrame]:
    """Precision, Recall and NDCG@k of every system for every evaluation user with a list in all systems
    (users x systems), on the fold's test positives."""
    users = _listed_users(data.fold, data.lists)
    truth = ground_truth(data.fold.test)
    relevant = [truth.get(u, set()) for u in users]
    n_rel = np.array([len(r) for r in relevant])
    k = data.lists.top_k
    out: dict[str, dict[str, np.ndarray]] = {m: {} for m in OFFLINE}
    for s, per_user in data.lists.by_system(chosen_systems(data.lists, config.systems), users).items():
        recs = np.full((len(users), k), -1, dtype=np.int64)
        for row, items in enumerate(per_user.values()):
            recs[row, : len(items)] = items
        hits = hit_matrix(recs, relevant)
        out["precision"][s] = precision_at_k(hits, k)
        out["recall"][s] = recall_at_k(hits, n_rel, k)
        out["ndcg"][s] = ndcg_at_k(hits, n_rel, k)
    return {m: pd.DataFrame(cols, index=pd.Index(users, name="user")) for m, cols in out.items()}


# ----------------------------------------------------------------------------------------------- protocols
def _serendipity(
    judge: Judge, data: YourRecommendersData, config: YourRecommendersConfig, sample: YourRecommendersSample
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, FewShotSource]:
    """(judgments: one row per distinct (user, item); per-user P_ser / N_ser / Avg.Score per system; the
    users x systems matrix of Avg.Score; the few-shot examples judged with, chosen as chapter 2 chooses them)."""
    name, words = data.dataset.name, data.dataset.domain
    few_shot = few_shot_examples(
        data.examples, sample.users, config.n_shots, config.n_history, config.seed, name, words=words
    )
    texts = judge_item_texts(data.dataset)
    scorer = serendipity_scorer(judge, few_shot.examples, config.template, config.n_history, words, texts)
    # chapter 2's per-user metrics name the system column "rs"
    recs = lists_frame(sample.lists).rename(columns={"system": "rs"})
    inter = data.dataset.interactions
    future = inter.loc[inter["timestamp"] > data.fold.train_end]
    judged = judge_recommendations(
        recs, data.fold.train, data.dataset.items, scorer, config.n_history, "serendipity: judge", future
    )
    per_user = per_user_metrics(recs, data.fold.test, judged, k=sample.top_k)
    matrix = per_user.pivot_table(index="user", columns="rs", values="avg", dropna=False)
    return judged, per_user, matrix.reindex(index=sample.users, columns=sample.systems), few_shot


def _arena(
    judge: Judge, data: YourRecommendersData, config: YourRecommendersConfig, sample: YourRecommendersSample
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(one row per call; one row per duel with both orders and the adjudicated overall outcome for x; the users x
    systems matrix of each system's share of points in its duels with that user)."""
    context = ArenaContext(
        data.dataset.items,
        data.fold.train,
        data.dataset.users,
        n_history=config.n_history,
        dataset=data.dataset.name,
        words=data.dataset.domain,
        texts=judge_item_texts(data.dataset),
    )
    duel = PairwiseJudge(judge, context, k=sample.top_k)
    comparisons = arena_comparisons(sample.systems, sample.users, config.arena_pairs)
    evidence = {s: {u: float(h) for u, h in sample.hits[s].items()} for s in sample.systems}
    raw = duel.judge(comparisons, sample.lists, both_orders=True, evidence=evidence)
    duels = games(raw, [OVERALL]) if len(raw) else pd.DataFrame(columns=["user", "x", "y", OVERALL])
    points: dict[tuple[int, str], list[float]] = {}
    for u, x, y, outcome in zip(duels["user"], duels["x"], duels["y"], duels[OVERALL], strict=True):
        if outcome not in _POINTS:
            continue  # an unparsed answer in either order leaves the duel without a verdict
        points.setdefault((int(u), str(x)), []).append(_POINTS[outcome])
        points.setdefault((int(u), str(y)), []).append(1.0 - _POINTS[outcome])
    matrix = pd.DataFrame(np.nan, index=sample.users, columns=sample.systems)
    for (u, s), values in points.items():
        matrix.loc[u, s] = float(np.mean(values))
    return raw, duels, matrix


def _saer(
    judge: Judge, data: YourRecommendersData, config: YourRecommendersConfig, sample: YourRecommendersSample
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per list: the label and the judgment; the users x systems matrix of labels on 0..2)."""
    inter = data.dataset.interactions
    visible = inter.loc[inter["timestamp"] <= data.fold.train_end]  # the context ends where training ends
    catalogue = Catalogue.from_items(data.dataset.items, texts=judge_item_texts(data.dataset))
    words = data.dataset.domain
    contexts = {u: build_context(visible, catalogue, u, words, max_history=config.n_history) for u in sample.users}
    labels = SaerPointwise(saer_variant(words)).play(
        judge, contexts, catalogue, sample.lists, sample.users, sample.hits
    )
    labels["level"] = labels["category"].map(_SAER_LEVEL)
    matrix = labels.pivot_table(index="user", columns="system", values="level", dropna=False)
    return labels, matrix.reindex(index=sample.users, columns=sample.systems)


# ----------------------------------------------------------------------------------------------- the run
@dataclass(kw_only=True)
class YourRecommendersRun(Run):
    """The lists, the users, each protocol's judgments, every measure's users x systems matrix, and the
    statistics across them."""

    experiment: ClassVar[str] = "your_recommenders"

    config: YourRecommendersConfig
    sample: YourRecommendersSample
    judgments: dict[str, pd.DataFrame]  # protocol -> one row per judge call (its status, raw answer, usage)
    matrices: dict[str, pd.DataFrame]  # measure -> users x systems
    summary: pd.DataFrame  # measure, system, mean, low, high, n
    taus: pd.DataFrame  # a, b, tau, low, high, n_systems, n_users, n_boot, resamples
    #: every two systems under every ranking measure over the judged users, Holm-corrected per measure
    #: (:func:`comparisons`): measure, a, b, n, difference, low, high, d_z, dz_low, dz_high, p, p_adjusted, test,
    #: family, decision, separated
    separation: pd.DataFrame
    duels: pd.DataFrame  # one row per Arena duel (both orders and the adjudicated outcome)
    serendipity_per_user: pd.DataFrame
    examples_source: FewShotSource | None = None  # the serendipity judge's few-shot examples, and why
    #: every system against the baseline ``arena_pairs`` names (empty when it is "all"), the same columns
    baseline_tests: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: per ranking measure: pairs, separated, power (Sakai), swap_rate (Voorhees-Buckley), reliability with its
    #: split quantiles, users (judged users with a value)
    power: pd.DataFrame = field(default_factory=pd.DataFrame)
    curve: pd.DataFrame = field(default_factory=pd.DataFrame)  # measure, users, power, swap_rate, draws
    plan: pd.DataFrame = field(default_factory=pd.DataFrame)  # measure, a, b, n, d_z, users_needed
    beyond: pd.DataFrame = field(default_factory=pd.DataFrame)  # system, coverage, gini (over the judged users)
    popularity_fit: PopularityFit | None = None  # the judge's item scores on log popularity
    #: the offline metrics over every evaluation user with lists (users x systems), the table kept beside
    offline_all: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def measures(self) -> list[str]:
        """The protocols judged here, then the offline metrics."""
        return [*self.config.protocols, *OFFLINE]

    def usage(self) -> pd.DataFrame:
        """Per protocol: judgments, API calls (not answered from the cache), parsed, tokens and dollars spent
        (:func:`~recjudge_utils.judge.usage.frame_usage`)."""
        columns = ["protocol", "judgments", "api_calls", "parsed", "prompt_tokens", "completion_tokens", "usd"]
        rows = [
            {"protocol": protocol, **frame_usage(frame), "parsed": int((frame["status"] == "parsed").sum())}
            for protocol, frame in self.judgments.items()
        ]
        return pd.DataFrame(rows, columns=columns)

    def unparsed(self, examples: int = 2) -> pd.DataFrame:
        """Per protocol and reason (``""``: none given), in order of appearance: the answers that could not be read
        (``bad`` of the protocol's ``total``) and the first ``examples`` raw answers (160 characters, one line each)."""
        rows = []
        for protocol, frame in self.judgments.items():
            bad = frame[frame["status"] != "parsed"]
            for reason, grp in bad.groupby(bad["reason"].fillna(""), sort=False):
                raw = [str(t)[:160].replace("\n", " ") for t in grp["raw_text"].dropna().head(examples)]
                rows.append(
                    {"protocol": protocol, "reason": str(reason), "bad": len(grp), "total": len(frame), "raw": raw}
                )
        return pd.DataFrame(rows, columns=["protocol", "reason", "bad", "total", "raw"])

    @property
    def system_pairs(self) -> int:
        """The pairs of systems a measure can separate."""
        return math.comb(len(self.sample.systems), 2)

    def separated_counts(self) -> pd.DataFrame:
        """Per measure (the index, in :attr:`measures` order): the pairs of systems the corrected tests separate
        (``separated``), of how many (``pairs``), which, each as (higher, lower) (``which``), and the pairs left
        undecided for too few users (``undecided``)."""
        rows = {}
        for m in self.measures:
            part = self.separation[self.separation["measure"] == m]
            sep = part[part["separated"]]
            which = [(r.a, r.b) if r.difference > 0 else (r.b, r.a) for r in sep.itertuples(index=False)]
            undecided = int((part["decision"] == DECISIONS[3]).sum()) if "decision" in part else 0
            rows[m] = {"separated": len(sep), "pairs": len(part), "which": which, "undecided": undecided}
        return pd.DataFrame.from_dict(rows, orient="index")

    def unparsed_by_system(self) -> pd.DataFrame:
        """Per protocol and system: the judgments behind the system's score that have no parsed answer (``unparsed``)
        of all of them (``total``): for the serendipity score the list slots (user, item) without a score, for the
        Arena the duels the system took part in without a verdict, for SAER its lists without a label."""
        rows = []
        scores = self.judgments.get("serendipity")
        if scores is not None and len(scores):
            scored = {(int(u), int(i)) for u, i, v in zip(scores["user"], scores["item"], scores["score"], strict=True)
                      if pd.notna(v)}  # fmt: skip
            for s in self.sample.systems:
                slots = [(u, int(i)) for u in self.sample.users for i in self.sample.lists[s].get(u, [])]
                missing = sum(slot not in scored for slot in slots)
                rows.append({"protocol": "serendipity", "system": s, "unparsed": missing, "total": len(slots)})
        if "arena" in self.judgments and len(self.duels) and OVERALL in self.duels:
            for s in self.sample.systems:
                mine = self.duels[(self.duels["x"] == s) | (self.duels["y"] == s)]
                missing = int((~mine[OVERALL].isin(list(_POINTS))).sum())
                rows.append({"protocol": "arena", "system": s, "unparsed": missing, "total": len(mine)})
        labels = self.judgments.get("saer")
        if labels is not None and len(labels):
            for s in self.sample.systems:
                mine = labels[labels["system"] == s]
                missing = int((mine["status"] != "parsed").sum())
                rows.append({"protocol": "saer", "system": s, "unparsed": missing, "total": len(mine)})
        return pd.DataFrame(rows, columns=["protocol", "system", "unparsed", "total"])

    def missingness(self) -> pd.DataFrame:
        """Per protocol: whether the unparsed share differs across systems
        (:func:`~recjudge_utils.metrics.missingness.unparsed_test`): statistic, dof, p, method, and the unparsed
        and total judgments summed over the systems."""
        rows = []
        for protocol, part in self.unparsed_by_system().groupby("protocol", sort=False):
            test = unparsed_test(part["unparsed"].tolist(), part["total"].tolist(), seed=self.config.seed)
            rows.append({"protocol": protocol, **test.__dict__, "unparsed": int(part["unparsed"].sum()),
                         "total": int(part["total"].sum())})  # fmt: skip
        return pd.DataFrame(rows, columns=["protocol", "statistic", "dof", "p", "method", "unparsed", "total"])

    def duel_q(self) -> pd.DataFrame:
        """Per Arena pair (x, y), one row per measure over the ``n`` duels with a verdict: the paper's Win/Tie/Lose %
        and Q = (W + T) / (L + T) with their CIs (:func:`~recjudge_utils.metrics.pairwise.wtl_summary`), and x's
        share of points (``share``, no CI), which is what the chapter's Arena column averages; the two can order
        systems differently (W3/T7/L0: share 0.65, Q 1.43; W6/T0/L4: share 0.60, Q 1.5)."""
        columns = ["x", "y", *WTL_COLUMNS]
        if self.duels.empty or OVERALL not in self.duels:
            return pd.DataFrame(columns=columns)
        frames = []
        for (x, y), grp in self.duels.groupby(["x", "y"], sort=False):
            outcomes = [o if o in _POINTS else None for o in grp[OVERALL]]
            summary = wtl_summary(outcomes, n_boot=self.config.n_boot, seed=self.config.seed)
            scored = [_POINTS[o] for o in outcomes if o is not None]
            share = float(np.mean(scored)) if scored else np.nan
            points = [("share", share, np.nan, np.nan, len(scored), len(outcomes) - len(scored))]
            frames.append(pd.concat([summary, pd.DataFrame(points, columns=WTL_COLUMNS)]).assign(x=x, y=y))
        return pd.concat(frames, ignore_index=True)[columns]

    def tournament(self) -> pd.DataFrame:
        """The Arena's duels as one ranking: Davidson's Bradley-Terry fit with ties
        (:func:`~recjudge_utils.metrics.tournament.davidson_fit`), per system its log strength (mean 0) and rank;
        ``attrs``: nu (the tie parameter), the duels with a verdict and how many of them were ties."""
        q = self.duel_q()
        if q.empty:
            return pd.DataFrame(columns=["system", "log_strength", "rank"])
        counts = []  # (x, y, wins, ties, losses) of every pair with a verdict
        for (x, y), pair in q.groupby(["x", "y"], sort=False):
            share, n = dict(zip(pair["measure"], pair["value"].tolist(), strict=True)), int(pair["n"].iloc[0])
            if n:
                counts.append((x, y, share["win"] * n / 100, share["tie"] * n / 100, share["lose"] * n / 100))
        fit = davidson_fit(counts, self.sample.systems)
        frame = pd.DataFrame({"system": fit.systems, "log_strength": fit.log_strength})
        frame["rank"] = frame["log_strength"].rank(ascending=False, method="min")
        frame.attrs.update(nu=fit.nu, n=fit.n, ties=round(sum(c[3] for c in counts)))
        return frame.sort_values("rank", kind="stable").reset_index(drop=True)

    def duel_points(self) -> pd.DataFrame:
        """Per Arena pair (x, y): x's share of points over the duels with a verdict (win 1, tie 1/2; NaN without
        one), the duels with a verdict (``n``) and all of them (``duels``); no row when no duel was judged."""
        if self.duels.empty or OVERALL not in self.duels:
            return pd.DataFrame(columns=["x", "y", "share", "n", "duels"])
        rows = []
        for (x, y), grp in self.duels.groupby(["x", "y"], sort=False):
            scored = [_POINTS[o] for o in grp[OVERALL] if o in _POINTS]
            share = float(np.mean(scored)) if scored else np.nan
            rows.append({"x": x, "y": y, "share": share, "n": len(scored), "duels": len(grp)})
        return pd.DataFrame(rows)

    def tau_matrix(self) -> pd.DataFrame:
        """Kendall's tau of every two measures (:attr:`measures` by :attr:`measures`, symmetric, 1 on the diagonal,
        NaN where a ranking is constant or missing)."""
        matrix = pd.DataFrame(np.nan, index=self.measures, columns=self.measures)
        for r in self.taus.itertuples(index=False):
            matrix.loc[r.a, r.b] = matrix.loc[r.b, r.a] = r.tau
        for m in self.measures:
            matrix.loc[m, m] = 1.0
        return matrix

    def results(self) -> list[Result]:
        """Every measure's system means with CIs, every Kendall tau with its CI, and the judgments parsed."""
        out = [
            result(r.measure, r.mean, r.low, r.high, r.n, "95% bootstrap over users", system=str(r.system))
            for r in self.summary.itertuples(index=False)
        ]
        out += [
            result("kendall_tau", r.tau, r.low, r.high, r.n_users, "95% bootstrap over users", a=r.a, b=r.b)
            for r in self.taus.itertuples(index=False)
        ]
        out += [
            result("parsed", u.parsed, n=u.judgments, protocol=u.protocol) for u in self.usage().itertuples(index=False)
        ]
        for kind, frame in (("all pairs", self.separation), ("against the baseline", self.baseline_tests)):
            for r in frame.itertuples(index=False) if "decision" in frame else ():
                out.append(
                    result(
                        "paired_difference", r.difference, r.low, r.high, r.n,
                        f"{1 - ALPHA / r.family:.4g} simultaneous t interval over users",
                        measure=r.measure, a=r.a, b=r.b, comparison=kind, test=r.test, p=number_or_nan(r.p),
                        p_adjusted=number_or_nan(r.p_adjusted), family=int(r.family), decision=r.decision,
                        d_z=number_or_nan(r.d_z),
                    )
                )  # fmt: skip
        for r in self.power.itertuples(index=False):
            out.append(
                result("discriminative_power", r.power, n=r.pairs, measure=r.measure, separated=int(r.separated))
            )
            out.append(result("swap_rate", r.swap_rate, n=r.users, measure=r.measure))
            out.append(result("split_half_reliability", r.reliability, r.reliability_low, r.reliability_high,
                              r.users, "2.5-97.5 % of random splits", measure=r.measure))  # fmt: skip
        duels = self.duel_q()
        for r in duels[duels["measure"] == "Q"].itertuples(index=False):
            out.append(result("arena_q", r.value, r.low, r.high, r.n, "95% bootstrap over duels", x=r.x, y=r.y))
        strengths = self.tournament()
        for r in strengths.itertuples(index=False):
            out.append(result("arena_log_strength", r.log_strength, n=strengths.attrs.get("n"), system=r.system))
        for r in self.missingness().itertuples(index=False):
            out.append(result("unparsed_across_systems_p", r.p, n=r.total, protocol=r.protocol, test=r.method))
        if self.popularity_fit is not None:
            f = self.popularity_fit
            out.append(result("score_on_log_popularity", f.value, f.low, f.high, f.n, f.method))
        return out

    def items(self) -> dict[str, list[dict[str, Any]]]:
        """Per-item labels: serendipity scores per (user, item) and SAER labels per (user, system)."""
        out: dict[str, list[dict[str, Any]]] = {}
        sj = self.judgments.get("serendipity")
        if sj is not None and len(sj):
            out["scores"] = [
                {"user": int(u), "item": int(i), "label": None if pd.isna(s) else int(s)}
                for u, i, s in zip(sj["user"], sj["item"], sj["score"], strict=True)
            ]
        labels = self.judgments.get("saer")
        if labels is not None and len(labels):
            out["saer_labels"] = [
                {"user": int(u), "system": str(s), "label": c}
                for u, s, c in zip(labels["user"], labels["system"], labels["category"], strict=True)
            ]
        return out


def write_run_files(run_: YourRecommendersRun, folder: Path | None = None) -> list[Path]:
    """Beside ``results.json``: every measure's users x systems matrix (``matrices/<measure>.csv``, the judged users;
    the offline ones also over every evaluation user as ``<measure>_all_users.csv``) and the judge's serendipity
    scores as TREC qrels (``serendipity.qrels``, label = score - 1, so a score of 1 is not relevant and 5 is grade 4),
    which ranx, ir_measures or trec_eval read. Returns the paths written."""
    target = folder or current_run_dir() / "07_your_recommenders"
    (target / "matrices").mkdir(parents=True, exist_ok=True)
    written = []
    for name, matrix in {**run_.matrices, **{f"{m}_all_users": f for m, f in run_.offline_all.items()}}.items():
        path = target / "matrices" / f"{name}.csv"
        matrix.rename_axis("user").to_csv(path)
        written.append(path)
    scores = run_.judgments.get("serendipity")
    if scores is not None and len(scores):
        labels = scores[["user", "item"]].assign(label=scores["score"] - 1)
        written.append(write_qrels(labels.drop_duplicates(["user", "item"]), target / "serendipity.qrels"))
    return written


def distinct_resamples(n: int) -> int:
    """The distinct bootstrap resamples of n users (multisets of n drawn from n): C(2n - 1, n); none without a user.
    Few of them (10 for 3 users) and a percentile interval means little."""
    return math.comb(2 * n - 1, n) if n > 0 else 0


_TEST_COLUMNS = ["measure", "a", "b", "n", "difference", "low", "high", "d_z", "dz_low", "dz_high", "p", "p_adjusted",
                 "test", "family", "decision", "separated"]  # fmt: skip


def comparisons(
    judged: Mapping[str, pd.DataFrame],
    measures: Sequence[str],
    seed: int,
    baseline: str | None = None,
    intervals: bool = True,
) -> pd.DataFrame:
    """Every two systems (or every system against ``baseline``) under each of ``measures``, over the judged users
    both systems have a value for, the family-wise error held at 5 % per measure
    (:func:`~recjudge_utils.metrics.system_tests.compare_systems`: sign-flip permutation tests, Holm); ``separated``
    is a decision either way. Below ten users with both systems a pair is not decided. ``intervals=False``: the
    decisions alone (a simulation's)."""
    frames = [
        compare_systems(judged[m], baseline=baseline, alpha=ALPHA, seed=seed, intervals=intervals).assign(measure=m)
        for m in measures
        if len(judged[m].columns) > 1
    ]
    if not frames:
        return pd.DataFrame(columns=_TEST_COLUMNS)
    out = pd.concat(frames, ignore_index=True)
    out["separated"] = out["decision"].isin(DECISIONS[:2])
    return out[_TEST_COLUMNS]


def _decided(separation: pd.DataFrame, measure: str) -> list[tuple[str, str]]:
    part = separation[(separation["measure"] == measure) & separation["separated"]]
    return [(r.a, r.b) if r.difference > 0 else (r.b, r.a) for r in part.itertuples(index=False)]


def _tau_columns(tau: Tau) -> dict[str, float | int]:
    """A tau's columns in a frame of taus, where ``tau`` names the estimate beside the other taus of the row (tau_AP,
    tau over the decided pairs) and ``n_users`` the users resampled."""
    return {"tau": tau.value, "low": tau.low, "high": tau.high, "n_systems": tau.n_systems, "n_users": tau.n,
            "n_boot": tau.n_boot}  # fmt: skip


def statistics(
    judged: Mapping[str, pd.DataFrame],
    shown: Mapping[str, pd.DataFrame],
    measures: Sequence[str],
    n_boot: int,
    seed: int,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(system means with CIs of every measure in ``shown``; agreement between every two ``measures`` over the users
    ``judged`` holds for both; the corrected paired tests of every two systems under each of ``measures`` over the
    judged users, :func:`comparisons`).

    ``judged``: each measure over the judged users (what rankings are compared and tested on: the same users for
    the protocols and the offline metrics); ``shown``: each measure as the chapter reports it. Each agreement row has
    Kendall's tau-b with its bootstrap CI and the distinct resamples it can draw (``resamples``), tau_AP
    (``tau_ap``, top-weighted, symmetric), both measures' split-half reliabilities (``reliability_a``, ``_b``: the
    ceiling), tau over the pairs both measures separate (``tau_decided`` over ``pairs_decided``) and the ``claim``
    the convention allows (:func:`~recjudge_utils.metrics.rank_agreement.agreement_claim`; "too few users" below
    ten)."""
    summary = pd.concat(
        [system_means(frame, n_boot=n_boot, seed=seed).assign(measure=m) for m, frame in shown.items()],
        ignore_index=True,
    )
    separation = comparisons(judged, measures, seed)
    reliability = {m: split_half_reliability(judged[m].to_numpy(dtype=float), seed=seed).value for m in measures}
    taus = []
    for a, b in combinations(measures, 2):
        users = judged[a].index.intersection(judged[b].index)
        systems = [s for s in judged[a].columns if s in judged[b].columns]
        x = judged[a].loc[users, systems].to_numpy(dtype=float)
        y = judged[b].loc[users, systems].to_numpy(dtype=float)
        tau: Tau = kendall_tau(x, y, n_boot=n_boot, seed=seed)
        decided, n_decided = tau_over_decided(_decided(separation, a), _decided(separation, b))
        claim = (
            "too few users"
            if tau.n < MIN_USERS
            else agreement_claim(tau.value, tau.low, tau.high, tau.n_systems, reliability[a], reliability[b])
        )
        taus.append(
            {"a": a, "b": b, **_tau_columns(tau), "resamples": distinct_resamples(tau.n),
             "tau_ap": tau_ap_symmetric(mean_per_system(x), mean_per_system(y)),
             "reliability_a": reliability[a], "reliability_b": reliability[b], "tau_decided": decided,
             "pairs_decided": n_decided, "claim": claim}
        )  # fmt: skip
    return summary[["measure", "system", "mean", "low", "high", "n"]], pd.DataFrame(taus), separation


def _curve_sizes(n: int) -> list[int]:
    """10, 20, 40, ... up to the judged users, and the judged users themselves."""
    sizes, size = [], MIN_USERS
    while size < n:
        sizes.append(size)
        size *= 2
    return [*sizes, n] if n >= MIN_USERS else []


def discrimination(
    judged: Mapping[str, pd.DataFrame], measures: Sequence[str], separation: pd.DataFrame, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(per measure: discriminative power at the corrected level, swap rate over split halves, split-half
    reliability; the users-needed curve of each measure; per pair of each measure, the users a rerun needs for 80 %
    power after the correction over its pairs)."""
    power, curves, plans = [], [], []
    for m in measures:
        matrix = judged[m]
        part = separation[separation["measure"] == m]
        users = int(np.isfinite(matrix.to_numpy(dtype=float)).any(axis=1).sum())
        rel = split_half_reliability(matrix.to_numpy(dtype=float), seed=seed)
        power.append(
            {"measure": m, "pairs": len(part), "separated": int(part["separated"].sum()),
             "power": discriminative_power(part),
             "swap_rate": swap_rate(matrix.to_numpy(dtype=float), seed=seed).rate, "reliability": rel.value,
             "reliability_low": rel.low, "reliability_high": rel.high, "users": users}
        )  # fmt: skip
        sizes = _curve_sizes(len(matrix))
        if sizes and matrix.shape[1] > 1:
            curves.append(users_needed_curve(matrix, sizes, n_draws=10, seed=seed).assign(measure=m))
        if matrix.shape[1] > 1:
            plans.append(pairwise_users_needed(matrix, alpha=ALPHA).assign(measure=m))
    curve = pd.concat(curves, ignore_index=True) if curves else pd.DataFrame(columns=["measure", "users", "power"])
    plan = pd.concat(plans, ignore_index=True) if plans else pd.DataFrame(columns=["measure", "a", "b"])
    return pd.DataFrame(power), curve, plan


def beyond_accuracy(
    data: YourRecommendersData, sample: YourRecommendersSample, judgments: Mapping[str, pd.DataFrame]
) -> tuple[dict[str, pd.DataFrame], pd.DataFrame, PopularityFit | None]:
    """(per-user ARP, novelty and intra-list diversity on the items' genres, users x systems; per system the
    catalogue coverage and the Gini of exposure over the judged users' lists, the catalogue being the training
    items; the judge's serendipity scores regressed on log item popularity, None without scores)."""
    train = data.fold.train
    popularity = {int(i): float(c) for i, c in train["item"].value_counts().items()}
    catalogue = sorted(popularity)
    genres = {}
    if "genres" in data.dataset.items:
        genres = {int(i): list(g) if isinstance(g, list | tuple | np.ndarray) else [] for i, g in
                  zip(data.dataset.items["item"], data.dataset.items["genres"], strict=True)}  # fmt: skip
    matrices = per_user_beyond_accuracy(sample.lists, sample.users, popularity, train["user"].nunique(), genres)
    rows = [
        {"system": s, "coverage": catalogue_coverage(sample.lists[s], catalogue),
         "gini": gini_exposure(sample.lists[s], catalogue)}
        for s in sample.systems
    ]  # fmt: skip
    scores = judgments.get("serendipity")
    fit = popularity_regression(scores, popularity) if scores is not None and len(scores) else None
    table = pd.DataFrame(rows, columns=["system", "coverage", "gini"])
    table.attrs["catalogue"] = len(catalogue)
    return matrices, table, fit


def run(judge: Judge, data: YourRecommendersData, config: YourRecommendersConfig | None = None) -> YourRecommendersRun:
    """Judge the same users' lists of every system under each protocol, then compare the protocols' rankings with
    each other and with the offline metrics."""
    cfg = config or YourRecommendersConfig()
    timings: dict[str, float] = {}
    t = time.perf_counter()
    sample = build_sample(data, cfg)
    offline = _offline_matrices(data, cfg)
    matrices: dict[str, pd.DataFrame] = {}
    for m in OFFLINE:  # the offline metrics over the judged users, for the tau beside the protocols
        matrices[m] = offline[m].reindex(index=sample.users)
    timings["build panel"] = time.perf_counter() - t  # the name the chapter prints (reporting timings_text)
    judgments: dict[str, pd.DataFrame] = {}
    duels = pd.DataFrame()
    ser_per_user = pd.DataFrame()
    few_shot = None
    if "serendipity" in cfg.protocols:
        t = time.perf_counter()
        judged_ser, ser_per_user, matrices["serendipity"], few_shot = _serendipity(judge, data, cfg, sample)
        judgments["serendipity"] = judged_ser
        timings["judge serendipity"] = time.perf_counter() - t
    if "arena" in cfg.protocols:
        t = time.perf_counter()
        judgments["arena"], duels, matrices["arena"] = _arena(judge, data, cfg, sample)
        timings["judge arena"] = time.perf_counter() - t
    if "saer" in cfg.protocols:
        t = time.perf_counter()
        judgments["saer"], matrices["saer"] = _saer(judge, data, cfg, sample)
        timings["judge saer"] = time.perf_counter() - t
    t = time.perf_counter()
    measures = [*cfg.protocols, *OFFLINE]
    # every measure is tested and ranked over the judged users, the offline metrics too, so that side by side they
    # differ by what they measure and not by n; the offline metrics over every evaluation user are kept apart
    # (``<metric>_all_users``); P_ser and N_ser are reported beside Avg.Score, which ranks the systems
    beyond, coverage, fit = beyond_accuracy(data, sample, judgments)
    shown = {**{m: matrices[m] for m in measures}, **{f"{m}_all_users": offline[m] for m in OFFLINE}}
    for m in _SERENDIPITY_ALSO if len(ser_per_user) else ():
        wide = ser_per_user.pivot_table(index="user", columns="rs", values=m, dropna=False)
        shown[m] = wide.reindex(index=sample.users, columns=sample.systems)
    shown |= beyond
    matrices |= beyond
    summary, taus, separation = statistics(matrices, shown, measures, cfg.n_boot, cfg.seed)
    baseline = cfg.arena_pairs if cfg.arena_pairs in sample.systems else None
    baseline_tests = comparisons(matrices, measures, cfg.seed, baseline) if baseline else pd.DataFrame()
    power, curve, plan = discrimination(matrices, measures, separation, cfg.seed)
    timings["summarise"] = time.perf_counter() - t
    return YourRecommendersRun(
        config=cfg,
        judge_name=judge.model_name,
        data_label=data.display_label,
        timings=timings,
        sample=sample,
        judgments=judgments,
        matrices=matrices,
        summary=summary,
        taus=taus,
        separation=separation,
        duels=duels,
        serendipity_per_user=ser_per_user,
        examples_source=few_shot,
        baseline_tests=baseline_tests,
        power=power,
        curve=curve,
        plan=plan,
        beyond=coverage,
        popularity_fit=fit,
        offline_all=offline,
    )


def true_ranking_agreement(
    judged: YourRecommendersRun, perfect: YourRecommendersRun, n_boot: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """For each protocol: Kendall tau of its ranking under ``judged`` (a noisy simulated judge) against the same
    protocol under ``perfect`` (a simulated judge without error, the protocol's truth) and against Precision@k on
    the held-out test split, over the same users; with bootstrap CIs."""
    rows = []
    for protocol in judged.config.protocols:
        noisy = judged.matrices[protocol]
        for reference, matrix in (
            ("its own truth (perfect judge)", perfect.matrices[protocol]),
            ("held-out Precision@k", judged.matrices["precision"]),
        ):
            tau = kendall_tau(
                noisy.to_numpy(dtype=float),
                matrix.reindex(index=noisy.index, columns=noisy.columns).to_numpy(dtype=float),
                n_boot=n_boot,
                seed=seed,
            )
            rows.append({"protocol": protocol, "against": reference, **_tau_columns(tau)})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Recovery:
    """The simulated judge's section: the same lists judged by a perfect simulated judge (each protocol's truth)
    and by one with its profile's error model, over ``perfect.sample.users``."""

    perfect: YourRecommendersRun
    noisy: YourRecommendersRun
    error_model: dict[str, float]
    taus: pd.DataFrame  # protocol, against, tau, low, high, n_systems, n_users, n_boot
    #: per protocol and subset size: how often the tau CI from that many users holds the tau of all of them
    coverage: pd.DataFrame = field(default_factory=pd.DataFrame)


def tau_coverage(
    noisy: Mapping[str, pd.DataFrame],
    perfect: Mapping[str, pd.DataFrame],
    protocols: Sequence[str],
    sizes: Sequence[int],
    draws: int = 20,
    n_boot: int = 200,
    seed: int = 0,
) -> pd.DataFrame:
    """What the tau interval covers, by Monte Carlo with a known target: the users judged are the population, and
    the target is tau between a protocol's noisy ranking and its truth (the perfect judge's) over all of them. For
    each size n, ``draws`` random subsets of n users each give tau-hat and its bootstrap CI
    (:func:`~recjudge_utils.metrics.system_agreement.kendall_tau`). Columns: protocol, users, target, mean_tau,
    coverage (the share of CIs holding the target), draws (those with a CI)."""
    rng = np.random.default_rng(seed)
    rows = []
    for protocol in protocols:
        x = noisy[protocol]
        y = perfect[protocol].reindex(index=x.index, columns=x.columns)
        a, b = x.to_numpy(dtype=float), y.to_numpy(dtype=float)
        target = kendall_tau(a, b, n_boot=2, seed=seed).value
        for n in sorted({int(k) for k in sizes if 2 <= int(k) < len(x)}):
            taus, covered = [], []
            for draw in range(draws):
                users = rng.choice(len(x), size=n, replace=False)
                got = kendall_tau(a[users], b[users], n_boot=n_boot, seed=seed + draw)
                if math.isfinite(got.value):
                    taus.append(got.value)
                if math.isfinite(target) and math.isfinite(got.low):
                    covered.append(got.low - 1e-9 <= target <= got.high + 1e-9)  # scipy's tau of one order is 1 - 1e-16
            rows.append(
                {"protocol": protocol, "users": n, "target": target,
                 "mean_tau": float(np.mean(taus)) if taus else math.nan,
                 "coverage": float(np.mean(covered)) if covered else math.nan, "draws": len(covered)}
            )  # fmt: skip
    return pd.DataFrame(rows, columns=["protocol", "users", "target", "mean_tau", "coverage", "draws"])


def recovery(
    data: YourRecommendersData,
    config: YourRecommendersConfig,
    n_users: int,
    profile: str | Mapping[str, Any] = "sim",
) -> Recovery:
    """Judge ``n_users`` users' lists with a perfect simulated judge and with ``profile``'s error model (a simulated
    profile; never an LLM), and measure how well each protocol's noisy ranking recovers the truth."""
    base = load_profile(profile)
    if base.backend_name != "sim":
        raise ValueError(f"{base.source}: the truth section needs a simulated judge profile, not {base.backend_name!r}")
    model = {k: float(v) for k, v in base.to_dict()["options"].items() if k != "seed"}
    seed = int(base.to_dict()["options"].get("seed", 0))
    cfg = replace(config, n_users=n_users, arena_pairs="all", systems=None)

    def judge(**error_model: float) -> JudgeClient:
        # exactly the error model given (a perfect judge when none), logged in a sub-folder of the chapter's own
        sim = load_profile(base, options={"seed": seed, **error_model})
        return sim.client(run_name="07_your_recommenders/simulated", progress=False)

    with judge() as perfect_judge:
        perfect = run(perfect_judge, data, cfg)
    with judge(**model) as noisy_judge:
        noisy = run(noisy_judge, data, cfg)
    taus = true_ranking_agreement(noisy, perfect, cfg.n_boot, cfg.seed)
    # subsets of a third and of half the users: enough of them, and different enough from the whole, to show the
    # drift of tau-hat with n; below 20 users the subsets are too small to say anything
    sizes = [n_users // 3, n_users // 2] if n_users >= 20 else []
    coverage = tau_coverage(noisy.matrices, perfect.matrices, cfg.protocols, sizes, seed=cfg.seed)
    return Recovery(perfect, noisy, model, taus, coverage)


def cost_at_scale(
    run_: YourRecommendersRun,
    n_users: int,
    n_systems: int | None = None,
    prices: Mapping[str, Mapping[str, float]] | None = None,
) -> pd.DataFrame:
    """Per protocol: this run's judgments and mean tokens per judgment, and what ``n_users`` users (all systems,
    every pair in the Arena) would take: judgments and tokens scaled from this run, dollars at each model's list
    price in ``prices`` (model -> USD per 1M input / output tokens). An estimate: ``plan`` counts it exactly."""
    systems = n_systems or len(run_.sample.systems)
    here = run_.usage().set_index("protocol")
    planned_here = planned_calls(
        len(run_.sample.systems),
        len(run_.sample.users),
        run_.sample.top_k,
        run_.config.arena_pairs,
        run_.config.template,
    )
    planned_there = planned_calls(systems, n_users, run_.sample.top_k, "all", run_.config.template)
    rows = []
    for protocol in run_.config.protocols:
        if protocol not in here.index:
            continue
        u = here.loc[protocol]
        n = max(int(u["judgments"]), 1)
        # serendipity judges each distinct (user, item) once: keep this run's share of distinct pairs
        factor = planned_there[protocol] / max(planned_here[protocol], 1)
        judgments = round(int(u["judgments"]) * factor)
        tokens_in = scaled(float(u["prompt_tokens"]), n, judgments)
        tokens_out = scaled(float(u["completion_tokens"]), n, judgments)
        row: dict[str, Any] = {
            "protocol": protocol,
            "judgments here": int(u["judgments"]),
            "tokens in / judgment": float(u["prompt_tokens"]) / n,
            "tokens out / judgment": float(u["completion_tokens"]) / n,
            f"judgments, {n_users} users": judgments,
        }
        for model, price in (prices or {}).items():
            row[f"US$ {model}, {n_users} users"] = usd(tokens_in, tokens_out, price)
        rows.append(row)
    return pd.DataFrame(rows)
