"""Honest stand-ins for data that cannot be had offline.

Serendipity-2018 proxy (notebook 1)
-----------------------------------
The real Serendipity-2018 labels come from users answering a questionnaire; nothing offline can replace that.
The proxy keeps the *structure* of the real pairs (user, judged movie, the user's last 10 movies before it, a
5-level g) and computes g from real MovieLens-100K behaviour with a fixed, documented rule:

* **relevance** R = the user's own rating of the judged movie (1..5 stars; half stars rounded half up).
* **genre distance** d = 1 - mean over the history items h of Jaccard(genres(judged), genres(h)); d is in [0, 1],
  1 meaning the judged movie shares no genre with anything in the history. (Mean rather than max: with 19 genres
  and Drama/Comedy everywhere, the max is 1 for most pairs and would say little.)
* **unexpectedness** U = 1 + the number of thresholds in :data:`UNEXPECTEDNESS_THRESHOLDS` that d reaches
  (d >= t), i.e. 1..5. The thresholds are fixed constants, chosen once as round numbers near the quintiles of d
  over all ML-100K candidate pairs (so U is roughly uniform there); they do not move with the sample.
* **proxy serendipity** g = min(R, U): a movie is only as serendipitous as it is both relevant and unexpected
  (the fuzzy AND of the two components in the serendipity definition the papers use).

Known differences from the real data: the real judged movies were ones the user rated >= 3.5 stars and were
among the least popular; the proxy uses any rated movie, so relevance varies; novelty (had the user heard of the
movie?) is not observable in ML-100K and is not part of the proxy.

The sample mirrors the real dataset's size and label mix: ``n_pairs`` (default 2,150) pairs drawn with per-level
targets proportional to the paper's g distribution (1:321, 2:1022, 3:586, 4:208, 5:13) but at least
``min_per_level`` per level so few-shot examples and per-level metrics exist, at most ``max_per_user`` pairs per
user (the real data has about 4.5 per user).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ._common import Dataset, SerendipityPairs, round_half_up

PROXY_LABEL = "Serendipity-2018 proxy stand-in built from MovieLens-100K (not user-annotated)"
UNEXPECTEDNESS_THRESHOLDS: tuple[float, float, float, float] = (0.70, 0.78, 0.85, 0.92)
PAPER_G_COUNTS: dict[int, int] = {1: 321, 2: 1022, 3: 586, 4: 208, 5: 13}


def jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    """|A ∩ B| / |A ∪ B| of two genre lists; 0.0 when both are empty."""
    sa, sb = set(a), set(b)
    union = len(sa | sb)
    return len(sa & sb) / union if union else 0.0


def genre_distance(target: Sequence[str], history: Sequence[Sequence[str]]) -> float:
    """1 - mean Jaccard similarity between the target's genres and each history item's genres."""
    if not history:
        raise ValueError("genre_distance needs a non-empty history")
    return 1.0 - float(np.mean([jaccard(target, h) for h in history]))


def relevance_level(rating: float | np.ndarray) -> np.ndarray:
    """The user's rating as a 1..5 level (half stars rounded half up, clipped to 1..5)."""
    return np.clip(round_half_up(rating), 1, 5).astype("int64")


def unexpectedness_level(distance: float | np.ndarray) -> np.ndarray:
    """1 + number of :data:`UNEXPECTEDNESS_THRESHOLDS` reached by the genre distance (1..5)."""
    d = np.asarray(distance, dtype="float64")
    return 1 + (d[..., None] >= np.asarray(UNEXPECTEDNESS_THRESHOLDS) - 1e-12).sum(axis=-1).astype("int64")


def proxy_g(rating: float | np.ndarray, distance: float | np.ndarray) -> np.ndarray:
    """Proxy serendipity level g = min(relevance level, unexpectedness level)."""
    return np.minimum(relevance_level(rating), unexpectedness_level(distance))


def proxy_candidates(ds: Dataset, n_history: int = 10) -> pd.DataFrame:
    """Every (user, rated movie) with at least ``n_history`` movies rated strictly earlier, with its proxy label.

    History = the user's last ``n_history`` ratings with a timestamp strictly before the judged rating (ties on the
    same second broken by item id), oldest first. Columns: user, item, rating, timestamp, history, genre_distance,
    relevance, unexpectedness, g.
    """
    inter = ds.interactions.sort_values(["user", "timestamp", "item"], kind="stable").reset_index(drop=True)
    items = ds.items.reset_index(drop=True)
    genre_names = sorted({g for gs in items["genres"] for g in gs})
    gindex = {g: j for j, g in enumerate(genre_names)}
    row_of_item = pd.Series(np.arange(len(items)), index=items["item"].to_numpy())
    onehot = np.zeros((len(items) + 1, len(genre_names)), dtype=bool)  # last row: items missing from the catalogue
    for r, gs in enumerate(items["genres"]):
        for g in gs:
            onehot[r, gindex[g]] = True
    item_rows = row_of_item.reindex(inter["item"].to_numpy()).fillna(len(items)).to_numpy().astype("int64")

    users = inter["user"].to_numpy()
    ts = inter["timestamp"].to_numpy()
    starts = np.flatnonzero(np.r_[True, users[1:] != users[:-1]])
    ends = np.r_[starts[1:], len(inter)]
    cand_rows: list[np.ndarray] = []
    hist_rows: list[np.ndarray] = []
    for s, e in zip(starts, ends, strict=True):
        user_ts = ts[s:e]
        n_before = np.searchsorted(user_ts, user_ts, side="left")  # ratings strictly earlier than each rating
        ok = np.flatnonzero(n_before >= n_history)
        if not len(ok):
            continue
        cand_rows.append(s + ok)
        hist_rows.append(s + n_before[ok][:, None] - n_history + np.arange(n_history)[None, :])
    if not cand_rows:
        raise ValueError(f"no user has {n_history} ratings before another rating; cannot build proxy pairs")
    cand = np.concatenate(cand_rows)
    hist = np.concatenate(hist_rows)
    tgt = onehot[item_rows[cand]]  # (N, G)
    hg = onehot[item_rows[hist]]  # (N, n, G)
    inter_n = (hg & tgt[:, None, :]).sum(-1)
    union_n = (hg | tgt[:, None, :]).sum(-1)
    jac = np.divide(inter_n, union_n, out=np.zeros(inter_n.shape, dtype="float64"), where=union_n > 0)
    distance = 1.0 - jac.mean(axis=1)
    rating = inter["rating"].to_numpy()[cand]
    item_ids = inter["item"].to_numpy()
    return pd.DataFrame(
        {
            "user": users[cand],
            "item": item_ids[cand],
            "rating": rating,
            "timestamp": ts[cand],
            "history": [list(map(int, row)) for row in item_ids[hist]],
            "genre_distance": distance,
            "relevance": relevance_level(rating),
            "unexpectedness": unexpectedness_level(distance),
            "g": proxy_g(rating, distance),
        }
    )


def level_targets(n_pairs: int, min_per_level: int, reference: dict[int, int] = PAPER_G_COUNTS) -> dict[int, int]:
    """Per-level sample sizes proportional to ``reference`` summing to ``n_pairs``, each >= ``min_per_level``."""
    if n_pairs < 5 * min_per_level:
        raise ValueError(f"n_pairs={n_pairs} < 5 * min_per_level={5 * min_per_level}")
    total = sum(reference.values())
    targets = {g: max(min_per_level, round(n_pairs * c / total)) for g, c in reference.items()}
    # give or take the rounding difference on the largest levels, never going below the minimum
    diff = n_pairs - sum(targets.values())
    for g in sorted(targets, key=lambda k: -targets[k]):
        if diff == 0:
            break
        step = max(diff, min_per_level - targets[g]) if diff < 0 else diff
        targets[g] += step
        diff -= step
    return targets


def sample_pairs(
    candidates: pd.DataFrame,
    n_pairs: int = 2150,
    *,
    min_per_level: int = 20,
    max_per_user: int = 5,
    seed: int = 0,
) -> pd.DataFrame:
    """Draw pairs with per-level targets (see :func:`level_targets`) and at most ``max_per_user`` per user.

    Rare levels are filled first. If a level has fewer eligible candidates than its target, all of them are taken
    (the shortfall is visible in the returned g counts, never padded).
    """
    rng = np.random.default_rng(seed)
    targets = level_targets(n_pairs, min_per_level)
    order = rng.permutation(len(candidates))
    shuffled = candidates.iloc[order]
    per_user: dict[int, int] = {}
    chosen: list[int] = []
    for g in sorted(targets, key=lambda k: targets[k]):
        need = targets[g]
        level = shuffled[shuffled["g"] == g]
        for pos, user in zip(level.index, level["user"].to_numpy(), strict=True):
            if need == 0:
                break
            if per_user.get(user, 0) >= max_per_user:
                continue
            per_user[user] = per_user.get(user, 0) + 1
            chosen.append(pos)
            need -= 1
    out = candidates.loc[chosen].sort_values(["user", "timestamp", "item"], kind="stable")
    return out.reset_index(drop=True)


def serendipity_proxy_from_movielens(
    ds: Dataset,
    n_history: int = 10,
    n_pairs: int = 2150,
    *,
    min_per_level: int = 20,
    max_per_user: int = 5,
    seed: int = 0,
) -> SerendipityPairs:
    """The labelled Serendipity-2018 proxy stand-in built from a (real) MovieLens dataset; see the module doc."""
    candidates = proxy_candidates(ds, n_history=n_history)
    pairs = sample_pairs(candidates, n_pairs, min_per_level=min_per_level, max_per_user=max_per_user, seed=seed)
    cols = ["user", "item", "g", "history", "rating", "relevance", "genre_distance", "unexpectedness", "timestamp"]
    source = (
        f"Proxy stand-in (NOT user-annotated): pairs from {ds.label}; g = min(relevance = the user's rating, "
        f"unexpectedness = 1 + #thresholds {UNEXPECTEDNESS_THRESHOLDS} reached by 1 - mean genre Jaccard vs the "
        f"last {n_history} movies); sampled to the paper's g mix (min {min_per_level}/level, <= {max_per_user}/user, "
        f"seed {seed}). Underlying data: {ds.source}"
    )
    return SerendipityPairs(
        pairs=pairs[cols],
        items=ds.items[["item", "title", "genres", *[c for c in ("year",) if c in ds.items.columns]]].copy(),
        label=PROXY_LABEL,
        is_real=False,
        source=source,
        domain=ds.domain,  # the pairs are the underlying dataset's items
        extra={
            "candidate_g_counts": candidates["g"].value_counts().sort_index(),
            "n_candidates": len(candidates),
            "users_of": ds.name,  # the pairs' user ids are this dataset's (a judged user may be an example user)
        },
    )
