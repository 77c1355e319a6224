"""Fixed (untuned) training settings per experiment, budget and recommender, as the recommenders declare them.

Each recommender module declares its own settings next to its class (``@register_recommender(..., budgets=...)``).
``small`` keeps the default notebooks within their CI time on 2 cores (measured on MovieLens-100K: ~0.3-1 s
per epoch for BPRMF/SASRec/DESR, ~5 s per epoch for PURS, one torch thread); ``paper`` uses longer training
(RecSys Arena) or the modules' own defaults with everything else tuned (re-evaluation). Keys are registry keys.
"""

from __future__ import annotations

from typing import Any

from recjudge_utils.recommenders import BUDGET_NAMES, REGISTRY

__all__ = ["training_budget"]


def training_budget(experiment: str, budget: str) -> dict[str, dict[str, Any]]:
    """Fixed settings per recommender of ``experiment`` under ``budget`` ("small" or "paper"), as fresh dicts."""
    declared = {name: entry.budgets[experiment] for name, entry in REGISTRY.items() if experiment in entry.budgets}
    if not declared:
        known = sorted({e for entry in REGISTRY.values() for e in entry.budgets})
        raise KeyError(f"no training budgets for experiment {experiment!r}; known: {known}")
    if budget not in BUDGET_NAMES:
        raise KeyError(f"unknown training budget {budget!r}; known: {sorted(BUDGET_NAMES)}")
    return {name: dict(sizes[budget]) for name, sizes in declared.items() if budget in sizes}
