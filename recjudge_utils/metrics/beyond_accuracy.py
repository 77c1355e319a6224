"""Beyond accuracy: what a system's lists expose, beside what the judge thinks of them.

Lists are ``{user: [item, ...]}`` per system; ``popularity`` is each item's number of training interactions and
``n_users`` the training users (so popularity / n_users is the share of users who interacted with the item).

* :func:`catalogue_coverage`: the share of the catalogue recommended to at least one user;
* :func:`gini_exposure`: the Gini coefficient of the items' exposure (times recommended) over the whole catalogue,
  0 when every item is shown equally, towards 1 when a few items take every slot;
* :func:`per_user_beyond_accuracy`: per user, the average recommendation popularity (ARP, Abdollahpouri et al.'s
  mean popularity of a list's items), novelty as the mean self-information -log2(popularity / n_users) of the
  list's items (an item no training user had is counted at one interaction), and intra-list diversity, the mean
  Jaccard distance between the genre sets of every two items of the list: users x systems matrices, so they go
  through the same paired tests as every other measure;
* :func:`popularity_regression`: does the judge score popular items higher? OLS of the judge's item score on
  log(1 + popularity) (``statsmodels``), with standard errors clustered by user (a user's scores share their
  history), the slope with its CI.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
import statsmodels.api as sm

from recjudge_utils.metrics.estimate import Estimate

__all__ = [
    "PopularityFit",
    "catalogue_coverage",
    "gini",
    "gini_exposure",
    "per_user_beyond_accuracy",
    "popularity_regression",
]

Lists = Mapping[int, Sequence[int]]


def catalogue_coverage(lists: Lists, catalogue: Sequence[int]) -> float:
    """The share of ``catalogue`` that appears in at least one list."""
    items = set(catalogue)
    if not items:
        return math.nan
    shown = {int(i) for rec in lists.values() for i in rec}
    return len(shown & items) / len(items)


def gini(values: Sequence[float] | np.ndarray) -> float:
    """Gini coefficient of non-negative values: sum over i of (2i - n - 1) x_(i) / (n sum x), x sorted ascending."""
    x = np.sort(np.asarray(values, dtype=float))
    n, total = len(x), float(np.sum(x))
    if n == 0 or total == 0:
        return math.nan
    ranks = np.arange(1, n + 1)
    return float(np.sum((2 * ranks - n - 1) * x) / (n * total))


def gini_exposure(lists: Lists, catalogue: Sequence[int]) -> float:
    """Gini of how often each catalogue item is recommended (items never shown count as 0)."""
    counts = pd.Series([int(i) for rec in lists.values() for i in rec]).value_counts()
    return gini(counts.reindex(list(catalogue), fill_value=0).to_numpy(dtype=float))


def _jaccard_distance(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return 1.0 - len(a & b) / len(union) if union else 0.0


def per_user_beyond_accuracy(
    lists: Mapping[str, Lists],
    users: Sequence[int],
    popularity: Mapping[int, float],
    n_users: int,
    genres: Mapping[int, Sequence[str]],
) -> dict[str, pd.DataFrame]:
    """Users x systems matrices of ``arp``, ``novelty`` and ``ild`` (see the module), NaN for a user without a list
    (ILD also for a list of one item)."""
    systems = list(lists)
    index = pd.Index(list(users), name="user")
    out = {m: pd.DataFrame(np.nan, index=index, columns=systems) for m in ("arp", "novelty", "ild")}
    sets = {int(i): frozenset(g) for i, g in genres.items()}
    for s in systems:
        for u in users:
            items = [int(i) for i in lists[s].get(u, [])]
            if not items:
                continue
            pops = np.array([float(popularity.get(i, 0.0)) for i in items])
            out["arp"].loc[u, s] = float(pops.mean())
            out["novelty"].loc[u, s] = float(np.mean(-np.log2(np.maximum(pops, 1.0) / n_users)))
            if len(items) > 1:
                dist = [_jaccard_distance(sets.get(a, frozenset()), sets.get(b, frozenset()))
                        for a, b in combinations(items, 2)]  # fmt: skip
                out["ild"].loc[u, s] = float(np.mean(dist))
    return out


@dataclass(frozen=True)
class PopularityFit(Estimate):
    """The judge's item score regressed on log(1 + popularity): the slope per unit of log popularity (``value``), its
    CI (standard errors clustered by user), the ``n`` scores and, beside the estimate's fields, the users behind it."""

    n: int = 0
    users: int = 0


def popularity_regression(
    scores: pd.DataFrame, popularity: Mapping[int, float], ci: float = 0.95, min_users: int = 10
) -> PopularityFit:
    """``scores``: one row per judged (user, item) with its ``score`` (NaN: unparsed, left out). NaN below three
    scores, two users or with no spread in popularity; the slope without a CI below ``min_users`` users, where
    standard errors clustered on so few users are too small to trust."""
    frame = scores.dropna(subset=["score"])
    x = np.log1p(frame["item"].map(lambda i: float(popularity.get(int(i), 0.0))).to_numpy(dtype=float))
    y = frame["score"].to_numpy(dtype=float)
    groups = frame["user"].to_numpy()
    n_users = len(set(groups.tolist()))
    method = f"{ci:.0%} CI, clustered by user"
    if len(y) < 3 or n_users < 2 or np.ptp(x) == 0:
        return PopularityFit(math.nan, n=len(y), method=method, users=n_users)
    fit = sm.OLS(y, sm.add_constant(x)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    low, high = fit.conf_int(alpha=1.0 - ci)[1] if n_users >= min_users else (math.nan, math.nan)
    return PopularityFit(float(fit.params[1]), float(low), float(high), len(y), method, users=n_users)
