"""What each protocol detects, shown with the simulated judge (a judge of known quality; never an LLM).

Every judgment goes through the judge client with the ``sim`` backend (cached, logged, counted like any LLM
call); the Monte Carlo parts then resample the judged items, so repeated samples cost no further calls.

* :func:`serendipity_noise`: MAE, three-class accuracy and kappa against the sim's known score noise, beside the
  MAE the error model implies (the truth line);
* :func:`ci_coverage`: how often the bootstrap CI of the MAE (and the Wilson CI of the accuracy) holds the
  population value, over repeated samples of n pairs;
* :func:`pairs_to_separate`: judged pairs needed to tell two templates apart whose MAEs differ as the paper's CoT
  and LtM do (0.847 vs 1.014), by simulation and by statsmodels' power function;
* :func:`arena_position_bias`: the paper's single-order protocol (tested model always shown first) against both
  orders adjudicated, against the truth, as position bias grows;
* :func:`saer_protocols`: adversarial detection against context neglect, swap consistency against position bias,
  and SAER's strict (pointwise) and conservative (pairwise) adjudication of two annotators;
* :func:`reevaluation_noise`: how judge noise shrinks the Avg.Score@k and P_ser@k gaps between two recommenders,
  and how many judged users order them correctly 95% of the time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.power import TTestPower
from statsmodels.stats.proportion import proportion_confint

from recjudge_utils.data import Dataset, SerendipityPairs
from recjudge_utils.experiments.saer import ALGORITHMS, hold_out_last, make_recommenders, sample_customers, top_lists
from recjudge_utils.judge.client import JudgeClient
from recjudge_utils.judge.profiles import load_profile
from recjudge_utils.judge.truth import PreferenceTruth
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.metrics.agreement import POINTWISE_LABELS, strict_adjudicate, weighted_kappa
from recjudge_utils.metrics.pairwise import TIE, conservative, q_value
from recjudge_utils.protocols.adversarial import adversarial_outcome, adversarial_pairs
from recjudge_utils.protocols.answers.arena_verdicts import OVERALL
from recjudge_utils.protocols.answers.saer_fields import parse_pairwise, parse_pointwise
from recjudge_utils.protocols.arena import PairwiseJudge, adjudicated_outcomes
from recjudge_utils.protocols.context.arena import ArenaContext
from recjudge_utils.protocols.context.saer import Catalogue, build_context
from recjudge_utils.protocols.pairwise import Game, judge_games
from recjudge_utils.protocols.pointwise_score import SerendipityJudge
from recjudge_utils.protocols.saer import load_template, pairwise_request, pointwise_request, set_position
from recjudge_utils.protocols.truth import heldout_hits, list_label_truth, reevaluation_truth
from recjudge_utils.recommenders.plan_standin import fit_or_stand_in
from recjudge_utils.recommenders.training import train_or_load
from recjudge_utils.splitting.temporal import last_items, positive_interactions, split_last_n

__all__ = [
    "DetectionConfig",
    "SimFactory",
    "arena_position_bias",
    "ci_coverage",
    "expected_mae",
    "pairs_to_separate",
    "reevaluation_noise",
    "saer_protocols",
    "serendipity_noise",
    "sim_factory",
]

#: sim(**error model) -> a judge client over the simulated backend
SimFactory = Callable[..., JudgeClient]


def sim_factory(profile: str | Mapping[str, Any] = "sim", run_name: str = "05_protocols_detect") -> SimFactory:
    """Judge clients over the simulated backend of ``profile`` (its seed), each with exactly the error model given
    (a perfect judge unless told otherwise), logging into one run sub-folder."""
    base = load_profile(profile)
    if base.backend_name != "sim":
        raise ValueError(
            f"{base.source}: the protocol chapter needs a simulated judge profile, not {base.backend_name!r}"
        )
    seed = int(base.to_dict()["options"].get("seed", 0))

    def make(**error_model: float) -> JudgeClient:
        options = {"seed": seed, **error_model}
        client: JudgeClient = load_profile(base, options=options).client(run_name=run_name, progress=False)
        return client

    return make


PAPER_MAES = (0.847, 1.014)  # GPT-4o-mini, CoT and LtM, serendipity paper Table 1
PAPER_PAIRS = 2150


@dataclass(frozen=True)
class DetectionConfig:
    """Sizes of the chapter; the defaults run in about two minutes on 2 cores."""

    noise_levels: tuple[float, ...] = (0.0, 0.5, 1.0, 1.5, 2.0)
    coverage_noise: float = 1.0
    coverage_sizes: tuple[int, ...] = (10, 30, 100, 300)
    repeats: int = 400
    n_boot: int = 400
    power_sizes: tuple[int, ...] = (25, 50, 100, 200, 400, 800, 1600)
    biases: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4)
    neglects: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
    arena_users: int = 300
    saer_customers: int = 150
    annotator_noise: float = 0.7
    reeval_users: int = 150
    reeval_noise: tuple[float, ...] = (0.0, 1.0, 2.0, 3.0)
    user_sizes: tuple[int, ...] = (5, 10, 20, 40, 80, 150)
    seed: int = 0


# ----------------------------------------------------------------------------------------------- serendipity
def expected_mae(g: np.ndarray, sigma: float, leniency: float = 0.0) -> float:
    """The MAE the sim's error model implies: answers ``clip(round(g + leniency + sigma Z), 1, 5)``."""
    g = np.asarray(g, dtype=float)
    if sigma == 0:
        return float(np.mean(np.abs(np.clip(np.rint(g + leniency), 1, 5) - g)))
    levels = np.arange(1, 6, dtype=float)
    lo = np.where(levels == 1, -np.inf, levels - 0.5)
    hi = np.where(levels == 5, np.inf, levels + 0.5)
    centre = g[:, None] + leniency
    prob = stats.norm.cdf((hi[None, :] - centre) / sigma) - stats.norm.cdf((lo[None, :] - centre) / sigma)
    return float(np.mean((prob * np.abs(levels[None, :] - g[:, None])).sum(axis=1)))


def _scores(sim: SimFactory, pairs: SerendipityPairs, **params: float) -> np.ndarray:
    client = sim(**params)
    try:
        out = SerendipityJudge(client, template="base").score(pairs.pairs, pairs.items, desc="serendipity (sim)")
    finally:
        client.close()
    return out["score"].to_numpy(dtype=float)


def serendipity_noise(sim: SimFactory, pairs: SerendipityPairs, config: DetectionConfig) -> pd.DataFrame:
    """Per noise level: MAE, accuracy, kappa (with CIs) on every pair, beside the MAE the error model implies."""
    g = pairs.pairs["g"].to_numpy(dtype=float)
    rows = []
    for sigma in config.noise_levels:
        pred = _scores(sim, pairs, noise=sigma, seed=config.seed)
        row = js.summarize_predictions(pred, g, n_boot=config.n_boot, seed=config.seed)
        rows.append({"noise": sigma, **row, "expected_mae": expected_mae(g, sigma)})
    return pd.DataFrame(rows)


def _boot_mae_ci(errors: np.ndarray, n_boot: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap CIs of the mean, for many samples at once (rows of ``errors``)."""
    reps, n = errors.shape
    idx = rng.integers(0, n, size=(reps, n_boot, n))
    boots = np.take_along_axis(errors[:, None, :].repeat(n_boot, axis=1), idx, axis=2).mean(axis=2)
    return np.quantile(boots, 0.025, axis=1), np.quantile(boots, 0.975, axis=1)


def ci_coverage(sim: SimFactory, pairs: SerendipityPairs, config: DetectionConfig) -> pd.DataFrame:
    """Coverage of the 95% CIs over ``repeats`` samples of n pairs drawn from every judged pair (the population)."""
    g = pairs.pairs["g"].to_numpy(dtype=float)
    pred = _scores(sim, pairs, noise=config.coverage_noise, seed=config.seed)
    ok = ~np.isnan(pred)
    err, hit = np.abs(pred[ok] - g[ok]), (js.three_class(pred[ok]) == js.three_class(g[ok])).astype(float)
    true_mae, true_acc = float(err.mean()), float(hit.mean())
    rng = np.random.default_rng(config.seed)
    rows = []
    for n in config.coverage_sizes:
        sample = np.array([rng.choice(len(err), size=n, replace=False) for _ in range(config.repeats)])
        lo, hi = _boot_mae_ci(err[sample], config.n_boot, rng)
        covered = int(((lo <= true_mae) & (true_mae <= hi)).sum())
        a_lo, a_hi = proportion_confint(hit[sample].sum(axis=1), n, alpha=0.05, method="wilson")
        covered_acc = int(((a_lo <= true_acc) & (true_acc <= a_hi)).sum())
        for metric, k, width in (
            ("MAE, percentile bootstrap", covered, float(np.mean(hi - lo))),
            ("3-class accuracy, Wilson", covered_acc, float(np.mean(a_hi - a_lo))),
        ):
            c_lo, c_hi = proportion_confint(k, config.repeats, alpha=0.05, method="wilson")
            rows.append(
                {"n": n, "interval": metric, "coverage": k / config.repeats, "coverage_lo": c_lo,
                 "coverage_hi": c_hi, "mean_width": width}
            )  # fmt: skip
    out = pd.DataFrame(rows)
    out.attrs.update(true_mae=true_mae, true_acc=true_acc, noise=config.coverage_noise)
    return out


def _noise_for_mae(g: np.ndarray, target: float) -> float:
    """The score noise whose implied MAE on this population is ``target`` (bisection; MAE grows with noise)."""
    lo, hi = 0.0, 10.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expected_mae(g, mid) < target else (lo, mid)
    return (lo + hi) / 2


@dataclass
class Separation:
    """Power to tell two templates apart, by pair count; and the pair counts for 80% power."""

    table: pd.DataFrame  # n, power (simulation, with Wilson CI), power (statsmodels)
    noises: tuple[float, float]
    maes: tuple[float, float]
    effect_size: float
    n80_simulated: float
    n80_statsmodels: float


def pairs_to_separate(sim: SimFactory, pairs: SerendipityPairs, config: DetectionConfig) -> Separation:
    """Judged pairs needed to separate two sim templates with the paper's CoT and LtM MAEs (paired t-test, 5%)."""
    g = pairs.pairs["g"].to_numpy(dtype=float)
    noises = tuple(_noise_for_mae(g, m) for m in PAPER_MAES)
    preds = [_scores(sim, pairs, noise=s, seed=config.seed + 1 + k) for k, s in enumerate(noises)]
    ok = ~np.isnan(preds[0]) & ~np.isnan(preds[1])
    e1, e2 = np.abs(preds[0][ok] - g[ok]), np.abs(preds[1][ok] - g[ok])
    diff = e2 - e1
    effect = float(diff.mean() / diff.std(ddof=1))
    power_fn = TTestPower()
    rng = np.random.default_rng(config.seed + 7)
    rows = []
    for n in config.power_sizes:
        if n > len(diff):
            continue
        sample = np.array([rng.choice(len(diff), size=n, replace=False) for _ in range(config.repeats)])
        d = diff[sample]
        t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / np.sqrt(n))
        p = 2 * stats.t.sf(np.abs(t), df=n - 1)
        k = int((p < 0.05).sum())
        lo, hi = proportion_confint(k, config.repeats, alpha=0.05, method="wilson")
        analytic = float(power_fn.power(effect_size=effect, nobs=n, alpha=0.05, alternative="two-sided"))
        rows.append(
            {"n": n, "power": k / config.repeats, "power_lo": lo, "power_hi": hi, "power_statsmodels": analytic}
        )
    table = pd.DataFrame(rows)
    n80_stats = float(power_fn.solve_power(effect_size=effect, power=0.8, alpha=0.05, alternative="two-sided"))
    above = table[table["power"] >= 0.8]
    n80_sim = float("nan")
    if len(above):
        first = int(above.index[0])
        if first == 0:
            n80_sim = float(table.loc[0, "n"])
        else:
            a, b = table.loc[first - 1], table.loc[first]
            n80_sim = float(np.interp(0.8, [a["power"], b["power"]], [a["n"], b["n"]]))
    return Separation(
        table=table,
        noises=(float(noises[0]), float(noises[1])),
        maes=(float(e1.mean()), float(e2.mean())),
        effect_size=effect,
        n80_simulated=n80_sim,
        n80_statsmodels=n80_stats,
    )


# ----------------------------------------------------------------------------------------------- RecSys Arena
def _sample_users(rng: np.random.Generator, users: pd.Series, n: int) -> list[int]:
    """Up to ``n`` distinct users, sorted (all of them when there are fewer)."""
    candidates = np.sort(users.unique())
    return sorted(int(u) for u in rng.choice(candidates, min(n, len(candidates)), replace=False))


def _win_rate(outcomes: Sequence[Any]) -> float:
    vals = [o for o in outcomes if o is not None and not (isinstance(o, float) and np.isnan(o))]
    return float(np.mean([1.0 if o == "win" else 0.5 if o == "tie" else 0.0 for o in vals])) if vals else np.nan


def _q(outcomes: Sequence[Any]) -> float:
    vals = [o for o in outcomes if isinstance(o, str)]
    return q_value(vals.count("win"), vals.count("tie"), vals.count("lose"))


def arena_position_bias(
    sim: SimFactory,
    dataset: Dataset,
    config: DetectionConfig,
    tested: str = "random",
    baseline: str = "pop",
    k: int = 5,
) -> pd.DataFrame:
    """Win rate (ties half) and Q of ``tested`` against ``baseline`` per position bias: the truth, the paper's
    single-order protocol (tested list shown first) and both orders adjudicated."""
    train, test = split_last_n(dataset.interactions)
    split = {"kind": "last_n", "n_test": 10, "dataset": dataset.name}
    models = {n: train_or_load(n, train, dataset.items, split=split, seed=config.seed)[0] for n in (tested, baseline)}
    rng = np.random.default_rng(config.seed)
    users = _sample_users(rng, test["user"], config.arena_users)
    recs = {
        n: {u: [int(i) for i in r] for u, r in zip(users, m.recommend(np.array(users), k=k), strict=True)}
        for n, m in models.items()
    }
    heldout = {int(u): {int(i) for i in grp} for u, grp in test.groupby("user")["item"]}
    evidence = {n: heldout_hits(recs[n], heldout) for n in recs}
    truth = [
        "win"
        if evidence[tested][u] > evidence[baseline][u]
        else "lose"
        if evidence[tested][u] < evidence[baseline][u]
        else "tie"
        for u in users
    ]
    context = ArenaContext(dataset.items, train, dataset.users, dataset=dataset.name)
    comparisons = pd.DataFrame({"user": users, "x": tested, "y": baseline})
    rows = [{"bias": b, "protocol": "truth", "win_rate": _win_rate(truth), "Q": _q(truth)} for b in config.biases]
    for b in config.biases:
        client = sim(position_bias=b, seed=config.seed)
        try:
            raw = PairwiseJudge(client, context, aspects=["Accuracy"], k=k).judge(comparisons, recs, evidence=evidence)
        finally:
            client.close()
        single = raw.loc[raw["order"] == "x_first", OVERALL].tolist()
        adjudicated = adjudicated_outcomes(raw, [OVERALL])[OVERALL].tolist()
        rows.append({"bias": b, "protocol": "single order (paper)", "win_rate": _win_rate(single), "Q": _q(single)})
        rows.append(
            {
                "bias": b,
                "protocol": "both orders, adjudicated",
                "win_rate": _win_rate(adjudicated),
                "Q": _q(adjudicated),
            }
        )
    out = pd.DataFrame(rows)
    out.attrs.update(tested=tested, baseline=baseline, users=len(users), truth_ties=truth.count("tie") / len(truth))
    return out


# ----------------------------------------------------------------------------------------------- SAER
@dataclass
class SaerDetection:
    adversarial: pd.DataFrame  # per context neglect: correct / wrong / tie shares, Wilson CI, truth line
    consistency: pd.DataFrame  # per position bias: swap consistency, expected value
    labels: pd.DataFrame  # pointwise label shares: truth, two annotators, strict merge (+ kappa vs truth)
    verdicts: pd.DataFrame  # pairwise verdict shares: truth, two annotators, conservative merge


def saer_protocols(sim: SimFactory, dataset: Dataset, config: DetectionConfig, encoder: Any = None) -> SaerDetection:
    """Adversarial detection vs context neglect, swap consistency vs position bias, strict / conservative merges."""
    inter = dataset.interactions
    catalogue = Catalogue.from_items(dataset.items)
    customers = sample_customers(inter, config.saer_customers, seed=config.seed, min_interactions=10)
    users = [int(u) for u in customers["user"]]
    visible, future = hold_out_last(inter, users, 5)
    contexts = {u: build_context(visible, catalogue, u, "movies") for u in users}
    algs = make_recommenders(encoder=encoder, seed=config.seed)
    # as in run_saer: fitted, or in plan mode a stand-in when the catalogue would have to be encoded first
    algs = {
        name: fit_or_stand_in(name, rec, visible, dataset.items, key=f"saer:{name}:{config.seed}", seed=config.seed)
        for name, rec in algs.items()
    }
    lists = top_lists(algs, users, 10)
    positives = {int(u): {int(i) for i in g} for u, g in future.loc[future["rating"] >= 4].groupby("user")["item"]}
    hits = {a: heldout_hits(lists[a], positives) for a in ALGORITHMS}
    pairwise_tpl, pointwise_tpl = load_template("movies", "pairwise", "v3"), load_template("movies", "pointwise", "v3")

    # adversarial detection against context neglect
    pairs = adversarial_pairs(users, ALGORITHMS, seed=config.seed)
    adv_rows = []
    for c in config.neglects:
        reqs = []
        for p in pairs.itertuples(index=False):
            genuine, decoy = lists[p.algorithm][p.user], lists[p.algorithm][p.decoy_user]
            s1, s2 = (genuine, decoy) if p.genuine_position == 1 else (decoy, genuine)
            truth = PreferenceTruth(first=float(p.genuine_position == 1), second=float(p.genuine_position == 2))
            reqs.append(pairwise_request(pairwise_tpl, contexts[p.user], s1, s2, catalogue, {"user": p.user}, truth))
        client = sim(context_neglect=c, seed=config.seed)
        try:
            results = client.judge_many(reqs, parse_pairwise, "saer adversarial (sim)")
        finally:
            client.close()
        outcomes = [
            adversarial_outcome(r.value.verdict if r.value is not None else None, int(p.genuine_position))
            for p, r in zip(pairs.itertuples(index=False), results, strict=True)
        ]
        n = len(outcomes)
        for outcome in ("correct", "wrong", "tie"):
            count = outcomes.count(outcome)
            lo, hi = proportion_confint(count, n, alpha=0.05, method="wilson")
            adv_rows.append({"context_neglect": c, "outcome": outcome, "share": count / n, "lo": lo, "hi": hi})
        adv_rows.append(
            {"context_neglect": c, "outcome": "expected correct", "share": 1.0 - c, "lo": np.nan, "hi": np.nan}
        )

    # swap consistency against position bias
    games_ = [
        Game(
            case={"user": u},
            x=ALGORITHMS[0],
            y=ALGORITHMS[1],
            x_evidence=hits[ALGORITHMS[0]][u],
            y_evidence=hits[ALGORITHMS[1]][u],
        )
        for u in users
    ]

    def build(game: Game, first: str, second: str, truth: PreferenceTruth | None, meta: dict[str, Any]) -> Any:
        u = int(game.case["user"])  # type: ignore[arg-type]
        return pairwise_request(pairwise_tpl, contexts[u], lists[first][u], lists[second][u], catalogue, meta, truth)

    def set_verdicts(client: JudgeClient, both_orders: bool, desc: str) -> pd.DataFrame:
        return judge_games(
            client,
            games_,
            build,
            parse_pairwise,
            lambda v: {"verdict": v.verdict},
            set_position,
            ["verdict"],
            both_orders=both_orders,
            desc=desc,
        )

    no_pref = float(np.mean([hits[ALGORITHMS[0]][u] == hits[ALGORITHMS[1]][u] for u in users]))
    cons_rows = []
    for b in config.biases:
        client = sim(position_bias=b, seed=config.seed)
        try:
            raw = set_verdicts(client, both_orders=True, desc="saer swap (sim)")
        finally:
            client.close()
        first, second = (
            raw[raw["order"] == "x_first"]["verdict"].to_numpy(),
            raw[raw["order"] == "y_first"]["verdict"].to_numpy(),
        )
        agree = int((first == second).sum())
        lo, hi = proportion_confint(agree, len(first), alpha=0.05, method="wilson")
        cons_rows.append(
            {"bias": b, "consistency": agree / len(first), "lo": lo, "hi": hi,
             "expected": (1 - no_pref) + no_pref * (1 - b) ** 2}
        )  # fmt: skip

    # two noisy annotators, merged the SAER way
    label_truth = [list_label_truth(hits[a][u]) for a in ALGORITHMS for u in users]
    truth_labels = [t.labels[t.level] for t in label_truth]
    annotators: dict[str, list[str | None]] = {}
    verdicts: dict[str, list[str | None]] = {}
    truth_verdicts = [
        TIE
        if hits[ALGORITHMS[0]][u] == hits[ALGORITHMS[1]][u]
        else (ALGORITHMS[0] if hits[ALGORITHMS[0]][u] > hits[ALGORITHMS[1]][u] else ALGORITHMS[1])
        for u in users
    ]
    for name, seed in (("annotator A", config.seed + 11), ("annotator B", config.seed + 12)):
        client = sim(noise=config.annotator_noise, seed=seed)
        try:
            reqs = [
                pointwise_request(pointwise_tpl, contexts[u], lists[a][u], catalogue, {"user": u, "algorithm": a}, t)
                for (a, u), t in zip([(a, u) for a in ALGORITHMS for u in users], label_truth, strict=True)
            ]
            annotators[name] = [
                r.value.category if r.value is not None else None
                for r in client.judge_many(reqs, parse_pointwise, "saer labels (sim)")
            ]
            raw = set_verdicts(client, both_orders=False, desc="saer verdicts (sim)")
            verdicts[name] = [
                {"win": ALGORITHMS[0], "lose": ALGORITHMS[1], "tie": TIE}.get(str(o)) for o in raw["verdict"]
            ]
        finally:
            client.close()
    strict = strict_adjudicate(annotators["annotator A"], annotators["annotator B"], order=POINTWISE_LABELS)
    merged = conservative(verdicts["annotator A"], verdicts["annotator B"])
    label_rows = []
    label_sources: tuple[tuple[str, Sequence[str | None]], ...] = (
        ("truth", truth_labels),
        *annotators.items(),
        ("strict merge of A and B", strict),
    )
    for source, labels in label_sources:
        kappa = weighted_kappa(truth_labels, labels, labels=POINTWISE_LABELS) if source != "truth" else 1.0
        for lab in POINTWISE_LABELS:
            label_rows.append(
                {"labels": source, "label": lab, "share": labels.count(lab) / len(labels), "kappa_vs_truth": kappa}
            )
    verdict_rows = []
    verdict_sources: tuple[tuple[str, Sequence[str | None]], ...] = (
        ("truth", truth_verdicts),
        *verdicts.items(),
        ("conservative merge of A and B", merged),
    )
    for source, vals in verdict_sources:
        for v in (ALGORITHMS[0], TIE, ALGORITHMS[1]):
            verdict_rows.append({"verdicts": source, "verdict": v, "share": vals.count(v) / len(vals)})
    return SaerDetection(
        pd.DataFrame(adv_rows), pd.DataFrame(cons_rows), pd.DataFrame(label_rows), pd.DataFrame(verdict_rows)
    )


# ----------------------------------------------------------------------------------------------- re-evaluation
@dataclass
class ReevalDetection:
    gaps: pd.DataFrame  # per noise (and the truth): Avg.Score@k and P_ser@k of each RS and the gap
    ordering: pd.DataFrame  # per noise and judged-user count: share of samples ordering the RSs as the truth does
    users_needed: pd.DataFrame  # per noise: the smallest user count reaching 95% correct order


def _per_user(
    scores: pd.Series, pairs: pd.DataFrame, recs: dict[str, dict[int, list[int]]], users: Sequence[int]
) -> dict[str, pd.DataFrame]:
    lookup = dict(zip(zip(pairs["user"], pairs["item"], strict=True), scores, strict=True))
    out = {}
    for name, lists in recs.items():
        rows = []
        for u in users:
            pool = {i for n in recs for i in recs[n][u] if lookup.get((u, i), np.nan) >= 4}
            vals = np.array([lookup.get((u, i), np.nan) for i in lists[u]], dtype=float)
            rows.append(
                {
                    "user": u,
                    "avg": np.nanmean(vals) if np.isfinite(vals).any() else np.nan,
                    "p_ser": sum(i in pool for i in lists[u]) / len(lists[u]),
                }
            )
        out[name] = pd.DataFrame(rows)
    return out


def reevaluation_noise(
    sim: SimFactory,
    dataset: Dataset,
    config: DetectionConfig,
    names: tuple[str, str] = ("bprmf", "random"),
    k: int = 20,
) -> ReevalDetection:
    """Avg.Score@k and P_ser@k gaps between two recommenders under growing judge noise, against the truth."""
    # each user's last 10 ratings are the future the truth is read from; the recommenders learn the positives before
    history, future = split_last_n(dataset.interactions)
    train = positive_interactions(history)
    test = future
    split = {"kind": "last_n", "n_test": 10, "dataset": dataset.name, "positives": True}
    models = {
        n: train_or_load(
            n, train, dataset.items, split=split, seed=config.seed, params={"epochs": 10} if n == "bprmf" else {}
        )[0]
        for n in names
    }
    rng = np.random.default_rng(config.seed)
    users = _sample_users(rng, test["user"], config.reeval_users)
    recs = {
        n: {u: [int(i) for i in r] for u, r in zip(users, m.recommend(np.array(users), k=k), strict=True)}
        for n, m in models.items()
    }
    pairs = pd.DataFrame(sorted({(u, i) for n in recs for u in users for i in recs[n][u]}), columns=["user", "item"])
    hist = last_items(train, 10)
    pairs["history"] = [hist.get(u, []) for u in pairs["user"]]
    truth = reevaluation_truth(pairs, future, dataset.items, hist)
    sources: dict[str, pd.Series] = {"truth": truth["g"].astype(float)}
    for sigma in config.reeval_noise:
        client = sim(noise=sigma, seed=config.seed)
        try:
            scored = SerendipityJudge(client, template="base").score(truth, dataset.items, desc="re-evaluation (sim)")
        finally:
            client.close()
        sources[f"noise {sigma:g}"] = scored["score"].astype(float)
    per_user = {src: _per_user(s, truth, recs, users) for src, s in sources.items()}
    a, b = names
    gap_rows = []
    for src, frames in per_user.items():
        for metric in ("avg", "p_ser"):
            va, vb = frames[a][metric].to_numpy(), frames[b][metric].to_numpy()
            diff = va - vb
            ok = np.isfinite(diff)
            res = stats.bootstrap(
                (diff[ok],), np.mean, n_resamples=config.n_boot, method="percentile", random_state=config.seed
            )
            gap_rows.append(
                {"source": src, "metric": metric, a: float(np.nanmean(va)), b: float(np.nanmean(vb)),
                 "gap": float(diff[ok].mean()), "gap_lo": float(res.confidence_interval.low),
                 "gap_hi": float(res.confidence_interval.high)}
            )  # fmt: skip
    gaps = pd.DataFrame(gap_rows)
    order_rows, needed = [], []
    sample_rng = np.random.default_rng(config.seed + 3)
    for metric in ("avg", "p_ser"):
        true_sign = np.sign(gaps[(gaps["source"] == "truth") & (gaps["metric"] == metric)]["gap"].iloc[0])
        for src in sources:
            if src == "truth":
                continue
            d = (per_user[src][a][metric] - per_user[src][b][metric]).to_numpy()
            d = d[np.isfinite(d)]
            reached = np.nan
            for n in config.user_sizes:
                if n > len(d):
                    continue
                idx = sample_rng.integers(0, len(d), size=(config.repeats, n))
                correct = float((np.sign(d[idx].mean(axis=1)) == true_sign).mean())
                order_rows.append({"metric": metric, "source": src, "users": n, "correct_order": correct})
                if np.isnan(reached) and correct >= 0.95:
                    reached = n
            needed.append({"metric": metric, "source": src, "users_for_95%": reached})
    out = ReevalDetection(gaps, pd.DataFrame(order_rows), pd.DataFrame(needed))
    out.gaps.attrs.update(recommenders=names, users=len(users), pairs=len(pairs))
    return out
