"""Study 5: SAER's safeguards: adversarial detection against context neglect, swap consistency against position
bias, and the strict (pointwise) and conservative (pairwise) adjudication of two annotators."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.data import Dataset
from recjudge_utils.experiments import saer
from recjudge_utils.experiments.protocol_detection.config import (
    DetectionConfig,
)
from recjudge_utils.experiments.protocol_detection.judges import SimFactory
from recjudge_utils.experiments.protocol_detection.noise import holds
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.metrics.agreement import POINTWISE_LABELS, strict_adjudicate, weighted_kappa
from recjudge_utils.metrics.intervals import wilson
from recjudge_utils.metrics.pairwise import TIE, conservative
from recjudge_utils.protocols.truth import list_label_truth


@dataclass
class SaerDetection:
    """What SAER's three safeguards catch as the simulated judge's flaws grow."""

    #: per context neglect, a long frame: the ``correct`` / ``wrong`` / ``tie`` shares of the adversarial pairs (value,
    #: Wilson low and high, n: pairs), and ``expected correct``, the truth 1 - c (no interval)
    adversarial: pd.DataFrame
    #: per position bias, a long frame: ``consistency`` (value, Wilson low and high, n: comparisons judged in both
    #: orders) and ``expected``, the consistency the error model implies (no interval)
    consistency: pd.DataFrame
    labels: pd.DataFrame  # pointwise label shares: truth, two annotators, strict merge (+ kappa vs truth)
    verdicts: pd.DataFrame  # pairwise verdict shares: truth, two annotators, conservative merge
    customers: int  # customers in the sample
    heldout: int  # each customer's last interactions held out as the future the truth is read from

    @property
    def detection(self) -> pd.DataFrame:
        """Per context neglect (the index, ascending): the genuine list's share with its Wilson CI (``correct``,
        ``low``, ``high``), the tie and decoy shares, the truth 1 - c (``expected``) and whether the CI holds it."""
        wide = self.adversarial.pivot(index="context_neglect", columns="measure", values=["value", "low", "high"])
        out = wide["value"][["correct", "tie", "wrong", "expected correct"]].rename(
            columns={"expected correct": "expected"}
        )
        out = out.assign(low=wide["low"]["correct"], high=wide["high"]["correct"]).rename_axis(columns=None)
        return out.assign(held=holds(out["low"], out["high"], out["expected"]))


def saer_config(config: DetectionConfig) -> saer.SaerConfig:
    """Chapter 4's config for this chapter's sample: ``config.saer_customers`` customers, the main prompt version
    only and the held-out future of a simulated-judge run (each customer's last :data:`~saer.SIM_HELDOUT`
    interactions, the truth); every other value (history, minimum interactions, list length) is chapter 4's."""
    return saer.SaerConfig(
        n_customers=config.saer_customers,
        prompt_versions=("v3",),
        main_version="v3",
        seed=config.seed,
        heldout=saer.SIM_HELDOUT,
    )


def _shares(outcomes: Sequence[Any], values: Sequence[str]) -> list[tuple[str, float, float, float, int]]:
    """(value, its share, Wilson low, Wilson high, n) of each of ``values`` among the ``n`` ``outcomes``."""
    n = len(outcomes)
    out = []
    for v in values:
        count = sum(o == v for o in outcomes)
        low, high = wilson(count, n)
        out.append((v, count / n, low, high, n))
    return out


def saer_protocols(sim: SimFactory, dataset: Dataset, config: DetectionConfig) -> SaerDetection:
    """Adversarial detection vs context neglect, swap consistency vs position bias, strict / conservative merges,
    each on chapter 4's sample through chapter 4's judging steps."""
    cfg = saer_config(config)
    sample = saer.build_sample(dataset, cfg)
    users, (alg_a, alg_b) = sample.users, saer.ALGORITHMS
    hits = sample.hits
    if hits is None:
        raise ValueError("chapter 5's SAER sample needs a held-out future (heldout > 0)")

    adv_rows: list[tuple[Any, ...]] = []
    for c in config.neglects:
        client = sim(context_neglect=c, seed=config.seed)
        try:
            outcomes = saer.judge_adversarial(client, sample, cfg)["outcome"].tolist()
        finally:
            client.close()
        adv_rows += [(c, *share) for share in _shares(outcomes, ("correct", "wrong", "tie"))]
        adv_rows.append((c, "expected correct", 1.0 - c, np.nan, np.nan, np.nan))

    no_pref = float(np.mean([hits[alg_a][u] == hits[alg_b][u] for u in users]))
    cons_rows: list[tuple[Any, ...]] = []
    for b in config.biases:
        client = sim(position_bias=b, seed=config.seed)
        try:
            _, adjudicated = saer.judge_pairwise(client, sample, cfg, both_orders=True)
        finally:
            client.close()
        consistent = [bool(c) for c in adjudicated["consistent"] if c is not None]
        agree = sum(consistent)
        low, high = wilson(agree, len(consistent))
        cons_rows += [(b, "consistency", agree / len(consistent), low, high, len(consistent)),
                      (b, "expected", (1 - no_pref) + no_pref * (1 - b) ** 2, np.nan, np.nan, np.nan)]  # fmt: skip

    # two noisy annotators, merged the SAER way
    truth_labels = [(t := list_label_truth(hits[alg][u])).labels[t.level] for alg in saer.ALGORITHMS for u in users]
    truth_verdicts = [
        TIE if hits[alg_a][u] == hits[alg_b][u] else (alg_a if hits[alg_a][u] > hits[alg_b][u] else alg_b)
        for u in users
    ]
    annotators: dict[str, list[str | None]] = {}
    verdicts: dict[str, list[str | None]] = {}
    for name, seed in (("annotator A", config.seed + 11), ("annotator B", config.seed + 12)):
        client = sim(noise=config.annotator_noise, seed=seed)
        try:
            annotators[name] = saer.judge_pointwise(client, sample, cfg)["category"].tolist()
            calls, _ = saer.judge_pairwise(client, sample, cfg, both_orders=False)
            verdicts[name] = calls["winner"].tolist()
        finally:
            client.close()
    strict = strict_adjudicate(annotators["annotator A"], annotators["annotator B"], order=POINTWISE_LABELS)
    merged = conservative(verdicts["annotator A"], verdicts["annotator B"])
    label_rows = []
    label_sources: tuple[tuple[str, Sequence[str | None]], ...] = (
        ("truth", truth_labels),
        *annotators.items(),
        ("strict merge of A and B", strict),
    )
    for source, labels in label_sources:
        kappa = weighted_kappa(truth_labels, labels, labels=POINTWISE_LABELS) if source != "truth" else 1.0
        for lab in POINTWISE_LABELS:
            label_rows.append(
                {"labels": source, "label": lab, "share": labels.count(lab) / len(labels), "kappa_vs_truth": kappa}
            )
    verdict_rows = []
    verdict_sources: tuple[tuple[str, Sequence[str | None]], ...] = (
        ("truth", truth_verdicts),
        *verdicts.items(),
        ("conservative merge of A and B", merged),
    )
    for source, vals in verdict_sources:
        for v in (alg_a, TIE, alg_b):
            verdict_rows.append({"verdicts": source, "verdict": v, "share": vals.count(v) / len(vals)})
    return SaerDetection(
        pd.DataFrame(adv_rows, columns=["context_neglect", *js.MEASURE_COLUMNS]),
        pd.DataFrame(cons_rows, columns=["bias", *js.MEASURE_COLUMNS]),
        pd.DataFrame(label_rows),
        pd.DataFrame(verdict_rows),
        customers=len(users),
        heldout=sample.heldout,
    )
