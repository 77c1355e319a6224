"""Is the judge as good as a person? People among themselves (the ceiling), and the judge against their consensus.

* :func:`human_agreement`: Krippendorff's ordinal alpha over every annotator (gaps allowed) and the quadratic-weighted
  kappa of every pair of annotators, each with its percentile-bootstrap CI over tasks (the package's
  :func:`~recjudge_utils.metrics.agreement.krippendorff_alpha_ci` and
  :func:`~recjudge_utils.metrics.agreement.weighted_kappa_ci`);
* :func:`consensus`: per task, the median of its annotators' labels on the kind's order (the lower middle one for an
  even count: :func:`~recjudge_utils.judge.aggregation.median_label`), the majority label whenever there is one;
* :func:`judge_agreement`: the judge against the consensus, over all tasks and per system (a judge that errs more on
  one system biases the comparison of systems): quadratic-weighted kappa (bootstrap CI), and for scores the MAE
  (bootstrap CI) and 3-class accuracy (< 3, 3, > 3), for lists the raw agreement, for duels the agreement on the
  tasks neither called a tie and the tie rates of the judge and of the consensus (shares: Wilson CIs,
  :func:`~recjudge_utils.metrics.intervals.wilson`).

Every CI comes from :mod:`recjudge_utils.metrics.intervals` or :mod:`recjudge_utils.metrics.agreement`.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from recjudge_utils.annotation.kinds import kind_named
from recjudge_utils.annotation.read_labels import Labels
from recjudge_utils.annotation.sample import AnnotationSample
from recjudge_utils.judge.aggregation import median_label
from recjudge_utils.metrics.agreement import krippendorff_alpha_ci, weighted_kappa_ci
from recjudge_utils.metrics.intervals import bootstrap_ci, wilson
from recjudge_utils.metrics.judge_scores import three_class

__all__ = ["AGREEMENT_COLUMNS", "consensus", "human_agreement", "judge_agreement", "label_table"]

#: the columns of every agreement table
AGREEMENT_COLUMNS = ["scope", "statistic", "between", "value", "low", "high", "n"]
ALL_SYSTEMS = "all systems"


def label_table(labels: Labels) -> pd.DataFrame:
    """Tasks x annotators, NaN where an annotator did not label a task."""
    return labels.frame.pivot(index="task_id", columns="annotator", values="label").sort_index()


def _row(scope: str, statistic: str, between: str, value: float, low: float, high: float, n: int) -> dict[str, object]:
    return dict(zip(AGREEMENT_COLUMNS, (scope, statistic, between, value, low, high, n), strict=True))


def human_agreement(labels: Labels, kind: str, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The annotators among themselves: ordinal alpha of all, and each pair's quadratic-weighted kappa."""
    order = kind_named(kind).labels
    wide = label_table(labels)
    raters = [wide[a].tolist() for a in wide.columns]
    rows = []
    if len(raters) >= 2:
        alpha = krippendorff_alpha_ci(raters, order, metric="ordinal", n_boot=n_boot, seed=seed)
        rows.append(
            _row(
                ALL_SYSTEMS,
                "Krippendorff's alpha (ordinal)",
                "all annotators",
                alpha.value,
                alpha.low,
                alpha.high,
                alpha.n,
            )
        )
    for a, b in combinations(wide.columns, 2):
        k = weighted_kappa_ci(wide[a].tolist(), wide[b].tolist(), order, n_boot=n_boot, seed=seed)
        rows.append(_row(ALL_SYSTEMS, "quadratic-weighted kappa", f"{a} vs {b}", k.value, k.low, k.high, k.n))
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def consensus(labels: Labels, kind: str) -> pd.Series:
    """Per task, the median label of its annotators (task_id -> label)."""
    order = kind_named(kind).labels
    grouped = labels.frame.groupby("task_id")["label"]
    return grouped.agg(lambda votes: median_label(list(votes), order)).rename("consensus")


def _share(scope: str, statistic: str, between: str, hits: np.ndarray) -> dict[str, object]:
    n = len(hits)
    low, high = wilson(float(hits.sum()), n)
    return _row(scope, statistic, between, float(hits.mean()) if n else float("nan"), low, high, n)


def _judge_rows(
    scope: str, kind: str, judge: list[str], people: list[str], n_boot: int, seed: int
) -> list[dict[str, object]]:
    spec = kind_named(kind)
    between = "judge vs human consensus"
    rows = []
    k = weighted_kappa_ci(judge, people, spec.labels, n_boot=n_boot, seed=seed)
    rows.append(_row(scope, "quadratic-weighted kappa", between, k.value, k.low, k.high, k.n))
    j, p = np.array(judge), np.array(people)
    if kind == "scores":
        js, ps = j.astype(float), p.astype(float)
        if len(js):
            value, low, high = bootstrap_ci(np.abs(js - ps), n_boot=n_boot, seed=seed)
            rows.append(_row(scope, "MAE", between, value, low, high, len(js)))
        rows.append(_share(scope, "3-class accuracy", between, three_class(js) == three_class(ps)))
    elif kind == "lists":
        rows.append(_share(scope, "agreement", between, j == p))
    else:
        decided = (j != "Tie") & (p != "Tie")
        rows.append(_share(scope, "agreement excluding ties", between, j[decided] == p[decided]))
        rows.append(_share(scope, "tie rate", "judge", j == "Tie"))
        rows.append(_share(scope, "tie rate", "human consensus", p == "Tie"))
    return rows


def judge_agreement(
    labels: Labels, sample: AnnotationSample, n_boot: int = 2000, seed: int = 0, by_system: bool = True
) -> pd.DataFrame:
    """The judge against the human consensus on the labelled tasks, over all systems and (``by_system``) per system."""
    agreed = consensus(labels, sample.kind)
    tasks = [t for t in sample.tasks if t.task_id in agreed.index and t.task_id in sample.judge_labels]
    scopes: dict[str, list[str]] = {ALL_SYSTEMS: [t.task_id for t in tasks]}
    if by_system:
        for task in tasks:
            for stratum in task.strata:
                scopes.setdefault(stratum, []).append(task.task_id)
    rows = []
    for scope, ids in scopes.items():
        judge = [sample.judge_labels[i] for i in ids]
        rows += _judge_rows(scope, sample.kind, judge, [str(agreed[i]) for i in ids], n_boot, seed)
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)
