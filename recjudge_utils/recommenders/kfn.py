"""k-furthest neighbours on explicit ratings (Said, Fields, Jain & Albayrak, CSCW 2013).

KFN inverts user-based k-NN: it finds, for each user, the ``k`` users whose ratings *disagree* most
with theirs and recommends what those anti-neighbours rated *low* ("items disliked by users with
dissimilar preferences", Tokutake et al., CIKM'25). The model therefore receives every training
rating (1-5 stars, not only positives; ``uses_explicit_ratings = True``).

What could be checked offline is the papers' abstracts: Said et al. present "an inverted neighborhood
model, k-Furthest Neighbors", and their WSDM'12 workshop paper recommends "items disliked by people
least similar to oneself", with two common similarity measures. The Pearson and inverted-rating details
below follow the usual reading of the method (inverted similarity, inverted neighbour ratings); the
exact formulas, the overlap rule and the tie handling are this implementation's choices:

* Similarity: Pearson correlation over the items both users rated, with both means taken over the
  co-rated items ``C = I_u ∩ I_v``::

      rho(u, v) = sum_C (r_ui - m_u)(r_vi - m_v) / sqrt(sum_C (r_ui - m_u)^2 * sum_C (r_vi - m_v)^2)

  It is defined only when ``|C| >= min_overlap`` and both users' co-rated ratings vary; otherwise
  the pair is *unrelated*, not dissimilar (two users who share no item have not disagreed).
* Dissimilarity (the inverted similarity): ``d(u, v) = -rho(u, v)``. Inverting the candidate's
  ratings instead, ``r'_vi = r_max + r_min - r_vi``, and correlating with those gives the same:
  Pearson is invariant to that affine map up to its sign, so ``rho(u, r'_v) = -rho(u, r_v)``.
* Furthest neighbours ``F_k(u)``: the ``k`` users with the largest ``d(u, v) > 0`` (only truly
  anti-correlated users; a user with ``d <= 0`` agrees with ``u`` and is no anti-neighbour).
  Users tied at the k-th dissimilarity share the remaining places: each gets the weight
  ``d * (places left / users tied)``, so the neighbourhood does not depend on how users are numbered.
* Prediction: the mean-centred user-based k-NN formula (Resnick et al.) applied to the anti-
  neighbours' *inverted* ratings, weighted by dissimilarity. Because
  ``r'_vi - mean(r'_v) = -(r_vi - r̄_v)``, the rating scale's ends cancel::

      score(u, i) = r̄_u + sum_{v in F_k(u), i in I_v} d(u, v) (r'_vi - r̄'_v) / sum_{v in F_k(u), i in I_v} d(u, v)
                  = r̄_u - sum_v d(u, v) (r_vi - r̄_v) / sum_v d(u, v)

  An item an anti-neighbour rated below their own mean scores above ``r̄_u``; one they loved scores
  below it. Items no anti-neighbour rated get ``r̄_u`` (no evidence either way).
* Ties between items (for example every item of a user without anti-neighbours) are broken by
  training popularity, then by a permutation of the items drawn from ``seed``: a user with no
  anti-neighbour gets the popularity ranking, like an unseen user (see ``base.py``).

``r̄_u`` is the mean of all of ``u``'s training ratings. Training frames without a ``rating``
column are read as all-ones (then every variance is 0 and KFN falls back to popularity).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from . import register_recommender
from .base import Recommender, explicit_ratings

# Below this a co-rated variance is numerically zero (ratings are small integers or halves).
_VAR_EPS = 1e-9
# Ties are decided on dissimilarities rounded to this many decimals: the same rating vectors may
# produce last-bit differences depending on where they sit in the matrix products.
_TIE_DECIMALS = 10
# Item tie-breaker scale: far below any real difference between two predicted ratings.
_TIE_EPS = 1e-9
# Users scored per block when computing the correlations (bounds memory at ~block x n_users floats).
_BLOCK_CELLS = 4_000_000


@register_recommender(
    "kfn",
    display="KFN",
    search_space=lambda t: {
        "k": t.suggest_int("k", 5, 500, log=True),
        "min_overlap": t.suggest_int("min_overlap", 3, 20, log=True),
    },
)
class KFN(Recommender):
    """k-furthest neighbours: recommend what the most dissimilar users rated low."""

    name = "kfn"
    uses_explicit_ratings = True

    def __init__(self, k: int = 50, min_overlap: int = 5, seed: int = 0) -> None:
        """``k``: anti-neighbours per user; ``min_overlap``: co-rated items needed for a correlation;
        ``seed``: the item permutation that breaks ties left after popularity."""
        super().__init__(seed=seed)
        if k < 1:
            raise ValueError("k must be >= 1")
        if min_overlap < 2:
            raise ValueError("min_overlap must be >= 2 (a correlation needs two co-rated items)")
        self.k, self.min_overlap = k, min_overlap
        self.ratings = sp.csr_matrix((0, 0))
        self.user_mean = np.zeros(0)
        self.weights = sp.csr_matrix((0, 0))  # users x users, d(u, v) * tie share for v in F_k(u)
        self._deviation = sp.csr_matrix((0, 0))  # r_vi - r̄_v on the rated cells
        self._rated = sp.csr_matrix((0, 0))  # 1 on the rated cells
        self._tiebreak = np.zeros(0)

    # -- fitting -----------------------------------------------------------------------------
    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        r = explicit_ratings(self, train)
        b = r.copy()
        b.data[:] = 1.0
        counts = np.asarray(b.sum(axis=1)).ravel()
        self.ratings = r
        self.user_mean = np.asarray(r.sum(axis=1)).ravel() / np.maximum(counts, 1)
        dev = r.copy()
        dev.data -= np.repeat(self.user_mean, np.diff(r.indptr))
        self._deviation = dev
        self._rated = b
        self.weights = self._furthest_weights(r, b)
        # Item tie-breaker in [0, 1): popularity first, then a seeded permutation of the items.
        n_items = r.shape[1]
        perm = np.random.default_rng(self.seed).permutation(n_items)
        order = np.lexsort((perm, self.popularity))  # ascending: least popular first
        self._tiebreak = np.empty(n_items)
        self._tiebreak[order] = np.arange(n_items) / max(n_items, 1)

    def _furthest_weights(self, r: sp.csr_matrix, b: sp.csr_matrix) -> sp.csr_matrix:
        n_users = r.shape[0]
        r2 = r.multiply(r).tocsr()
        bt, rt, r2t = b.T.tocsc(), r.T.tocsc(), r2.T.tocsc()
        block = max(1, _BLOCK_CELLS // max(n_users, 1))
        rows, cols, vals = [], [], []
        for start in range(0, n_users, block):
            sl = slice(start, min(start + block, n_users))
            d = self._dissimilarity_block(r[sl], b[sl], r2[sl], bt, rt, r2t)
            d[np.arange(d.shape[0]), np.arange(sl.start, sl.stop)] = -np.inf  # never one's own anti-neighbour
            w = self._select(d)
            rr, cc = np.nonzero(w)
            rows.append(rr + start)
            cols.append(cc)
            vals.append(w[rr, cc])
        return sp.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_users, n_users)
        )

    def _dissimilarity_block(self, r_c, b_c, r2_c, bt, rt, r2t) -> np.ndarray:
        """``-rho(u, v)`` for the block's users u against every user v; -inf where undefined."""

        def dense(m) -> np.ndarray:
            return m.toarray() if sp.issparse(m) else np.asarray(m)

        n = dense(b_c @ bt)  # |C|
        su, sv = dense(r_c @ bt), dense(b_c @ rt)  # sum of u's / v's ratings over C
        suu, svv = dense(r2_c @ bt), dense(b_c @ r2t)  # sums of squares over C
        suv = dense(r_c @ rt)
        with np.errstate(divide="ignore", invalid="ignore"):
            cov = suv - su * sv / n
            var_u = suu - su * su / n
            var_v = svv - sv * sv / n
            rho = cov / np.sqrt(var_u * var_v)
        valid = (n >= self.min_overlap) & (var_u > _VAR_EPS) & (var_v > _VAR_EPS)
        return np.where(valid, -np.clip(rho, -1.0, 1.0), -np.inf)

    def _select(self, d: np.ndarray) -> np.ndarray:
        """Weights ``d * share`` of the k most dissimilar users (d > 0), ties at the k-th sharing places."""
        d = np.round(d, _TIE_DECIMALS)
        d[~(d > 0)] = 0.0  # only anti-correlated users qualify
        k = min(self.k, d.shape[1])
        kth = -np.partition(-d, k - 1, axis=1)[:, k - 1 : k]  # k-th largest per row
        above = d > kth
        tied = (d == kth) & (d > 0)
        left = k - above.sum(axis=1, keepdims=True)
        share = np.where(tied, left / np.maximum(tied.sum(axis=1, keepdims=True), 1), 0.0)
        return d * (above + share)

    # -- scoring -----------------------------------------------------------------------------
    def anti_neighbours(self, user: int) -> tuple[np.ndarray, np.ndarray]:
        """(user ids, weights) of one training user's furthest neighbours, most dissimilar first."""
        row = self._user_index[int(user)]
        w = self.weights[row]
        order = np.argsort(-w.data, kind="stable")
        return self.user_ids[w.indices[order]], w.data[order]

    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        w = self.weights[user_rows]
        num = (w @ self._deviation).toarray()
        den = (w @ self._rated).toarray()
        with np.errstate(divide="ignore", invalid="ignore"):
            shift = np.where(den > 0, num / den, 0.0)
        return self.user_mean[user_rows, None] - shift + _TIE_EPS * self._tiebreak[None, :]
