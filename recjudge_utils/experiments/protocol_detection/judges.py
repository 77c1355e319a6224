"""The studies' judges, derived from the chapter's simulated judge: one error model each (:func:`sweep_judges`), a
panel of them (:func:`panel_of`), and the serendipity scores such a judge gives every pair
(:func:`serendipity_scores`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from recjudge_utils.data import SerendipityPairs
from recjudge_utils.judge.backends.sim import SimulatedJudge
from recjudge_utils.judge.client import JudgeClient
from recjudge_utils.judge.loading import load_profile
from recjudge_utils.judge.panel import PanelClient
from recjudge_utils.judge.profile import PanelProfile
from recjudge_utils.judge.types import Judge
from recjudge_utils.protocols.pointwise_score import SerendipityJudge

#: sims(**error model) -> a judge client over the simulated backend (see :func:`sweep_judges`)
SimFactory = Callable[..., JudgeClient]


def _derived(judge: Judge) -> tuple[dict[str, Any], dict[str, Any], int]:
    """The chapter judge's profile fields, client options (run folder, cache, mode) and seed, for the judges derived
    from it; refused unless it is a simulated judge."""
    backend = getattr(judge, "backend", None)
    if not isinstance(judge, JudgeClient) or not isinstance(backend, SimulatedJudge):
        raise ValueError(
            f"chapter 5 sweeps a simulated judge's errors; {judge.model_name!r} is not one (open a simulated-judge "
            "profile, e.g. judges/sim.yaml)"
        )
    fields = {"name": judge.profile_name, "backend": SimulatedJudge.name, "model": backend.api_model}
    options = {"offline": judge.offline, "run_dir": judge.run_dir, "cache_path": judge.cache.path, "progress": False}
    return fields, options, backend.params.seed


def sweep_judges(judge: Judge) -> SimFactory:
    """The studies' judges, derived from the chapter's simulated judge: each has exactly the error model a study
    sets (a perfect judge otherwise; the judge's seed unless the study sets one) and shares the judge's run folder,
    cache and mode. Each answer is seeded by its request's cache key, which holds that error model and seed, so a
    study's answers do not depend on the error model of the profile the judge was opened from."""
    fields, options, seed = _derived(judge)

    def make(**error_model: float) -> JudgeClient:
        return load_profile({**fields, "options": {"seed": seed, **error_model}}).client(**options)

    return make


def panel_of(judge: Judge, members: Sequence[dict[str, float]]) -> PanelClient:
    """A panel profile of simulated judges with these error models (members named ``<judge>-1``, ...; scores by the
    median level, a split taking the lower level), opened like any panel in the chapter judge's run folder, cache and
    mode: its aggregation, quorum, exclusions and each member's cache are the panel machinery's. A member with a study
    judge's error model and seed answers as that judge does (the same cache key)."""
    fields, options, _ = _derived(judge)
    spec = {
        "backend": "panel",
        "name": f"{fields['name']}-panel",
        "aggregate": {"json_levels": "median"},
        "members": [{**fields, "name": f"{fields['name']}-{k + 1}", "options": m} for k, m in enumerate(members)],
    }
    profile = load_profile(spec)
    assert isinstance(profile, PanelProfile)
    return profile.open_client(**options)


def serendipity_scores(sim: SimFactory, pairs: SerendipityPairs, **params: float) -> np.ndarray:
    client = sim(**params)
    try:
        scorer = SerendipityJudge(client, template="base", words=pairs.domain)
        out = scorer.score(pairs.pairs, pairs.items, desc="serendipity (sim)")
    finally:
        client.close()
    return out["score"].to_numpy(dtype=float)
