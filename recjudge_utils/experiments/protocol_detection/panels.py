"""Study 7: one judge against a panel of three with independent errors and a panel of three sharing one score
offset: accuracy, kappa, mean error and position consistency with CIs, and the calls each asked."""

from __future__ import annotations

import dataclasses
from typing import cast

import numpy as np
import pandas as pd

from recjudge_utils.data import Dataset, SerendipityPairs
from recjudge_utils.experiments import saer
from recjudge_utils.experiments.protocol_detection.config import (
    PANEL_CONDITIONS,
    DetectionConfig,
)
from recjudge_utils.experiments.protocol_detection.judges import panel_of, sweep_judges
from recjudge_utils.experiments.protocol_detection.saer_safeguards import saer_config
from recjudge_utils.judge.client import JudgeClient
from recjudge_utils.judge.panel import PanelClient
from recjudge_utils.judge.types import Judge
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.metrics.intervals import bootstrap_ci, wilson
from recjudge_utils.protocols.pointwise_score import SerendipityJudge


def _calls(client: JudgeClient | PanelClient) -> int:
    """Calls the judge's clients were asked in this session, cache hits included (what a first run pays for)."""
    if isinstance(client, PanelClient):
        return int(client.member_summary()["answers"].sum())
    return int(client.usage_summary(total=False)["calls"].sum())


def judge_panels(judge: Judge, pairs: SerendipityPairs, dataset: Dataset, config: DetectionConfig) -> pd.DataFrame:
    """Per condition (:data:`PANEL_CONDITIONS`): 3-class accuracy (Wilson CI), weighted kappa and mean error (score -
    g; bootstrap CIs) on every serendipity pair, position consistency (Wilson CI) on chapter 4's swapped pairs, the
    calls its clients were asked and their multiple of one judge's (``cost_multiple``), member answers excluded.
    Every judge has the same error model (score noise, position bias, unparseable answers); the one judge is the
    first member of the independent panel; the shared-bias panel's members also share one score offset (leniency)."""
    each = {"noise": config.panel_noise, "position_bias": config.panel_bias, "unparseable": config.panel_unparseable}
    seeds = [config.seed + k for k in range(3)]
    members = {PANEL_CONDITIONS[1]: [{**each, "seed": s} for s in seeds],
               PANEL_CONDITIONS[2]: [{**each, "leniency": config.panel_offset, "seed": s} for s in seeds]}  # fmt: skip
    cfg = dataclasses.replace(saer_config(config), n_customers=config.panel_customers)
    panel = saer.build_panel(dataset, cfg)
    g = pairs.pairs["g"].to_numpy(dtype=float)
    rows = []
    for condition in PANEL_CONDITIONS:
        one = condition not in members
        client = sweep_judges(judge)(**each, seed=seeds[0]) if one else panel_of(judge, members[condition])
        try:
            as_judge = cast(Judge, client)  # a PanelClient is one; mypy reads its list[PanelResult] as no Judge's
            scorer = SerendipityJudge(as_judge, template="base", words=pairs.domain)
            pred = scorer.score(pairs.pairs, pairs.items, desc=condition)
            _, adjudicated = saer.judge_pairwise(as_judge, panel, cfg, both_orders=True)
            calls = _calls(client)
            excluded = int(client.member_summary()["excluded"].sum()) if isinstance(client, PanelClient) else 0
        finally:
            client.close()
        score = pred["score"].to_numpy(dtype=float)
        ok = ~np.isnan(score)
        row = js.summarize_predictions(score, g, n_boot=config.n_boot, seed=config.seed)
        bias = bootstrap_ci(score[ok] - g[ok], np.mean, n_boot=config.n_boot, seed=config.seed)
        consistent = [bool(c) for c in adjudicated["consistent"] if c is not None]
        lo, hi = wilson(sum(consistent), len(consistent))
        rows.append(
            {"condition": condition, "n": row["n"], "n_parsed": row["n_parsed"], "acc3": row["acc3"],
             "acc3_lo": row["acc3_wilson_lo"], "acc3_hi": row["acc3_wilson_hi"], "kappa": row["kappa_qw"],
             "kappa_lo": row["kappa_lo"], "kappa_hi": row["kappa_hi"], "bias": bias[0], "bias_lo": bias[1],
             "bias_hi": bias[2], "consistency": sum(consistent) / len(consistent), "consistency_lo": lo,
             "consistency_hi": hi, "swapped": len(consistent), "calls": calls, "excluded": excluded}
        )  # fmt: skip
    out = pd.DataFrame(rows)
    out["cost_multiple"] = out["calls"] / out["calls"].iloc[0]
    panels = out["condition"] != PANEL_CONDITIONS[0]
    out.attrs.update(customers=len(panel.users), pairs=len(g), excluded=int(out.loc[panels, "excluded"].sum()),
                     answers=int(out.loc[panels, "calls"].sum()), one=int(out["calls"].iloc[0]),
                     multiple=round(float(out.loc[panels, "cost_multiple"].mean()), 2))  # fmt: skip
    return out
