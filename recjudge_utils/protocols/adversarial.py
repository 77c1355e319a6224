"""The adversarial test (SAER, Sections 3.4 and 4.1): a customer's genuine list against a decoy, in random position.

The decoy is the same algorithm's list for another sampled customer (the paper: "a random list taken from a
different customer", the algorithm unnamed), so it differs from the genuine list in whose context it fits, not
in its algorithm's style; a judge that reads the customer's context should pick the genuine list. A judge blind
to the context can only guess, or follow the position.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from recjudge_utils.metrics.pairwise import TIE

__all__ = ["OUTCOMES", "adversarial_outcome", "adversarial_pairs"]

OUTCOMES: tuple[str, str, str] = ("correct", "wrong", "tie")


def adversarial_pairs(users: Sequence[int], algorithms: Sequence[str], seed: int = 0) -> pd.DataFrame:
    """One blind case per customer: genuine list vs the same algorithm's list for another customer.

    Algorithms are assigned in equal shares (as the paper's 50/50), the decoy customer is drawn
    uniformly from the *other* customers, and the genuine list's position (Set 1 or Set 2) is random;
    all with ``numpy.random.default_rng(seed)``.
    """
    users = [int(u) for u in users]
    if len(users) < 2:
        raise ValueError("adversarial pairs need at least two customers")
    if len(set(users)) != len(users):
        raise ValueError("customers must be distinct")
    rng = np.random.default_rng(seed)
    algs = [algorithms[k % len(algorithms)] for k in range(len(users))]
    algs = [algs[k] for k in rng.permutation(len(users))]
    rows = []
    for k, user in enumerate(users):
        others = [u for u in users if u != user]
        decoy = others[int(rng.integers(len(others)))]
        rows.append(
            {"user": user, "algorithm": algs[k], "decoy_user": decoy, "genuine_position": int(rng.integers(1, 3))}
        )
    return pd.DataFrame(rows)


def adversarial_outcome(verdict: str | None, genuine_position: int) -> str | None:
    """ "correct" (genuine list chosen), "wrong" (decoy chosen), "tie"; None when unparsed."""
    if verdict is None:
        return None
    if verdict == TIE:
        return "tie"
    return "correct" if verdict == f"Set {genuine_position}" else "wrong"
