"""The SAER offline evaluation end to end (notebook 04): customers, two recommenders, three judge runs, tables.

``run_saer(client, dataset, SaerConfig(...))`` samples customers stratified by engagement, builds each
one's context (:mod:`recjudge_utils.saer`), produces top-k lists from the co-occurrence and the
embedding recommender, and asks the judge for

1. pointwise labels (Table 1) with the main prompt version, and with every other prompt version on the
   same lists when ``pointwise_ablation`` is on (so prompt versions can be compared as labelers);
2. pairwise verdicts with the main prompt, each comparison twice with Set 1 / Set 2 swapped (Table 2);
3. adversarial pairs (genuine list vs another customer's list, random position) under every prompt
   version (Table 3).

Requests are grouped by template so the backend can reuse each template's fixed prefix. Unparsed
answers stay in the frames (status "unparsed", label None): every table counts them and computes
rates over the parsed answers only, saying how many there were.

The ``table*`` functions put our numbers beside the paper's (``recjudge_utils/paper_tables/saer_*.csv``)
with percentile-bootstrap 95% CIs over customers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib import resources
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.agreement import TIE, agreement, pairwise_order, swap_consistency
from recjudge_utils.recommenders.base import Recommender
from recjudge_utils.recommenders.cooccurrence import CooccurrenceRecommender
from recjudge_utils.recommenders.embedding import EmbeddingRecommender
from recjudge_utils.saer import (
    CATEGORIES,
    SUBSTITUTIONS,
    VERSION_NAMES,
    Catalogue,
    CustomerContext,
    adjudicate_swap,
    adversarial_outcome,
    adversarial_pairs,
    build_context,
    domain_for,
    load_template,
    map_verdict,
    pairwise_request,
    parse_pairwise,
    parse_pointwise,
    pointwise_request,
)
from recjudge_utils.stats import bootstrap_ci

ALGORITHMS: tuple[str, str] = ("co-occurrence", "embedding")
OUTCOMES: tuple[str, str, str] = ("correct", "wrong", "tie")
#: the paper's offline run: 400 pointwise lists + 200 comparisons x 2 orders + 100 adversarial x 3 prompts
PAPER_CALLS = 400 + 400 + 300
PAPER_MINUTES = 30.0
PAPER_USD = 28.0


@dataclass(frozen=True)
class SaerConfig:
    """Run size and settings. Paper scale: n_customers=200 (adversarial uses the first 100)."""

    n_customers: int = 6
    list_length: int = 10
    prompt_versions: tuple[str, ...] = ("v1", "v2", "v3")
    main_version: str = "v3"
    seed: int = 0
    window_days: int = 180
    max_history: int = 8
    pointwise_ablation: bool = True
    n_adversarial: int | None = None  # default: every sampled customer (paper: 100 of 200)
    n_boot: int = 1000

    def __post_init__(self) -> None:
        object.__setattr__(self, "prompt_versions", tuple(self.prompt_versions))
        if self.main_version not in self.prompt_versions:
            raise ValueError(f"main_version {self.main_version!r} must be one of prompt_versions")
        if self.n_customers < 2:
            raise ValueError("n_customers must be at least 2 (adversarial pairs need another customer)")
        if self.list_length < 1:
            raise ValueError("list_length must be positive")


# -- data and lists ------------------------------------------------------------------------------
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
    """The paper's two algorithms (see their modules for the exact scoring)."""
    return {
        "co-occurrence": CooccurrenceRecommender(n_recent=20, seed=seed),
        "embedding": EmbeddingRecommender(n_recent=5, encoder=encoder, seed=seed),
    }


def top_lists(recommenders: dict[str, Recommender], users: Sequence[int], k: int) -> dict[str, dict[int, list[int]]]:
    """Top-k list per algorithm per customer (already-consumed items excluded)."""
    users_arr = np.asarray(list(users), dtype=np.int64)
    out: dict[str, dict[int, list[int]]] = {}
    for name, rec in recommenders.items():
        recs = rec.recommend(users_arr, k=k, exclude_seen=True)
        out[name] = {int(u): [int(i) for i in row] for u, row in zip(users_arr, recs, strict=True)}
    return out


# -- the run -------------------------------------------------------------------------------------
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
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def title_suffix(self) -> str:
        return f"{self.dataset_label}; judge: {self.judge}"


def _result_fields(res: Any) -> dict[str, Any]:
    return {
        "status": res.status,
        "reason": res.reason,
        "raw_text": res.raw_text,
        "latency_s": float(res.latency_s or 0.0),
        "cache_hit": bool(res.cache_hit),
        "prompt_tokens": int(res.prompt_tokens or 0),
        "completion_tokens": int(res.completion_tokens or 0),
        "cost_usd": float(res.cost_usd or 0.0),
    }


def run_saer(client: Any, dataset: Any, config: SaerConfig | None = None, encoder: Any = None) -> SaerRun:
    """Run the whole offline evaluation with ``client`` (anything with ``judge_many`` and ``model_name``).

    ``dataset`` follows the ``recjudge_utils.data.Dataset`` contract (interactions, items, name, label,
    is_real). ``encoder`` replaces the MiniLM sentence encoder (tests pass a cheap one).
    """
    cfg = config or SaerConfig()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    domain = domain_for(dataset.name)
    inter = dataset.interactions
    catalogue = Catalogue.from_items(dataset.items)
    customers = sample_customers(inter, cfg.n_customers, seed=cfg.seed)
    users = customers["user"].tolist()
    contexts = {
        u: build_context(inter, catalogue, u, domain, window_days=cfg.window_days, max_history=cfg.max_history)
        for u in users
    }
    timings["data_s"] = time.perf_counter() - t0

    t1 = time.perf_counter()
    recs = make_recommenders(encoder=encoder, seed=cfg.seed)
    for rec in recs.values():
        rec.fit(inter, dataset.items)
    lists = top_lists(recs, users, cfg.list_length)
    timings["recommenders_s"] = time.perf_counter() - t1

    t2 = time.perf_counter()
    pointwise = _run_pointwise(client, cfg, domain, users, contexts, catalogue, lists)
    timings["pointwise_s"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    pairwise = _run_pairwise(client, cfg, domain, users, contexts, catalogue, lists)
    timings["pairwise_s"] = time.perf_counter() - t3
    t4 = time.perf_counter()
    adversarial = _run_adversarial(client, cfg, domain, users, contexts, catalogue, lists)
    timings["adversarial_s"] = time.perf_counter() - t4
    timings["total_s"] = time.perf_counter() - t0

    label = dataset.label if domain == "ecommerce" else f"{dataset.label} as a stand-in for Amazon Beauty"
    return SaerRun(
        config=cfg,
        dataset_label=label,
        dataset_is_real=bool(dataset.is_real),
        domain=domain,
        judge=str(getattr(client, "model_name", "unknown judge")),
        customers=customers,
        contexts=contexts,
        catalogue=catalogue,
        lists=lists,
        pointwise=pointwise,
        pairwise=pairwise,
        adversarial=adversarial,
        timings=timings,
    )


def _pointwise_versions(cfg: SaerConfig) -> list[str]:
    if cfg.pointwise_ablation:
        return [cfg.main_version] + [v for v in cfg.prompt_versions if v != cfg.main_version]
    return [cfg.main_version]


def _run_pointwise(client, cfg, domain, users, contexts, catalogue, lists) -> pd.DataFrame:
    rows = []
    for version in _pointwise_versions(cfg):
        tpl = load_template(domain, "pointwise", version)
        cases = [(u, alg) for alg in ALGORITHMS for u in users]
        reqs = [
            pointwise_request(
                tpl,
                contexts[u],
                lists[alg][u],
                catalogue,
                {"user": u, "algorithm": alg, "prompt_version": version, "task": "pointwise"},
            )
            for u, alg in cases
        ]
        results = client.judge_many(reqs, parse=partial(parse_pointwise, n_items=cfg.list_length), desc=tpl.template_id)
        for (u, alg), res in zip(cases, results, strict=True):
            ok = res.status == "parsed"
            rows.append(
                {
                    "user": u,
                    "algorithm": alg,
                    "prompt_version": version,
                    "category": res.value.category if ok else None,
                    "flagged": list(res.value.flagged) if ok else None,
                    "n_flagged": len(res.value.flagged) if ok else np.nan,
                    "reasoning": res.value.reasoning if ok else None,
                    **_result_fields(res),
                }
            )
    return pd.DataFrame(rows)


def _run_pairwise(client, cfg, domain, users, contexts, catalogue, lists) -> pd.DataFrame:
    version = cfg.main_version
    tpl = load_template(domain, "pairwise", version)
    a, b = ALGORITHMS
    cases = [(u, order) for order in ((a, b), (b, a)) for u in users]
    reqs = [
        pairwise_request(
            tpl,
            contexts[u],
            lists[s1][u],
            lists[s2][u],
            catalogue,
            {"user": u, "set_1": s1, "set_2": s2, "prompt_version": version, "task": "pairwise"},
        )
        for u, (s1, s2) in cases
    ]
    results = client.judge_many(reqs, parse=parse_pairwise, desc=tpl.template_id)
    rows = []
    for (u, (s1, s2)), res in zip(cases, results, strict=True):
        verdict = res.value.verdict if res.status == "parsed" else None
        rows.append(
            {
                "user": u,
                "prompt_version": version,
                "order": f"{s1} first",
                "set_1": s1,
                "set_2": s2,
                "verdict": verdict,
                "winner": map_verdict(verdict, s1, s2),
                "reasoning": res.value.reasoning if res.status == "parsed" else None,
                **_result_fields(res),
            }
        )
    return pd.DataFrame(rows)


def _run_adversarial(client, cfg, domain, users, contexts, catalogue, lists) -> pd.DataFrame:
    n_adv = cfg.n_adversarial or len(users)
    pairs = adversarial_pairs(users[:n_adv] if n_adv >= 2 else users, ALGORITHMS, seed=cfg.seed)
    rows = []
    # main version first: it shares its template (and so the cached prompt prefix) with the pairwise batch
    for version in [cfg.main_version] + [v for v in cfg.prompt_versions if v != cfg.main_version]:
        tpl = load_template(domain, "pairwise", version)
        reqs = []
        for p in pairs.itertuples(index=False):
            genuine = lists[p.algorithm][p.user]
            decoy = lists[p.algorithm][p.decoy_user]
            s1, s2 = (genuine, decoy) if p.genuine_position == 1 else (decoy, genuine)
            meta = {"user": p.user, "decoy_user": p.decoy_user, "prompt_version": version, "task": "adversarial"}
            reqs.append(pairwise_request(tpl, contexts[p.user], s1, s2, catalogue, meta))
        results = client.judge_many(reqs, parse=parse_pairwise, desc=f"{tpl.template_id} (adversarial)")
        for p, res in zip(pairs.itertuples(index=False), results, strict=True):
            verdict = res.value.verdict if res.status == "parsed" else None
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


# -- paper tables --------------------------------------------------------------------------------
def paper_table(name: str) -> pd.DataFrame:
    """The paper's numbers, transcribed in ``recjudge_utils/paper_tables/saer_<name>.csv``."""
    path = resources.files("recjudge_utils").joinpath("paper_tables", f"saer_{name}.csv")
    with path.open("r", encoding="utf-8") as fh:
        return pd.read_csv(fh, comment="#")


def _share_ci(indicator: np.ndarray, n_boot: int, seed: int) -> tuple[float, float, float]:
    if len(indicator) == 0:
        return float("nan"), float("nan"), float("nan")
    pt, lo, hi = bootstrap_ci(indicator.astype(float), n_boot=n_boot, seed=seed)
    return 100 * pt, 100 * lo, 100 * hi


def _fmt(pt: float, lo: float, hi: float) -> str:
    if np.isnan(pt):
        return "n/a"
    return f"{pt:.1f} [{lo:.1f}, {hi:.1f}]"


# -- Table 1 -------------------------------------------------------------------------------------
def table1(run: SaerRun, version: str | None = None) -> pd.DataFrame:
    """Pointwise label distribution per algorithm (percent of parsed lists, 95% CI) beside the paper."""
    version = version or run.config.main_version
    pw = run.pointwise.loc[run.pointwise["prompt_version"] == version]
    paper = paper_table("table1").set_index(["algorithm", "category"])
    rows = []
    for alg in ALGORITHMS:
        sub = pw.loc[pw["algorithm"] == alg]
        parsed = sub.loc[sub["status"] == "parsed", "category"].to_numpy()
        for cat in CATEGORIES:
            pt, lo, hi = _share_ci(parsed == cat, run.config.n_boot, run.config.seed)
            ref = paper.loc[(alg, cat)]
            rows.append(
                {
                    "algorithm": alg,
                    "category": cat,
                    "ours_%": pt,
                    "ours_95%_CI": _fmt(pt, lo, hi),
                    "n_parsed": len(parsed),
                    "n_unparsed": int((sub["status"] != "parsed").sum()),
                    "paper_SAER_%": ref["saer_pct"],
                    "paper_human_A_%": ref["human_a_pct"],
                    "paper_human_B_%": ref["human_b_pct"],
                }
            )
    return pd.DataFrame(rows)


def flagged_summary(run: SaerRun, version: str | None = None, top: int = 3) -> pd.DataFrame:
    """Per algorithm: how many items the judge flagged per parsed list, and the most-flagged titles."""
    version = version or run.config.main_version
    pw = run.pointwise.loc[(run.pointwise["prompt_version"] == version) & (run.pointwise["status"] == "parsed")]
    rows = []
    for alg in ALGORITHMS:
        sub = pw.loc[pw["algorithm"] == alg]
        counts: dict[int, int] = {}
        for u, flagged in zip(sub["user"], sub["flagged"], strict=True):
            for k in flagged:
                item = run.lists[alg][int(u)][k - 1]
                counts[item] = counts.get(item, 0) + 1
        most = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        rows.append(
            {
                "algorithm": alg,
                "n_parsed": len(sub),
                "mean_flagged_per_list": float(sub["n_flagged"].mean()) if len(sub) else float("nan"),
                "lists_with_flags_%": 100 * float((sub["n_flagged"] > 0).mean()) if len(sub) else float("nan"),
                "most_flagged": "; ".join(f"{run.catalogue.title(i)} (x{c})" for i, c in most) or "-",
            }
        )
    return pd.DataFrame(rows)


# -- Table 2 -------------------------------------------------------------------------------------
def adjudicated_pairs(run: SaerRun) -> pd.DataFrame:
    """One row per customer: the mapped-back winner in each order and the swap adjudication."""
    a, b = ALGORITHMS
    pw = run.pairwise.set_index(["user", "order"])
    rows = []
    for u in run.customers["user"]:
        w_a = pw.loc[(u, f"{a} first"), "winner"]
        w_b = pw.loc[(u, f"{b} first"), "winner"]
        w_a = None if pd.isna(w_a) else w_a
        w_b = None if pd.isna(w_b) else w_b
        rows.append(
            {
                "user": int(u),
                f"winner_{a}_first": w_a,
                f"winner_{b}_first": w_b,
                "adjudicated": adjudicate_swap(w_a, w_b),
                "consistent": None if w_a is None or w_b is None else w_a == w_b,
            }
        )
    return pd.DataFrame(rows)


def table2(run: SaerRun) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(win/tie table beside the paper, consistency metrics). Rates are over parsed answers."""
    cfg = run.config
    a, b = ALGORITHMS
    raw = run.pairwise.loc[run.pairwise["status"] == "parsed", "winner"].to_numpy()
    adj_df = adjudicated_pairs(run)
    adj = adj_df["adjudicated"].dropna().to_numpy()
    paper = paper_table("table2").set_index("scope")

    def row(scope: str, values: np.ndarray, n_total: int, paper_scope: str) -> dict:
        out: dict[str, Any] = {"scope": scope, "n_parsed": len(values), "n_unparsed": n_total - len(values)}
        for label, key in ((a, "cooccurrence_win"), (b, "embedding_win"), (TIE, "tie")):
            pt, lo, hi = _share_ci(values == label, cfg.n_boot, cfg.seed)
            out[f"{key}_%"] = pt
            out[f"{key}_95%_CI"] = _fmt(pt, lo, hi)
        ref = paper.loc[paper_scope]
        out["paper_cooccurrence_win_%"] = ref["cooccurrence_win_pct"]
        out["paper_embedding_win_%"] = ref["embedding_win_pct"]
        out["paper_tie_%"] = ref["tie_pct"]
        return out

    table = pd.DataFrame(
        [
            row(f"ours raw ({len(run.pairwise)} calls)", raw, len(run.pairwise), "SAER Raw"),
            row(f"ours adjudicated ({len(adj_df)} pairs)", adj, len(adj_df), "SAER Adjudicated"),
        ]
    )
    consistent, n = swap_consistency(adj_df[f"winner_{a}_first"].tolist(), adj_df[f"winner_{b}_first"].tolist())
    flags = adj_df["consistent"].dropna().to_numpy(dtype=float)
    c_pt, c_lo, c_hi = _share_ci(flags, cfg.n_boot, cfg.seed)
    verdicts = run.pairwise.loc[run.pairwise["status"] == "parsed", "verdict"].to_numpy()
    s1 = _share_ci(verdicts == "Set 1", cfg.n_boot, cfg.seed)
    metrics = pd.DataFrame(
        [
            {
                "metric": "position consistency (both orders agree)",
                "ours": f"{consistent}/{n} = " + _fmt(c_pt, c_lo, c_hi) + " %",
                "paper": "176/200 = 88.0 %",
            },
            {
                "metric": "answers naming the first-shown list (Set 1)",
                "ours": _fmt(*s1) + f" % of {len(verdicts)} parsed calls",
                "paper": "not reported",
            },
            {
                "metric": "unparsed pairwise answers",
                "ours": f"{int((run.pairwise['status'] != 'parsed').sum())}/{len(run.pairwise)}",
                "paper": "not reported",
            },
        ]
    )
    return table, metrics


# -- Table 3 -------------------------------------------------------------------------------------
def table3(run: SaerRun) -> pd.DataFrame:
    """Adversarial correct / wrong / tie per prompt version (percent of parsed), beside the paper."""
    cfg = run.config
    paper = paper_table("table3")
    paper_v = paper.dropna(subset=["prompt_version"]).set_index("prompt_version")
    rows = []
    for version in cfg.prompt_versions:
        sub = run.adversarial.loc[run.adversarial["prompt_version"] == version]
        parsed = sub.loc[sub["status"] == "parsed"]
        out: dict[str, Any] = {
            "evaluator": f"{VERSION_NAMES[version]} prompt ({version})",
            "n_parsed": len(parsed),
            "n_unparsed": len(sub) - len(parsed),
        }
        for outcome in OUTCOMES:
            pt, lo, hi = _share_ci(parsed["outcome"].to_numpy() == outcome, cfg.n_boot, cfg.seed)
            out[f"{outcome}_%"] = pt
            out[f"{outcome}_95%_CI"] = _fmt(pt, lo, hi)
        first = parsed["verdict"].to_numpy() == "Set 1"
        out["chose_Set_1_%"] = 100 * float(first.mean()) if len(first) else float("nan")
        ref = paper_v.loc[version]
        out["paper_correct_%"] = ref["correct_pct"]
        out["paper_wrong_%"] = ref["wrong_pct"]
        out["paper_tie_%"] = ref["tie_pct"]
        rows.append(out)
    for ev in paper.loc[paper["prompt_version"].isna()].itertuples(index=False):
        rows.append(
            {
                "evaluator": f"paper: {ev.evaluator}",
                "paper_correct_%": ev.correct_pct,
                "paper_wrong_%": ev.wrong_pct,
                "paper_tie_%": ev.tie_pct,
            }
        )
    table = pd.DataFrame(rows)
    for col in ("n_parsed", "n_unparsed"):
        table[col] = table[col].astype("Int64")
    return table


# -- agreement between the labelers the run has --------------------------------------------------
def agreement_table(run: SaerRun) -> pd.DataFrame:
    """Raw agreement and quadratic weighted kappa (95% CIs) between every pair of labelers in the run.

    * pointwise: prompt versions as labelers of the same lists (Poor < Partial < Good);
    * pairwise: the two presentation orders as labelers (embedding wins < tie < co-occurrence wins);
    * adversarial: prompt versions as labelers of the same blind pairs (wrong < tie < correct).
    """
    cfg = run.config
    rows = []

    def add(task: str, name_a: str, name_b: str, x: list, y: list, labels: Sequence[str]) -> None:
        res = agreement(x, y, labels, n_boot=cfg.n_boot, seed=cfg.seed)
        rows.append(
            {
                "task": task,
                "labeler_a": name_a,
                "labeler_b": name_b,
                "n_both_parsed": res.n,
                "raw_agreement_%": 100 * res.raw,
                "raw_95%_CI": _fmt(100 * res.raw, 100 * res.raw_ci[0], 100 * res.raw_ci[1]),
                "kappa_w": res.kappa,
                "kappa_95%_CI": "n/a"
                if np.isnan(res.kappa_ci[0])
                else f"[{res.kappa_ci[0]:.2f}, {res.kappa_ci[1]:.2f}]",
            }
        )

    def none_if_na(values: Sequence[Any]) -> list:
        return [None if pd.isna(v) else v for v in values]

    pw = run.pointwise.pivot_table(
        index=["user", "algorithm"], columns="prompt_version", values="category", aggfunc="first", dropna=False
    )
    versions = [v for v in cfg.prompt_versions if v in pw.columns]
    for va, vb in combinations(versions, 2):
        add("pointwise", f"prompt {va}", f"prompt {vb}", none_if_na(pw[va]), none_if_na(pw[vb]), CATEGORIES[::-1])
    a, b = ALGORITHMS
    adj = adjudicated_pairs(run)
    add(
        "pairwise",
        f"order: {a} as Set 1",
        f"order: {b} as Set 1",
        none_if_na(adj[f"winner_{a}_first"]),
        none_if_na(adj[f"winner_{b}_first"]),
        pairwise_order(a, b),
    )
    adv = run.adversarial.pivot_table(
        index="user", columns="prompt_version", values="outcome", aggfunc="first", dropna=False
    )
    for va, vb in combinations([v for v in cfg.prompt_versions if v in adv.columns], 2):
        add(
            "adversarial",
            f"prompt {va}",
            f"prompt {vb}",
            none_if_na(adv[va]),
            none_if_na(adv[vb]),
            ("wrong", "tie", "correct"),
        )
    return pd.DataFrame(rows)


# -- time and cost -------------------------------------------------------------------------------
def time_cost(run: SaerRun) -> pd.DataFrame:
    """Judge calls, tokens, wall time and cost of this run, an extrapolation to the paper's run size,
    and the paper's 30 minutes / $28 (Claude 4.5 Sonnet on Bedrock)."""
    frames = [run.pointwise, run.pairwise, run.adversarial]
    allr = pd.concat([f[["latency_s", "cache_hit", "prompt_tokens", "completion_tokens", "cost_usd"]] for f in frames])
    n_calls = len(allr)
    fresh = allr.loc[~allr["cache_hit"]]
    judge_s = run.timings.get("pointwise_s", 0) + run.timings.get("pairwise_s", 0) + run.timings.get("adversarial_s", 0)
    per_call = float(fresh["latency_s"].mean()) if len(fresh) else float("nan")
    cost_per_call = float(fresh["cost_usd"].mean()) if len(fresh) else float("nan")
    rows = [
        (
            "judgments in this run",
            f"{n_calls} ({len(fresh)} fresh, {n_calls - len(fresh)} from cache)",
            f"{PAPER_CALLS}",
        ),
        (
            "prompt / completion tokens",
            f"{int(allr['prompt_tokens'].sum())} / {int(allr['completion_tokens'].sum())}",
            "not reported",
        ),
        ("judging wall time (this run)", f"{judge_s / 60:.2f} min", "about 30 min"),
        (
            "whole run incl. data and recommenders",
            f"{run.timings.get('total_s', float('nan')) / 60:.2f} min",
            "not reported",
        ),
        ("cost (this run)", f"${allr['cost_usd'].sum():.4f}", "about $28"),
        (
            "mean latency per fresh call",
            f"{per_call:.2f} s" if not np.isnan(per_call) else "n/a (all cached)",
            "not reported",
        ),
        (
            f"extrapolated to the paper's {PAPER_CALLS} calls, sequential",
            f"{PAPER_CALLS * per_call / 60:.1f} min, ${PAPER_CALLS * cost_per_call:.2f}"
            if not np.isnan(per_call)
            else "n/a",
            "about 30 min, $28",
        ),
    ]
    return pd.DataFrame(rows, columns=["quantity", f"ours ({run.judge})", "paper (Claude 4.5 Sonnet)"])


def unparsed_summary(run: SaerRun) -> pd.DataFrame:
    """Unparsed answers per task and prompt version, with the most common reason."""
    rows = []
    for task, frame in (("pointwise", run.pointwise), ("pairwise", run.pairwise), ("adversarial", run.adversarial)):
        for version, sub in frame.groupby("prompt_version", sort=True):
            bad = sub.loc[sub["status"] != "parsed"]
            reasons = bad["reason"].fillna("").str.slice(0, 60).value_counts()
            rows.append(
                {
                    "task": task,
                    "prompt_version": version,
                    "calls": len(sub),
                    "unparsed": int((sub["status"] == "unparsed").sum()),
                    "errors": int((sub["status"] == "error").sum()),
                    "unparsed_%": 100 * len(bad) / len(sub) if len(sub) else float("nan"),
                    "most_common_reason": reasons.index[0] if len(reasons) else "-",
                }
            )
    return pd.DataFrame(rows)


def substitutions_table(domain: str) -> pd.DataFrame:
    """SAER's context fields and what this run uses instead (named substitutes)."""
    return pd.DataFrame([{"SAER context field": k, "used here": v} for k, v in SUBSTITUTIONS[domain].items()])


def example_lists(run: SaerRun, user: int | None = None) -> pd.DataFrame:
    """Side-by-side top-k lists of the two algorithms for one customer (first sampled by default)."""
    user = int(run.customers["user"].iloc[0]) if user is None else int(user)
    a, b = ALGORITHMS
    k = len(run.lists[a][user])
    return pd.DataFrame(
        {
            "rank": range(1, k + 1),
            a: [run.catalogue.line(i) for i in run.lists[a][user]],
            b: [run.catalogue.line(i) for i in run.lists[b][user]],
        }
    )


def captioned(frame: pd.DataFrame, title: str, precision: int = 1):
    """A pandas Styler with a caption (table title) for notebook display."""
    return frame.style.set_caption(title).format(precision=precision, na_rep="-").hide(axis="index")


def copied_from_examples(run: SaerRun, min_chars: int = 40) -> pd.DataFrame:
    """Per task: parsed answers whose REASONING repeats >= ``min_chars`` characters verbatim from one of the
    prompt's few-shot answers (a sign that a small judge parrots the examples instead of reading the lists)."""
    from difflib import SequenceMatcher

    rows = []
    tasks = (("pointwise", run.pointwise, "pointwise"), ("pairwise", run.pairwise, "pairwise"))
    for task, frame, mode in (*tasks, ("adversarial", run.adversarial, "pairwise")):
        for version, sub in frame.groupby("prompt_version", sort=True):
            tpl = load_template(run.domain, mode, str(version))
            shots = [m["content"] for m in tpl.fixed if m["role"] == "assistant"]
            parsed = sub.loc[sub["status"] == "parsed", "raw_text"].fillna("").tolist()
            copied = 0
            for text in parsed:
                for shot in shots:
                    m = SequenceMatcher(None, text, shot, autojunk=False).find_longest_match(0, len(text), 0, len(shot))
                    if m.size >= min_chars:
                        copied += 1
                        break
            rows.append(
                {
                    "task": task,
                    "prompt_version": version,
                    "few_shot_answers": len(shots),
                    "parsed": len(parsed),
                    f"reusing_>={min_chars}_chars_of_an_example": copied,
                }
            )
    return pd.DataFrame(rows)


def observations(run: SaerRun) -> list[str]:
    """Plain statements computed from this run's frames (for the discussion; nothing hard-coded)."""
    out = []
    pw = run.pairwise.loc[run.pairwise["status"] == "parsed"]
    if len(pw):
        first = 100 * float((pw["verdict"] == "Set 1").mean())
        out.append(
            f"In the main pairwise run the judge named the first-shown list (Set 1) in {first:.0f}% of "
            f"{len(pw)} parsed answers."
        )
    adj = adjudicated_pairs(run)
    cons = adj["consistent"].dropna()
    if len(cons):
        out.append(
            f"Both presentation orders agreed for {int(cons.sum())} of {len(cons)} customers; the other "
            f"{len(cons) - int(cons.sum())} verdicts depended on position and became ties."
        )
        both_tie = int(((adj["adjudicated"] == TIE) & (adj["consistent"] == True)).sum())  # noqa: E712
        if both_tie:
            out.append(
                f"{both_tie} of the consistent verdicts were 'Tie' in both orders: consistency by always "
                "answering Tie carries no preference."
            )
    for version in run.config.prompt_versions:
        adv = run.adversarial.loc[
            (run.adversarial["prompt_version"] == version) & (run.adversarial["status"] == "parsed")
        ]
        if len(adv):
            correct = 100 * float((adv["outcome"] == "correct").mean())
            shown_first = 100 * float((adv["genuine_position"] == 1).mean())
            out.append(
                f"Adversarial, prompt {version}: {correct:.0f}% correct; the genuine list was shown first in "
                f"{shown_first:.0f}% of these pairs (a judge that always picks Set 1 scores exactly that)."
            )
    p = run.pointwise.loc[(run.pointwise["prompt_version"] == run.config.main_version)]
    parsed = p.loc[p["status"] == "parsed", "category"]
    if len(parsed):
        top = parsed.value_counts()
        out.append(
            f"Pointwise ({run.config.main_version}): {int(top.iloc[0])} of {len(parsed)} parsed labels were "
            f"'{top.index[0]}'; {int((p['status'] != 'parsed').sum())} of {len(p)} answers were unparsed."
        )
    return out


# -- figure --------------------------------------------------------------------------------------
def plot_table1(run: SaerRun, t1: pd.DataFrame | None = None):
    """Bar chart: our label distribution per algorithm beside the paper's SAER column."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    t1 = table1(run) if t1 is None else t1
    long = pd.concat(
        [
            t1.assign(source=f"ours ({run.judge})", pct=t1["ours_%"]),
            t1.assign(source="paper SAER (Claude 4.5 Sonnet)", pct=t1["paper_SAER_%"]),
        ]
    )
    g = sns.catplot(
        data=long,
        x="category",
        y="pct",
        hue="source",
        col="algorithm",
        kind="bar",
        height=3.2,
        aspect=1.2,
        order=list(CATEGORIES),
    )
    g.set_axis_labels("", "% of lists")
    g.figure.suptitle(f"SAER Table 1: pointwise labels — {run.dataset_label}", y=1.04, fontsize=10)
    plt.close(g.figure)
    return g.figure
