"""Unexpectedness-augmented utility model (Zheng, Chan & Ip, ICDM 2015, LNAI 9165, pp. 216-230).

Tokutake et al. (CIKM'25, ref. [35]) describe UAUM as "a MF-based approach incorporating an
unexpectedness term into singular value decomposition". The paper's abstract (checked) says:
usefulness is modelled with the PureSVD latent factor model, and unexpectedness combines item
*rareness* and *dissimilarity*: "the less popular is an item and the further is its distance from a
user's profile, the more unexpected it is". The full text could not be checked offline, so the exact
formulas below are this implementation's reading of that description (marked "reading").

Data: the explicit training ratings (``uses_explicit_ratings = True``) as the PureSVD matrix ``R``
(``r_ui`` for rated cells, 0 elsewhere; Cremonesi et al. 2010), users x items. ``B`` is its 0/1 mask.
PureSVD (as the abstract says) rather than a biased MF fitted on the rated cells only: it has no bias
terms and treats unrated cells as 0, so it learns *which* items a user rated as well as how.

Not used by the model: Zheng et al.'s evaluation calls an item unexpected when it is outside the 50
most popular and the 50 most highly rated items (as Tokutake et al. report); that is a test-set
criterion of their metric, not part of the utility.

Unexpectedness ``e_ui`` in [0, 1] (reading):

* rareness ``rare_i = log(|U| / n_i) / log(|U|)``, the self-information of "a user rated ``i``"
  (``n_i`` training users of ``|U|`` rated it) scaled to [0, 1]: 1 for an item rated once, 0 for an
  item everyone rated; log scale, so the long tail is not flattened to 1;
* dissimilarity ``dis_ui = 1 - mean_{j in I_u} cos(i, j)``, the mean cosine distance of ``i`` to the
  items ``I_u`` the user rated, cosine over the items' rater vectors (columns of ``B``);
* ``e_ui = rare_i * dis_ui``: unexpected only when both rare *and* far from the profile (an obscure
  item next to what the user always watches is expected; a blockbuster is known to everyone).

Utility and objective (reading): the factor model learns the unexpectedness-augmented utility
``T = R + gamma * E`` instead of ``R``; the rank-``factors`` PureSVD solution

    Z* = argmin_{rank Z <= f} ||T - Z||_F^2 = argmin_{rank Z <= f} ||R - Z||_F^2 - 2 gamma <E, Z>

is PureSVD's squared error minus an unexpectedness reward for every (u, i), solved exactly by the
truncated SVD of ``T`` (seeded randomized SVD, Halko et al. 2011). Recommendations rank
``score_ui = Z*_ui = (U_f S_f V_f^T)_ui``. ``gamma = lam * ||R||_F / ||E||_F`` makes ``lam``
scale-free: at ``lam = 1`` the unexpectedness term carries as much energy as the ratings (``||E||_F``
is exact up to 1,000 users and estimated from a seeded sample of 1,000 users beyond); ``lam = 0`` is
plain PureSVD. ``E`` is never materialised: the SVD only needs ``E @ M`` and ``E.T @ M``, which follow
from ``E = 1 rare^T - A C^T C diag(rare)`` (``A``: ``B`` with rows divided by ``|I_u|``; ``C``: ``B``
with columns divided by their norms) as a few sparse products.

Because tuning on an accuracy metric tends to push ``lam`` towards 0, ``svd_overlap`` and
``degenerate_to_svd`` compare the fitted model's top-k lists with those of the same model at
``lam = 0`` (a notebook can then print "UAUM degenerated to plain SVD").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import scipy.sparse as sp

from . import register_recommender
from .base import Recommender, explicit_ratings

_BLOCK_CELLS = 4_000_000  # dense cells per block of intermediate (rows x users) or (rows x items) arrays
_NORM_USERS = 1000  # ||E||_F is computed on at most this many users (all of MovieLens-100K's 943)
_OVERSAMPLES = 10  # randomized SVD: extra random directions ...
_POWER_ITERS = 6  # ... and power iterations (the spectrum of rating matrices decays slowly)

_MatMul = Callable[[np.ndarray], np.ndarray]


def _randomized_svd(
    matmat: _MatMul, rmatmat: _MatMul, shape: tuple[int, int], rank: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank-``rank`` SVD ``(U, s, Vt)`` of an operator given by ``X @ M`` and ``X.T @ M`` (Halko et al.)."""
    rng = np.random.default_rng(seed)
    width = min(rank + _OVERSAMPLES, min(shape))
    q, _ = np.linalg.qr(matmat(rng.standard_normal((shape[1], width))))
    for _ in range(_POWER_ITERS):  # QR between the products keeps the small directions from underflowing
        z, _ = np.linalg.qr(rmatmat(q))
        q, _ = np.linalg.qr(matmat(z))
    ub, s, vt = np.linalg.svd(rmatmat(q).T, full_matrices=False)
    return (q @ ub)[:, :rank], s[:rank], vt[:rank]


@register_recommender(
    "uaum",
    display="UAUM",
    # lam > 0 always: at lam = 0 UAUM is plain PureSVD, and an accuracy objective would happily pick it;
    # UAUM.degenerate_to_svd() reports when the tuned lam is still too small to change the top-k lists.
    search_space=lambda t: {
        "factors": t.suggest_categorical("factors", [8, 16, 32, 64, 128]),
        "lam": t.suggest_float("lam", 0.1, 2.0, log=True),
    },
)
class UAUM(Recommender):
    """PureSVD of the unexpectedness-augmented utility matrix ``R + gamma * E``."""

    name = "uaum"
    uses_explicit_ratings = True

    def __init__(self, factors: int = 32, lam: float = 0.3, seed: int = 0) -> None:
        """``factors``: SVD rank f; ``lam``: the unexpectedness weight (not a regulariser; 0 = PureSVD)."""
        super().__init__(seed=seed)
        if factors < 1:
            raise ValueError("factors must be >= 1")
        if lam < 0:
            raise ValueError("lam (the unexpectedness weight) must be >= 0")
        self.factors, self.lam = factors, lam
        self.gamma = 0.0  # lam rescaled to the data: gamma = lam * ||R||_F / ||E||_F
        self.ratings = sp.csr_matrix((0, 0))
        self.rareness = np.zeros(0)
        self.user_factors = np.zeros((0, factors))  # U_f S_f
        self.item_factors = np.zeros((0, factors))  # V_f
        self._profile = sp.csr_matrix((0, 0))  # B with rows divided by |I_u| (mean over the profile)
        self._cos = sp.csr_matrix((0, 0))  # B with columns divided by their norms (item cosine)
        self._plain: UAUM | None = None  # the lam = 0 twin, built on demand

    # -- unexpectedness ------------------------------------------------------------------------
    def _prepare(self, train: pd.DataFrame) -> None:
        r = explicit_ratings(self, train)
        b = r.copy()
        b.data[:] = 1.0
        n_i = np.asarray(b.sum(axis=0)).ravel()
        self.ratings = r
        # Items nobody rated in training (known only from ``items``) get no unexpectedness: with no
        # rating there is no evidence of usefulness, and the additive term would otherwise push them to all.
        n_users = max(r.shape[0], 2)
        self.rareness = np.where(n_i > 0, np.log(n_users / np.maximum(n_i, 1)) / np.log(n_users), 0.0)
        per_user = np.asarray(b.sum(axis=1)).ravel()
        self._profile = sp.diags(1.0 / np.maximum(per_user, 1)) @ b
        self._cos = (b @ sp.diags(1.0 / np.sqrt(np.maximum(n_i, 1)))).tocsr()

    def _similarity_to_profile(self, m: np.ndarray) -> np.ndarray:
        """``A (C^T (C m))``: mean cosine to the profile (users x items) times ``m`` (items x w)."""
        return self._profile @ (self._cos.T @ (self._cos @ m))

    def unexpectedness(self, user_rows: np.ndarray) -> np.ndarray:
        """``e_ui = rare_i * (1 - mean_{j in I_u} cos(i, j))`` for the given training rows (rows x items)."""
        user_rows = np.asarray(user_rows)
        out = np.empty((len(user_rows), self.ratings.shape[1]))
        block = max(1, _BLOCK_CELLS // max(self.ratings.shape[0], 1))
        for s in range(0, len(user_rows), block):
            a = self._profile[user_rows[s : s + block]]
            # (rows x users) is nearly dense: densify it so the second product runs as sparse @ dense
            sim = np.asarray((a @ self._cos.T).toarray() @ self._cos)
            out[s : s + block] = self.rareness[None, :] * (1.0 - sim)
        return out

    def _e_matmat(self, m: np.ndarray) -> np.ndarray:
        """``E @ m`` without forming E: ``E = 1 rare^T - A C^T C diag(rare)``."""
        rm = self.rareness[:, None] * m
        every_user = np.broadcast_to(rm.sum(axis=0), (self.ratings.shape[0], m.shape[1]))
        return every_user - self._similarity_to_profile(rm)

    def _e_rmatmat(self, m: np.ndarray) -> np.ndarray:
        """``E.T @ m`` without forming E."""
        sim_t = self._cos.T @ (self._cos @ (self._profile.T @ m))
        return self.rareness[:, None] * (m.sum(axis=0, keepdims=True) - sim_t)

    def _e_norm(self) -> float:
        """``||E||_F``: exact up to ``_NORM_USERS`` users, else from a seeded sample of users, scaled up."""
        n_users = self.ratings.shape[0]
        rows = np.arange(n_users)
        if n_users > _NORM_USERS:  # E has no cheap closed-form norm; a sample of users estimates it closely
            rows = np.sort(np.random.default_rng(self.seed).choice(n_users, size=_NORM_USERS, replace=False))
        block = max(1, _BLOCK_CELLS // max(self.ratings.shape[1], 1))
        total = sum(float((self.unexpectedness(rows[s : s + block]) ** 2).sum()) for s in range(0, len(rows), block))
        return float(np.sqrt(total * n_users / len(rows)))

    # -- fitting -----------------------------------------------------------------------------
    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        self._plain = None
        self._prepare(train)
        self._factorise()

    def _factorise(self) -> None:
        r = self.ratings
        self.gamma = 0.0
        if self.lam > 0:
            e_norm = self._e_norm()
            r_norm = float(np.sqrt((r.data**2).sum()))
            self.gamma = self.lam * r_norm / e_norm if e_norm > 0 else 0.0
        g = self.gamma
        rt = r.T.tocsr()

        def matmat(m: np.ndarray) -> np.ndarray:
            return r @ m + g * self._e_matmat(m) if g else r @ m

        def rmatmat(m: np.ndarray) -> np.ndarray:
            return rt @ m + g * self._e_rmatmat(m) if g else rt @ m

        rank = max(1, min(self.factors, min(r.shape)))
        u, s, vt = _randomized_svd(matmat, rmatmat, r.shape, rank, self.seed)
        self.user_factors = u * s
        self.item_factors = vt.T

    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        return self.user_factors[user_rows] @ self.item_factors.T

    # -- degeneration check --------------------------------------------------------------------
    def plain_svd(self) -> UAUM:
        """The same model (data, factors, seed) with ``lam = 0``: plain PureSVD on the ratings."""
        if self.train_matrix is None:
            raise RuntimeError(f"{self.name}: call fit() before plain_svd()")
        if self.lam == 0:
            return self
        if self._plain is None:
            # Share the prepared matrices rather than refit: the model does not keep the training frame.
            twin = UAUM(factors=self.factors, lam=0.0, seed=self.seed)
            for attr in ("item_ids", "user_ids", "_item_index", "_user_index", "train_matrix", "popularity"):
                setattr(twin, attr, getattr(self, attr))
            for attr in ("ratings", "rareness", "_profile", "_cos"):
                setattr(twin, attr, getattr(self, attr))
            twin._factorise()
            self._plain = twin
        return self._plain

    def svd_overlap(self, k: int = 10, max_users: int = 2000) -> float:
        """Mean share of each user's top-k that plain SVD (``lam = 0``) recommends too (1 = identical lists).

        Computed on the training users (all of them, or a seeded sample of ``max_users``), seen items excluded.
        """
        plain = self.plain_svd()
        users = self.user_ids
        if len(users) > max_users:
            users = np.sort(np.random.default_rng(self.seed).choice(users, size=max_users, replace=False))
        mine, theirs = self.recommend(users, k=k), plain.recommend(users, k=k)
        shared = [len(set(a) & set(b)) / len(a) for a, b in zip(mine, theirs, strict=True)]
        return float(np.mean(shared))

    def degenerate_to_svd(self, k: int = 10, min_overlap: float = 0.9) -> bool:
        """True when the top-k lists are (nearly) plain SVD's: mean overlap@k >= ``min_overlap``."""
        return self.svd_overlap(k) >= min_overlap
