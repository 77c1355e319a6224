"""Fixed (untuned) training settings per experiment, budget and recommender: the one table of them.

``small`` keeps the default notebooks within their CI time on 2 cores (measured on MovieLens-100K: ~0.3-1 s
per epoch for BPRMF/SASRec/DESR, ~5 s per epoch for PURS, one torch thread); ``paper`` uses longer training
(RecSys Arena) or the modules' own defaults with everything else tuned (re-evaluation). Keys are registry keys.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BUDGETS", "training_budget"]

BUDGETS: dict[str, dict[str, dict[str, dict[str, Any]]]] = {
    "reevaluation": {
        "small": {"bprmf": {"epochs": 10}, "sasrec": {"epochs": 10}, "purs": {"epochs": 2}, "desr": {"epochs": 5}},
        "paper": {},
    },
    "arena": {
        "small": {
            "fm": {"epochs": 5},
            "deepfm": {"epochs": 5},
            "lightgcn": {"epochs": 5, "batch_size": 4096, "lr": 1e-2},
            "sasrec": {"epochs": 8, "max_len": 50, "dim": 64},
            "minilm-content": {},
        },
        "paper": {
            "fm": {"epochs": 30},
            "deepfm": {"epochs": 30},
            "lightgcn": {"epochs": 100},
            "sasrec": {"epochs": 100, "max_len": 50, "dim": 64},
            "minilm-content": {},
        },
    },
}


def training_budget(experiment: str, budget: str) -> dict[str, dict[str, Any]]:
    """Fixed settings per recommender of ``experiment`` under ``budget`` ("small" or "paper"), as fresh dicts."""
    if experiment not in BUDGETS:
        raise KeyError(f"no training budgets for experiment {experiment!r}; known: {sorted(BUDGETS)}")
    if budget not in BUDGETS[experiment]:
        raise KeyError(f"unknown training budget {budget!r}; known: {sorted(BUDGETS[experiment])}")
    return {k: dict(v) for k, v in BUDGETS[experiment][budget].items()}
