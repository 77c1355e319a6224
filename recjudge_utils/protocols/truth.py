"""What counts as the right answer, per protocol: the truth the experiments attach for the simulated judge.

=======================  =====================================================================================
protocol                 truth
=======================  =====================================================================================
serendipity score        the pair's label g (and its relevance / unexpectedness steps where the data has them)
re-evaluated pairs       the stand-in's rule with the user's *future* rating: relevance level = the rating the user
                         gave the item after the training period (1 when never rated: not shown to be relevant),
                         unexpectedness level = genre distance from the last 10 training items; g = min of the two
Arena / SAER pairwise    the list holding more of the user's held-out future positives (tie when equal)
Arena absolute           the share of the list that is a held-out future positive
SAER pointwise           Good / Partial / Poor from the held-out hits in the top-k: ``>= GOOD_HITS`` -> Good,
                         ``>= PARTIAL_HITS`` -> Partial, else Poor
adversarial              the genuine list (evidence 1 against the decoy's 0)
=======================  =====================================================================================

An LLM judge never sees any of it: the truth is not in the messages and not in an LLM backend's cache key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from recjudge_utils.answer_formats.saer_fields import LABELS_WORST_FIRST
from recjudge_utils.answer_formats.truth import LabelTruth
from recjudge_utils.data.standins import genre_distance, relevance_level, unexpectedness_level

__all__ = [
    "heldout_hits",
    "list_label_truth",
    "reevaluation_truth",
]

#: SAER pointwise truth thresholds (held-out positives in the top-k list)
_GOOD_HITS = 2
_PARTIAL_HITS = 1


def heldout_hits(lists: Mapping[int, Sequence[int]], heldout: Mapping[int, set[int]]) -> dict[int, int]:
    """Per user: how many items of the list are among the user's held-out future positives."""
    return {int(u): sum(int(i) in heldout.get(int(u), set()) for i in items) for u, items in lists.items()}


def list_label_truth(hits: int) -> LabelTruth:
    """SAER pointwise truth from a list's held-out hits (thresholds :data:`GOOD_HITS`, :data:`PARTIAL_HITS`)."""
    level = 2 if hits >= _GOOD_HITS else 1 if hits >= _PARTIAL_HITS else 0
    return LabelTruth(level=level, labels=LABELS_WORST_FIRST)


def reevaluation_truth(
    pairs: pd.DataFrame, future: pd.DataFrame, items: pd.DataFrame, history: Mapping[int, Sequence[int]]
) -> pd.DataFrame:
    """Truth columns ``g``, ``relevance``, ``unexpectedness`` for judged (user, item) pairs.

    ``future``: the ratings given after the training period (user, item, rating); ``history``: each user's last
    training items. A pair the user never rated later has relevance 1; a user without history, unexpectedness 3.
    """
    genres = {int(i): list(g) for i, g in zip(items["item"], items["genres"], strict=True)}
    rated = {
        (int(u), int(i)): float(r) for u, i, r in zip(future["user"], future["item"], future["rating"], strict=True)
    }
    rel, une = [], []
    for u, i in zip(pairs["user"], pairs["item"], strict=True):
        rating = rated.get((int(u), int(i)))
        rel.append(1 if rating is None else int(relevance_level(rating)))
        hist = [genres.get(int(h), []) for h in history.get(int(u), [])]
        une.append(int(unexpectedness_level(genre_distance(genres.get(int(i), []), hist))) if hist else 3)
    out = pairs.copy()
    out["relevance"] = np.array(rel, dtype=int)
    out["unexpectedness"] = np.array(une, dtype=int)
    out["g"] = np.minimum(out["relevance"], out["unexpectedness"])
    return out
