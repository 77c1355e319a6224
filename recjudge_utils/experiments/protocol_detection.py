"""What each protocol detects, shown with the simulated judge (a judge of known quality; never an LLM).

``run(judge, data, config)`` takes the chapter's simulated judge (a client opened from a simulated-judge profile)
and derives each study's judges from it (:func:`sweep_judges`): the same run folder, cache and mode, with exactly
the error model the study sweeps. Every judgment goes through the judge client with the ``sim`` backend (cached,
logged, counted like any LLM call); the Monte Carlo parts then resample the judged items, so repeated samples cost
no further calls.

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
  and how many judged users order them correctly 95% of the time;
* :func:`judge_panels`: one judge against a panel of three with independent errors and a panel of three sharing one
  score offset (each a panel profile opened like any judge): accuracy, kappa, mean error and position consistency
  with CIs, and the calls each asked.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.power import TTestPower

from recjudge_utils.answer_formats.arena_verdicts import OVERALL
from recjudge_utils.data import Dataset, SerendipityPairs
from recjudge_utils.data.folder import judge_item_texts
from recjudge_utils.experiments import arena, reevaluation, saer
from recjudge_utils.experiments.run import Result, Run, result
from recjudge_utils.experiments.steps import judge_recommendations
from recjudge_utils.judge.backends.sim import SimParameters, SimulatedJudge
from recjudge_utils.judge.client import JudgeClient
from recjudge_utils.judge.panel import PanelClient
from recjudge_utils.judge.profiles import PanelProfile, load_profile
from recjudge_utils.judge.types import Judge
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.metrics.agreement import POINTWISE_LABELS, strict_adjudicate, weighted_kappa
from recjudge_utils.metrics.intervals import bootstrap_ci, bootstrap_mean_ci_rows, wilson
from recjudge_utils.metrics.pairwise import TIE, conservative, q_value
from recjudge_utils.metrics.serendipity_at_k import per_user_metrics
from recjudge_utils.protocols.pairwise import games
from recjudge_utils.protocols.pointwise_score import SerendipityJudge
from recjudge_utils.protocols.truth import list_label_truth

__all__ = [
    "ARENA_PROTOCOLS",
    "PANEL_CONDITIONS",
    "DetectionConfig",
    "DetectionData",
    "DetectionRun",
    "ci_coverage",
    "expected_mae",
    "judge_panels",
    "panel_of",
    "run",
    "sweep_judges",
]

#: sims(**error model) -> a judge client over the simulated backend (see :func:`sweep_judges`)
_SimFactory = Callable[..., JudgeClient]


def _derived(judge: Judge) -> tuple[dict[str, Any], dict[str, Any], int]:
    """The chapter judge's profile fields, client options (run folder, cache, mode) and seed, for the judges derived
    from it; refused unless it is a simulated judge."""
    backend = getattr(judge, "backend", None)
    if not isinstance(judge, JudgeClient) or not isinstance(backend, SimulatedJudge):
        raise ValueError(
            f"chapter 5 sweeps a simulated judge's errors; {judge.model_name!r} is not one (open a simulated-judge "
            "profile, e.g. judges/sim.yaml)"
        )
    fields = {"name": judge.profile_name, "backend": SimulatedJudge.name, "model": backend.api_model}
    options = {"offline": judge.offline, "run_dir": judge.run_dir, "cache_path": judge.cache.path, "progress": False}
    return fields, options, backend.params.seed


def sweep_judges(judge: Judge) -> _SimFactory:
    """The studies' judges, derived from the chapter's simulated judge: each has exactly the error model a study
    sets (a perfect judge otherwise; the judge's seed unless the study sets one) and shares the judge's run folder,
    cache and mode. Each answer is seeded by its request's cache key, which holds that error model and seed, so a
    study's answers do not depend on the error model of the profile the judge was opened from."""
    fields, options, seed = _derived(judge)

    def make(**error_model: float) -> JudgeClient:
        return load_profile({**fields, "options": {"seed": seed, **error_model}}).client(**options)

    return make


def panel_of(judge: Judge, members: Sequence[dict[str, float]]) -> PanelClient:
    """A panel profile of simulated judges with these error models (members named ``<judge>-1``, ...; scores by the
    median level, a split taking the lower level), opened like any panel in the chapter judge's run folder, cache and
    mode: its aggregation, quorum, exclusions and each member's cache are the panel machinery's. A member with a study
    judge's error model and seed answers as that judge does (the same cache key)."""
    fields, options, _ = _derived(judge)
    spec = {
        "backend": "panel",
        "name": f"{fields['name']}-panel",
        "aggregate": {"json_levels": "median"},
        "members": [{**fields, "name": f"{fields['name']}-{k + 1}", "options": m} for k, m in enumerate(members)],
    }
    profile = load_profile(spec)
    assert isinstance(profile, PanelProfile)
    return profile.open_client(**options)


PAPER_MAES = (0.847, 1.014)  # GPT-4o-mini, CoT and LtM, serendipity paper Table 1
PAPER_PAIRS = 2150
#: the two Arena protocols set against the truth: the paper's (tested list always first) and SAER-style adjudication
ARENA_PROTOCOLS = ("single order (paper)", "both orders, adjudicated")


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
    panel_noise: float = 0.5
    panel_bias: float = 0.3
    panel_offset: float = 0.5
    panel_unparseable: float = 0.02  # every judge's too: the panels' exclusions are exercised, not assumed
    panel_customers: int = 900
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


def _scores(sim: _SimFactory, pairs: SerendipityPairs, **params: float) -> np.ndarray:
    client = sim(**params)
    try:
        scorer = SerendipityJudge(client, template="base", words=pairs.domain)
        out = scorer.score(pairs.pairs, pairs.items, desc="serendipity (sim)")
    finally:
        client.close()
    return out["score"].to_numpy(dtype=float)


def _holds(low: Any, high: Any, truth: Any) -> Any:
    """Whether each interval holds ``truth`` (False without one); a Wilson bound at 0 or 1 can miss it by a rounding
    error, which does not count as a miss."""
    return (np.asarray(low, dtype=float) - 1e-9 <= truth) & (truth <= np.asarray(high, dtype=float) + 1e-9)


def _serendipity_noise(sim: _SimFactory, pairs: SerendipityPairs, config: DetectionConfig) -> pd.DataFrame:
    """Per noise level: MAE, accuracy, kappa (with CIs) on every pair, beside the MAE the error model implies and
    whether the MAE's CI holds it (``implied_in_ci``)."""
    g = pairs.pairs["g"].to_numpy(dtype=float)
    rows = []
    for sigma in config.noise_levels:
        pred = _scores(sim, pairs, noise=sigma, seed=config.seed)
        row = js.summarize_predictions(pred, g, n_boot=config.n_boot, seed=config.seed)
        rows.append({"noise": sigma, **row, "expected_mae": expected_mae(g, sigma)})
    out = pd.DataFrame(rows)
    out["implied_in_ci"] = _holds(out["mae_lo"], out["mae_hi"], out["expected_mae"])
    return out


def ci_coverage(sim: _SimFactory, pairs: SerendipityPairs, config: DetectionConfig) -> pd.DataFrame:
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
        lo, hi = bootstrap_mean_ci_rows(err[sample], config.n_boot, rng)
        covered = int(((lo <= true_mae) & (true_mae <= hi)).sum())
        a_lo, a_hi = wilson(hit[sample].sum(axis=1), n)
        covered_acc = int(((a_lo <= true_acc) & (true_acc <= a_hi)).sum())
        for metric, k, width in (
            ("MAE, percentile bootstrap", covered, float(np.mean(hi - lo))),
            ("3-class accuracy, Wilson", covered_acc, float(np.mean(a_hi - a_lo))),
        ):
            c_lo, c_hi = wilson(k, config.repeats)
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

    def power_curve(self, nobs: np.ndarray, alpha: float = 0.05) -> np.ndarray:
        """statsmodels' power of the paired t-test at this effect size, for each number of judged pairs."""
        return np.asarray(TTestPower().power(effect_size=self.effect_size, nobs=nobs, alpha=alpha), dtype=float)


def _pairs_to_separate(sim: _SimFactory, pairs: SerendipityPairs, config: DetectionConfig) -> Separation:
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
        lo, hi = wilson(k, config.repeats)
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
def _win_rate(outcomes: Sequence[Any]) -> float:
    vals = [o for o in outcomes if o is not None and not (isinstance(o, float) and np.isnan(o))]
    return float(np.mean([1.0 if o == "win" else 0.5 if o == "tie" else 0.0 for o in vals])) if vals else np.nan


def _q(outcomes: Sequence[Any]) -> float:
    vals = [o for o in outcomes if isinstance(o, str)]
    return q_value(vals.count("win"), vals.count("tie"), vals.count("lose"))


def arena_config(config: DetectionConfig, tested: str = "random", baseline: str = "pop") -> arena.ArenaConfig:
    """Chapter 3's config for this chapter's panel: ``tested`` against ``baseline`` only, on the Accuracy aspect,
    ``config.arena_users`` users, no close pairs and no absolute judge; every other value is chapter 3's default."""
    return arena.ArenaConfig(
        recommenders=(tested, baseline),
        baseline=baseline,
        n_users=config.arena_users,
        aspects=("Accuracy",),
        n_close_pairs=0,
        absolute=False,
        seed=config.seed,
    )


def _arena_position_bias(
    sim: _SimFactory, dataset: Dataset, config: DetectionConfig, tested: str = "random", baseline: str = "pop"
) -> pd.DataFrame:
    """Win rate (ties half) and Q of ``tested`` against ``baseline`` per position bias: the truth, the paper's
    single-order protocol (tested list shown first) and both orders adjudicated, on chapter 3's panel."""
    cfg = arena_config(config, tested, baseline)
    train, test = arena.split(dataset, cfg)
    fitted = arena.train_models(dataset, train, {name: (name, {}) for name in cfg.recommenders}, cfg)
    models = {name: fit.model for name, fit in fitted.items()}
    panel = arena.build_panel(dataset, models, train, test, cfg)
    comparisons = arena.plan_comparisons(panel.users, {}, cfg)
    hits_x, hits_y = panel.evidence[tested], panel.evidence[baseline]
    truth = ["win" if hits_x[u] > hits_y[u] else "lose" if hits_x[u] < hits_y[u] else "tie" for u in panel.users]
    rows = [{"bias": b, "protocol": "truth", "win_rate": _win_rate(truth), "Q": _q(truth)} for b in config.biases]
    for b in config.biases:
        client = sim(position_bias=b, seed=config.seed)
        try:
            raw, _ = arena.judge_comparisons(client, panel, comparisons, cfg)
        finally:
            client.close()
        single = raw.loc[raw["order"] == "x_first", OVERALL].tolist()
        adjudicated = games(raw, [OVERALL])[OVERALL].tolist()
        for protocol, outcomes in zip(ARENA_PROTOCOLS, (single, adjudicated), strict=True):
            rows.append({"bias": b, "protocol": protocol, "win_rate": _win_rate(outcomes), "Q": _q(outcomes)})
    out = against_truth(pd.DataFrame(rows))
    out.attrs.update(
        tested=tested, baseline=baseline, users=len(panel.users), truth_ties=truth.count("tie") / len(truth)
    )
    return out


def against_truth(arena: pd.DataFrame) -> pd.DataFrame:
    """The Arena rows with each Q's relative error against the true Q (``Q_error``: NaN where either is not finite
    or the true Q is not positive), and the true win rate and Q as ``attrs``."""
    truth = arena[arena["protocol"] == "truth"].iloc[0]
    true_q, q = float(truth["Q"]), arena["Q"].astype(float)
    ok = np.isfinite(q) & np.isfinite(true_q) & (true_q > 0)
    out = arena.assign(Q_error=np.where(ok, q / true_q - 1, np.nan))
    out.attrs.update(arena.attrs, true_win_rate=float(truth["win_rate"]), true_q=true_q)
    return out


# ----------------------------------------------------------------------------------------------- SAER
@dataclass
class SaerDetection:
    """What SAER's three safeguards catch as the simulated judge's flaws grow."""

    adversarial: pd.DataFrame  # per context neglect: correct / wrong / tie shares, Wilson CI, truth line
    consistency: pd.DataFrame  # per position bias: swap consistency, expected value
    labels: pd.DataFrame  # pointwise label shares: truth, two annotators, strict merge (+ kappa vs truth)
    verdicts: pd.DataFrame  # pairwise verdict shares: truth, two annotators, conservative merge
    customers: int  # customers in the panel
    heldout: int  # each customer's last interactions held out as the future the truth is read from

    @property
    def detection(self) -> pd.DataFrame:
        """Per context neglect (the index, ascending): the genuine list's share with its Wilson CI (``correct``,
        ``lo``, ``hi``), the tie and decoy shares, the truth 1 - c (``expected``) and whether the CI holds it."""
        wide = self.adversarial.pivot(index="context_neglect", columns="outcome", values=["share", "lo", "hi"])
        out = wide["share"][["correct", "tie", "wrong", "expected correct"]].rename(
            columns={"expected correct": "expected"}
        )
        out = out.assign(lo=wide["lo"]["correct"], hi=wide["hi"]["correct"]).rename_axis(columns=None)
        return out.assign(held=_holds(out["lo"], out["hi"], out["expected"]))


def saer_config(config: DetectionConfig) -> saer.SaerConfig:
    """Chapter 4's config for this chapter's panel: ``config.saer_customers`` customers, the main prompt version
    only and the held-out future of a simulated-judge run (each customer's last :data:`~saer.SIM_HELDOUT`
    interactions, the truth); every other value (history, minimum interactions, list length) is chapter 4's."""
    return saer.SaerConfig(
        n_customers=config.saer_customers,
        prompt_versions=("v3",),
        main_version="v3",
        seed=config.seed,
        heldout=saer.SIM_HELDOUT,
    )


def _shares(outcomes: Sequence[Any], values: Sequence[str]) -> list[tuple[str, float, float, float]]:
    """(value, share, Wilson low, Wilson high) of each value among ``outcomes``."""
    n = len(outcomes)
    out = []
    for v in values:
        count = sum(o == v for o in outcomes)
        lo, hi = wilson(count, n)
        out.append((v, count / n, lo, hi))
    return out


def _saer_protocols(sim: _SimFactory, dataset: Dataset, config: DetectionConfig) -> SaerDetection:
    """Adversarial detection vs context neglect, swap consistency vs position bias, strict / conservative merges,
    each on chapter 4's panel through chapter 4's judging steps."""
    cfg = saer_config(config)
    panel = saer.build_panel(dataset, cfg)
    users, (alg_a, alg_b) = panel.users, saer.ALGORITHMS
    hits = panel.hits
    if hits is None:
        raise ValueError("chapter 5's SAER panel needs a held-out future (heldout > 0)")

    adv_rows = []
    for c in config.neglects:
        client = sim(context_neglect=c, seed=config.seed)
        try:
            outcomes = saer.judge_adversarial(client, panel, cfg)["outcome"].tolist()
        finally:
            client.close()
        for outcome, share, lo, hi in _shares(outcomes, ("correct", "wrong", "tie")):
            adv_rows.append({"context_neglect": c, "outcome": outcome, "share": share, "lo": lo, "hi": hi})
        adv_rows.append(
            {"context_neglect": c, "outcome": "expected correct", "share": 1.0 - c, "lo": np.nan, "hi": np.nan}
        )

    no_pref = float(np.mean([hits[alg_a][u] == hits[alg_b][u] for u in users]))
    cons_rows = []
    for b in config.biases:
        client = sim(position_bias=b, seed=config.seed)
        try:
            _, adjudicated = saer.judge_pairwise(client, panel, cfg, both_orders=True)
        finally:
            client.close()
        consistent = [bool(c) for c in adjudicated["consistent"] if c is not None]
        agree = sum(consistent)
        lo, hi = wilson(agree, len(consistent))
        cons_rows.append(
            {"bias": b, "consistency": agree / len(consistent), "lo": lo, "hi": hi,
             "expected": (1 - no_pref) + no_pref * (1 - b) ** 2}
        )  # fmt: skip

    # two noisy annotators, merged the SAER way
    truth_labels = [(t := list_label_truth(hits[alg][u])).labels[t.level] for alg in saer.ALGORITHMS for u in users]
    truth_verdicts = [
        TIE if hits[alg_a][u] == hits[alg_b][u] else (alg_a if hits[alg_a][u] > hits[alg_b][u] else alg_b)
        for u in users
    ]
    annotators: dict[str, list[str | None]] = {}
    verdicts: dict[str, list[str | None]] = {}
    for name, seed in (("annotator A", config.seed + 11), ("annotator B", config.seed + 12)):
        client = sim(noise=config.annotator_noise, seed=seed)
        try:
            annotators[name] = saer.judge_pointwise(client, panel, cfg)["category"].tolist()
            calls, _ = saer.judge_pairwise(client, panel, cfg, both_orders=False)
            verdicts[name] = calls["winner"].tolist()
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
        for v in (alg_a, TIE, alg_b):
            verdict_rows.append({"verdicts": source, "verdict": v, "share": vals.count(v) / len(vals)})
    return SaerDetection(
        pd.DataFrame(adv_rows),
        pd.DataFrame(cons_rows),
        pd.DataFrame(label_rows),
        pd.DataFrame(verdict_rows),
        customers=len(users),
        heldout=panel.heldout,
    )


# ----------------------------------------------------------------------------------------------- re-evaluation
@dataclass
class ReevalDetection:
    """How judge noise blurs the serendipity gap between two recommenders, and how many users resolve it."""

    gaps: pd.DataFrame  # per noise (and the truth): Avg.Score@k and P_ser@k of each RS and the gap
    ordering: pd.DataFrame  # per noise and judged-user count: share of samples ordering the RSs as the truth does
    users_needed: pd.DataFrame  # per noise: the smallest user count reaching 95% correct order

    @property
    def table(self) -> pd.DataFrame:
        """One row per judge, the truth first (``source``, ``noise``: NaN for the truth): each metric's gap with its
        CI (``avg``, ``avg_lo``, ``avg_hi``, ``p_ser``, ...) and the judged users for 95 % correct order
        (``users_avg``, ``users_p_ser``: inf where no sample size tried reached it, NaN for the truth)."""
        needed = self.users_needed.set_index(["metric", "source"])["users_for_95%"]
        rows = []
        for source, grp in self.gaps.groupby("source", sort=False):
            row: dict[str, Any] = {"source": source, "noise": grp["noise"].iloc[0]}
            for metric, r in grp.set_index("metric").iterrows():
                row.update({metric: r["gap"], f"{metric}_lo": r["gap_lo"], f"{metric}_hi": r["gap_hi"]})
                n = needed.get((metric, source), np.nan)  # no row: the truth (nothing to reach)
                row[f"users_{metric}"] = np.inf if (metric, source) in needed.index and np.isnan(n) else n
            rows.append(row)
        return pd.DataFrame(rows)


def reevaluation_config(
    config: DetectionConfig, names: tuple[str, str] = ("bprmf", "random")
) -> reevaluation.ReevaluationConfig:
    """Chapter 2's config for this chapter's panel: the two ``names``, one fold, ``config.reeval_users`` judged
    users, default hyperparameters (no TPE trials) and the Base template without examples."""
    return reevaluation.ReevaluationConfig(
        recommenders=names, folds=1, n_trials=0, n_users=config.reeval_users, template="base", seed=config.seed
    )


def _reevaluation_noise(
    sim: _SimFactory, dataset: Dataset, config: DetectionConfig, names: tuple[str, str] = ("bprmf", "random")
) -> ReevalDetection:
    """Avg.Score@k and P_ser@k gaps between two recommenders under growing judge noise, against the truth, on
    chapter 2's temporal split, models and judged pairs (the truth: ratings after the training period)."""
    cfg = reevaluation_config(config, names)
    fold = reevaluation.prepare_folds(dataset.interactions, folds=1, n_users=cfg.n_users, seed=cfg.seed)[0]
    fitted = reevaluation.fit_fold(fold, cfg, storage=None)
    users = fold.judged_users
    recs = reevaluation.top_k_frame({n: f.model for n, f in fitted.items()}, users, k=cfg.top_k)
    future = dataset.interactions.loc[dataset.interactions["timestamp"] > fold.time_range[1]]

    sources: dict[str, pd.DataFrame] = {}
    noises = {"truth": np.nan, **{f"noise {sigma:g}": sigma for sigma in config.reeval_noise}}
    for sigma in config.reeval_noise:
        client = sim(noise=sigma, seed=config.seed)
        try:
            scorer = SerendipityJudge(
                client, template=cfg.template, words=dataset.domain, texts=judge_item_texts(dataset)
            )
            sources[f"noise {sigma:g}"] = judge_recommendations(
                recs, fold.train, dataset.items, scorer, n_history=cfg.n_history, desc="re-evaluation (sim)",
                future=future,
            )  # fmt: skip
        finally:
            client.close()
    # the truth: every judged pair scored with the serendipity level its future ratings imply
    judged = next(iter(sources.values()))
    sources = {"truth": judged.assign(score=judged["truth_g"].astype(float)), **sources}
    per_user = {
        src: per_user_metrics(recs, fold.test, j, k=cfg.top_k).set_index(["rs", "user"]) for src, j in sources.items()
    }
    a, b = names
    gap_rows = []
    for src, frame in per_user.items():
        for metric in ("avg", "p_ser"):
            va, vb = frame.loc[a, metric].to_numpy(dtype=float), frame.loc[b, metric].to_numpy(dtype=float)
            diff = va - vb
            ok = np.isfinite(diff)
            # a legacy RandomState seeded with config.seed: the resamples this gap's CI has always been drawn with
            _, gap_lo, gap_hi = bootstrap_ci(
                diff[ok], np.mean, n_boot=config.n_boot, seed=np.random.RandomState(config.seed)
            )
            gap_rows.append(
                {"source": src, "noise": noises[src], "metric": metric, a: float(np.nanmean(va)),
                 b: float(np.nanmean(vb)), "gap": float(diff[ok].mean()), "gap_lo": gap_lo, "gap_hi": gap_hi}
            )  # fmt: skip
    gaps = pd.DataFrame(gap_rows)
    order_rows, needed = [], []
    sample_rng = np.random.default_rng(config.seed + 3)
    for metric in ("avg", "p_ser"):
        true_sign = np.sign(gaps[(gaps["source"] == "truth") & (gaps["metric"] == metric)]["gap"].iloc[0])
        for src, frame in per_user.items():
            if src == "truth":
                continue
            d = frame.loc[a, metric].to_numpy(dtype=float) - frame.loc[b, metric].to_numpy(dtype=float)
            d = d[np.isfinite(d)]
            reached = np.nan
            for n in config.user_sizes:
                if n > len(d):
                    continue
                idx = sample_rng.integers(0, len(d), size=(config.repeats, n))
                correct = float((np.sign(d[idx].mean(axis=1)) == true_sign).mean())
                order_rows.append(
                    {"metric": metric, "source": src, "noise": noises[src], "users": n, "correct_order": correct}
                )
                if np.isnan(reached) and correct >= 0.95:
                    reached = n
            needed.append({"metric": metric, "source": src, "users_for_95%": reached})
    out = ReevalDetection(gaps, pd.DataFrame(order_rows), pd.DataFrame(needed))
    pairs = sources["truth"]
    out.gaps.attrs.update(recommenders=names, users=len(users), pairs=len(pairs))
    return out


# ----------------------------------------------------------------------------------------------- judge panels
#: the panel study's judges, in the table's order
PANEL_CONDITIONS = ("one judge", "panel of 3, independent errors", "panel of 3, one shared bias")
WILSON, BOOT = "95% Wilson", "95% percentile bootstrap"


def _calls(client: JudgeClient | PanelClient) -> int:
    """Calls the judge's clients were asked in this session, cache hits included (what a first run pays for)."""
    if isinstance(client, PanelClient):
        return int(client.member_summary()["answers"].sum())
    return int(client.usage_summary(total=False)["calls"].sum())


def judge_panels(judge: Judge, pairs: SerendipityPairs, dataset: Dataset, config: DetectionConfig) -> pd.DataFrame:
    """Per condition (:data:`PANEL_CONDITIONS`): 3-class accuracy (Wilson CI), weighted kappa and mean error (score -
    g; bootstrap CIs) on every serendipity pair, position consistency (Wilson CI) on chapter 4's swapped pairs, the
    calls its clients were asked and their multiple of one judge's (``cost_multiple``), member answers excluded.
    Every judge has the same error model (score noise, position bias, unparseable answers); the one judge is the
    first member of the independent panel; the shared-bias panel's members also share one score offset (leniency)."""
    each = {"noise": config.panel_noise, "position_bias": config.panel_bias, "unparseable": config.panel_unparseable}
    seeds = [config.seed + k for k in range(3)]
    members = {PANEL_CONDITIONS[1]: [{**each, "seed": s} for s in seeds],
               PANEL_CONDITIONS[2]: [{**each, "leniency": config.panel_offset, "seed": s} for s in seeds]}  # fmt: skip
    cfg = dataclasses.replace(saer_config(config), n_customers=config.panel_customers)
    panel = saer.build_panel(dataset, cfg)
    g = pairs.pairs["g"].to_numpy(dtype=float)
    rows = []
    for condition in PANEL_CONDITIONS:
        one = condition not in members
        client = sweep_judges(judge)(**each, seed=seeds[0]) if one else panel_of(judge, members[condition])
        try:
            as_judge = cast(Judge, client)  # a PanelClient is one; mypy reads its list[PanelResult] as no Judge's
            scorer = SerendipityJudge(as_judge, template="base", words=pairs.domain)
            pred = scorer.score(pairs.pairs, pairs.items, desc=condition)
            _, adjudicated = saer.judge_pairwise(as_judge, panel, cfg, both_orders=True)
            calls = _calls(client)
            excluded = int(client.member_summary()["excluded"].sum()) if isinstance(client, PanelClient) else 0
        finally:
            client.close()
        score = pred["score"].to_numpy(dtype=float)
        ok = ~np.isnan(score)
        row = js.summarize_predictions(score, g, n_boot=config.n_boot, seed=config.seed)
        bias = bootstrap_ci(score[ok] - g[ok], np.mean, n_boot=config.n_boot, seed=config.seed)
        consistent = [bool(c) for c in adjudicated["consistent"] if c is not None]
        lo, hi = wilson(sum(consistent), len(consistent))
        rows.append(
            {"condition": condition, "n": row["n"], "n_parsed": row["n_parsed"], "acc3": row["acc3"],
             "acc3_lo": row["acc3_wilson_lo"], "acc3_hi": row["acc3_wilson_hi"], "kappa": row["kappa_qw"],
             "kappa_lo": row["kappa_lo"], "kappa_hi": row["kappa_hi"], "bias": bias[0], "bias_lo": bias[1],
             "bias_hi": bias[2], "consistency": sum(consistent) / len(consistent), "consistency_lo": lo,
             "consistency_hi": hi, "swapped": len(consistent), "calls": calls, "excluded": excluded}
        )  # fmt: skip
    out = pd.DataFrame(rows)
    out["cost_multiple"] = out["calls"] / out["calls"].iloc[0]
    panels = out["condition"] != PANEL_CONDITIONS[0]
    out.attrs.update(customers=len(panel.users), pairs=len(g), excluded=int(out.loc[panels, "excluded"].sum()),
                     answers=int(out.loc[panels, "calls"].sum()), one=int(out["calls"].iloc[0]),
                     multiple=round(float(out.loc[panels, "cost_multiple"].mean()), 2))  # fmt: skip
    return out


# ----------------------------------------------------------------------------------------------- the chapter
@dataclass(frozen=True)
class DetectionData:
    """The chapter's two datasets: judged serendipity pairs (chapter 1's) and a ratings dataset (chapters 2-4's)."""

    pairs: SerendipityPairs
    dataset: Dataset

    @property
    def display_label(self) -> str:
        """Both datasets' labels, each marked ``[STAND-IN]`` when it is not the paper's data."""
        return f"{self.pairs.display_label}; {self.dataset.display_label}"


@dataclass(kw_only=True)
class DetectionRun(Run):
    """The six studies of what each protocol detects, all judged by the simulated judge."""

    experiment: ClassVar[str] = "protocol_detection"

    config: DetectionConfig
    noise: pd.DataFrame
    coverage: pd.DataFrame
    separation: Separation
    arena: pd.DataFrame
    saer: SaerDetection
    reevaluation: ReevalDetection
    panels: pd.DataFrame

    def results(self) -> list[Result]:
        """MAE per score noise with its bootstrap CI, and the coverage of each CI method per sample size."""
        out = [
            result("mae", r["mae"], r["mae_lo"], r["mae_hi"], r["n_parsed"], "95% percentile bootstrap",
                   noise=float(r["noise"]))
            for _, r in self.noise.iterrows()
        ]  # fmt: skip
        out += [
            result("ci_coverage", r["coverage"], r["coverage_lo"], r["coverage_hi"], self.config.repeats,
                   "95% Wilson", n_pairs=int(r["n"]), interval_of=str(r["interval"]))
            for _, r in self.coverage.iterrows()
        ]  # fmt: skip
        out += [
            result(f"panel_{m}", r[m], r[f"{m}_lo"], r[f"{m}_hi"], r[n], interval, condition=str(r["condition"]))
            for _, r in self.panels.iterrows()
            for m, n, interval in (("acc3", "n_parsed", WILSON), ("kappa", "n_parsed", BOOT),
                                   ("bias", "n_parsed", BOOT), ("consistency", "swapped", WILSON))
        ]  # fmt: skip
        return out


def run(judge: Judge, data: DetectionData, config: DetectionConfig) -> DetectionRun:
    """Every study of the chapter, each judged by simulated judges derived from ``judge`` (a client over the
    simulated backend: :func:`sweep_judges`) with the error model the study sweeps."""
    if not config.reeval_noise:
        raise ValueError("reeval_noise needs at least one noise level")
    sim = sweep_judges(judge)
    judge_name = SimParameters().describe()  # the studies' judges: perfect but for the error each one sweeps
    timings: dict[str, float] = {}

    def timed(step: str, fn: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        out = fn()
        timings[step] = time.perf_counter() - started
        return out

    return DetectionRun(
        config=config,
        judge_name=judge_name,
        data_label=data.display_label,
        timings=timings,
        noise=timed("judge serendipity noise", lambda: _serendipity_noise(sim, data.pairs, config)),
        coverage=timed("judge ci coverage", lambda: ci_coverage(sim, data.pairs, config)),
        separation=timed("judge template separation", lambda: _pairs_to_separate(sim, data.pairs, config)),
        arena=timed("judge arena position bias", lambda: _arena_position_bias(sim, data.dataset, config)),
        saer=timed("judge saer protocols", lambda: _saer_protocols(sim, data.dataset, config)),
        reevaluation=timed("judge reevaluation noise", lambda: _reevaluation_noise(sim, data.dataset, config)),
        panels=timed("judge panels", lambda: judge_panels(judge, data.pairs, data.dataset, config)),
    )
