"""Study 3: judged pairs needed to tell two templates apart whose MAEs differ as the paper's CoT and LtM do (0.847 vs
1.014), by simulation and by statsmodels' power function."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.power import TTestPower

from recjudge_utils.data import SerendipityPairs
from recjudge_utils.experiments.protocol_detection.config import (
    PAPER_MAES,
    DetectionConfig,
)
from recjudge_utils.experiments.protocol_detection.judges import SimFactory, serendipity_scores
from recjudge_utils.experiments.protocol_detection.noise import expected_mae
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.metrics.intervals import wilson


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

    #: per judged-pair count (``pairs``), a long frame of two measures: ``power`` by simulation over the ``repeats``
    #: samples (``n``) with its Wilson CI, and ``power_statsmodels`` (no interval, no sample)
    table: pd.DataFrame
    noises: tuple[float, float]
    maes: tuple[float, float]
    effect_size: float
    n80_simulated: float
    n80_statsmodels: float

    def power_curve(self, nobs: np.ndarray, alpha: float = 0.05) -> np.ndarray:
        """statsmodels' power of the paired t-test at this effect size, for each number of judged pairs."""
        return np.asarray(TTestPower().power(effect_size=self.effect_size, nobs=nobs, alpha=alpha), dtype=float)


def pairs_to_separate(sim: SimFactory, pairs: SerendipityPairs, config: DetectionConfig) -> Separation:
    """Judged pairs needed to separate two sim templates with the paper's CoT and LtM MAEs (paired t-test, 5%)."""
    g = pairs.pairs["g"].to_numpy(dtype=float)
    noises = tuple(_noise_for_mae(g, m) for m in PAPER_MAES)
    preds = [serendipity_scores(sim, pairs, noise=s, seed=config.seed + 1 + k) for k, s in enumerate(noises)]
    ok = ~np.isnan(preds[0]) & ~np.isnan(preds[1])
    e1, e2 = np.abs(preds[0][ok] - g[ok]), np.abs(preds[1][ok] - g[ok])
    diff = e2 - e1
    effect = float(diff.mean() / diff.std(ddof=1))
    power_fn = TTestPower()
    rng = np.random.default_rng(config.seed + 7)
    rows: list[tuple[object, ...]] = []
    for n in config.power_sizes:
        if n > len(diff):
            continue
        sample = np.array([rng.choice(len(diff), size=n, replace=False) for _ in range(config.repeats)])
        d = diff[sample]
        t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / np.sqrt(n))
        p = 2 * stats.t.sf(np.abs(t), df=n - 1)
        k = int((p < 0.05).sum())
        low, high = wilson(k, config.repeats)
        analytic = float(power_fn.power(effect_size=effect, nobs=n, alpha=0.05, alternative="two-sided"))
        rows += [(n, "power", k / config.repeats, low, high, config.repeats),
                 (n, "power_statsmodels", analytic, np.nan, np.nan, np.nan)]  # fmt: skip
    table = pd.DataFrame(rows, columns=["pairs", *js.MEASURE_COLUMNS])
    n80_stats = float(power_fn.solve_power(effect_size=effect, power=0.8, alpha=0.05, alternative="two-sided"))
    simulated = table.loc[table["measure"] == "power"].reset_index(drop=True)
    above = simulated[simulated["value"] >= 0.8]
    n80_sim = float("nan")
    if len(above):
        first = int(above.index[0])
        if first == 0:
            n80_sim = float(simulated.loc[0, "pairs"])
        else:
            a, b = simulated.loc[first - 1], simulated.loc[first]
            n80_sim = float(np.interp(0.8, [a["value"], b["value"]], [a["pairs"], b["pairs"]]))
    return Separation(
        table=table,
        noises=(float(noises[0]), float(noises[1])),
        maes=(float(e1.mean()), float(e2.mean())),
        effect_size=effect,
        n80_simulated=n80_sim,
        n80_statsmodels=n80_stats,
    )
