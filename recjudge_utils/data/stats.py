"""Dataset statistics in the layout of the serendipity paper's Table 2 (users, items, interactions, categories)."""

from __future__ import annotations

import pandas as pd

from ._common import Dataset


def dataset_statistics(ds: Dataset, interactions: pd.DataFrame | None = None) -> pd.DataFrame:
    """One-row DataFrame: dataset (label), users, items, interactions, categories, density.

    ``users`` / ``items`` count distinct ids that occur in the interactions (not the catalogue size), as the papers
    do after filtering; ``categories`` is the number of distinct genre/category labels over those items;
    ``density`` = interactions / (users * items). Pass a filtered ``interactions`` frame (e.g. ratings >= 4) to
    describe that subset instead of everything loaded.
    """
    inter = ds.interactions if interactions is None else interactions
    n_users = int(inter["user"].nunique())
    item_ids = pd.unique(inter["item"])
    n_items = len(item_ids)
    genres = ds.items.loc[ds.items["item"].isin(item_ids), "genres"]
    n_categories = len({g for gs in genres for g in (gs if isinstance(gs, list | tuple) else [])})
    density = len(inter) / (n_users * n_items) if n_users and n_items else float("nan")
    return pd.DataFrame(
        [
            {
                "dataset": ds.label,
                "users": n_users,
                "items": n_items,
                "interactions": len(inter),
                "categories": n_categories,
                "density": density,
            }
        ]
    )
