"""The systems ranked and compared under each estimate of :func:`~recjudge_utils.annotation.ppi.system_estimates`.

* :func:`rankings`: each system's rank under the human-only, judge-only and prediction-powered estimates, and
  :func:`ranking_agreement`, Kendall's tau-b (``scipy.stats.kendalltau``) between every two of those rankings;
* :func:`compare_estimates`: chapter 7's decisions (:data:`~recjudge_utils.metrics.system_tests.DECISIONS`) on the
  estimates instead of per-user values: every two systems, or (``null``) every system against a fixed value (a
  duel's win rate against 0.5), with Holm's correction over the family
  (:func:`~recjudge_utils.metrics.system_tests.holm`) and a simultaneous interval at 1 - alpha / family (Bonferroni,
  so an interval excluding 0 goes with a rejection, as :func:`~recjudge_utils.metrics.system_tests.compare_systems`
  does). Chapter 7's tests pair each user's values across systems; here each system's estimate rests on its own
  labelled draw, so two estimates are compared as independent normal estimates (both intervals are normal ones:
  their standard error is the half-width over the normal quantile). Scores of two systems that share judged pairs
  share part of their judge-only term, which this leaves out: the judge's part of a PPI estimate is the mean over
  hundreds of units and varies little, next to the labelled part. A comparison with an interval of zero width
  (every labelled task of a system alike) makes no decision: a normal interval of zero width is an artefact of
  few labels, not certainty.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from recjudge_utils.metrics.system_tests import DECISIONS, holm

__all__ = ["COMPARISON_COLUMNS", "ESTIMATE_KINDS", "MIN_LABELS", "compare_estimates", "ranking_agreement", "rankings"]

#: the estimates of a system (columns of the system estimates table)
ESTIMATE_KINDS = ("human", "judge", "ppi")
#: fewer labelled tasks in either system and no pair is called different (the permutation tests' MIN_USERS)
MIN_LABELS = 10
COMPARISON_COLUMNS = ["a", "b", "estimate", "difference", "low", "high", "p", "p_adjusted", "family", "decision"]


def rankings(estimates: pd.DataFrame) -> pd.DataFrame:
    """system, and its rank (1 = highest; ties share the mean rank) under each estimate."""
    ranks = {f"{kind}_rank": estimates[kind].rank(ascending=False, method="average") for kind in ESTIMATE_KINDS}
    return pd.DataFrame({"system": estimates["system"], **ranks}).sort_values("ppi_rank", ignore_index=True)


def ranking_agreement(estimates: pd.DataFrame) -> pd.DataFrame:
    """Kendall's tau-b between every two estimates' rankings of the systems (NaN when a ranking is constant)."""
    rows = []
    for a, b in combinations(ESTIMATE_KINDS, 2):
        tau = stats.kendalltau(estimates[a], estimates[b]).statistic if len(estimates) > 1 else float("nan")
        rows.append({"a": a, "b": b, "tau": float(tau), "systems": len(estimates)})
    return pd.DataFrame(rows, columns=["a", "b", "tau", "systems"])


def _standard_error(low: pd.Series, high: pd.Series, ci: float) -> np.ndarray:
    return (high - low).to_numpy(dtype=float) / (2 * stats.norm.ppf(0.5 + ci / 2))


def compare_estimates(
    estimates: pd.DataFrame,
    estimate: str = "ppi",
    *,
    null: float | None = None,
    alpha: float = 0.05,
    ci: float = 0.95,
    min_labels: int = MIN_LABELS,
) -> pd.DataFrame:
    """Every two systems' ``estimate`` (``"ppi"`` or ``"human"``, the two with an interval) compared, or with
    ``null`` every system against that value (column b then says the value); ``ci``: the level the estimates'
    intervals were computed at. Columns: :data:`COMPARISON_COLUMNS`."""
    if estimate not in ("ppi", "human"):
        raise ValueError(f"only the estimates with an interval can be tested (ppi, human), not {estimate!r}")
    names = estimates["system"].astype(str).tolist()
    value = estimates[estimate].to_numpy(dtype=float)
    se = _standard_error(estimates[f"{estimate}_low"], estimates[f"{estimate}_high"], ci)
    labelled = estimates["n_labelled"].to_numpy()
    if null is None:
        pairs = list(combinations(range(len(names)), 2))
        rows = [
            (names[i], names[j], value[i] - value[j], np.hypot(se[i], se[j]), min(labelled[[i, j]]), min(se[[i, j]]))
            for i, j in pairs
        ]
    else:
        rows = [(names[i], f"{null:g}", value[i] - null, se[i], labelled[i], se[i]) for i in range(len(names))]
    family = len(rows)
    if not family:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    diff = np.array([r[2] for r in rows])
    spread = np.array([r[3] for r in rows])
    # an interval of zero width (every labelled task alike) describes no uncertainty, not certainty: a test with one
    # decides nothing (p = 1 in the family, so that it takes no other test's share of alpha away)
    degenerate = ~(np.array([r[5] for r in rows]) > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(degenerate, 1.0, 2 * stats.norm.sf(np.abs(diff) / spread))
    adjusted = holm(p)
    half = stats.norm.ppf(1 - alpha / (2 * family)) * spread
    out = []
    for (a, b, d, _, n, _), low, high, raw, adj, flat in zip(
        rows, diff - half, diff + half, p, adjusted, degenerate, strict=True
    ):
        if n < min_labels or flat:
            decision = DECISIONS[3]
        elif adj < alpha:
            decision = DECISIONS[0] if d > 0 else DECISIONS[1]
        else:
            decision = DECISIONS[2]
        out.append((a, b, estimate, d, low, high, raw, adj, family, decision))
    return pd.DataFrame(out, columns=COMPARISON_COLUMNS)
