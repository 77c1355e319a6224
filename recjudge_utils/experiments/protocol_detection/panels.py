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
    """Per condition (:data:`PANEL_CONDITIONS`) and measure (one row each: value, low, high, n): 3-class accuracy
    (``acc3``, Wilson CI), weighted kappa (``kappa``) and mean error (``bias``: score - g; bootstrap CIs) on every
    serendipity pair, n the parsed ones, position consistency (Wilson CI) on chapter 4's swapped pairs, n those pairs;
    then without interval the ``calls`` its clients were asked, the member answers ``excluded`` and the calls'
    multiple of one judge's (``cost_multiple``).
    Every judge has the same error model (score noise, position bias, unparseable answers); the one judge is the
    first member of the independent panel; the shared-bias panel's members also share one score offset (leniency)."""
    each = {"noise": config.panel_noise, "position_bias": config.panel_bias, "unparseable": config.panel_unparseable}
    seeds = [config.seed + k for k in range(3)]
    members = {PANEL_CONDITIONS[1]: [{**each, "seed": s} for s in seeds],
               PANEL_CONDITIONS[2]: [{**each, "leniency": config.panel_offset, "seed": s} for s in seeds]}  # fmt: skip
    cfg = dataclasses.replace(saer_config(config), n_customers=config.panel_customers)
    sample = saer.build_sample(dataset, cfg)
    g = pairs.pairs["g"].to_numpy(dtype=float)
    rows = []
    for condition in PANEL_CONDITIONS:
        one = condition not in members
        client = sweep_judges(judge)(**each, seed=seeds[0]) if one else panel_of(judge, members[condition])
        try:
            as_judge = cast(Judge, client)  # a PanelClient is one; mypy reads its list[PanelResult] as no Judge's
            scorer = SerendipityJudge(as_judge, template="base", words=pairs.domain)
            pred = scorer.score(pairs.pairs, pairs.items, desc=condition)
            _, adjudicated = saer.judge_pairwise(as_judge, sample, cfg, both_orders=True)
            calls = _calls(client)
            excluded = int(client.member_summary()["excluded"].sum()) if isinstance(client, PanelClient) else 0
        finally:
            client.close()
        score = pred["score"].to_numpy(dtype=float)
        ok = ~np.isnan(score)
        summary = js.summarize_predictions(score, g, n_boot=config.n_boot, seed=config.seed).set_index("measure")
        acc3, kappa = (tuple(summary.loc[m, ["value", "low", "high", "n"]]) for m in ("acc3", "kappa_qw"))
        bias = bootstrap_ci(score[ok] - g[ok], np.mean, n_boot=config.n_boot, seed=config.seed)
        consistent = [bool(c) for c in adjudicated["consistent"] if c is not None]
        lo, hi = wilson(sum(consistent), len(consistent))
        share = sum(consistent) / len(consistent)
        rows += [(condition, "acc3", *acc3), (condition, "kappa", *kappa), (condition, "bias", *bias, int(ok.sum())),
                 (condition, "consistency", share, lo, hi, len(consistent)),
                 (condition, "calls", calls, np.nan, np.nan, np.nan),
                 (condition, "excluded", excluded, np.nan, np.nan, np.nan)]  # fmt: skip
    out = pd.DataFrame(rows, columns=["condition", *js.MEASURE_COLUMNS])
    asked, dropped = (js.measure_by(out, m, "condition")["value"] for m in ("calls", "excluded"))
    multiple = asked / asked.iloc[0]
    cost = pd.DataFrame({"condition": asked.index, "measure": "cost_multiple", "value": multiple.to_numpy(),
                         "low": np.nan, "high": np.nan, "n": np.nan})  # fmt: skip
    out = pd.concat([out, cost], ignore_index=True)
    panels = asked.index != PANEL_CONDITIONS[0]
    out.attrs.update(customers=len(sample.users), pairs=len(g), excluded=int(dropped[panels].sum()),
                     answers=int(asked[panels].sum()), one=int(asked.iloc[0]),
                     multiple=round(float(multiple[panels].mean()), 2))  # fmt: skip
    return out
