"""SAER's offline evaluation (Liu et al., SIGIR '26): customers, two recommenders, three judge runs.

``run_saer(judge, dataset, SaerConfig(...))`` samples customers stratified by engagement, builds each one's
context (:mod:`recjudge_utils.protocols.context.saer`), produces top-k lists from the co-occurrence and the
embedding recommender, and asks the judge for

1. pointwise labels (Table 1) with the main prompt version, and with every other prompt version on the
   same lists when ``pointwise_ablation`` is on (so prompt versions can be compared as labelers);
2. pairwise verdicts with the main prompt, each comparison twice with Set 1 / Set 2 swapped (Table 2;
   :mod:`recjudge_utils.protocols.pairwise`);
3. adversarial pairs (genuine list vs another customer's list, random position) under every prompt
   version (Table 3; :mod:`recjudge_utils.protocols.adversarial`).

Requests are grouped by template so the backend can reuse each template's fixed prefix. Unparsed answers stay
in the frames (status "unparsed", label None): every table counts them. Tables: :mod:`recjudge_utils.reporting.saer`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.data import Dataset
from recjudge_utils.judge.truth import PreferenceTruth
from recjudge_utils.judge.types import Judge, JudgeRequest, JudgeResult, MetadataValue
from recjudge_utils.metrics.pairwise import TIE
from recjudge_utils.protocols.adversarial import adversarial_outcome, adversarial_pairs
from recjudge_utils.protocols.answers.saer_fields import parse_pairwise, parse_pointwise
from recjudge_utils.protocols.context.saer import Catalogue, CustomerContext, build_context, domain_for
from recjudge_utils.protocols.pairwise import Game, judge_games
from recjudge_utils.protocols.saer import VERSIONS, load_template, pairwise_request, pointwise_request, set_position
from recjudge_utils.protocols.truth import heldout_hits, list_label_truth
from recjudge_utils.recommenders import make_recommender
from recjudge_utils.recommenders.base import Recommender
from recjudge_utils.recommenders.plan_standin import fit_or_stand_in
from recjudge_utils.reporting.display import data_label

__all__ = [
    "ALGORITHMS",
    "PAPER_CALLS",
    "SaerConfig",
    "SaerRun",
    "make_recommenders",
    "run_saer",
    "sample_customers",
    "top_lists",
]

ALGORITHMS: tuple[str, str] = ("co-occurrence", "embedding")
_REGISTRY_KEYS = {"co-occurrence": "cooccurrence", "embedding": "embedding"}
#: our inference of the paper's offline run size (not stated as such in the paper): 400 pointwise lists +
#: 200 comparisons x 2 orders + 100 adversarial pairs x 3 prompt versions
PAPER_CALLS = 400 + 400 + 300
PAPER_MINUTES = 30.0
PAPER_USD = 28.0


@dataclass(frozen=True)
class SaerConfig:
    """Run size and settings. Paper scale: n_customers=200, n_adversarial=100."""

    n_customers: int = 4
    top_k: int = 10
    prompt_versions: tuple[str, ...] = VERSIONS
    main_version: str = "v3"
    seed: int = 0
    window_days: int = 180
    max_history: int = 8
    pointwise_ablation: bool = False
    n_adversarial: int | None = None  # default: every sampled customer (paper: 100 of 200)
    n_boot: int = 1000
    heldout: int = 5  # each customer's last interactions, held out as the future the truth is read from

    def __post_init__(self) -> None:
        object.__setattr__(self, "prompt_versions", tuple(self.prompt_versions))
        if self.main_version not in self.prompt_versions:
            raise ValueError(f"main_version {self.main_version!r} must be one of prompt_versions")
        if self.n_customers < 2:
            raise ValueError("n_customers must be at least 2 (adversarial pairs need another customer)")
        if self.top_k < 1:
            raise ValueError("top_k must be positive")
        if self.heldout < 1:
            raise ValueError("heldout must be at least 1 (the truth is read from the held-out future)")


def sample_customers(interactions: pd.DataFrame, n: int, seed: int = 0, min_interactions: int = 5) -> pd.DataFrame:
    """Stratified random sample over engagement levels (tertiles of interaction counts), as in the paper.

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


def make_recommenders(
    encoder: Callable[[list[str]], np.ndarray] | None = None, seed: int = 0
) -> dict[str, Recommender]:
    """The paper's two algorithms, built from the registry (see their modules for the exact scoring)."""
    return {
        "co-occurrence": make_recommender("cooccurrence", n_recent=20, seed=seed),
        "embedding": make_recommender("embedding", n_recent=5, encoder=encoder, seed=seed),
    }


def top_lists(recommenders: dict[str, Recommender], users: Sequence[int], k: int) -> dict[str, dict[int, list[int]]]:
    """Top-k list per algorithm per customer (already-consumed items excluded)."""
    users_arr = np.asarray(list(users), dtype=np.int64)
    out: dict[str, dict[int, list[int]]] = {}
    for name, rec in recommenders.items():
        recs = rec.recommend(users_arr, k=k, exclude_seen=True)
        out[name] = {int(u): [int(i) for i in row] for u, row in zip(users_arr, recs, strict=True)}
    return out


@dataclass
class SaerRun:
    """Everything one run produced (frames keep unparsed answers with status and reason)."""

    config: SaerConfig
    dataset_label: str
    dataset_is_real: bool
    domain: str
    judge: str
    customers: pd.DataFrame
    contexts: dict[int, CustomerContext]
    catalogue: Catalogue
    lists: dict[str, dict[int, list[int]]]
    pointwise: pd.DataFrame
    pairwise: pd.DataFrame
    adversarial: pd.DataFrame
    heldout_hits: dict[str, dict[int, int]] = field(default_factory=dict)  # held-out positives in each list
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def title_suffix(self) -> str:
        return f"{self.dataset_label}; judge: {self.judge}"


_RESULT_COLUMNS = (
    "status",
    "reason",
    "raw_text",
    "latency_s",
    "cache_hit",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
)


def _result_fields(res: JudgeResult[Any]) -> dict[str, Any]:
    row = res.to_row()
    return {k: row[k] for k in _RESULT_COLUMNS}


def hold_out_last(interactions: pd.DataFrame, users: Sequence[int], n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(visible, future): each listed customer's last ``n`` interactions by time are the future, held out of the
    context and of the recommenders' training, so that a truth exists (the held-out positives)."""
    chosen = interactions.loc[interactions["user"].isin(list(users))]
    ordered = chosen.sort_values(["user", "timestamp", "item"], kind="mergesort")
    future_index = ordered.groupby("user", sort=False).tail(n).index
    return interactions.drop(index=future_index), interactions.loc[future_index]


def run_saer(judge: Judge, dataset: Dataset, config: SaerConfig | None = None, encoder: Any = None) -> SaerRun:
    """Run the whole offline evaluation with ``judge``.

    ``dataset`` follows the ``recjudge_utils.data.Dataset`` contract (interactions, items, name, label,
    is_real). ``encoder`` replaces the MiniLM sentence encoder (tests pass a cheap one).
    """
    cfg = config or SaerConfig()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    domain = domain_for(dataset.name)
    inter = dataset.interactions
    catalogue = Catalogue.from_items(dataset.items)
    customers = sample_customers(inter, cfg.n_customers, seed=cfg.seed, min_interactions=max(5, cfg.heldout + 1))
    users = customers["user"].tolist()
    visible, future = hold_out_last(inter, users, cfg.heldout)
    contexts = {
        u: build_context(visible, catalogue, u, domain, window_days=cfg.window_days, max_history=cfg.max_history)
        for u in users
    }
    timings["data_s"] = time.perf_counter() - t0

    t1 = time.perf_counter()
    recs = make_recommenders(encoder=encoder, seed=cfg.seed)
    # co-occurrence counts and MiniLM embeddings learn nothing: fitted even in plan mode, unless the catalogue would
    # have to be encoded first (then a stand-in, see recjudge_utils.recommenders.plan_standin)
    recs = {
        name: fit_or_stand_in(name, rec, visible, dataset.items, key=f"saer:{name}:{cfg.seed}", seed=cfg.seed)
        for name, rec in recs.items()
    }
    lists = top_lists(recs, users, cfg.top_k)
    positives = {int(u): {int(i) for i in g} for u, g in future.loc[future["rating"] >= 4].groupby("user")["item"]}
    hits = {alg: heldout_hits(lists[alg], positives) for alg in ALGORITHMS}
    timings["recommenders_s"] = time.perf_counter() - t1

    t2 = time.perf_counter()
    panel = _Panel(domain, users, contexts, catalogue, lists, hits)
    pointwise = _run_pointwise(judge, cfg, panel)
    timings["pointwise_s"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    pairwise = _run_pairwise(judge, cfg, panel)
    timings["pairwise_s"] = time.perf_counter() - t3
    t4 = time.perf_counter()
    adversarial = _run_adversarial(judge, cfg, panel)
    timings["adversarial_s"] = time.perf_counter() - t4
    timings["total_s"] = time.perf_counter() - t0

    label = data_label(dataset.label, dataset.is_real)
    if domain != "ecommerce":
        label = f"{label} as a stand-in for Amazon Beauty"
    return SaerRun(
        config=cfg,
        dataset_label=label,
        dataset_is_real=bool(dataset.is_real),
        domain=domain,
        judge=judge.model_name,
        customers=customers,
        contexts=contexts,
        catalogue=catalogue,
        lists=lists,
        pointwise=pointwise,
        pairwise=pairwise,
        adversarial=adversarial,
        heldout_hits=hits,
        timings=timings,
    )


def _pointwise_versions(cfg: SaerConfig) -> list[str]:
    if cfg.pointwise_ablation:
        return [cfg.main_version] + [v for v in cfg.prompt_versions if v != cfg.main_version]
    return [cfg.main_version]


@dataclass(frozen=True)
class _Panel:
    """What every SAER task judges: the sampled customers, their contexts and the two algorithms' lists."""

    domain: str
    users: Sequence[int]
    contexts: dict[int, CustomerContext]
    catalogue: Catalogue
    lists: dict[str, dict[int, list[int]]]
    hits: dict[str, dict[int, int]]


def _run_pointwise(judge: Judge, cfg: SaerConfig, panel: _Panel) -> pd.DataFrame:
    rows = []
    for version in _pointwise_versions(cfg):
        tpl = load_template(panel.domain, "pointwise", version)
        cases = [(u, alg) for alg in ALGORITHMS for u in panel.users]
        reqs = [
            pointwise_request(
                tpl,
                panel.contexts[u],
                panel.lists[alg][u],
                panel.catalogue,
                {"user": u, "algorithm": alg, "prompt_version": version, "task": "pointwise"},
                list_label_truth(panel.hits[alg][u]),
            )
            for u, alg in cases
        ]
        results = judge.judge_many(reqs, parse=partial(parse_pointwise, n_items=cfg.top_k), desc=tpl.id)
        for (u, alg), res in zip(cases, results, strict=True):
            value = res.value if res.status == "parsed" else None  # a parsed result always carries the verdict
            rows.append(
                {
                    "user": u,
                    "algorithm": alg,
                    "prompt_version": version,
                    "category": value.category if value is not None else None,
                    "flagged": list(value.flagged) if value is not None else None,
                    "n_flagged": len(value.flagged) if value is not None else np.nan,
                    "reasoning": value.reasoning if value is not None else None,
                    **_result_fields(res),
                }
            )
    return pd.DataFrame(rows)


def _run_pairwise(judge: Judge, cfg: SaerConfig, panel: _Panel) -> pd.DataFrame:
    """Each customer's two lists compared twice (co-occurrence as Set 1, then embedding as Set 1)."""
    version = cfg.main_version
    tpl = load_template(panel.domain, "pairwise", version)
    a, b = ALGORITHMS
    games_ = [
        Game(
            case={"user": int(u), "prompt_version": version},
            x=a,
            y=b,
            x_evidence=panel.hits[a][u],
            y_evidence=panel.hits[b][u],
        )
        for u in panel.users
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
            tpl, panel.contexts[u], panel.lists[first][u], panel.lists[second][u], panel.catalogue, metadata, truth
        )

    raw = judge_games(
        judge,
        games_,
        build,
        parse_pairwise,
        read=lambda v: {"verdict": v.verdict},
        position_of=set_position,
        keys=["verdict"],
        desc=tpl.id,
        details=lambda v: {"reasoning": v.reasoning},
    )
    x_first = raw["order"] == "x_first"
    out = pd.DataFrame(
        {
            "user": raw["user"].astype(int),
            "prompt_version": version,
            "order": np.where(x_first, f"{a} first", f"{b} first"),
            "set_1": np.where(x_first, a, b),
            "set_2": np.where(x_first, b, a),
            "verdict": raw["verdict_verdict"],
            "winner": raw["verdict"].map({"win": a, "lose": b, "tie": TIE}),
            "reasoning": raw.get("reasoning", pd.Series([None] * len(raw))),
        }
    )
    for col in _RESULT_COLUMNS:
        out[col] = raw[col]
    out["winner"] = out["winner"].where(out["winner"].notna(), None)
    return out


def _run_adversarial(judge: Judge, cfg: SaerConfig, panel: _Panel) -> pd.DataFrame:
    n_adv = cfg.n_adversarial or len(panel.users)
    pairs = adversarial_pairs(panel.users[:n_adv] if n_adv >= 2 else panel.users, ALGORITHMS, seed=cfg.seed)
    rows = []
    # main version first: it shares its template (and so the cached prompt prefix) with the pairwise batch
    for version in [cfg.main_version] + [v for v in cfg.prompt_versions if v != cfg.main_version]:
        tpl = load_template(panel.domain, "pairwise", version)
        reqs = []
        for p in pairs.itertuples(index=False):
            genuine = panel.lists[p.algorithm][p.user]
            decoy = panel.lists[p.algorithm][p.decoy_user]
            s1, s2 = (genuine, decoy) if p.genuine_position == 1 else (decoy, genuine)
            meta = {"user": p.user, "decoy_user": p.decoy_user, "prompt_version": version, "task": "adversarial"}
            # the truth is the genuine list, wherever it is shown
            truth = PreferenceTruth(first=float(p.genuine_position == 1), second=float(p.genuine_position == 2))
            reqs.append(pairwise_request(tpl, panel.contexts[p.user], s1, s2, panel.catalogue, meta, truth))
        results = judge.judge_many(reqs, parse_pairwise, f"{tpl.id} (adversarial)")
        for p, res in zip(pairs.itertuples(index=False), results, strict=True):
            value = res.value if res.status == "parsed" else None  # a parsed result always carries the verdict
            verdict = value.verdict if value is not None else None
            rows.append(
                {
                    "user": p.user,
                    "algorithm": p.algorithm,
                    "decoy_user": p.decoy_user,
                    "genuine_position": p.genuine_position,
                    "prompt_version": version,
                    "verdict": verdict,
                    "outcome": adversarial_outcome(verdict, p.genuine_position),
                    **_result_fields(res),
                }
            )
    return pd.DataFrame(rows)
