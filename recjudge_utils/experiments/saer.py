"""SAER's offline evaluation (Liu et al., SIGIR '26): customers, two recommenders, three judge runs.

``run(judge, dataset, SaerConfig(...))`` builds the sample (:func:`build_sample`: customers sampled stratified by
engagement, each one's context from :mod:`recjudge_utils.protocols.context.saer`, the top-k lists of the
co-occurrence and the embedding recommender) and asks the judge for

1. pointwise labels (Table 1) with the main prompt version, and with every other prompt version on the
   same lists when ``pointwise_ablation`` is on (so prompt versions can be compared as labelers);
2. pairwise verdicts with the main prompt, each comparison twice with Set 1 / Set 2 swapped and adjudicated by
   :func:`recjudge_utils.protocols.pairwise.games` (Table 2);
3. adversarial pairs (genuine list vs another customer's list, random position) under every prompt
   version (Table 3; :mod:`recjudge_utils.protocols.adversarial`).

**Purchases train the recommenders.** SAER's co-occurrence is items "frequently purchased together" (Sec. 3.4), so
both recommenders are fitted on the purchases only (:func:`~recjudge_utils.protocols.context.saer.purchases`: 3-5
stars in the stand-in); the 1-2 star ratings, the stand-in's clicks, neither co-occur nor seed a customer's list.
No list holds an item the customer already rated, a disliked one included.

**Held-out future: simulated judges only.** An LLM judge, as in the paper, reads each customer's full history, and
both recommenders train on every purchase. A simulated judge answers from a truth, so for it (and in chapter 5)
each sampled customer's last ``heldout`` interactions are held out of the context and of the training, and the
truth is read from them (:meth:`SaerConfig.resolved`); the paper has no such split.

Requests are grouped by template so the backend can reuse each template's fixed prefix. Unparsed answers stay
in the frames (status "unparsed", label None): every table counts them. Every share comes with its 95% Wilson
interval and every agreement with its bootstrap CIs, computed here as numbers, and so does every other number the
chapter shows (the paper's shares with Wilson intervals from its sample sizes, the orders' outcomes, flagged items,
answers copied from the examples; time and cost are counted by :func:`recjudge_utils.judge.usage.time_cost`).
Chapter 5 builds samples and judges them with the same steps
(:func:`build_sample`, :func:`judge_pointwise`, :func:`judge_pairwise`, :func:`judge_adversarial`). Tables:
:mod:`recjudge_utils.reporting.saer`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from itertools import combinations
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from recjudge_utils.answer_formats.saer_fields import CATEGORIES
from recjudge_utils.answer_formats.truth import PreferenceTruth
from recjudge_utils.data import Dataset
from recjudge_utils.data.domain import DomainWords
from recjudge_utils.data.folder import judge_item_texts
from recjudge_utils.experiments.run import Result, Run, result
from recjudge_utils.experiments.steps import top_lists
from recjudge_utils.judge.backends.sim import SIM_PREFIX
from recjudge_utils.judge.types import Judge, JudgeRequest, MetadataValue
from recjudge_utils.judge.usage import TimeCost, time_cost
from recjudge_utils.metrics.agreement import agreement, pairwise_order
from recjudge_utils.metrics.intervals import wilson
from recjudge_utils.metrics.pairwise import TIE, is_missing, position_consistency
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.protocols.adversarial import OUTCOMES, adversarial_pairs
from recjudge_utils.protocols.context.saer import Catalogue, CustomerContext, build_context, purchases, saer_variant
from recjudge_utils.protocols.pairwise import Game, games, judge_games
from recjudge_utils.protocols.saer import (
    RESULT_COLUMNS,
    VERSION_NAMES,
    VERSIONS,
    SaerAdversarial,
    SaerPointwise,
    few_shot_answers,
    load_template,
    pairwise_request,
    set_position,
)
from recjudge_utils.protocols.truth import heldout_hits
from recjudge_utils.recommenders.base import Recommender
from recjudge_utils.recommenders.training import Trained, train_each
from recjudge_utils.splitting.temporal import split_last_n

__all__ = [
    "ALGORITHMS",
    "COPY_MIN_CHARS",
    "ENCODERS",
    "ORDER_OUTCOMES",
    "PAPER_CALLS",
    "PAPER_LISTS",
    "SAER_MODELS",
    "SHARE_COLUMNS",
    "SIM_HELDOUT",
    "SaerConfig",
    "SaerRun",
    "SaerSample",
    "WordCounts",
    "build_sample",
    "fit_recommenders",
    "is_paper_data",
    "judge_adversarial",
    "judge_pairwise",
    "judge_pointwise",
    "paper_shares",
    "run",
    "sample_customers",
    "unrated_lists",
]

ALGORITHMS: tuple[str, str] = ("co-occurrence", "embedding")
#: the paper's two algorithms: our name -> (registry key, parameters); see their modules for the exact scoring
SAER_MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "co-occurrence": ("cooccurrence", {"n_recent": 20}),
    "embedding": ("embedding", {"n_recent": 5}),
}
#: our inference of the paper's offline run size (not stated as such in the paper): 400 pointwise lists +
#: 200 comparisons x 2 orders + 100 adversarial pairs x 3 prompt versions
PAPER_CALLS = 400 + 400 + 300
_PAPER_MINUTES = 30.0
_PAPER_USD = 28.0
#: the paper's sample sizes (saer_table1.csv / saer_table3.csv source lines): lists per algorithm, adversarial pairs
PAPER_LISTS = 200
_PAPER_ADVERSARIAL_PAIRS = 100
#: an answer repeating this many characters of a few-shot answer verbatim counts as copied from the examples
COPY_MIN_CHARS = 40
#: each customer's last interactions a simulated-judge run holds out as the future its truth is read from
SIM_HELDOUT = 5


class WordCounts:
    """Each text as counts of its words over the vocabulary of all texts encoded together: a cheap offline encoder
    (tests and quick previews) where the paper's MiniLM is not wanted. Its ``repr`` names it in artifact keys."""

    def __call__(self, texts: list[str]) -> np.ndarray:
        """One row of word counts per text."""
        words = [re.findall(r"\w+", t.lower()) for t in texts]
        index = {w: i for i, w in enumerate(sorted({w for ws in words for w in ws}))}
        out = np.zeros((len(texts), len(index)), dtype=np.float32)
        for row, ws in enumerate(words):
            for w in ws:
                out[row, index[w]] += 1
        return out

    def __repr__(self) -> str:
        return "word-counts"


#: ``SaerConfig.encoder`` -> the embedding recommender's extra parameters ("minilm": all-MiniLM-L6-v2, the paper's
#: sentence transformer, cached on disk per catalogue)
ENCODERS: dict[str, dict[str, Any]] = {
    "minilm": {},
    "word-counts": {"encoder": WordCounts(), "model_name": "word counts"},
}


@dataclass(frozen=True)
class SaerConfig:
    """Run size and settings. Paper scale: n_customers=200, n_adversarial=100, max_history=None."""

    n_customers: int = 4
    top_k: int = 10
    prompt_versions: tuple[str, ...] = VERSIONS
    main_version: str = "v3"
    seed: int = 0
    window_days: int = 180
    max_history: int | None = 8  # newest liked and disliked items shown per customer; None: the whole window (paper)
    min_interactions: int = 6  # customers with fewer interactions are not sampled
    pointwise_ablation: bool = False
    n_adversarial: int | None = None  # default: every sampled customer (paper: 100 of 200)
    n_boot: int = 1000
    heldout: int | None = None  # held-out last interactions; None: SIM_HELDOUT for a simulated judge, 0 for an LLM
    encoder: str = "minilm"  # the embedding recommender's item encoder (a key of ENCODERS)

    def __post_init__(self) -> None:
        object.__setattr__(self, "prompt_versions", tuple(self.prompt_versions))
        if self.main_version not in self.prompt_versions:
            raise ValueError(f"main_version {self.main_version!r} must be one of prompt_versions")
        if self.n_customers < 2:
            raise ValueError("n_customers must be at least 2 (adversarial pairs need another customer)")
        if self.top_k < 1:
            raise ValueError("top_k must be positive")
        if self.max_history is not None and self.max_history < 1:
            raise ValueError("max_history must be positive, or None for the whole window")
        if self.heldout is not None and self.heldout < 0:
            raise ValueError("heldout must be >= 0 (0: nothing held out), or None to let the judge decide")
        held = SIM_HELDOUT if self.heldout is None else self.heldout
        if self.min_interactions <= held:
            raise ValueError("min_interactions must exceed heldout (a customer needs a history beside the future)")
        if self.encoder not in ENCODERS:
            raise ValueError(f"unknown encoder {self.encoder!r}; known: {sorted(ENCODERS)}")

    def resolved(self, judge_name: str) -> SaerConfig:
        """This config with ``heldout`` decided for the judge named ``judge_name``: as given, else
        :data:`SIM_HELDOUT` for a simulated judge (it answers from the held-out future) and 0 for an LLM (it reads
        the full history, as in the paper)."""
        if self.heldout is not None:
            return self
        return replace(self, heldout=SIM_HELDOUT if judge_name.startswith(SIM_PREFIX) else 0)


def sample_customers(interactions: pd.DataFrame, n: int, seed: int = 0, min_interactions: int = 5) -> pd.DataFrame:
    """Stratified random sample over engagement levels: the paper's "stratified random sample ... spanning diverse
    engagement levels" (Sec. 3.4) does not say which strata; the book's are tertiles of interaction counts.

    Returns columns user, n_interactions, engagement ("low"/"medium"/"high"), one row per customer,
    drawn round-robin from the three strata with ``default_rng(seed)``.
    """
    counts = interactions.groupby("user").size().rename("n_interactions").reset_index()
    counts = counts.loc[counts["n_interactions"] >= min_interactions].sort_values("user").reset_index(drop=True)
    if len(counts) < n:
        raise ValueError(f"only {len(counts)} customers have >= {min_interactions} interactions; asked for {n}")
    ranks = counts["n_interactions"].rank(method="first")
    counts["engagement"] = pd.qcut(ranks, 3, labels=["low", "medium", "high"]).astype(str)
    rng = np.random.default_rng(seed)
    pools = {
        s: list(rng.permutation(counts.index[counts["engagement"] == s].to_numpy())) for s in ("low", "medium", "high")
    }
    chosen: list[int] = []
    while len(chosen) < n:
        for s in ("low", "medium", "high"):
            if pools[s] and len(chosen) < n:
                chosen.append(int(pools[s].pop()))
    return counts.loc[chosen].reset_index(drop=True)


def fit_recommenders(dataset: Dataset, visible: pd.DataFrame, config: SaerConfig) -> dict[str, Trained]:
    """The paper's two algorithms fitted on the purchases of ``visible`` (every interaction, or all but the held-out
    future) through the one training loop, :func:`~recjudge_utils.recommenders.training.train_each` (or loaded, or in
    plan mode stood in for)."""
    split = {"kind": "saer_heldout", "heldout": config.heldout, "dataset": dataset.name}
    specs = {alg: (key, {**params, **(ENCODERS[config.encoder] if key == "embedding" else {})})
             for alg, (key, params) in SAER_MODELS.items()}  # fmt: skip
    return train_each(specs, purchases(visible), dataset.items, split=split, seed=config.seed)


def unrated_lists(
    models: dict[str, Recommender], visible: pd.DataFrame, users: Sequence[int], k: int
) -> dict[str, dict[int, list[int]]]:
    """Each model's top-``k`` for ``users`` without any item the customer rated in ``visible``: a model fitted on
    purchases has never seen the 1-2 star ones, and would otherwise recommend a disliked item back."""
    rated = {
        int(u): {int(i) for i in g} for u, g in visible.loc[visible["user"].isin(list(users))].groupby("user")["item"]
    }
    longest = max((len(rated.get(int(u), ())) for u in users), default=0)
    lists = top_lists(models, users, k + longest)  # enough to drop every rated item and still fill k
    return {
        name: {u: [i for i in items if i not in rated.get(u, set())][:k] for u, items in per_user.items()}
        for name, per_user in lists.items()
    }


def is_paper_data(dataset: Dataset) -> bool:
    """Whether ``dataset`` is SAER's own, Amazon Beauty (any other is a stand-in for it, whatever its words)."""
    return dataset.name.lower() == "amazon-beauty"


@dataclass(frozen=True)
class SaerSample:
    """What every SAER task judges: the sampled customers, their contexts, the two algorithms' lists and, when a
    future is held out, how many held-out future positives each list holds (the truth a simulated judge answers
    from)."""

    domain: str  # the prompt set, ``movies`` or ``ecommerce`` (chosen by the dataset's words: saer_variant)
    words: DomainWords  # the dataset's words, which the e-commerce prompts and every context speak
    customers: pd.DataFrame  # user, n_interactions, engagement
    contexts: dict[int, CustomerContext]
    catalogue: Catalogue
    lists: dict[str, dict[int, list[int]]]
    heldout: int  # each customer's last interactions held out of context and training (0: none)
    hits: dict[str, dict[int, int]] | None  # None when nothing is held out (no truth)
    #: the dataset the sample is drawn from: its card and items say which fields the judge's item lines show
    dataset: Dataset | None = field(default=None, compare=False, repr=False)

    @property
    def users(self) -> list[int]:
        """The sampled customers, in sampling order."""
        return [int(u) for u in self.customers["user"]]

    @property
    def shown(self) -> dict[str, int]:
        """Liked and disliked items in the customers' windows, and how many of each their contexts show."""
        ctxs = self.contexts.values()
        return {
            "liked": sum(c.n_liked for c in ctxs),
            "disliked": sum(c.n_disliked for c in ctxs),
            "shown_liked": sum(len(c.history) for c in ctxs),
            "shown_disliked": sum(len(c.disliked) for c in ctxs),
        }


def build_sample(dataset: Dataset, config: SaerConfig, timings: dict[str, float] | None = None) -> SaerSample:
    """Sample ``config.n_customers`` customers (with at least ``config.min_interactions``), hold out each one's last
    ``config.heldout`` interactions (none when 0; resolve None first with :meth:`SaerConfig.resolved`), build the
    contexts, fit both algorithms on the rest and take their top-k lists; ``timings`` (when given) receives the
    seconds of "load data" and "fit recommenders"."""
    if config.heldout is None:
        raise ValueError("config.heldout is None: resolve it for the judge first (SaerConfig.resolved)")
    t0 = time.perf_counter()
    inter = dataset.interactions
    catalogue = Catalogue.from_items(dataset.items, texts=judge_item_texts(dataset))
    customers = sample_customers(inter, config.n_customers, seed=config.seed, min_interactions=config.min_interactions)
    users = [int(u) for u in customers["user"]]
    # the sampled customers' last interactions (min_interactions > heldout leaves each a history), nobody else's
    held = config.heldout
    visible, future = split_last_n(inter, held, min_train=1, users=users) if held else (inter, inter.iloc[:0])
    contexts = {
        u: build_context(
            visible, catalogue, u, dataset.domain, window_days=config.window_days, max_history=config.max_history
        )
        for u in users
    }
    t1 = time.perf_counter()
    models = {alg: fit.model for alg, fit in fit_recommenders(dataset, visible, config).items()}
    lists = unrated_lists(models, visible, users, config.top_k)
    hits = None
    if config.heldout:
        liked = future.loc[future["rating"] >= 4]
        positives = {int(u): {int(i) for i in g} for u, g in liked.groupby("user")["item"]}
        hits = {alg: heldout_hits(lists[alg], positives) for alg in ALGORITHMS}
    if timings is not None:
        timings["load data"] = t1 - t0
        timings["fit recommenders"] = time.perf_counter() - t1
    return SaerSample(
        saer_variant(dataset.domain),
        dataset.domain,
        customers,
        contexts,
        catalogue,
        lists,
        config.heldout,
        hits,
        dataset,
    )


# ----------------------------------------------------------------------------------------------- judging


def _main_first(config: SaerConfig) -> list[str]:
    """Every prompt version, the main one first (it shares its template, so the cached prefix, with the pairwise
    batch)."""
    return [config.main_version] + [v for v in config.prompt_versions if v != config.main_version]


def judge_pointwise(judge: Judge, sample: SaerSample, config: SaerConfig) -> pd.DataFrame:
    """One label per (prompt version, algorithm, customer): the main version, and every other one with
    ``config.pointwise_ablation``; the truth attached (when a future is held out) is the label the list's held-out
    hits imply."""
    versions = _main_first(config) if config.pointwise_ablation else [config.main_version]
    parts = [
        SaerPointwise(sample.domain, version, system="algorithm").play(
            judge,
            sample.contexts,
            sample.catalogue,
            {a: sample.lists[a] for a in ALGORITHMS},
            sample.users,
            sample.hits,
        )
        for version in versions
    ]
    return pd.concat(parts, ignore_index=True)


def judge_pairwise(
    judge: Judge, sample: SaerSample, config: SaerConfig, both_orders: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each customer's two lists compared with the main prompt (co-occurrence as Set 1, then, with ``both_orders``,
    embedding as Set 1); returns (one row per call, one row per customer adjudicated by
    :func:`~recjudge_utils.protocols.pairwise.games`: the winner in each order, the adjudicated winner and whether
    the orders agreed)."""
    version = config.main_version
    tpl = load_template(sample.domain, "pairwise", version)
    a, b = ALGORITHMS
    hits = sample.hits
    games_ = [
        Game(
            case={"user": u, "prompt_version": version},
            x=a,
            y=b,
            x_evidence=None if hits is None else hits[a][u],
            y_evidence=None if hits is None else hits[b][u],
        )
        for u in sample.users
    ]

    def build(
        game: Game, first: str, second: str, truth: PreferenceTruth | None, meta: dict[str, MetadataValue]
    ) -> JudgeRequest:
        u = int(game.case["user"])  # type: ignore[arg-type]
        metadata: dict[str, MetadataValue] = {
            "user": u,
            "set_1": first,
            "set_2": second,
            "prompt_version": version,
            "task": "pairwise",
        }
        return pairwise_request(
            tpl, sample.contexts[u], sample.lists[first][u], sample.lists[second][u], sample.catalogue, metadata, truth
        )

    raw = judge_games(
        judge,
        games_,
        build,
        read=lambda v: {"verdict": v.verdict},
        position_of=set_position,
        keys=["verdict"],
        both_orders=both_orders,
        desc=tpl.id,
        details=lambda v: {"reasoning": v.reasoning},
    )
    winner = {"win": a, "lose": b, "tie": TIE}
    x_first = raw["order"] == "x_first"
    calls = pd.DataFrame(
        {
            "user": raw["user"].astype(int),
            "prompt_version": version,
            "order": np.where(x_first, f"{a} first", f"{b} first"),
            "set_1": np.where(x_first, a, b),
            "set_2": np.where(x_first, b, a),
            "verdict": raw["verdict_verdict"],
            "winner": raw["verdict"].map(winner),
            "reasoning": raw.get("reasoning", pd.Series([None] * len(raw))),
        }
    )
    for col in RESULT_COLUMNS:
        calls[col] = raw[col]
    calls["winner"] = calls["winner"].where(calls["winner"].notna(), None)
    both = games(raw, ["verdict"])

    def named(outcomes: pd.Series) -> list[str | None]:
        return [None if is_missing(o) else winner[o] for o in outcomes]

    w_a, w_b = named(both["verdict_x_first"]), named(both["verdict_y_first"])
    adjudicated = pd.DataFrame(
        {
            "user": both["user"].astype(int),
            f"winner_{a}_first": w_a,
            f"winner_{b}_first": w_b,
            "adjudicated": named(both["verdict"]),
            "consistent": [None if p is None or q is None else p == q for p, q in zip(w_a, w_b, strict=True)],
        }
    )
    return calls, adjudicated


def judge_adversarial(judge: Judge, sample: SaerSample, config: SaerConfig) -> pd.DataFrame:
    """Each of the first ``config.n_adversarial`` customers' genuine list against the same algorithm's list for
    another customer, in a random position, under every prompt version; the truth is the genuine list."""
    n_adv = config.n_adversarial or len(sample.users)
    pairs = adversarial_pairs(sample.users[:n_adv] if n_adv >= 2 else sample.users, ALGORITHMS, seed=config.seed)
    parts = [
        SaerAdversarial(sample.domain, version).play(judge, pairs, sample.contexts, sample.catalogue, sample.lists)
        for version in _main_first(config)
    ]
    return pd.concat(parts, ignore_index=True)


# ----------------------------------------------------------------------------------------------- shares and CIs
def _share(indicator: Any) -> tuple[float, float, float]:
    """A share in percent with its 95% Wilson interval (a bootstrap interval of a share collapses to a point
    when every label agrees, the Wilson one does not)."""
    indicator = np.asarray(indicator, dtype=bool)
    if len(indicator) == 0:
        return float("nan"), float("nan"), float("nan")
    lo, hi = wilson(int(indicator.sum()), len(indicator))
    return 100 * float(indicator.mean()), 100 * lo, 100 * hi


def _label_shares(pointwise: pd.DataFrame, version: str) -> pd.DataFrame:
    """Table 1: per algorithm and category, the percent of parsed lists (Wilson CI), parsed and unparsed counts."""
    pw = pointwise.loc[pointwise["prompt_version"] == version]
    rows = []
    for alg in ALGORITHMS:
        sub = pw.loc[pw["algorithm"] == alg]
        parsed = sub.loc[sub["status"] == "parsed", "category"].to_numpy()
        for cat in CATEGORIES:
            pct, lo, hi = _share(parsed == cat)
            n_unparsed = int((sub["status"] != "parsed").sum())
            rows.append(
                {"algorithm": alg, "category": cat, "pct": pct, "low": lo, "high": hi, "n_parsed": len(parsed),
                 "n_unparsed": n_unparsed}
            )  # fmt: skip
    return pd.DataFrame(rows)


#: the columns of Table 2's and 3's frames after their group column: one row per group and measure
SHARE_COLUMNS = ("measure", "value", "low", "high", "n", "n_unparsed")
#: Table 2's outcomes: measure -> the winner it counts
_PAIRWISE_OUTCOMES = {"cooccurrence_win": ALGORITHMS[0], "embedding_win": ALGORITHMS[1], "tie": TIE}


def _pairwise_shares(calls: pd.DataFrame, adjudicated: pd.DataFrame) -> pd.DataFrame:
    """Table 2: per scope (raw calls, then adjudicated pairs) and outcome (``measure``: a key of
    :data:`_PAIRWISE_OUTCOMES`) the percent among parsed ones (``value``) with its Wilson ``low``, ``high``; ``n``:
    the parsed ones, ``n_unparsed``: the others of the scope."""
    raw = calls.loc[calls["status"] == "parsed", "winner"].to_numpy()
    adj = adjudicated["adjudicated"].dropna().to_numpy()
    rows = []
    for scope, values, n_total in (
        (f"ours raw ({len(calls)} calls)", raw, len(calls)),
        (f"ours adjudicated ({len(adjudicated)} pairs)", adj, len(adjudicated)),
    ):
        for key, label in _PAIRWISE_OUTCOMES.items():
            rows.append((scope, key, *_share(values == label), len(values), n_total - len(values)))
    return pd.DataFrame(rows, columns=["scope", *SHARE_COLUMNS])


def _position(calls: pd.DataFrame, adjudicated: pd.DataFrame) -> pd.DataFrame:
    """Position consistency (both orders agree, over customers with both parsed) and the share of parsed answers
    naming the first-shown list, each with count, n, percent and Wilson CI."""
    a, b = ALGORITHMS
    agree, n = position_consistency(
        adjudicated[f"winner_{a}_first"].tolist(), adjudicated[f"winner_{b}_first"].tolist()
    )
    verdicts = calls.loc[calls["status"] == "parsed", "verdict"].to_numpy()
    rows = []
    for measure, count, total, indicator in (
        ("position consistency", agree, n, [True] * agree + [False] * (n - agree)),
        ("named Set 1", int((verdicts == "Set 1").sum()), len(verdicts), verdicts == "Set 1"),
    ):
        pct, lo, hi = _share(indicator)
        rows.append({"measure": measure, "count": count, "n": total, "pct": pct, "low": lo, "high": hi})
    return pd.DataFrame(rows).set_index("measure")


def _pct(indicator: Any) -> float:
    """A share in percent without an interval (NaN when there is nothing to count)."""
    indicator = np.asarray(indicator, dtype=bool)
    return 100 * float(indicator.mean()) if len(indicator) else float("nan")


def _adversarial_shares(adversarial: pd.DataFrame, versions: Sequence[str]) -> pd.DataFrame:
    """Table 3: per prompt version and ``measure``, a percent (``value``): each of :data:`OUTCOMES` among parsed
    answers (Wilson ``low``, ``high``), then without an interval the answers naming Set 1 (``chose_Set_1``) and the
    pairs showing the genuine list first, all of them (``genuine_first``) and the parsed ones
    (``genuine_first_parsed``): what a judge that always names Set 1 scores. ``n``: the answers or pairs counted,
    ``n_unparsed``: the version's unparsed answers."""
    rows = []
    for version in versions:
        sub = adversarial.loc[adversarial["prompt_version"] == version]
        parsed = sub.loc[sub["status"] == "parsed"]
        n_parsed, n_unparsed, none = len(parsed), len(sub) - len(parsed), (np.nan, np.nan)
        rows += [(version, o, *_share(parsed["outcome"].to_numpy() == o), n_parsed, n_unparsed) for o in OUTCOMES]
        rows += [
            (version, "chose_Set_1", _pct(parsed["verdict"].to_numpy() == "Set 1"), *none, n_parsed, n_unparsed),
            (version, "genuine_first", _pct(sub["genuine_position"].to_numpy() == 1), *none, len(sub), n_unparsed),
            (version, "genuine_first_parsed", _pct(parsed["genuine_position"].to_numpy() == 1), *none, n_parsed,
             n_unparsed),
        ]  # fmt: skip
    return pd.DataFrame(rows, columns=["prompt_version", *SHARE_COLUMNS])


#: what the two presentation orders of one comparison said (both parsed): consistent, then inconsistent
ORDER_OUTCOMES = ("same winner", "tie in both orders", "first-shown list won both times", "other disagreement")


def _orders(adjudicated: pd.DataFrame) -> pd.DataFrame:
    """Customers per :data:`ORDER_OUTCOMES` (count, percent of the customers with both orders parsed), then the
    ``unjudged`` ones (count only)."""
    a, b = ALGORITHMS

    def kind(wa: Any, wb: Any) -> str:
        if is_missing(wa) or is_missing(wb):
            return "unjudged"
        if wa == wb:
            return ORDER_OUTCOMES[1] if wa == TIE else ORDER_OUTCOMES[0]
        return ORDER_OUTCOMES[2] if (wa, wb) == (a, b) else ORDER_OUTCOMES[3]

    kinds = [kind(wa, wb) for wa, wb in zip(adjudicated[f"winner_{a}_first"], adjudicated[f"winner_{b}_first"],
                                               strict=True)]  # fmt: skip
    counts = {k: kinds.count(k) for k in (*ORDER_OUTCOMES, "unjudged")}
    judged = len(kinds) - counts["unjudged"]
    pct = {k: 100 * counts[k] / judged if judged and k != "unjudged" else float("nan") for k in counts}
    return pd.DataFrame({"count": counts, "pct": pct})


def _flagged(pointwise: pd.DataFrame, sample: SaerSample, version: str, top: int = 3) -> pd.DataFrame:
    """Per algorithm (prompt ``version``): parsed lists, flagged items per list (mean), percent of lists with a
    flag, and the ``top`` most-flagged items as (item, times flagged)."""
    pw = pointwise.loc[(pointwise["prompt_version"] == version) & (pointwise["status"] == "parsed")]
    rows = []
    for alg in ALGORITHMS:
        sub = pw.loc[pw["algorithm"] == alg]
        counts: dict[int, int] = {}
        for u, flagged in zip(sub["user"], sub["flagged"], strict=True):
            for k in flagged:
                item = sample.lists[alg][int(u)][k - 1]
                counts[item] = counts.get(item, 0) + 1
        most = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        rows.append({"algorithm": alg, "n_parsed": len(sub), "flagged_mean": _mean(sub["n_flagged"]),
                     "flagged_%": _pct(sub["n_flagged"] > 0), "most": most})  # fmt: skip
    return pd.DataFrame(rows)


def _mean(values: pd.Series) -> float:
    return float(values.mean()) if len(values) else float("nan")


def _judging_seconds(timings: Mapping[str, float]) -> float:
    """Seconds spent on the three judge tasks (the rest of ``timings`` built the sample)."""
    return sum(timings.get(f"judge {task}", 0.0) for task in ("pointwise", "pairwise", "adversarial"))


def _answer_tally(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per task and prompt version: calls, unparsed answers, failed calls, the most common reason (its first 60
    characters) and the first raw answer that did not parse."""
    rows = []
    for task, frame in frames.items():
        for version, sub in frame.groupby("prompt_version", sort=True):
            bad = sub.loc[sub["status"] != "parsed"]
            reasons = bad["reason"].fillna("").str.slice(0, 60).value_counts()
            raw = bad["raw_text"].dropna().astype(str) if "raw_text" in bad else pd.Series(dtype=str)
            rows.append(
                {"task": task, "prompt_version": version, "calls": len(sub),
                 "unparsed": int((sub["status"] == "unparsed").sum()), "errors": int((sub["status"] == "error").sum()),
                 "reason": reasons.index[0] if len(reasons) else None, "raw": raw.iloc[0] if len(raw) else None}
            )  # fmt: skip
    return pd.DataFrame(rows)


def _copied(
    frames: dict[str, pd.DataFrame], domain: str, words: DomainWords, min_chars: int = COPY_MIN_CHARS
) -> pd.DataFrame:
    """Per task and prompt version: few-shot answers, parsed answers, and how many of these repeat at least
    ``min_chars`` characters of a few-shot answer verbatim (a small judge parroting the examples)."""
    rows = []
    for task, frame in frames.items():
        mode = "pointwise" if task == "pointwise" else "pairwise"
        for version, sub in frame.groupby("prompt_version", sort=True):
            shots = few_shot_answers(load_template(domain, mode, str(version)), words)
            parsed = sub.loc[sub["status"] == "parsed", "raw_text"].fillna("").tolist()
            copied = sum(any(_longest_common(text, shot) >= min_chars for shot in shots) for text in parsed)
            rows.append({"task": task, "prompt_version": version, "shots": len(shots), "parsed": len(parsed),
                         "copied": copied})  # fmt: skip
    return pd.DataFrame(rows)


def _longest_common(a: str, b: str) -> int:
    """The length of the longest run of characters ``a`` and ``b`` share."""
    return SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b)).size


def _top_label(pointwise: pd.DataFrame, version: str) -> tuple[str, int] | None:
    """The label given most often under prompt ``version`` and how often (None: no label parsed)."""
    counts = pointwise.loc[(pointwise["prompt_version"] == version) & (pointwise["status"] == "parsed"), "category"]
    top = counts.value_counts()
    return (str(top.index[0]), int(top.iloc[0])) if len(top) else None


def paper_shares() -> pd.DataFrame:
    """The paper's headline shares (percent, as printed) indexed by measure, with 95 % Wilson intervals from its
    count (share x sample size, rounded) and sample size: the paper prints no interval. Measures: ``Good Match,
    <algorithm>``, ``adjudicated <outcome>``, ``position consistency``, ``adversarial correct, <version or human>``."""
    t1 = paper_table("saer_table1").set_index(["algorithm", "category"])["saer_pct"]
    t2 = paper_table("saer_table2").set_index("scope").loc["SAER Adjudicated"]
    t3 = paper_table("saer_table3")
    consistency = paper_table("saer_metrics").set_index("metric").loc["pairwise_position_consistency", "value"]
    rows = [(f"Good Match, {alg}", t1[(alg, CATEGORIES[0])], PAPER_LISTS) for alg in ALGORITHMS]
    rows += [(f"adjudicated {what}", t2[f"{key}_pct"], t2["n"]) for key, what in _ADJUDICATED.items()]
    rows += [("position consistency", consistency, t2["n"])]
    rows += [
        (f"adversarial correct, {v if isinstance(v, str) else e}", pct, _PAPER_ADVERSARIAL_PAIRS)
        for e, v, pct in zip(t3["evaluator"], t3["prompt_version"], t3["correct_pct"], strict=True)
    ]
    frame = pd.DataFrame(rows, columns=["measure", "value", "n"]).astype({"value": float, "n": int})
    frame["count"] = [round(p * n / 100) for p, n in zip(frame["value"], frame["n"], strict=True)]
    low, high = wilson(frame["count"].to_numpy(), frame["n"].to_numpy())
    frame["low"], frame["high"] = 100 * low, 100 * high
    return frame.set_index("measure")


#: Table 2's outcomes as the headline names them
_ADJUDICATED = {"cooccurrence_win": "co-occurrence wins", "embedding_win": "embedding wins", "tie": "ties"}


def _labeler_agreement(
    pointwise: pd.DataFrame, adjudicated: pd.DataFrame, adversarial: pd.DataFrame, config: SaerConfig
) -> pd.DataFrame:
    """Raw agreement and quadratic weighted kappa (bootstrap CIs, ``config.n_boot`` and ``seed``) between every
    pair of labelers in the run.

    * pointwise: prompt versions as labelers of the same lists (Poor < Partial < Good);
    * pairwise: the two presentation orders as labelers (embedding wins < tie < co-occurrence wins);
    * adversarial: prompt versions as labelers of the same blind pairs (wrong < tie < correct).
    """
    rows: list[tuple[Any, ...]] = []

    def add(task: str, name_a: str, name_b: str, x: pd.Series, y: pd.Series, labels: Sequence[str]) -> None:
        res = agreement(
            [None if pd.isna(v) else v for v in x],
            [None if pd.isna(v) else v for v in y],
            labels,
            n_boot=config.n_boot,
            seed=config.seed,
        )
        raw, kappa = res.raw, res.kappa
        rows.append((task, name_a, name_b, "raw_agreement", 100 * raw.value, 100 * raw.low, 100 * raw.high, res.n))
        rows.append((task, name_a, name_b, "kappa_w", kappa.value, kappa.low, kappa.high, res.n))

    pw = pointwise.pivot_table(
        index=["user", "algorithm"], columns="prompt_version", values="category", aggfunc="first", dropna=False
    )
    for va, vb in combinations([v for v in config.prompt_versions if v in pw.columns], 2):
        add("pointwise", f"prompt {va}", f"prompt {vb}", pw[va], pw[vb], CATEGORIES[::-1])
    a, b = ALGORITHMS
    first_a, first_b = adjudicated[f"winner_{a}_first"], adjudicated[f"winner_{b}_first"]
    add("pairwise", f"order: {a} as Set 1", f"order: {b} as Set 1", first_a, first_b, pairwise_order(a, b))
    adv = adversarial.pivot_table(
        index="user", columns="prompt_version", values="outcome", aggfunc="first", dropna=False
    )
    for va, vb in combinations([v for v in config.prompt_versions if v in adv.columns], 2):
        add("adversarial", f"prompt {va}", f"prompt {vb}", adv[va], adv[vb], ("wrong", "tie", "correct"))
    return pd.DataFrame(rows, columns=["task", "labeler_a", "labeler_b", "measure", "value", "low", "high", "n"])


# ----------------------------------------------------------------------------------------------- the run
@dataclass(kw_only=True)
class SaerRun(Run):
    """Everything one run produced (frames keep unparsed answers with status and reason) and every table's numbers
    with their CIs."""

    experiment: ClassVar[str] = "saer"

    config: SaerConfig
    sample: SaerSample
    pointwise: pd.DataFrame  # one row per (prompt version, algorithm, customer)
    pairwise: pd.DataFrame  # one row per call (customer, order)
    adjudicated: pd.DataFrame  # one row per customer: winner in each order, adjudicated winner, consistent
    adversarial: pd.DataFrame  # one row per (prompt version, blind pair)
    labels: pd.DataFrame  # Table 1: algorithm, category, pct, low, high, n_parsed, n_unparsed (main version)
    verdicts: pd.DataFrame  # Table 2: per scope and outcome (measure): value, low, high (%), n, n_unparsed
    position: pd.DataFrame  # position consistency and the share naming Set 1 (count, n, pct, low, high)
    detection: pd.DataFrame  # Table 3: per prompt version and measure (outcomes, chose_Set_1, genuine_first, ...)
    #: per pair of labelers, raw agreement (%) and kappa_w (measure): value, low, high, n (cases both labelled)
    agreements: pd.DataFrame
    orders: pd.DataFrame  # per ORDER_OUTCOMES and "unjudged": customers (count) and percent of the judged (pct)
    flagged: pd.DataFrame  # per algorithm (main version): parsed lists, flagged_mean, flagged_%, most (item, times)
    answers: pd.DataFrame  # per task and prompt version: calls, unparsed, errors, reason, raw
    copied: pd.DataFrame  # per task and prompt version: shots, parsed, copied (answers repeating an example)
    top_label: tuple[str, int] | None  # the main version's most frequent label and its count
    cost: TimeCost
    paper: pd.DataFrame  # paper_shares(): the paper's headline shares with Wilson intervals

    @property
    def adjudicated_verdicts(self) -> pd.DataFrame:
        """Table 2's rows of the adjudicated pairs (the second scope; the first holds the raw calls)."""
        scopes = self.verdicts["scope"].unique()
        return self.verdicts.loc[self.verdicts["scope"] == scopes[1]]

    @property
    def title_suffix(self) -> str:
        """The data and judge, for every table title."""
        return f"{self.data_label}; judge: {self.judge_name}"

    def headline(self) -> pd.DataFrame:
        """The chapter's headline shares, one row per (measure, source): value, low, high in percent, ours with the
        run's Wilson intervals beside the paper's (:func:`paper_shares`)."""
        good = self.labels.loc[self.labels["category"] == CATEGORIES[0]].set_index("algorithm")
        adj, cons = self.adjudicated_verdicts.set_index("measure"), self.position.loc["position consistency"]
        correct = self.detection.loc[self.detection["measure"] == "correct"]
        ours = [(f"Good Match, {alg}", *good.loc[alg, ["pct", "low", "high"]]) for alg in ALGORITHMS]
        ours += [(f"adjudicated {what}", *adj.loc[k, ["value", "low", "high"]]) for k, what in _ADJUDICATED.items()]
        ours += [("position consistency", cons["pct"], cons["low"], cons["high"])]
        ours += [
            (f"adversarial correct, {r.prompt_version}", r.value, r.low, r.high)
            for r in correct.itertuples(index=False)
        ]
        rows = []
        for measure, value, low, high in ours:
            paper = self.paper.loc[measure]
            rows += [
                (measure, "ours", value, low, high),
                (measure, "paper", paper["value"], paper["low"], paper["high"]),
            ]
        frame = pd.DataFrame(rows, columns=["measure", "source", "value", "low", "high"])
        return frame.astype({"value": float, "low": float, "high": float})

    def results(self) -> list[Result]:
        """Tables 1-3 shares with their Wilson CIs and the position consistency."""
        boot = "95% Wilson"
        out = [
            result(
                "label_pct",
                r.pct,
                r.low,
                r.high,
                r.n_parsed,
                boot,
                algorithm=str(r.algorithm),
                category=str(r.category),
            )
            for r in self.labels.itertuples(index=False)
        ]
        out += [
            result(f"{r.measure}_pct", r.value, r.low, r.high, r.n, boot, scope=str(r.scope))
            for r in self.verdicts.itertuples(index=False)
        ]
        cons = self.position.loc["position consistency"]
        if cons["n"]:
            out.append(result("position_consistency_pct", cons["pct"], cons["low"], cons["high"], cons["n"], boot))
        for r in self.detection.loc[self.detection["measure"] == "correct"].itertuples(index=False):
            evaluator = f"{VERSION_NAMES[r.prompt_version]} prompt ({r.prompt_version})"
            out.append(result("adversarial_correct_pct", r.value, r.low, r.high, r.n, boot, evaluator=evaluator))
        return out

    def items(self) -> dict[str, list[dict[str, Any]]]:
        """Every pointwise label, pairwise winner and adversarial outcome."""
        pw, pair, adv = self.pointwise, self.pairwise, self.adversarial

        def label(v: Any) -> str | None:
            return None if v is None or pd.isna(v) else str(v)

        return {
            "pointwise": [
                {"user": int(u), "algorithm": str(a), "prompt_version": str(v), "label": label(c)}
                for u, a, v, c in zip(pw["user"], pw["algorithm"], pw["prompt_version"], pw["category"], strict=True)
            ],
            "pairwise": [
                {"user": int(u), "order": str(o), "label": label(w)}
                for u, o, w in zip(pair["user"], pair["order"], pair["winner"], strict=True)
            ],
            "adversarial": [
                {"user": int(u), "prompt_version": str(v), "label": label(o)}
                for u, v, o in zip(adv["user"], adv["prompt_version"], adv["outcome"], strict=True)
            ],
        }


def run(judge: Judge, dataset: Dataset, config: SaerConfig) -> SaerRun:
    """Build the sample (a held-out future only for a simulated judge, see :meth:`SaerConfig.resolved`), run the
    three judge tasks with ``judge`` and compute every table's numbers."""
    config = config.resolved(judge.model_name)
    timings: dict[str, float] = {}
    sample = build_sample(dataset, config, timings)
    t0 = time.perf_counter()
    pointwise = judge_pointwise(judge, sample, config)
    timings["judge pointwise"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    pairwise, adjudicated = judge_pairwise(judge, sample, config)
    timings["judge pairwise"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    adversarial = judge_adversarial(judge, sample, config)
    timings["judge adversarial"] = time.perf_counter() - t0
    label = dataset.display_label
    if not is_paper_data(dataset):
        label = f"{label} as a stand-in for Amazon Beauty"
    tasks = {"pointwise": pointwise, "pairwise": pairwise, "adversarial": adversarial}
    return SaerRun(
        config=config,
        judge_name=judge.model_name,
        data_label=label,
        timings=timings,
        sample=sample,
        pointwise=pointwise,
        pairwise=pairwise,
        adjudicated=adjudicated,
        adversarial=adversarial,
        labels=_label_shares(pointwise, config.main_version),
        verdicts=_pairwise_shares(pairwise, adjudicated),
        position=_position(pairwise, adjudicated),
        detection=_adversarial_shares(adversarial, config.prompt_versions),
        agreements=_labeler_agreement(pointwise, adjudicated, adversarial, config),
        orders=_orders(adjudicated),
        flagged=_flagged(pointwise, sample, config.main_version),
        answers=_answer_tally(tasks),
        copied=_copied(tasks, sample.domain, sample.words),
        top_label=_top_label(pointwise, config.main_version),
        cost=time_cost(tasks.values(), judge_s=_judging_seconds(timings), total_s=sum(timings.values())),
        paper=paper_shares(),
    )
